"""The live model (docs/javascripts/live_model.js): the translator's forward pass in JavaScript,
with the switches of `vanilla_transformer.analysis.switches`, checked against PyTorch.

- its weights file holds the committed `model.pt`'s weights, float for float;
- for every switch and a few inputs, its greedy output is PyTorch's, and every attention map's
  scores before the softmax and weights after it, and the next piece's log-probabilities, are
  PyTorch's within 1e-4 (scores: relative to their size);
- Try it's `#explorer-break` gives each switch's PyTorch output and map, and `#explorer-cell`
  shows a cell's score and weight;
- in the lessons, the widget loads nothing of the model before the first interaction, adds at
  most 300 KB to the page before it, and then shows what PyTorch computes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from vanilla_transformer.analysis.switches import SWITCHES, record_attention, switched
from vanilla_transformer.data.tokenizer import BOS, EOS, SharedTokenizer
from vanilla_transformer.inference.beam import beam_search
from vanilla_transformer.inference.evaluate import MAX_EXTRA, translate_ids
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.training.checkpoints import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets" / "translator"
TIMEOUT_MS = 60_000
TOLERANCE = 1e-4
LIMIT_BYTES = 300_000
TEXTS = ["four hundred and twenty-one", "twenty-one and four hundred", "seven"]
# (name, kind, layer, head), layers and heads counted from 0 as in switched()
CASES = [("none", "cross", 0, 0), ("no-positions", "cross", 0, 0), ("no-scale", "cross", 0, 0),
         ("no-cross-attention", "cross", 0, 0), ("silence-head", "cross", 1, 0),
         ("silence-head", "encoder-self", 0, 2), ("silence-head", "decoder-self", 1, 3)]
LESSONS = {"attention": "/learn/attention/", "heads": "/learn/heads/",
           "positions": "/learn/positions/", "decoding": "/learn/decoding/"}


class Reference:
    """The committed German translator in PyTorch, with a switch on."""

    def __init__(self) -> None:
        self.model = load_checkpoint(ASSETS / "model.pt")[0].eval()
        self.tokenizer = SharedTokenizer.load(ASSETS / "tokenizer.json")

    def src(self, text: str) -> list[int]:
        return self.tokenizer.encode(text) + [EOS]

    def greedy(self, text: str) -> list[int]:
        (out,) = translate_ids(self.model, [self.src(text)], beam_size=1, batch_size=1)
        return out

    @torch.no_grad()
    def maps(self, text: str, ys: list[int]) -> tuple[dict, torch.Tensor]:
        """Every map's (scores, weights) and the next piece's log-probabilities after `ys`."""
        src = torch.tensor([self.src(text)])
        tgt = torch.tensor([ys])
        with record_attention(self.model) as maps:
            memory = self.model.encode(src, None)
            out = self.model.decode(memory, None, tgt, subsequent_mask(len(ys)))
        return maps, self.model.generator(out[:, -1])[0]


@pytest.fixture(scope="module")
def reference() -> Reference:
    return Reference()


def test_the_weights_file_holds_the_checkpoints_weights():
    for folder in (ASSETS, ASSETS / "fr"):
        description = json.loads((folder / "live_model.json").read_text())
        data = (folder / "live_model.bin").read_bytes()
        assert description["sha256"] == hashlib.sha256(data).hexdigest()
        assert description["checkpoint_sha256"] == hashlib.sha256(
            (folder / "model.pt").read_bytes()).hexdigest()
        floats = torch.frombuffer(bytearray(data), dtype=torch.float32)
        model = load_checkpoint(folder / "model.pt")[0]
        names = {**{n: n for n in description["tensors"]}, **description["aliases"]}
        state = model.state_dict()
        assert set(names) == set(state)
        for name, tensor in state.items():
            entry = description["tensors"][names[name]]
            stored = floats[entry["offset"]:entry["offset"] + tensor.numel()]
            assert torch.equal(stored.view(entry["shape"]), tensor), name


@pytest.fixture(scope="module")
def lesson(browser, origin):
    """A lesson page: live_model.js is on every page of the site."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(origin + LESSONS["attention"])
    tab.wait_for_function("() => window.translatorDemo && window.translatorDemo.liveModel")
    yield tab
    context.close()
    assert not errors, errors


