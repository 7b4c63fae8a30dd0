"""The Try it page as an explorer of the encoder-decoder, checked against PyTorch.

The page (docs/try-it.md, docs/javascripts/translator.js) runs the committed ONNX graphs, which
return every attention map. These tests drive it as a reader would and compare what it shows
with the committed PyTorch checkpoints: the step-through's five candidates and their
probabilities, a forced token, every kind, layer and head of attention map, the training
slider's earlier models, the French model, the "seen in training" badge and the reading of
typed numbers. They run at 390 px and 1400 px in both colour schemes, and fail on a console
error or on a request that leaves the site.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from num2words import num2words

from vanilla_transformer.data.numbers import DEFAULT_SIZES, number_words, split_numbers
from vanilla_transformer.data.tokenizer import EOS, SharedTokenizer
from vanilla_transformer.inference.evaluate import translate_ids
from vanilla_transformer.model.attention import keep_attention
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.training.checkpoints import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets" / "translator"
PAGE = "/try-it/"
TIMEOUT_MS = 60_000
PROB_TOLERANCE = 1e-4
MAP_TOLERANCE = 1e-4
CROSSING = "four hundred and forty-one"


class Model:
    """A committed checkpoint with its tokenizer, and what the page computes, in PyTorch."""

    def __init__(self, folder: Path, tokenizer_file: Path) -> None:
        self.model = load_checkpoint(folder / "model.pt")[0].eval()
        self.tokenizer = SharedTokenizer.load(tokenizer_file)
        self.names = {i: t for t, i in self.tokenizer.tokenizer.get_vocab().items()}

    def src(self, text: str) -> list[int]:
        return self.tokenizer.encode(text) + [EOS]

    def translate(self, text: str) -> str:
        (out,) = translate_ids(self.model, [self.src(text)], beam_size=1, batch_size=1)
        return self.tokenizer.decode(out)

    @torch.no_grad()
    def run(self, text: str, ys: list[int]) -> dict:
        """The next token's probabilities after the prefix `ys`, and every attention map."""
        src = torch.tensor([self.src(text)])
        mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
        tgt = torch.tensor([ys])
        with keep_attention(self.model):
            memory = self.model.encode(src, mask)
            out = self.model.decode(memory, mask, tgt, subsequent_mask(len(ys)))
        stack = lambda layers, name: torch.stack([getattr(l, name).attn[0] for l in layers])
        return {"probs": self.model.generator(out[:, -1])[0].exp(),
                "encoder-self": stack(self.model.encoder.layers, "self_attn"),
                "decoder-self": stack(self.model.decoder.layers, "self_attn"),
                "cross": stack(self.model.decoder.layers, "src_attn")}


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((ASSETS / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def german() -> Model:
    return Model(ASSETS, ASSETS / "tokenizer.json")


@pytest.fixture(scope="module")
def french(manifest) -> Model:
    folder = ASSETS / manifest["languages"]["fr"]["folder"]
    return Model(folder, folder / "tokenizer.json")


STATE = """() => {
  const root = document.querySelector('.translator');
  const box = root.querySelector('#translator-heatmap');
  const q = (selector) => root.querySelector(selector);
  return {
    state: root.dataset.state, source: root.dataset.source, text: root.dataset.text,
    lang: root.dataset.lang, step: root.dataset.step, done: root.dataset.done === '1',
    ys: (root.dataset.ys || '').split(' ').filter((x) => x).map(Number),
    target: q('#translator-target').textContent,
    status: q('#translator-status').textContent,
    readAs: !q('#translator-read-as') || q('#translator-read-as').hidden ? null
      : q('#translator-read-as').textContent,
    seen: q('#translator-seen')?.dataset.seen || null,
    topk: Array.from(root.querySelectorAll('#explorer-topk li'), (li) => ({
      token: li.dataset.token, id: Number(li.dataset.id), prob: Number(li.dataset.prob)})),
    rows: Number(box.dataset.rows), cols: Number(box.dataset.cols),
    kind: box.dataset.kind, layer: Number(box.dataset.layer), head: box.dataset.head,
    caption: q('#explorer-caption').textContent,
    weights: Array.from(box.querySelectorAll('rect.translator-cell'), (r) => [
      Number(r.dataset.row), Number(r.dataset.col), Number(r.dataset.weight)]),
  };
}"""

IDLE = """(expected) => {
  const root = document.querySelector('.translator');
  return root && ['done', 'stepping', 'invalid'].includes(root.dataset.state) &&
    (expected === null || root.dataset.ys !== expected);
}"""


def state(tab) -> dict:
    return tab.evaluate(STATE)


def typed(tab, text: str) -> dict:
    tab.fill("#translator-source", text)
    tab.wait_for_function(
        "(t) => { const r = document.querySelector('.translator'); return !r.dataset.pending"
        " && r.dataset.source === t && ['done', 'invalid'].includes(r.dataset.state); }",
        arg=" ".join(text.split()).lower(), timeout=TIMEOUT_MS)
    return state(tab)


def click(tab, selector: str) -> dict:
    before = tab.evaluate("() => document.querySelector('.translator').dataset.ys")
    tab.click(selector)
    tab.wait_for_function(IDLE, arg=before, timeout=TIMEOUT_MS)
    return state(tab)


@pytest.fixture(scope="module")
def page(browser, origin):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    blocked: list[str] = []

    def route(r):
        if r.request.url.startswith(origin + "/"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    tab.goto(origin + PAGE)
    tab.wait_for_function("() => document.querySelector('.translator').dataset.state === 'done'",
                          timeout=TIMEOUT_MS)
    yield tab
    context.close()
    assert not errors and not blocked, (errors, blocked)


def test_the_default_example_is_a_crossing_one_and_its_map_shows_the_crossing(page, german):
    view = state(page)
    assert view["source"] == CROSSING and view["target"] == german.translate(CROSSING)
    assert view["target"] == "vierhunderteinundvierzig"
    assert view["kind"] == "cross" and view["layer"] == 1 and view["head"] == "average"
    # the row of the units piece peaks on the English "one", after "forty"
    names = german.names
    src = [names[i] for i in german.src(CROSSING)]
    out = [names[i] for i in view["ys"][1:]]
    grid = {(r, c): w for r, c, w in view["weights"]}
    units_row = next(i for i, t in enumerate(out) if "ein" in t)
    tens_row = next(i for i, t in enumerate(out) if "vierzig" in t and i > units_row)
    peak = lambda row: max(range(len(src)), key=lambda c: grid[(row, c)])
    assert "one" in src[peak(units_row)], (src, out, peak(units_row))
    assert src[peak(tens_row)] == "\u2581forty-", (src, peak(tens_row))
    assert "darker" not in view["caption"]
    # what the page says of the heads of layer 2 (head 1: ein on "one"; 3 and 4: undvierzig
    # on "forty-")
    reference = german.run(CROSSING, view["ys"][:-1])["cross"][1]
    assert src[int(reference[0, units_row].argmax())] == "one"
    assert float(reference[0, units_row].max()) > 0.9
    for head in (2, 3):
        assert src[int(reference[head, tens_row].argmax())] == "\u2581forty-"


def test_step_through_shows_the_five_most_probable_tokens_of_pytorch(page, german):
    typed(page, CROSSING)
    view = click(page, "#explorer-restart")
    steps = 0
    while not view["done"]:
        expected = german.run(CROSSING, view["ys"])["probs"]
        top = torch.topk(expected, 5)
        assert [c["id"] for c in view["topk"]] == top.indices.tolist()
        assert [german.names[i] for i in top.indices.tolist()] == [
            c["token"] for c in view["topk"]]
        for c, p in zip(view["topk"], top.values.tolist()):
            assert abs(c["prob"] - p) < PROB_TOLERANCE
        greedy = int(expected.argmax())
        assert view["topk"][0]["id"] == greedy
        view = click(page, "#explorer-step")
        assert view["ys"][-1] == greedy
        steps += 1
    assert view["target"] == german.translate(CROSSING) and steps == len(view["ys"]) - 1


def test_a_clicked_candidate_is_written_and_decoding_goes_on_from_it(page, german):
    typed(page, CROSSING)
    click(page, "#explorer-restart")
    view = click(page, "#explorer-step")  # "vierhundert"
    second = view["topk"][1]
    view = click(page, "#explorer-topk li:nth-child(2) button")
    assert view["ys"][-1] == second["id"]
    expected = german.run(CROSSING, view["ys"])["probs"]
    assert [c["id"] for c in view["topk"]] == torch.topk(expected, 5).indices.tolist()
    view = click(page, "#explorer-finish")
    assert view["done"]
    # greedy from the forced prefix, as PyTorch decodes it
    ys = view["ys"][:3]
    while ys[-1] != EOS and len(ys) < len(view["ys"]):
        ys.append(int(german.run(CROSSING, ys)["probs"].argmax()))
    assert ys == view["ys"]


@pytest.mark.parametrize("kind", ["cross", "decoder-self", "encoder-self"])
def test_every_layer_and_head_of_every_map_is_pytorchs(page, german, kind):
    view = typed(page, CROSSING)
    ys = view["ys"]
    reference = german.run(CROSSING, ys[:-1])  # the rows of every written token
    page.select_option("#explorer-kind", kind)
    for layer in range(german.model.config.N):
        page.select_option("#explorer-layer", str(layer))
        for head in ["average", *map(str, range(german.model.config.h))]:
            page.select_option("#explorer-head", head)
            view = state(page)
            maps = reference[kind][layer]
            want = maps.mean(0) if head == "average" else maps[int(head)]
            assert (view["rows"], view["cols"]) == tuple(want.shape)
            assert len(view["weights"]) == want.numel()
            for r, c, w in view["weights"]:
                assert abs(w - float(want[r, c])) < MAP_TOLERANCE, (kind, layer, head, r, c)
    page.select_option("#explorer-kind", "cross")


def test_a_tap_on_a_cell_shows_its_value(page):
    typed(page, CROSSING)
    page.click("#translator-heatmap rect.translator-cell[data-row='0'][data-col='0']")
    text = page.inner_text("#explorer-cell")
    weight = float(page.get_attribute(
        "#translator-heatmap rect.translator-cell[data-row='0'][data-col='0']", "data-weight"))
    assert text.endswith(f"{weight:.3f}")


def test_the_training_slider_replays_the_runs_checkpoints(page, manifest, german):
    steps = manifest["training_steps"]
    phrase = number_words(split_numbers(DEFAULT_SIZES, seed=0)["test"][3])
    typed(page, CROSSING)
    for index, entry in enumerate(steps):
        page.evaluate("(i) => { const s = document.getElementById('explorer-checkpoint');"
                      " s.value = String(i); s.dispatchEvent(new Event('input')); }", index)
        folder = entry["folder"].split("/")[1]
        page.wait_for_function(
            "(s) => { const r = document.querySelector('.translator');"
            " return r.dataset.step === s && r.dataset.state === 'done'; }",
            arg=folder, timeout=TIMEOUT_MS)
        model = Model(ASSETS / entry["folder"], ASSETS / "tokenizer.json")
        view = typed(page, CROSSING)
        assert view["step"] == folder
        assert view["target"] == model.translate(CROSSING), entry["step"]
        if entry["step"] == 0:  # what the page says of the untrained model
            pieces = set(view["ys"][1:-1])
            assert len(pieces) == 1 and max(w for _, _, w in view["weights"]) < 0.5
        if entry["step"] == 100:
            assert view["target"].startswith("vierhundert")
            assert view["target"] != "vierhunderteinundvierzig"
        if entry["step"] >= 400:
            assert view["target"] == "vierhunderteinundvierzig"
        view = typed(page, phrase)
        assert view["step"] == folder and view["target"] == model.translate(phrase)
    assert "average of steps" in page.inner_text("#explorer-checkpoint-label")
    page.click("#explorer-replay-off")
    page.wait_for_function("() => { const r = document.querySelector('.translator');"
                           " return r.dataset.step === 'final' && r.dataset.state === 'done'; }",
                           timeout=TIMEOUT_MS)
    assert state(page)["target"] == german.translate(phrase)


def test_the_french_model_writes_num2words_french(page, french):
    page.select_option("#translator-language", "fr")
    numbers = split_numbers(DEFAULT_SIZES, seed=0)["test"][:12] + [97, 71]
    right = 0
    for n in numbers:
        view = typed(page, number_words(n))
        assert view["lang"] == "fr"
        assert view["target"] == french.translate(number_words(n))
        right += view["target"] == num2words(n, lang="fr")
    assert right >= len(numbers) - 1, right
    page.select_option("#translator-language", "de")


@pytest.mark.parametrize("text, seen, read_as", [
    ("twenty one", "seen", "twenty-one"),
    ("one thousand nine hundred and eighty-four", None, "one thousand, nine hundred and "
                                                        "eighty-four"),
    ("hello world", "no-number", None),
    ("four hundred and forty-one", "seen", None),
])
def test_typed_numbers_are_read_and_the_badge_tells_seen_from_unseen(
        page, german, text, seen, read_as):
    view = typed(page, text)
    page.wait_for_function("() => !document.getElementById('translator-seen').hidden")
    view = state(page)
    assert (view["readAs"] is None) == (read_as is None)
    if read_as:
        assert read_as in view["readAs"] and view["text"] == read_as
        assert view["target"] == german.translate(read_as)
    train = set(split_numbers(DEFAULT_SIZES, seed=0)["train"])
    if seen is None:  # decided by the corpus split
        seen = "seen" if 1984 in train else "unseen"
    assert view["seen"] == seen


def test_an_unseen_number_is_marked_unseen(page):
    n = split_numbers(DEFAULT_SIZES, seed=0)["test"][0]
    typed(page, number_words(n))
    page.wait_for_function("() => !document.getElementById('translator-seen').hidden")
    assert state(page)["seen"] == "unseen"


def test_a_long_input_is_refused_before_tokenizing(page):
    start = page.evaluate("() => performance.now()")
    view = typed(page, "x" * 30_000)
    took = page.evaluate("() => performance.now()") - start
    assert view["state"] == "invalid" and "Too long: 30000 characters" in view["status"]
    assert took < 5_000, took


@pytest.mark.parametrize("width", [390, 1400])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_explorer_fits_the_screen(browser, origin, width, scheme):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    try:
        tab = context.new_page()
        tab.goto(origin + PAGE)
        tab.wait_for_function(
            "() => document.querySelector('.translator').dataset.state === 'done'",
            timeout=TIMEOUT_MS)
        layout = tab.evaluate("""() => ({
          page: document.scrollingElement.scrollWidth, inner: innerWidth,
          box: getComputedStyle(document.getElementById('translator-heatmap')).overflowX,
          topk: document.querySelectorAll('#explorer-topk li').length,
        })""")
        assert layout["page"] <= layout["inner"] + 1, layout
        assert layout["box"] in ("auto", "scroll")
    finally:
        context.close()


def test_home_has_a_small_version_that_loads_the_model_only_when_asked(browser, origin, german):
    context = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        tab = context.new_page()
        tab.goto(origin + "/")
        tab.wait_for_timeout(500)
        resources = tab.evaluate(
            "() => performance.getEntriesByType('resource').map((entry) => entry.name)")
        assert not [r for r in resources if "onnxruntime-web" in r or "assets/translator/" in r]
        assert tab.evaluate("() => document.querySelector('.translator').dataset.state") == "idle"
        tab.focus("#translator-source")
        tab.wait_for_function(
            "() => document.querySelector('.translator').dataset.state === 'done'",
            timeout=TIMEOUT_MS)
        view = tab.evaluate(STATE)
        assert view["target"] == german.translate(CROSSING) == "vierhunderteinundvierzig"
        assert view["kind"] == "cross" and view["rows"] == len(view["ys"]) - 1
        assert tab.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth + 1")
    finally:
        context.close()
