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
import random
from collections.abc import Callable
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
    # it opens on cross-attention, layer 2, head 1, numbered from 1
    assert view["kind"] == "cross" and view["layer"] == 2 and view["head"] == "1"
    assert view["caption"].startswith("Layer 2, head 1:")
    options = page.evaluate("() => Array.from(document.querySelectorAll("
                            "'#explorer-layer option, #explorer-head option'),"
                            " (o) => [o.value, o.textContent])")
    assert options == [["1", "layer 1"], ["2", "layer 2"], ["average", "average of the 4 heads"],
                       ["1", "head 1"], ["2", "head 2"], ["3", "head 3"], ["4", "head 4"]]
    # the row of the units piece peaks on the English "one", after "forty"
    names = german.names
    src = [names[i] for i in german.src(CROSSING)]
    out = [names[i] for i in view["ys"][1:]]
    grid = {(r, c): w for r, c, w in view["weights"]}
    units_row = next(i for i, t in enumerate(out) if "ein" in t)
    tens_row = next(i for i, t in enumerate(out) if "vierzig" in t and i > units_row)
    peak = lambda row: max(range(len(src)), key=lambda c: grid[(row, c)])
    assert src[peak(units_row)] == "one", (src, out, peak(units_row))
    assert grid[(units_row, peak(units_row))] > 0.9
    assert "darker" not in view["caption"]
    # the average of the heads is one click away, and shows the tens looking back
    page.select_option("#explorer-head", "average")
    average = {(r, c): w for r, c, w in state(page)["weights"]}
    assert src[max(range(len(src)), key=lambda c: average[(tens_row, c)])] == "\u2581forty-"
    assert "one" in src[max(range(len(src)), key=lambda c: average[(units_row, c)])]
    page.select_option("#explorer-head", "1")
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
    for layer in range(1, german.model.config.N + 1):  # numbered from 1 on the page
        page.select_option("#explorer-layer", str(layer))
        for head in ["average", *map(str, range(1, german.model.config.h + 1))]:
            page.select_option("#explorer-head", head)
            view = state(page)
            assert (view["layer"], view["head"]) == (layer, head)
            maps = reference[kind][layer - 1]
            want = maps.mean(0) if head == "average" else maps[int(head) - 1]
            assert (view["rows"], view["cols"]) == tuple(want.shape)
            assert len(view["weights"]) == want.numel()
            for r, c, w in view["weights"]:
                assert abs(w - float(want[r, c])) < MAP_TOLERANCE, (kind, layer, head, r, c)
    page.select_option("#explorer-kind", "cross")
    page.select_option("#explorer-layer", "2")
    page.select_option("#explorer-head", "1")


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
        # cells print their weights where the map with 40 px cells fits its box, and only there
        printed = tab.evaluate("""() => { const box = document.getElementById('translator-heatmap');
          const svg = box.querySelector('svg');
          return {values: box.querySelectorAll('text.translator-value').length,
                  cell: Number(box.querySelector('rect.translator-cell').getAttribute('width')),
                  map: Number(svg.getAttribute('width')), box: box.clientWidth}; }""")
        assert (printed["values"] > 0) == (printed["cell"] == 40), printed
        assert printed["map"] <= printed["box"] and (width < 1400 or printed["values"]), printed
        width = tab.evaluate("() => document.querySelector('.translator').offsetWidth")
        # the untrained checkpoint writes one piece over and over: the widget keeps its width
        slide_to(tab, 0, "0000")
        untrained = tab.evaluate("""() => ({
          page: document.scrollingElement.scrollWidth, inner: innerWidth,
          widget: document.querySelector('.translator').offsetWidth,
          output: document.getElementById('translator-target').textContent.length})""")
        assert untrained["output"] > 200, untrained  # dreihundert, dozens of times
        assert untrained["widget"] == width and untrained["page"] <= untrained["inner"] + 1, (
            untrained, width)
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
        # no menu there: the average of layer 2's heads, which shows the whole route
        assert (view["layer"], view["head"]) == (2, "average")
        assert tab.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth + 1")
    finally:
        context.close()


def german_numbers() -> list[int]:
    """Edge cases of German number words, and random numbers of every length up to 10^15."""
    rng = random.Random(0)
    edges = [0, 1, 2, 11, 12, 16, 17, 21, 30, 31, 71, 99, 100, 101, 110, 111, 121, 199, 1000,
             1001, 1100, 1101, 10_000, 21_000, 100_000, 101_000, 100_001, 300_017, 999_999,
             1_000_000, 1_000_001, 1_001_000, 2_000_000, 21_000_000, 101_000_000, 10**9,
             2 * 10**9, 10**12, 10**12 + 1, 2 * 10**12, 10**15 - 1]
    return edges + [rng.randrange(10**k) for k in range(1, 16) for _ in range(60)]


def test_german_number_words_are_num2words(page):
    numbers = german_numbers()
    words = page.evaluate("(ns) => ns.map((n) => window.translatorDemo.germanWords(n))", numbers)
    wrong = [(n, w) for n, w in zip(numbers, words) if w != num2words(n, lang="de")]
    assert not wrong, wrong[:5]
    assert words[:4] == ["null", "eins", "zwei", "elf"]
    for bad in [-1, 10**15, 1.5]:
        message = page.evaluate(
            "(n) => { try { window.translatorDemo.germanWords(n); return null; }"
            " catch (e) { return e.name + ': ' + e.message; } }", bad)
        assert message is not None and message.startswith("RangeError") and str(int(bad)) in message