RUN = """async ([text, sw]) => {
  const model = await window.translatorDemo.liveModel.load('de');
  const res = model.greedy(text, sw);
  const dec = model.decode(res.memory, res.ys.slice(0, -1), sw);
  return {ys: res.ys, text: res.text, encoder: [res.memory.scores, res.memory.weights],
          self: [dec.self.scores, dec.self.weights], cross: [dec.cross.scores, dec.cross.weights],
          logProbs: Array.from(dec.logProbs)};
}"""


def close(got, want: torch.Tensor, what: str, relative: bool = False) -> None:
    got_t = torch.tensor(got, dtype=torch.float64)
    want = want.to(torch.float64)
    assert got_t.shape == want.shape, (what, got_t.shape, want.shape)
    scale = want.abs().clamp(min=1.0) if relative else torch.ones_like(want)
    worst = float(((got_t - want).abs() / scale).max())
    assert worst < TOLERANCE, (what, worst)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_every_switch_gives_pytorchs_output_scores_and_weights(lesson, reference, case):
    name, kind, layer, head = case
    sw = {"name": name, "kind": kind, "layer": layer, "head": head}
    outputs = []
    for text in TEXTS:
        got = lesson.evaluate(RUN, [text, sw])
        with switched(reference.model, name, kind=kind, layer=layer, head=head):
            want = reference.greedy(text)
            assert got["ys"][1:] == want + [EOS] or got["ys"][1:] == want, (case, text)
            maps, log_probs = reference.maps(text, got["ys"][:-1])
        outputs.append(got["text"])
        assert got["text"] == reference.tokenizer.decode(want)
        close(got["logProbs"], log_probs, "log-probabilities")
        for key, stack in (("encoder", "encoder-self"), ("self", "decoder-self"),
                           ("cross", "cross")):
            for i in range(reference.model.config.N):
                scores, weights = maps[stack, i]
                close(got[key][0][i], scores[0], f"{stack} {i} scores", relative=True)
                close(got[key][1][i], weights[0], f"{stack} {i} weights")
    # the first two inputs are the same pieces in two orders
    same = {"no-cross-attention": 1, "no-positions": len(TEXTS) - 1}.get(name, len(TEXTS))
    assert len(set(outputs)) == same, outputs


def test_a_bad_switch_is_refused(lesson):
    message = lesson.evaluate("""async () => {
      const model = await window.translatorDemo.liveModel.load('de');
      try { model.encode([5, 2], 'no-softmax'); return null; } catch (e) { return e.message; }
    }""")
    assert message.startswith('unknown switch "no-softmax"')
    assert lesson.evaluate("() => window.translatorDemo.liveModel.SWITCHES") == list(SWITCHES)


# ------------------------------------------------------------------------------------------- #
# Try it: #explorer-break and the scores in #explorer-cell                                    #
# ------------------------------------------------------------------------------------------- #

MAP = """() => {
  const root = document.querySelector('.translator');
  const box = root.querySelector('#translator-heatmap');
  return {state: root.dataset.state, switch: root.dataset.switch, text: root.dataset.text,
          ys: (root.dataset.ys || '').split(' ').filter((x) => x).map(Number),
          target: root.querySelector('#translator-target').textContent,
          caption: root.querySelector('#explorer-caption').textContent,
          kind: box.dataset.kind, layer: Number(box.dataset.layer), head: box.dataset.head,
          cells: Array.from(box.querySelectorAll('rect.translator-cell'), (r) => [
            Number(r.dataset.row), Number(r.dataset.col), Number(r.dataset.weight),
            r.dataset.score === undefined ? null : Number(r.dataset.score)])};
}"""


@pytest.fixture(scope="module")
def try_it(browser, origin):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(origin + "/try-it/")
    tab.wait_for_function("() => { const r = document.querySelector('.translator');"
                          " return r.dataset.state === 'done' && r.dataset.liveDE === '1'; }",
                          timeout=TIMEOUT_MS)
    yield tab
    context.close()
    assert not errors, errors


def translated(tab, text: str, switch: str) -> dict:
    tab.select_option("#explorer-break", switch)
    tab.fill("#translator-source", text)
    tab.wait_for_function(
        "([t, s]) => { const r = document.querySelector('.translator'); return !r.dataset.pending"
        " && r.dataset.source === t && r.dataset.switch === s && r.dataset.state === 'done'; }",
        arg=[text, switch], timeout=TIMEOUT_MS)
    return tab.evaluate(MAP)


