"""Try it's filmstrip and small Figure 1, the lessons' predict-then-reveal questions and Home's
map before the model loads, checked against the package's own computation.

- The filmstrip (docs/figures/try_filmstrip.py) has one frame per checkpoint of the replay, and
  the step it marks, the first checkpoint whose cross-attention reads the unit before the tens,
  is the one PyTorch finds here.
- Figure 1 (docs/javascripts/explorer_extras.js) highlights the block of the map shown, follows
  the menus, and sets them when a block is clicked.
- A predict-then-reveal question grades a right and a wrong answer by what the model computes,
  and loads nothing of the model before the learner answers.
- Home shows the map drawn at build time before any interaction, and asks for no model file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from num2words import num2words

from vanilla_transformer.data.tokenizer import BOS, EOS, SharedTokenizer
from vanilla_transformer.model.attention import keep_attention
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.training.checkpoints import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets" / "translator"
TIMEOUT_MS = 60_000
# what the page's model files look like in a request: graphs, the runtime, the weights
MODEL_FILE = re.compile(r"\.(onnx|wasm|bin)$|onnxruntime|ort\.[\w.]*js$")
# the same, seen from the page: the runtime is neither loaded nor asked for
NO_RUNTIME = """() => window.ort === undefined &&
  !document.querySelector('script[src*="onnxruntime"]')"""


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((ASSETS / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tokenizer() -> SharedTokenizer:
    return SharedTokenizer.load(ASSETS / "tokenizer.json")


@pytest.fixture(scope="module")
def model():
    return load_checkpoint(ASSETS / "model.pt")[0].eval()


@torch.no_grad()
def units_look(model, tokenizer, english: str, number: int) -> tuple[int, int]:
    """With the right German (num2words') fed in, the piece that writes the units where German
    writes them first (the piece before one that starts with "und"), and the English piece the
    last decoder layer's cross-attention, averaged over the heads, weighs most while writing it."""
    german = tokenizer.encode(num2words(number, lang="de"))
    pieces = [tokenizer.tokenizer.id_to_token(i) for i in german]
    k = next(i for i in range(len(pieces) - 1) if pieces[i + 1].startswith("und"))
    src = torch.tensor([tokenizer.encode(english) + [EOS]])
    mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
    ys = torch.tensor([[BOS] + german[:k]])
    with keep_attention(model):
        model.decode(model.encode(src, mask), mask, ys, subsequent_mask(ys.size(1)))
    return k, int(model.decoder.layers[-1].src_attn.attn[0, :, k].mean(0).argmax())


@torch.no_grad()
def greedy_top_probs(model, tokenizer, text: str) -> list[float]:
    """The probability of the piece greedy decoding writes, at each step, up to </s>."""
    ids = tokenizer.encode(text) + [EOS]
    src = torch.tensor([ids])
    mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
    memory = model.encode(src, mask)
    ys, probs = [BOS], []
    while ys[-1] != EOS and len(ys) < len(ids) + 51:  # the page's max_extra
        tgt = torch.tensor([ys])
        p = model.generator(model.decode(memory, mask, tgt, subsequent_mask(len(ys)))[:, -1])[0].exp()
        probs.append(float(p.max()))
        ys.append(int(p.argmax()))
    return probs


@pytest.fixture(scope="module")
def context(browser, origin):
    """One browser context for the module, which aborts and records requests off the site."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.blocked = []

    def route(r):
        if r.request.url.startswith(origin + "/"):
            r.continue_()
        else:
            context.blocked.append(r.request.url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    yield context
    context.close()


def open_page(context, origin: str, path: str):
    """A new tab at `path` (a full page load), with the URLs it requested and its errors."""
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    log: dict[str, list[str]] = {"requests": [], "errors": [], "blocked": context.blocked}
    tab.on("request", lambda r: log["requests"].append(r.url))
    tab.on("console", lambda m: log["errors"].append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: log["errors"].append(str(e)))
    tab.goto(origin + path)
    tab.wait_for_load_state("load")
    return tab, log


@pytest.fixture(scope="module")
def reader(context, origin):
    """A reader's tab that goes from page to page by Material's instant navigation, so that
    the model, once loaded, stays loaded (translator.js keeps it), as for a reader."""
    tab, log = open_page(context, origin, "/")
    yield tab, log
    tab.close()
    assert not log["errors"] and not log["blocked"], log


def navigate(tab, origin: str, path: str) -> None:
    """Follow a link to `path` as a reader does (Material's instant navigation)."""
    tab.evaluate("""(href) => { const a = document.createElement('a'); a.href = href;
                               document.body.appendChild(a); a.click(); }""", origin + path)
    tab.wait_for_function("(p) => location.pathname === p", arg=path)


# --------------------------------------------------------------------------------------------- #
# The filmstrip                                                                                 #
# --------------------------------------------------------------------------------------------- #


@torch.no_grad()
def units_first_step(manifest: dict, tokenizer: SharedTokenizer) -> int:
    """The first checkpoint at which, with "vierhunderteinundvierzig" fed in, the row that
    writes "ein" looks most at "one" and the row that writes "undvierzig" at "forty-"
    (the last decoder layer, averaged over its heads)."""
    name = tokenizer.tokenizer.id_to_token
    src_ids = tokenizer.encode("four hundred and forty-one") + [EOS]
    tgt_ids = [BOS] + tokenizer.encode("vierhunderteinundvierzig")
    src_pieces = [name(i).lstrip("\u2581") for i in src_ids]
    tgt_pieces = [name(i).lstrip("\u2581") for i in tgt_ids[1:]]
    assert tgt_pieces == ["vierhundert", "ein", "undvierzig"]
    src = torch.tensor([src_ids])
    mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
    for entry in manifest["training_steps"]:
        model = load_checkpoint(ASSETS / entry["folder"] / "model.pt")[0].eval()
        with keep_attention(model):
            model.decode(model.encode(src, mask), mask, torch.tensor([tgt_ids]),
                         subsequent_mask(len(tgt_ids)))
        best = model.decoder.layers[-1].src_attn.attn[0].mean(0).argmax(-1).tolist()
        if src_pieces[best[1]] == "one" and src_pieces[best[2]] == "forty-":
            return entry["step"]
    raise AssertionError("no checkpoint reads the unit first")


def test_the_filmstrip_has_a_frame_per_checkpoint_and_marks_the_step_pytorch_finds(
        site, manifest, tokenizer):
    html = (site / "try-it" / "index.html").read_text(encoding="utf-8")
    figure = re.search(r'<figure [^>]*\bid="explorer-filmstrip"[^>]*>(.*?)</figure>', html, re.S)
    assert figure, "Try it has no #explorer-filmstrip figure"
    assert 'src="../assets/figures/try_filmstrip.svg"' in figure.group(1)
    svg = (site / "assets" / "figures" / "try_filmstrip.svg").read_text(encoding="utf-8")
    frames = re.findall(r'<g id="filmstrip-frame-(\d{4})(-marked)?"', svg)
    folders = [entry["folder"].split("/")[1] for entry in manifest["training_steps"]]
    assert [f for f, _ in frames] == folders
    marked = units_first_step(manifest, tokenizer)
    assert 0 < marked < manifest["steps"]
    assert [f for f, m in frames if m] == [f"{marked:04d}"]
    assert re.search(rf'data-marked-step="{marked}"', figure.group(0))
    assert f"step\n{marked}" in figure.group(1) or f"step {marked}" in figure.group(1)


# --------------------------------------------------------------------------------------------- #
# Home, and nothing of the model before the reader asks                                         #
# --------------------------------------------------------------------------------------------- #


def test_home_shows_the_map_before_the_model_and_loads_nothing_until_asked(reader, origin):
    tab, log = reader
    log["requests"].clear()
    tab.goto(origin + "/")  # a fresh page: whatever ran before in this tab is gone
    tab.wait_for_load_state("load")
    preview = tab.locator("#translator-heatmap img#translator-preview")
    assert preview.is_visible()
    assert tab.evaluate("() => document.querySelector('#translator-preview').naturalWidth") > 0
    assert not [u for u in log["requests"] if MODEL_FILE.search(u)], log["requests"]
    assert tab.evaluate(NO_RUNTIME)
    # the live map replaces it once the reader asks for the model
    tab.focus("#translator-source")
    tab.wait_for_selector("#translator-heatmap svg", timeout=TIMEOUT_MS)
    assert tab.locator("#translator-preview").count() == 0
    assert not tab.evaluate(NO_RUNTIME)


@pytest.mark.parametrize("path", ["/learn/attention/", "/learn/decoding/"])
def test_a_question_loads_no_model_until_the_learner_answers(context, origin, path):
    tab, log = open_page(context, origin, path)
    try:
        box = ".predict-reveal"
        tab.wait_for_selector(f'{box}[data-ready="on"]')
        assert tab.evaluate(NO_RUNTIME)
        # the choices need the vocabulary only; the model waits for an answer
        tab.click(f"{box} .predict-reveal__ask")
        tab.wait_for_selector(f'{box}[data-state="choosing"]')
        assert tab.evaluate(NO_RUNTIME)
        assert not [u for u in log["requests"] if MODEL_FILE.search(u)], log["requests"]
    finally:
        tab.close()
    assert not log["errors"], log["errors"]


# --------------------------------------------------------------------------------------------- #
# Figure 1 beside the map                                                                       #
# --------------------------------------------------------------------------------------------- #

FIGURE1 = """() => {
  const f = document.querySelector('#explorer-figure1');
  const on = Array.from(f.querySelectorAll('.figure1__block.is-on'),
                        (b) => [b.dataset.kind, Number(b.dataset.layer)]);
  const layer = Array.from(f.querySelectorAll('.figure1__layer.is-on'),
                           (g) => [g.dataset.part, Number(g.dataset.layer)]);
  const map = document.querySelector('#translator-heatmap').dataset;
  return {kind: f.dataset.kind, layer: Number(f.dataset.layer), on: on, box: layer,
          map: [map.kind, Number(map.layer)]};
}"""


def test_figure1_highlights_the_block_of_the_map_and_follows_the_menus(reader, origin):
    tab, _ = reader
    navigate(tab, origin, "/try-it/")
    tab.wait_for_function("() => document.querySelector('.translator').dataset.state"
                          " === 'done'", timeout=TIMEOUT_MS)
    tab.wait_for_selector("#explorer-figure1[data-kind]", timeout=TIMEOUT_MS)  # drawn after the map
    shown = tab.evaluate(FIGURE1)
    assert shown == {"kind": "cross", "layer": 2, "on": [["cross", 2]],
                     "box": [["decoder", 2]], "map": ["cross", 2]}
    for kind, layer, part in (("encoder-self", "1", "encoder"),
                              ("decoder-self", "2", "decoder"), ("cross", "1", "decoder")):
        tab.select_option("#explorer-kind", kind)
        tab.select_option("#explorer-layer", layer)
        shown = tab.evaluate(FIGURE1)
        assert shown["map"] == [kind, int(layer)]
        assert shown["on"] == [[kind, int(layer)]] and shown["box"] == [[part, int(layer)]]
    # a block of the figure is a button that sets the menus, and the map follows
    tab.click('#explorer-figure1 .figure1__block[data-kind="encoder-self"][data-layer="2"]')
    shown = tab.evaluate(FIGURE1)
    assert shown["map"] == ["encoder-self", 2] and shown["on"] == [["encoder-self", 2]]
    assert tab.input_value("#explorer-kind") == "encoder-self"
    assert tab.input_value("#explorer-layer") == "2"


# --------------------------------------------------------------------------------------------- #
# Predict, then reveal                                                                          #
# --------------------------------------------------------------------------------------------- #


def answer(tab, question: str, text: str, choice: str) -> dict:
    """Type `text` into the question, show the choices, pick `choice`, wait for the model."""
    box = f'.predict-reveal[data-question="{question}"]'
    if tab.locator(f"{box} .predict-reveal__ask").is_hidden():
        tab.click(f"{box} .predict-reveal__result button")  # "Another sentence"
    tab.fill(f"{box} input", text)
    tab.click(f"{box} .predict-reveal__ask")
    tab.wait_for_selector(f'{box}[data-state="choosing"]')
    tab.click(f'{box} .predict-reveal__choices button[data-value="{choice}"]')
    tab.wait_for_selector(f'{box}[data-state="revealed"]', timeout=TIMEOUT_MS)
    return tab.evaluate("(s) => ({...document.querySelector(s).dataset})", box)


def test_a_cross_attention_question_is_graded_by_the_model(reader, origin, model, tokenizer):
    tab, _ = reader
    navigate(tab, origin, "/learn/attention/")
    box = '.predict-reveal[data-question="cross-argmax"]'
    tab.wait_for_selector(f'{box}[data-ready="on"]')
    text, number = "four hundred and forty-one", 441
    k, best = units_look(model, tokenizer, text, number)
    src = tokenizer.encode(text) + [EOS]
    # the units piece of German reads the English units, ahead of the tens
    assert tokenizer.tokenizer.id_to_token(src[best]) == "one"
    right = answer(tab, "cross-argmax", text, str(best))
    assert right["piece"] == str(k), right
    assert right["correct"] == "true" and right["answer"] == str(best), right
    wrong = str((best + 1) % len(src))
    missed = answer(tab, "cross-argmax", text, wrong)
    assert missed["correct"] == "false" and missed["answer"] == str(best), missed


def test_a_top_candidate_question_is_graded_by_the_model(reader, origin, model, tokenizer):
    tab, _ = reader
    navigate(tab, origin, "/learn/decoding/")
    tab.wait_for_selector('.predict-reveal[data-question="top-above-half"][data-ready="on"]')
    # a right answer on one sentence, a wrong one on another, and both answers occur
    sure, unsure = "one thousand, three hundred and eight", "hello world"
    assert min(greedy_top_probs(model, tokenizer, sure)) > 0.5
    assert min(greedy_top_probs(model, tokenizer, unsure)) <= 0.5
    right = answer(tab, "top-above-half", sure, "yes")
    assert right["correct"] == "true" and right["answer"] == "yes", right
    missed = answer(tab, "top-above-half", unsure, "yes")
    assert missed["correct"] == "false" and missed["answer"] == "no", missed
    link = tab.locator('.predict-reveal[data-question="top-above-half"] a')
    assert link.get_attribute("href").endswith("/learn/training/#top-candidate")