VERDICT = """() => { const v = document.getElementById('translator-verdict');
  return {hidden: v.hidden, correct: v.dataset.correct ?? null,
          expected: v.dataset.expected ?? null, text: v.textContent}; }"""


@pytest.mark.parametrize("text, number", [
    (CROSSING, 441),
    ("three hundred thousand and seventeen", 300_017),
    ("a hundred and one", 101),
    ("twenty one", 21),
    ("hello world", None),
])
def test_the_verdict_compares_the_output_with_num2words(page, german, text, number):
    view = typed(page, text)
    verdict = page.evaluate(VERDICT)
    if number is None:
        assert verdict == {"hidden": True, "correct": None, "expected": None, "text": ""}
        return
    expected = num2words(number, lang="de")
    assert verdict["expected"] == expected and not verdict["hidden"]
    output = german.translate(view["text"])
    assert view["target"] == output
    assert verdict["correct"] == str(output == expected).lower()
    if output == expected:
        assert "right" in verdict["text"] and expected not in verdict["text"]
    else:  # the right German is shown beside the wrong one
        assert "wrong" in verdict["text"] and expected in verdict["text"]


def test_the_verdict_flags_a_wrong_answer_of_the_shipped_model(page, german):
    text = "three hundred thousand and seventeen"
    # the mistake the page quotes
    assert german.translate(text) == "dreihundertsiebzehntausendsiebzehn"
    assert num2words(300_017, lang="de") == "dreihunderttausendsiebzehn"
    typed(page, text)
    verdict = page.evaluate(VERDICT)
    assert verdict["correct"] == "false" and "dreihunderttausendsiebzehn" in verdict["text"]
    prose = (ROOT / "docs" / "try-it.md").read_text(encoding="utf-8")
    assert "*dreihundertsiebzehntausendsiebzehn*" in prose and "*dreihunderttausendsiebzehn*" in prose


def slide_to(tab, index: int, folder: str) -> None:
    tab.evaluate("(i) => { const s = document.getElementById('explorer-checkpoint');"
                 " s.value = String(i); s.dispatchEvent(new Event('input')); }", index)
    tab.wait_for_function(
        "(s) => { const r = document.querySelector('.translator');"
        " return r.dataset.step === s && r.dataset.state === 'done'; }",
        arg=folder, timeout=TIMEOUT_MS)


STATS = """() => { const s = document.getElementById('explorer-checkpoint-stats');
  return {checkpoint: s.dataset.checkpoint, loss: Number(s.dataset.loss),
          exact: Number(s.dataset.exact), text: s.textContent}; }"""


@torch.no_grad()
def validation_loss(model: Model, pairs: list[tuple[str, str]]) -> float:
    """Cross-entropy per target token with the reference prefix fed in, in plain PyTorch."""
    from torch.nn.utils.rnn import pad_sequence

    from vanilla_transformer.data.tokenizer import BOS, PAD

    rows = lambda ids: pad_sequence([torch.tensor(i) for i in ids], batch_first=True,
                                    padding_value=PAD)
    src = rows([model.src(s) for s, _ in pairs])
    tgt = rows([[BOS, *model.tokenizer.encode(t), EOS] for _, t in pairs])
    inputs, gold = tgt[:, :-1], tgt[:, 1:]
    src_mask = (src != PAD).unsqueeze(1)
    tgt_mask = (inputs != PAD).unsqueeze(1) & subsequent_mask(inputs.size(1))
    m = model.model
    log_probs = m.generator(m.decode(m.encode(src, src_mask), src_mask, inputs, tgt_mask))
    picked = log_probs.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
    keep = gold != PAD
    return float(-(picked * keep).sum() / keep.sum())


def test_the_checkpoint_stats_are_each_checkpoints_validation_scores(page, manifest, german):
    from vanilla_transformer.data.numbers import number_corpus

    valid = number_corpus("de", seed=0)["valid"]
    typed(page, CROSSING)
    ticks = page.evaluate("() => Array.from(document.querySelectorAll('#explorer-ticks button'),"
                          " (b) => b.textContent)")
    assert ticks == [str(entry["step"]) for entry in manifest["training_steps"]]
    # the page's own model while the replay is off
    stats = page.evaluate(STATS)
    assert stats["checkpoint"] == "final"
    assert abs(stats["loss"] - validation_loss(german, valid)) < 1e-3
    for index, entry in enumerate(manifest["training_steps"]):
        folder = entry["folder"].split("/")[1]
        slide_to(page, index, folder)
        page.wait_for_function("(s) => document.getElementById('explorer-checkpoint-stats')"
                               ".dataset.checkpoint === s", arg=folder)
        stats = page.evaluate(STATS)
        model = Model(ASSETS / entry["folder"], ASSETS / "tokenizer.json")
        assert abs(stats["loss"] - validation_loss(model, valid)) < 1e-3, entry["step"]
        assert f"{stats['loss']:.3f}" in stats["text"] and f"{stats['exact']:.1f} %" in stats["text"]
        if entry["step"] == 200:  # greedy exact match, measured again for one checkpoint
            sources = [model.src(s) for s, _ in valid]
            outs = translate_ids(model.model, sources, beam_size=1, batch_size=100)
            right = sum(model.tokenizer.decode(o) == t for o, (_, t) in zip(outs, valid))
            assert stats["exact"] == pytest.approx(100 * right / len(valid), abs=0.05)
        assert page.get_attribute("#explorer-ticks button[aria-current='step']",
                                  "title") == f"step {entry['step']}"
    # the loss falls from the untrained model's, about ln(vocabulary), to the end of the run
    first, last = (json.loads((ASSETS / "checkpoint_stats.json").read_text())["checkpoints"][k]
                   for k in ("0000", "1200"))
    assert first["loss"] > 5 > 1 > last["loss"] and first["exact"] == 0 < last["exact"]
    page.click("#explorer-replay-off")
    page.wait_for_function("() => document.getElementById('explorer-checkpoint-stats')"
                           ".dataset.checkpoint === 'final'")