def test_the_break_menu_offers_every_switch(try_it):
    values = try_it.evaluate("() => Array.from(document.querySelectorAll("
                             "'#explorer-break option'), (o) => o.value)")
    assert values == list(SWITCHES)


@pytest.mark.parametrize("name", SWITCHES)
def test_each_switch_on_try_it_is_pytorchs(try_it, reference, name):
    text = TEXTS[1] if name != "no-cross-attention" else TEXTS[2]
    try_it.select_option("#explorer-kind", "cross")
    try_it.select_option("#explorer-layer", "2")
    try_it.select_option("#explorer-head", "1")
    view = translated(try_it, text, name)
    assert (view["kind"], view["layer"], view["head"]) == ("cross", 2, "1")
    assert view["switch"] == name and view["state"] == "done"
    with switched(reference.model, name, kind="cross", layer=1, head=0):
        want = reference.greedy(text)
        maps, _ = reference.maps(text, view["ys"][:-1])
    assert view["target"] == reference.tokenizer.decode(want)
    assert view["ys"][1:] in (want, want + [EOS])
    scores, weights = maps["cross", 1]
    assert len(view["cells"]) == weights[0, 0].numel()
    for row, col, weight, score in view["cells"]:
        assert abs(weight - float(weights[0, 0, row, col])) < TOLERANCE
        assert score is not None
        assert abs(score - float(scores[0, 0, row, col])) < TOLERANCE * max(1, abs(score))
    assert (name == "none") == ("Switched" not in view["caption"])
    translated(try_it, TEXTS[1], "none")


def test_a_cell_shows_its_score_before_the_softmax_and_its_weight(try_it, reference):
    view = translated(try_it, TEXTS[0], "none")
    cell = "#translator-heatmap rect.translator-cell[data-row='1'][data-col='2']"
    try_it.hover(cell)
    text = try_it.inner_text("#explorer-cell")
    maps, _ = reference.maps(TEXTS[0], view["ys"][:-1])
    scores, weights = maps["cross", 1]
    assert f"score before the softmax {float(scores[0, 0, 1, 2]):.3f}" in text
    assert text.endswith(f"weight {float(weights[0, 0, 1, 2]):.3f}")
    # the average of the heads is no softmax of scores: weights only
    try_it.select_option("#explorer-head", "average")
    try_it.hover(cell)
    assert "score" not in try_it.inner_text("#explorer-cell")
    try_it.select_option("#explorer-head", "1")


def test_silence_head_follows_the_head_on_show(try_it, reference):
    try_it.select_option("#explorer-break", "silence-head")
    try_it.select_option("#explorer-kind", "cross")
    try_it.select_option("#explorer-layer", "2")
    view = None
    for head in ("3", "1"):
        try_it.select_option("#explorer-head", head)
        try_it.wait_for_function(
            "(h) => { const r = document.querySelector('.translator');"
            " const b = r.querySelector('#translator-heatmap');"
            " return r.dataset.state === 'done' && b.dataset.head === h; }", arg=head)
        view = translated(try_it, "two hundred and twelve", "silence-head")
        with switched(reference.model, "silence-head", kind="cross", layer=1, head=int(head) - 1):
            assert view["target"] == reference.tokenizer.decode(
                reference.greedy("two hundred and twelve"))
    translated(try_it, TEXTS[1], "none")


# ------------------------------------------------------------------------------------------- #
# The lessons: nothing before the first interaction, then what PyTorch computes              #
# ------------------------------------------------------------------------------------------- #

MODEL_FILES = ("live_model.bin", "live_model.json", "tokenizer.json", "manifest.json", ".onnx",
               "ort.wasm")