def test_play_walks_through_every_checkpoint(page, manifest):
    typed(page, CROSSING)
    page.click("#explorer-play")
    assert page.get_attribute("#explorer-play", "aria-pressed") == "true"
    seen: list[str] = []
    for entry in manifest["training_steps"]:
        folder = entry["folder"].split("/")[1]
        page.wait_for_function(
            "(s) => { const r = document.querySelector('.translator');"
            " return r.dataset.step === s && r.dataset.state === 'done'; }",
            arg=folder, timeout=TIMEOUT_MS)
        seen.append(folder)
    page.wait_for_function("() => document.querySelector('.translator').dataset.playing === '0'",
                           timeout=TIMEOUT_MS)
    assert seen == [e["folder"].split("/")[1] for e in manifest["training_steps"]]
    assert page.inner_text("#explorer-play") == "Play"
    page.click("#explorer-replay-off")
    page.wait_for_function("() => { const r = document.querySelector('.translator');"
                           " return r.dataset.step === 'final' && r.dataset.state === 'done'; }")


def mulberry32(seed: int) -> Callable[[], float]:
    """The page's seeded generator, in Python."""
    a = seed & 0xFFFFFFFF

    def imul(x: int, y: int) -> int:
        return (x * y) & 0xFFFFFFFF

    def draw() -> float:
        nonlocal a
        a = (a + 0x6D2B79F5) & 0xFFFFFFFF
        t = imul(a ^ (a >> 15), a | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return draw


def kept_ids(logp: torch.Tensor, temperature: float, k: int, p: float) -> list[int]:
    """The ids that top-k then top-p keep at a temperature, most probable first, in torch.

    The log-probabilities over the temperature, the k largest (all for k = 0), and of those the
    fewest whose softmax, renormalised over the k, sums to at least p.
    """
    logp = logp.double()
    order = sorted(range(logp.numel()), key=lambda i: (-float(logp[i]), i))
    ids = order[: k or None]
    if p < 1:
        probs = torch.softmax(logp[ids] / temperature, -1)
        ids = ids[: int((probs.cumsum(0) < p).sum()) + 1]
    return ids


def python_sample(model: Model, text: str, temperature: float, k: int, seed: int,
                  p: float = 1.0) -> list[int]:
    """Top-k and top-p sampling at a temperature, drawing as the page does, from PyTorch's
    probabilities."""
    from vanilla_transformer.data.tokenizer import BOS
    from vanilla_transformer.inference.evaluate import MAX_EXTRA

    draw = mulberry32(seed)
    ys, max_len = [BOS], len(model.src(text)) + MAX_EXTRA + 1
    while ys[-1] != EOS and len(ys) < max_len:
        logp = model.run(text, ys)["probs"].log()
        ids = kept_ids(logp, temperature, k, p)
        probs = torch.softmax(logp.double()[ids] / temperature, -1).tolist()
        u, acc = draw(), 0.0
        choice = ids[-1]
        for i, w in zip(ids, probs):
            acc += w
            if u < acc:
                choice = i
                break
        ys.append(choice)
    return ys


def sampled(tab, temperature: float, k: int, seed: int, p: float = 1.0) -> dict:
    steer(tab, temperature, k, p)
    tab.evaluate("(s) => { document.getElementById('explorer-seed').value = String(s); }", seed)
    tab.click("#explorer-sample")
    tab.wait_for_function(
        "(want) => { const r = document.querySelector('.translator');"
        " return r.dataset.sample === want && r.dataset.state === 'done'; }",
        arg=f"{temperature:g} {k} {seed} {p:g}", timeout=TIMEOUT_MS)
    return state(tab)


def steer(tab, temperature: float, k: int, p: float) -> list[dict]:
    """Moves the steering controls as a reader does, and returns the top-5 list they show."""
    tab.evaluate("""([t, k, p]) => {
      const set = (id, value, type) => { const x = document.getElementById(id);
        x.value = String(value); x.dispatchEvent(new Event(type, {bubbles: true})); };
      set('explorer-temperature', t, 'input'); set('explorer-top-k', k, 'change');
      set('explorer-top-p', p, 'input'); }""", [temperature, k, p])
    tab.wait_for_function(
        "([t, k, p]) => { const l = document.getElementById('explorer-topk');"
        " return Number(l.dataset.temperature) === t && Number(l.dataset.topK) === k"
        " && Number(l.dataset.topP) === p; }", arg=[temperature, k, p])
    return tab.evaluate("""() => Array.from(document.querySelectorAll('#explorer-topk li'),
      (li) => ({id: Number(li.dataset.id), prob: Number(li.dataset.prob),
                cut: li.dataset.cut === '1', text: li.textContent,
                bar: parseFloat(li.querySelector('.explorer__bar').style.width)}))""")


def test_temperature_reshapes_the_bars_of_the_current_step(page, german):
    typed(page, CROSSING)
    click(page, "#explorer-restart")
    view = click(page, "#explorer-step")  # the step after "vierhundert"
    logp = german.run(CROSSING, view["ys"])["probs"].log()
    shown = {}
    for temperature in (0.5, 2.0):
        rows = steer(page, temperature, 0, 1)
        want = torch.softmax(logp.double() / temperature, -1)
        top = torch.topk(want, 5)
        assert [r["id"] for r in rows] == top.indices.tolist()
        for row, p in zip(rows, top.values.tolist()):
            assert abs(row["prob"] - p) < PROB_TOLERANCE, (temperature, row, p)
            assert abs(row["bar"] - 100 * p) < 0.06 and f"{100 * p:.1f} %" in row["text"]
            assert not row["cut"]
        shown[temperature] = [r["prob"] for r in rows]
    # a temperature below 1 sharpens the bars, one above flattens them
    assert shown[0.5][0] > 0.99 > 0.5 > shown[2.0][0]
    assert all(a != b for a, b in zip(shown[0.5], shown[2.0]))
    # the trained probabilities come back at temperature 1
    rows = steer(page, 1.0, 5, 1)
    assert [r["prob"] for r in rows] == pytest.approx(
        torch.topk(logp.exp().double(), 5).values.tolist(), abs=PROB_TOLERANCE)


@pytest.mark.parametrize("temperature, k, p", [(1.0, 3, 1.0), (2.0, 0, 0.2), (2.0, 10, 0.5),
                                               (1.0, 0, 0.9), (0.5, 2, 0.95)])
def test_top_k_and_top_p_grey_out_what_they_cut(page, german, temperature, k, p):
    typed(page, CROSSING)
    view = click(page, "#explorer-restart")
    logp = german.run(CROSSING, view["ys"])["probs"].log()
    rows = steer(page, temperature, k, p)
    kept = kept_ids(logp, temperature, k, p)
    assert len(kept) < 5  # some of the five are cut at each of these settings
    for row in rows:
        assert row["cut"] == (row["id"] not in kept), (row, kept)
        assert ("cut" in row["text"]) == row["cut"]
    note = page.evaluate("() => { const n = document.getElementById('explorer-cut-note');"
                         " return {kept: Number(n.dataset.kept), mass: Number(n.dataset.mass),"
                         " text: n.textContent}; }")
    mass = float(torch.softmax(logp.double() / temperature, -1)[kept].sum())
    assert note["kept"] == len(kept) and abs(note["mass"] - mass) < PROB_TOLERANCE
    steer(page, 1.0, 5, 1)


def test_sampling_is_seeded_and_temperature_zero_is_greedy(page, german):
    text = "seven hundred and seventy-seven thousand, seven hundred and seventy-seven"
    typed(page, text)
    greedy = german.translate(text)
    view = sampled(page, 0, 0, 5)
    assert view["target"] == greedy and view["done"]
    first = sampled(page, 1.5, 0, 3)["ys"]
    click(page, "#explorer-restart")
    assert sampled(page, 1.5, 0, 3)["ys"] == first  # the same seed, the same draws
    assert first == python_sample(german, text, 1.5, 0, 3)
    hot = sampled(page, 2, 5, 11)
    assert hot["ys"] == python_sample(german, text, 2.0, 5, 11)
    assert page.evaluate("() => document.getElementById('explorer-temperature-value')"
                         ".textContent") == "2.0"
    nucleus = sampled(page, 2, 0, 11, 0.3)
    assert nucleus["ys"] == python_sample(german, text, 2.0, 0, 11, 0.3)
    # the JavaScript generator is the Python one
    draws = page.evaluate("() => { const r = window.translatorDemo.mulberry32(7);"
                          " return [r(), r(), r()]; }")
    ref = mulberry32(7)
    assert draws == [ref(), ref(), ref()]
    steer(page, 1.0, 5, 1)


def test_the_smoothing_sentence_links_the_training_lesson(page):
    link = page.get_attribute("#explorer-smoothing a", "href")
    assert link.endswith("learn/training/#top-candidate")
    assert "1 \u2212 \u03b5" in page.inner_text("#explorer-smoothing")


@pytest.mark.parametrize("text", [CROSSING, "three hundred thousand and seventeen",
                                  "twenty one", "a hundred and one",
                                  "nine hundred and ninety-nine thousand, nine hundred and "
                                  "ninety-nine"])
def test_the_beam_tree_is_the_packages_beam_search(page, german, text):
    from vanilla_transformer.data.tokenizer import BOS
    from vanilla_transformer.inference.beam import beam_search
    from vanilla_transformer.inference.evaluate import MAX_EXTRA

    view = typed(page, text)
    page.wait_for_function(
        "(t) => { const b = document.getElementById('explorer-beam-tree');"
        " return b.dataset.state === 'done' && b.dataset.text === t; }",
        arg=view["text"], timeout=TIMEOUT_MS)
    tree = page.evaluate("""() => { const b = document.getElementById('explorer-beam-tree');
      return {best: b.dataset.best, score: Number(b.dataset.bestScore),
              hyps: b.dataset.hypotheses.split('\\n'), tag: b.tagName.toLowerCase(),
              finished: b.querySelectorAll('.beam-node--finished').length,
              labels: Array.from(b.querySelectorAll('.beam-node--finished .beam-score'),
                                 (t) => t.textContent)}; }""")
    src = torch.tensor([german.src(view["text"])])
    _, _, (ranked,) = beam_search(german.model, src, None, src.size(1) + MAX_EXTRA + 1, BOS, EOS,
                                  beam_size=4, length_penalty=0.6, return_all=True)
    best = german.tokenizer.decode(ranked[0].tokens.tolist())
    (package,) = translate_ids(german.model, [german.src(view["text"])], beam_size=4)
    assert tree["tag"] == "svg" and tree["best"] == best == german.tokenizer.decode(package)
    assert abs(tree["score"] - ranked[0].score) < 1e-4
    # every hypothesis is drawn with its score; the best four are the package's, in order
    assert tree["finished"] == len(tree["hyps"]) == len(tree["labels"]) >= len(ranked)
    for line, hyp in zip(tree["hyps"], ranked):
        words, score = line.rsplit(" ", 1)
        assert words == german.tokenizer.decode(hyp.tokens.tolist())
        assert abs(float(score) - hyp.score) < 1e-4
    shown = sorted(float(label.split()[-1]) for label in tree["labels"])
    scores = sorted(float(h.rsplit(" ", 1)[1]) for h in tree["hyps"])
    assert all(abs(a - b) <= 0.0005 + 1e-9 for a, b in zip(shown, scores)), (shown, scores)


def test_at_1400_px_every_cell_prints_its_weight(page):
    view = typed(page, CROSSING)
    printed = page.evaluate("() => Array.from(document.querySelectorAll("
                            "'#translator-heatmap text.translator-value'), (t) => t.textContent)")
    assert len(printed) == len(view["weights"]) == view["rows"] * view["cols"]
    for text, (_, _, weight) in zip(printed, view["weights"]):
        assert float(text) == pytest.approx(weight, abs=0.005 + 1e-9)
    size = page.evaluate("() => Number(document.querySelector("
                         "'#translator-heatmap rect.translator-cell').getAttribute('width'))")
    assert size >= 40
    # the text does not catch the pointer: a click on a printed value reaches its cell
    page.click("#translator-heatmap text.translator-value >> nth=0", force=True)
    assert page.get_attribute("#explorer-cell", "data-row") == "0"


# ------------------------------------------------------------------------------------------- #
# What a break switch moved: #explorer-break-effect against PyTorch's switched model          #
# ------------------------------------------------------------------------------------------- #

EFFECT = """() => { const e = document.getElementById('explorer-break-effect');
  return {hidden: e.hidden, state: e.dataset.state, switch: e.dataset.switch,
          before: Number(e.dataset.probBefore), after: Number(e.dataset.probAfter),
          peakBefore: Number(e.dataset.peakBefore), peakAfter: Number(e.dataset.peakAfter),
          kind: e.dataset.kind, layer: Number(e.dataset.layer), changed: e.dataset.changed,
          head: e.dataset.head || null, best: e.dataset.best || null, text: e.textContent,
          shown: Array.from(e.querySelectorAll('.explorer__effect-number'),
                            (n) => n.textContent)}; }"""


def broken(tab, text: str, switch: str) -> dict:
    """Types `text` with `switch` on, and waits for what the switch moved."""
    tab.select_option("#explorer-break", switch)
    tab.fill("#translator-source", text)
    tab.wait_for_function(
        "([t, s]) => { const r = document.querySelector('.translator');"
        " const e = document.getElementById('explorer-break-effect');"
        " return !r.dataset.pending && r.dataset.source === t && r.dataset.switch === s"
        " && r.dataset.state === 'done' && e.dataset.state === (s === 'none' ? 'none' : 'done')"
        " && (s === 'none' || e.dataset.switch === s); }",
        arg=[text, switch], timeout=TIMEOUT_MS)
    return tab.evaluate(EFFECT)


def greedy_ys(model: Model, text: str) -> list[int]:
    """The trained model's greedy output with <s> and </s>, as the page decodes it."""
    from vanilla_transformer.data.tokenizer import BOS
    from vanilla_transformer.inference.evaluate import MAX_EXTRA

    ys, max_len = [BOS], len(model.src(text)) + MAX_EXTRA + 1
    while ys[-1] != EOS and len(ys) < max_len:
        ys.append(int(model.run(text, ys)["probs"].argmax()))
    return ys


@torch.no_grad()
def forced(model: Model, text: str, ys: list[int], switch: str, kind: str = "cross",
           layer: int = 0, head: int = 0) -> tuple[float, dict]:
    """Under a switch, the product of the probabilities of `ys`'s pieces with `ys` fed in, and
    every attention map's (scores, weights) on the same input."""
    from vanilla_transformer.analysis.switches import record_attention, switched

    src = torch.tensor([model.src(text)])
    tgt = torch.tensor([ys[:-1]])
    with switched(model.model, switch, kind=kind, layer=layer, head=head):
        with record_attention(model.model) as maps:
            memory = model.model.encode(src, None)
            out = model.model.decode(memory, None, tgt, subsequent_mask(len(ys) - 1))
        logp = model.model.generator(out)[0].double()
    prob = float(logp.gather(1, torch.tensor(ys[1:])[:, None]).sum().exp())
    return prob, dict(maps)


def js_number(x: float) -> str:
    """A probability as the page prints it: three decimals, or one significant decimal below
    0.001 (JavaScript's toExponential(1))."""
    if x >= 0.001:
        return f"{x:.3f}"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def close_to(got: float, want: float) -> bool:
    return abs(got - want) <= 1e-4 * max(abs(want), 1e-12) + 1e-7


@pytest.mark.parametrize("switch", ["no-positions", "no-scale", "no-cross-attention",
                                    "silence-head"])
def test_every_switch_shows_what_it_moved_as_pytorch_computes_it(page, german, switch):
    from vanilla_transformer.analysis.switches import ATTENTION_KINDS

    text = CROSSING
    broken(page, text, "none")
    page.select_option("#explorer-kind", "cross")
    page.select_option("#explorer-layer", "2")
    # silence-head with the average on show: the page picks the head that matters most
    page.select_option("#explorer-head", "average" if switch == "silence-head" else "1")
    effect = broken(page, text, switch)
    assert not effect["hidden"] and effect["switch"] == switch
    ys = greedy_ys(german, text)
    before, plain = forced(german, text, ys, "none")
    where = {}
    if switch == "silence-head":
        config = german.model.config
        heads = [(kind, layer, head) for kind in ATTENTION_KINDS for layer in range(config.N)
                 for head in range(config.h)]
        probs = [forced(german, text, ys, switch, *h)[0] for h in heads]
        kind, layer, head = heads[min(range(len(heads)), key=lambda i: (probs[i], i))]
        assert effect["head"] == effect["best"] == f"{kind} {layer + 1} {head + 1}"
        assert page.input_value("#explorer-head") == str(head + 1)  # never the average
        assert "Silenced: head" in effect["text"]
        where = {"kind": kind, "layer": layer, "head": head}
    after, maps = forced(german, text, ys, switch, **where)
    assert close_to(effect["before"], before) and close_to(effect["after"], after)
    assert abs(effect["after"] - effect["before"]) > 1e-3 * effect["before"]
    assert effect["shown"] == [js_number(before), js_number(after)]
    assert effect["shown"][0] != effect["shown"][1]
    # the largest weight of a row of the map the menus name, averaged over heads and rows
    key = (effect["kind"], effect["layer"] - 1)
    peak = lambda m: float(m[key][1][0].max(-1).values.mean())
    assert abs(effect["peakBefore"] - peak(plain)) < MAP_TOLERANCE
    assert abs(effect["peakAfter"] - peak(maps)) < MAP_TOLERANCE
    if switch == "no-scale":
        assert effect["peakAfter"] > effect["peakBefore"]
        assert f"{peak(maps):.3f}" in effect["text"]
    # the output changes, or the caption says why it does not, in those numbers
    output = german.tokenizer.decode(ys[1:])
    changed = page.evaluate("() => document.getElementById('translator-target').textContent")
    assert (effect["changed"] == "true") == (changed != output)
    if changed == output:
        assert "stays the same" in effect["text"] and "closest call" in effect["text"]
    else:
        assert "changes at piece" in effect["text"]
    broken(page, text, "none")
    page.select_option("#explorer-head", "1")


def test_silence_head_offers_the_head_that_matters_most(page):
    broken(page, CROSSING, "none")
    page.select_option("#explorer-kind", "cross")
    page.select_option("#explorer-layer", "2")
    page.select_option("#explorer-head", "1")
    effect = broken(page, CROSSING, "silence-head")
    assert effect["head"] == "cross 2 1"
    if effect["best"] != effect["head"]:
        page.click("#explorer-best-head")
        page.wait_for_function(
            "(b) => { const e = document.getElementById('explorer-break-effect');"
            " return e.dataset.state === 'done' && e.dataset.head === b; }",
            arg=effect["best"], timeout=TIMEOUT_MS)
        kind, layer, head = effect["best"].split()
        assert (page.input_value("#explorer-kind"), page.input_value("#explorer-layer"),
                page.input_value("#explorer-head")) == (kind, layer, head)
    broken(page, CROSSING, "none")
    page.select_option("#explorer-kind", "cross")
    page.select_option("#explorer-layer", "2")
    page.select_option("#explorer-head", "1")


# ------------------------------------------------------------------------------------------- #
# A path through the page: where things are, measured                                         #
# ------------------------------------------------------------------------------------------- #

def open_try_it(browser, origin, width: int, height: int, scheme: str = "light"):
    context = browser.new_context(viewport={"width": width, "height": height},
                                  color_scheme=scheme)
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(origin + PAGE)
    tab.wait_for_function("() => document.querySelector('.translator').dataset.state === 'done'",
                          timeout=TIMEOUT_MS)
    return context, tab


BOX = """(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
  return {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right,
          height: r.height}; }"""


@pytest.mark.parametrize("width, height", [(1400, 900), (390, 844)])
def test_the_map_is_in_the_first_screen_on_a_desktop_and_the_second_on_a_phone(
        browser, origin, width, height):
    context, tab = open_try_it(browser, origin, width, height)
    try:
        tab.wait_for_function("() => document.querySelector('#translator-heatmap svg')")
        box = tab.evaluate(BOX, "#translator-heatmap")
        screens = 1 if width == 1400 else 2
        assert box["height"] > 100 and box["bottom"] <= screens * height, box
    finally:
        context.close()


@pytest.mark.parametrize("width", [1400, 390])
def test_the_beam_tree_fits_its_column_without_a_scrollbar(browser, origin, width):
    context, tab = open_try_it(browser, origin, width, 900)
    try:
        for text in [CROSSING, "seven hundred and seventy-seven thousand, seven hundred and "
                               "seventy-seven"]:
            typed(tab, text)
            tab.wait_for_function(
                "(t) => { const b = document.getElementById('explorer-beam-tree');"
                " return b.dataset.state === 'done' && b.dataset.text === t; }",
                arg=text, timeout=TIMEOUT_MS)
            fit = tab.evaluate("""() => { const b = document.getElementById('explorer-beam');
              const t = document.getElementById('explorer-beam-tree');
              return {box: b.clientWidth, scroll: b.scrollWidth, tree: t.getBoundingClientRect().width,
                      overflow: getComputedStyle(b).overflowX, layout: t.dataset.layout,
                      page: document.scrollingElement.scrollWidth, inner: innerWidth,
                      nodes: t.querySelectorAll('.beam-node').length}; }""")
            assert fit["nodes"] > 4 and fit["overflow"] == "visible", fit
            assert fit["tree"] <= fit["box"] and fit["scroll"] <= fit["box"], fit
            assert fit["page"] <= fit["inner"] + 1, fit
            if width == 390:
                assert fit["layout"] == "outline", fit
    finally:
        context.close()


def test_the_replay_is_at_most_two_screens_with_the_map_just_above_the_slider(browser, origin):
    context, tab = open_try_it(browser, origin, 1400, 900)
    try:
        slide_to(tab, 0, "0000")
        widget = tab.evaluate(BOX, ".translator")
        heatmap = tab.evaluate(BOX, "#translator-heatmap")
        slider = tab.evaluate(BOX, "#explorer-checkpoint")
        assert widget["height"] <= 2 * 900, widget
        beside = slider["left"] >= heatmap["right"] and slider["top"] < heatmap["bottom"]
        above = 0 <= slider["top"] - heatmap["bottom"] <= 150
        assert beside or above, (heatmap, slider)
        rows = tab.evaluate("() => Number(document.getElementById('translator-heatmap')"
                            ".dataset.rows)")
        assert rows > 20  # the untrained model writes one piece over and over
        # its tick labels stay legible
        size = tab.evaluate("() => parseFloat(getComputedStyle(document.querySelector("
                            "'#translator-heatmap .translator-tick--y')).fontSize)")
        assert size >= 11
    finally:
        context.close()


SEEN = """() => { const b = document.getElementById('translator-seen');
  return {visible: b.offsetParent !== null && getComputedStyle(b).display !== 'none',
          text: b.textContent}; }"""


@pytest.mark.parametrize("refused", ["", "one million", "12"])
def test_the_badge_is_cleared_with_the_translation(page, refused):
    typed(page, "twelve")
    page.wait_for_function("() => !document.getElementById('translator-seen').hidden")
    assert page.evaluate(SEEN) == {"visible": True, "text": "12 was in the training pairs"}
    view = typed(page, refused)
    assert view["state"] == "invalid" and view["target"] == ""
    assert not page.evaluate(SEEN)["visible"]
    typed(page, CROSSING)


def test_the_suggested_experiments_each_take_one_click(page, german):
    buttons = page.evaluate("() => Array.from(document.querySelectorAll("
                            "'#explorer-path [data-experiment]'), (b) => b.dataset.experiment)")
    assert 3 <= len(buttons) <= 5
    assert buttons == ["crossing", "temperature", "no-scale", "silence-head", "replay"]
    page.click("#explorer-path [data-experiment='crossing']")
    page.wait_for_function("() => { const r = document.querySelector('.translator');"
                           " return r.dataset.state === 'done' && r.dataset.source ==="
                           " 'four hundred and forty-one' && r.dataset.switch === 'none'; }")
    view = state(page)
    assert (view["kind"], view["layer"], view["head"]) == ("cross", 2, "1")
    assert "ein" in page.inner_text("#explorer-path-note")
    page.click("#explorer-path [data-experiment='temperature']")
    page.wait_for_function("() => document.querySelector('.translator').dataset.state"
                           " === 'stepping' && document.querySelectorAll('#explorer-topk li')"
                           ".length === 5")
    rows = page.evaluate("() => Array.from(document.querySelectorAll('#explorer-topk li'),"
                         " (li) => Number(li.dataset.prob))")
    logp = german.run(CROSSING, state(page)["ys"])["probs"].log().double()
    want = torch.topk(torch.softmax(logp / 2, -1), 5).values.tolist()
    assert rows == pytest.approx(want, abs=PROB_TOLERANCE)
    for name in ("no-scale", "silence-head"):
        page.click(f"#explorer-path [data-experiment='{name}']")
        page.wait_for_function(
            "(s) => { const e = document.getElementById('explorer-break-effect');"
            " return e.dataset.state === 'done' && e.dataset.switch === s; }",
            arg=name, timeout=TIMEOUT_MS)
    effect = page.evaluate(EFFECT)
    assert effect["head"] == effect["best"]
    page.click("#explorer-path [data-experiment='replay']")
    page.wait_for_function("() => { const r = document.querySelector('.translator');"
                           " return r.dataset.step === '0000' && r.dataset.state === 'done'; }",
                           timeout=TIMEOUT_MS)
    assert page.get_attribute("#explorer-play", "aria-pressed") == "true"
    page.click("#explorer-play")  # pause
    page.click("#explorer-replay-off")
    page.wait_for_function("() => { const r = document.querySelector('.translator');"
                           " return r.dataset.step === 'final' && r.dataset.state === 'done'; }")
    steer(page, 1.0, 5, 1)


# ------------------------------------------------------------------------------------------- #
# Figure 1's blocks: their intermediate values for the current token, against PyTorch         #
# ------------------------------------------------------------------------------------------- #

VALUES = """() => { const b = document.getElementById('explorer-values');
  return {state: b.dataset.state, part: b.dataset.part, layer: Number(b.dataset.layer),
          block: b.dataset.block, pos: Number(b.dataset.pos), head: Number(b.dataset.head),
          ys: b.dataset.ys.split(' ').map(Number), src: b.dataset.src.split(' ').map(Number),
          rows: Object.fromEntries(Array.from(b.querySelectorAll('tr'), (tr) => [
            tr.dataset.name, {values: tr.dataset.values.split(',').map(Number),
                              pos: tr.dataset.pos === undefined ? null : Number(tr.dataset.pos),
                              cells: tr.querySelectorAll('rect').length}]))}; }"""


@pytest.mark.parametrize("part, layer, block", [("decoder", 2, "cross"), ("decoder", 1, "self"),
                                                ("decoder", 2, "ff"), ("encoder", 1, "self"),
                                                ("encoder", 2, "ff")])
def test_a_figure1_block_shows_its_values_for_the_current_token(page, german, pytorch_trace,
                                                                 part, layer, block):
    typed(page, CROSSING)
    page.select_option("#explorer-kind", "cross")
    page.select_option("#explorer-head", "2")
    page.wait_for_function("() => document.querySelector('#explorer-figure1 .figure1__block')")
    # the token: a pointed cell of the cross-attention map, row "ein" and column "one"
    page.hover("#translator-heatmap rect.translator-cell[data-row='1'][data-col='4']")
    target = (f"#explorer-figure1 .figure1__block[data-part='{part}']"
              f"[data-layer='{layer}'][data-block='{block}']")
    page.hover(target)
    page.wait_for_function(
        "([p, l, b]) => { const v = document.getElementById('explorer-values');"
        " return v.dataset.state === 'done' && v.dataset.part === p &&"
        " v.dataset.layer === String(l) && v.dataset.block === b; }",
        arg=[part, layer, block])
    shown = page.evaluate(VALUES)
    trace = pytorch_trace(german.model, shown["src"], shown["ys"])
    assert shown["src"] == german.src(CROSSING)
    side = trace["source" if part == "encoder" else "target"]
    values = side["layers"][layer - 1][block]
    pos = shown["pos"]
    # the current token: the pointed cell's row on the decoder side, its column on the other
    assert pos == (1 if part == "decoder" else 4)
    assert german.names[shown["src"][4]] == "one"
    want = {"residual": values["residual"][pos], "norm": values["norm"][pos]}
    if block == "ff":
        want["out"] = values["out"][pos]
    else:
        head = shown["head"] - 1
        assert head == 1  # the head on show
        key = pos if block == "self" else int(values["weights"][head, pos].argmax())
        want |= {"q": values["q"][head, pos], "k": values["k"][head, key],
                 "v": values["v"][head, key]}
        assert shown["rows"]["k"]["pos"] == key
    assert set(shown["rows"]) == set(want)
    for name, vector in want.items():
        got = torch.tensor(shown["rows"][name]["values"], dtype=torch.float64)
        assert got.shape == vector.shape and shown["rows"][name]["cells"] == vector.numel()
        assert torch.allclose(got, vector.double(), atol=1e-4), name
    page.select_option("#explorer-head", "1")