def open_lesson(browser, origin, path: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    loaded: list[tuple[str, int]] = []

    def done(request) -> None:
        response = request.response()
        body = response.body() if response is not None and response.status == 200 else b""
        loaded.append((request.url, len(body)))

    tab.on("requestfinished", done)
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(origin + path, wait_until="networkidle")
    return context, tab, loaded, errors


def weight_before_interaction(tab, loaded: list[tuple[str, int]], origin: str) -> dict:
    """Bytes loaded before any interaction, and the part the live model adds: its script and
    the widget's markup."""
    total = sum(size for _, size in loaded)
    script = sum(size for url, size in loaded if url.endswith("/javascripts/live_model.js"))
    markup = tab.evaluate("() => Array.from(document.querySelectorAll('.live-model'),"
                          " (e) => new TextEncoder().encode(e.outerHTML).length)"
                          ".reduce((a, b) => a + b, 0)")
    return {"total": total, "live": script + markup, "script": script, "markup": markup}


@pytest.mark.parametrize("name", LESSONS)
def test_a_lesson_loads_the_model_only_on_the_first_interaction(browser, origin, reference,
                                                                name):
    context, tab, loaded, errors = open_lesson(browser, origin, LESSONS[name])
    try:
        widget = tab.locator(f".live-model[data-lesson='{name}']")
        assert widget.count() == 1
        assert widget.get_attribute("data-state") == "idle"
        names = tab.evaluate("() => performance.getEntriesByType('resource').map((e) => e.name)")
        early = [url for url in names + [u for u, _ in loaded] if any(f in url for f in MODEL_FILES)]
        assert not early, early
        weight = weight_before_interaction(tab, loaded, origin)
        assert 0 < weight["live"] <= LIMIT_BYTES, weight
        assert weight["script"] > 0  # measured, not missed
        widget.locator("input").first.click()
        tab.wait_for_function(
            f"() => document.querySelector(\".live-model[data-lesson='{name}']\")"
            ".dataset.state === 'done'", timeout=TIMEOUT_MS)
        fetched = tab.evaluate("() => performance.getEntriesByType('resource').map((e) => e.name)")
        assert any(url.endswith("/assets/translator/live_model.bin") for url in fetched)
        text = widget.get_attribute("data-text")
        assert widget.get_attribute("data-output") == reference.tokenizer.decode(
            reference.greedy(text)) or name == "positions"
        check_lesson(tab, widget, name, text, reference)
        assert not errors, errors
    finally:
        context.close()


def check_lesson(tab, widget, name: str, text: str, reference: Reference) -> None:
    ys = [1, *reference.greedy(text)]
    if name == "attention":
        maps, _ = reference.maps(text, ys if ys[-1] != EOS else ys[:-1])
        scores, weights = maps["cross", 1]
        head = int(widget.locator(".live-model__map").get_attribute("data-head")) - 1
        # it opens on the row that reads the tens, with a word of why
        why = widget.locator(".live-model__why")
        row = int(why.get_attribute("data-row"))
        assert why.get_attribute("data-reads") == "\u2581forty-"
        assert int(weights[0, head, row].argmax()) == reference.src(text).index(
            reference.tokenizer.tokenizer.token_to_id("\u2581forty-"))
        assert "because its largest weight falls on" in why.inner_text()
        widget.locator("svg rect.translator-cell[data-row='1']").first.click()
        widget.locator(".live-model__why[data-row='1']").wait_for()
        assert "because" not in widget.locator(".live-model__why").inner_text()
        rows = widget.locator("tbody tr")
        assert rows.count() == weights.size(-1)
        for j in range(rows.count()):
            score = float(rows.nth(j).get_attribute("data-score"))
            weight = float(rows.nth(j).get_attribute("data-weight"))
            assert abs(score - float(scores[0, head, 1, j])) < TOLERANCE * max(1, abs(score))
            assert abs(weight - float(weights[0, head, 1, j])) < TOLERANCE
        widget.locator("select[data-control=switch]").select_option("no-scale")
        tab.wait_for_function("() => document.querySelector(\".live-model[data-lesson="
                              "'attention']\").dataset.switch === 'no-scale'")
        with switched(reference.model, "no-scale"):
            want = reference.tokenizer.decode(reference.greedy(text))
        assert widget.get_attribute("data-output") == want
    elif name == "heads":
        assert widget.locator(".live-model__map").count() == reference.model.config.h
        # every cell of every head prints its weight, PyTorch's to two decimals
        maps, _ = reference.maps(text, ys if ys[-1] != EOS else ys[:-1])
        _, weights = maps["cross", 1]
        for head in range(reference.model.config.h):
            grid = widget.locator(f".live-model__map[data-head='{head + 1}']")
            printed = grid.locator("text.translator-value").evaluate_all(
                "(texts) => texts.map((t) => t.textContent)")
            want = weights[0, head].flatten().tolist()
            assert len(printed) == len(want), head
            assert all(abs(float(p) - w) <= 0.005 + TOLERANCE for p, w in zip(printed, want))
        widget.locator("select[data-control=head]").select_option("3")
        widget.locator("select[data-control=switch]").select_option("silence-head")
        tab.wait_for_function("() => document.querySelector(\".live-model[data-lesson="
                              "'heads']\").dataset.switch === 'silence-head'")
        with switched(reference.model, "silence-head", kind="cross", layer=1, head=2):
            want = reference.tokenizer.decode(reference.greedy(text))
        assert widget.get_attribute("data-output") == want
        assert "silenced" in widget.locator(".live-model__map[data-head='3']").inner_text()
    elif name == "positions":
        rows = widget.locator(".live-model__pair")
        assert rows.count() == 2
        for i in range(2):
            row = rows.nth(i)
            source = row.get_attribute("data-input")
            trained = reference.tokenizer.decode(reference.greedy(source))
            with switched(reference.model, "no-positions"):
                blind = reference.tokenizer.decode(reference.greedy(source))
            assert row.get_attribute("data-trained") == trained
            assert row.get_attribute("data-no-positions") == blind
        assert rows.nth(0).get_attribute("data-no-positions") == rows.nth(1).get_attribute(
            "data-no-positions")
    elif name == "decoding":
        tab.wait_for_function("() => document.querySelector('.live-model__beam').dataset.best")
        src = torch.tensor([reference.src(text)])
        _, _, (ranked,) = beam_search(reference.model, src, None, src.size(1) + MAX_EXTRA + 1,
                                      BOS, EOS, beam_size=4, length_penalty=0.6, return_all=True)
        assert tab.locator(".live-model__beam").get_attribute("data-best") == (
            reference.tokenizer.decode(ranked[0].tokens.tolist()))
        candidates = widget.locator("ol.live-model__topk li")
        assert candidates.count() == 5
        second = int(candidates.nth(1).get_attribute("data-id"))
        candidates.nth(1).locator("button").click()
        tab.wait_for_function(f"() => document.querySelector('.live-model[data-lesson="
                              f"\"decoding\"]').dataset.ys === '1 {second}'")


# ------------------------------------------------------------------------------------------- #
# model.trace: every intermediate value of the forward pass                                  #
# ------------------------------------------------------------------------------------------- #

TRACE = """async ([text, ys, sw]) => {
  const model = await window.translatorDemo.liveModel.load('de');
  return model.trace(model.source(text), ys, sw);
}"""


def close_tree(got, want, where: str) -> None:
    """Every number of the live model's trace against PyTorch's (relative to its size)."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), (where, sorted(got), sorted(want))
        for key in want:
            close_tree(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            close_tree(a, b, f"{where}.{i}")
    else:
        close(got, want, where, relative=True)


def test_the_trace_is_pytorchs_every_intermediate_value(lesson, reference, pytorch_trace):
    text = TEXTS[0]
    src = reference.src(text)
    ys = [BOS, *reference.greedy(text)][:4]
    got = lesson.evaluate(TRACE, [text, ys, "none"])
    assert got.pop("switch") == "none"
    want = pytorch_trace(reference.model, src, ys)
    assert got["source"]["ids"] == src and got["target"]["ids"] == ys
    close_tree(got, want, "trace")
    # the trace's next piece is decode()'s, and a switch reaches the trace too
    _, log_probs = reference.maps(text, ys)
    close(got["logProbs"], log_probs, "log-probabilities")
    blind = lesson.evaluate(TRACE, [text, ys, "no-positions"])
    assert blind["switch"] == "no-positions"
    assert blind["source"]["sum"] == blind["source"]["embedding"]
    with switched(reference.model, "no-positions"):
        _, log_probs = reference.maps(text, ys)
    close(blind["logProbs"], log_probs, "log-probabilities without positions")


def test_the_trace_refuses_ids_outside_the_vocabulary(lesson):
    message = lesson.evaluate("""async () => {
      const model = await window.translatorDemo.liveModel.load('de');
      try { model.trace([5, 2], [1, 999]); return null; } catch (e) { return e.message; }
    }""")
    assert message == "the prefix holds 999, outside the vocabulary of 250"
