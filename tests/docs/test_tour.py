"""The tour (docs/tour.md, docs/javascripts/tour.js): one sentence through the trained
translator, step by step, in Chromium.

- it has 15 to 20 steps, numbered 1, 2, ..., that light the parts of Figure 1 the issue of a
  whole pass needs, from the pieces to beam search;
- every number it draws is PyTorch's for the same sentence: each value marked with its place in
  the trace equals the package's module outputs there (forward hooks), the loop's pieces and
  probabilities are greedy decoding's, and the best beam is `beam_search`'s;
- the arrow keys, the buttons and `#step-N` addresses move through it, and the map lights the
  step's part;
- each step fits one screen at 1400 x 900 and at 390 x 844, without sideways scrolling;
- a sentence the learner types is followed, and one the tokenizer cannot read is refused.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from vanilla_transformer.data.tokenizer import BOS, EOS, SharedTokenizer
from vanilla_transformer.inference.beam import beam_search
from vanilla_transformer.inference.evaluate import MAX_EXTRA, translate_ids
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.training.checkpoints import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets" / "translator"
PATH = "/tour/"
TIMEOUT_MS = 60_000
TOLERANCE = 1e-4
# the parts of Figure 1 a pass through the whole model goes by
PARTS = {"src-input", "src-embed", "src-pos", "enc-self", "enc-norm", "enc-ff", "memory",
         "tgt-input", "dec-self", "cross", "linear", "softmax", "output"}
# steps named by what they draw: (step, words its title holds)
TOPICS = [(1, "ids"), (2, "vector"), (3, "positional"), (4, "Q, K and V"), (5, "Scores"),
          (6, "weighted sum"), (7, "heads"), (8, "LayerNorm"), (9, "feed-forward"),
          (10, "encoder's output"), (12, "Masked self-attention"), (13, "Cross-attention"),
          (14, "Logits"), (15, "Softmax over the vocabulary"), (16, "next piece"),
          (17, "until"), (18, "Beam search")]
HEADER = "() => document.querySelector('.md-header').getBoundingClientRect().height"


class Reference:
    def __init__(self) -> None:
        self.model = load_checkpoint(ASSETS / "model.pt")[0].eval()
        self.tokenizer = SharedTokenizer.load(ASSETS / "tokenizer.json")

    def greedy(self, src: list[int]) -> list[int]:
        (out,) = translate_ids(self.model, [src], beam_size=1, batch_size=1)
        return out


@pytest.fixture(scope="module")
def reference() -> Reference:
    return Reference()


def open_tour(browser, origin, width: int, height: int, scheme: str = "light", hash_: str = ""):
    context = browser.new_context(viewport={"width": width, "height": height},
                                  color_scheme=scheme)
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(origin + PATH + hash_)
    tab.wait_for_function("() => document.querySelector('#tour').dataset.state === 'done'")
    return context, tab, errors


@pytest.fixture(scope="module")
def tour(browser, origin):
    context, tab, errors = open_tour(browser, origin, 1400, 900)
    yield tab
    context.close()
    assert not errors, errors


def on_show(tab) -> dict:
    return tab.evaluate("""() => {
      const root = document.querySelector('#tour');
      const shown = Array.from(root.querySelectorAll('[data-tour-step]'))
        .filter((s) => !s.hidden);
      const lit = Array.from(root.querySelectorAll('.tour-map--full .tour-map__part.is-on'),
                             (g) => g.dataset.part);
      return {step: Number(root.dataset.step), shown: shown.map((s) => Number(s.dataset.tourStep)),
              part: shown.length ? shown[0].dataset.part : null, lit: [...new Set(lit)],
              hash: location.hash};
    }""")


def go(tab, step: int) -> None:
    tab.evaluate("(n) => { location.hash = '#step-' + n; }", step)
    tab.wait_for_function("(n) => document.querySelector('#tour').dataset.step === String(n)",
                          arg=step)


def test_the_tour_has_15_to_20_steps_over_every_part(tour):
    steps = tour.evaluate("() => Array.from(document.querySelectorAll('#tour [data-tour-step]'),"
                          " (s) => [Number(s.dataset.tourStep), s.dataset.part,"
                          " s.querySelector('.tour__title').textContent,"
                          " Array.from(s.querySelectorAll('a'), (a) => a.pathname)])")
    assert 15 <= len(steps) <= 20
    assert [s[0] for s in steps] == list(range(1, len(steps) + 1))
    assert {s[1] for s in steps} == PARTS
    for number, words in TOPICS:
        assert words in steps[number - 1][2], (number, steps[number - 1][2])
    # each step links to a lesson that goes deeper
    for number, _, _, links in steps:
        assert any("/learn/" in link for link in links), number
    # the map draws every part a step lights
    parts = tour.evaluate("() => Array.from(document.querySelectorAll("
                          "'#tour .tour-map--full .tour-map__part'), (g) => g.dataset.part)")
    assert set(parts) >= PARTS


def value_at(trace: dict, path: str) -> float:
    node = trace
    for key in path.split("."):
        node = node[int(key)] if key.isdigit() else node[key]
    return float(node)


SHOWN = """() => {
  const step = Array.from(document.querySelectorAll('#tour [data-tour-step]'))
    .find((s) => !s.hidden);
  return Array.from(step.querySelectorAll('[data-trace]'), (e) => ({
    path: e.dataset.trace, value: Number(e.dataset.value), exp: e.hasAttribute('data-exp'),
    text: e.tagName === 'rect' ? null : e.textContent}));
}"""


def test_every_number_shown_is_pytorchs(tour, reference, pytorch_trace):
    root = tour.locator("#tour")
    src = [int(i) for i in root.get_attribute("data-src").split()]
    prefix = [int(i) for i in root.get_attribute("data-prefix").split()]
    out = reference.greedy(src)
    ys = [BOS, *out] + ([] if out and out[-1] == EOS else [EOS])
    # the decoder is traced on the German up to its last piece, so that it chooses that piece
    assert prefix == ys[:-2]
    want = pytorch_trace(reference.model, src, prefix)
    count = tour.evaluate("() => document.querySelectorAll('#tour [data-tour-step]').length")
    checked = 0
    for step in range(1, count + 1):
        go(tour, step)
        if step == count:
            tour.wait_for_function("() => document.querySelector('.tour-beams').dataset.best")
        for item in tour.evaluate(SHOWN):
            number = value_at(want, item["path"])
            assert abs(item["value"] - number) <= TOLERANCE * max(1.0, abs(number)), item
            checked += 1
            if item["text"] is None:  # a cell: its colour, and its value in data-value
                continue
            shown = math.exp(number) if item["exp"] else number
            text = item["text"].replace("%", "").strip()
            digits = text.split(".")[-1] if "." in text else ""
            factor = 100 if "%" in item["text"] else 1
            assert abs(float(text) / factor - shown) <= 0.51 * 10 ** -len(digits) / factor + 1e-9, (
                item, shown)
    assert checked > 1000
    check_the_loop_and_the_beam(tour, reference, src, ys)


def check_the_loop_and_the_beam(tour, reference, src, ys) -> None:
    go(tour, 17)
    rows = tour.evaluate("() => Array.from(document.querySelectorAll('.tour-loop tbody tr'),"
                         " (r) => [Number(r.dataset.id), Number(r.dataset.prob)])")
    assert [r[0] for r in rows] == ys[1:]
    memory = reference.model.encode(torch.tensor([src]), None)
    with torch.no_grad():
        for t, (token, prob) in enumerate(rows):
            prefix = torch.tensor([ys[:t + 1]])
            out = reference.model.decode(memory, None, prefix, subsequent_mask(t + 1))
            p = reference.model.generator(out[:, -1])[0].exp()
            assert int(p.argmax()) == token
            assert abs(prob - float(p[token])) < TOLERANCE
    go(tour, 18)
    tour.wait_for_function("() => document.querySelector('.tour-beams').dataset.best")
    src_t = torch.tensor([src])
    _, _, (ranked,) = beam_search(reference.model, src_t, None, src_t.size(1) + MAX_EXTRA + 1,
                                  BOS, EOS, beam_size=4, length_penalty=0.6, return_all=True)
    best = tour.locator(".tour-beams").get_attribute("data-best")
    assert best == reference.tokenizer.decode(ranked[0].tokens.tolist())


def test_the_keys_and_buttons_walk_it_and_light_the_map(tour):
    go(tour, 1)
    count = tour.evaluate("() => document.querySelectorAll('#tour [data-tour-step]').length")
    tour.locator("body").click(position={"x": 5, "y": 300})
    for step in range(1, count + 1):
        view = on_show(tour)
        assert view["step"] == step and view["shown"] == [step]
        assert view["hash"] == f"#step-{step}"
        assert view["lit"] == [view["part"]]
        tour.keyboard.press("ArrowRight")
    assert on_show(tour)["step"] == count  # it stops at the last step
    assert tour.locator("#tour-next").is_disabled()
    tour.keyboard.press("ArrowLeft")
    assert on_show(tour)["step"] == count - 1
    tour.locator("#tour-prev").click()
    assert on_show(tour)["step"] == count - 2
    tour.locator("#tour-next").click()
    assert on_show(tour)["step"] == count - 1
    # typing in the field moves nothing
    tour.locator("#tour-source").press("ArrowLeft")
    assert on_show(tour)["step"] == count - 1


def test_a_step_address_opens_that_step(browser, origin):
    context, tab, errors = open_tour(browser, origin, 1400, 900, hash_="#step-7")
    try:
        assert on_show(tab)["shown"] == [7]
        assert tab.locator("[data-tour-step='7'] .tour__picture svg").count() > 0
        go(tab, 12)
        assert on_show(tab)["part"] == "dec-self"
        tab.go_back()
        tab.wait_for_function("() => document.querySelector('#tour').dataset.step === '7'")
        assert not errors, errors
    finally:
        context.close()


LONGEST = "nine hundred and ninety-nine thousand nine hundred and ninety-nine"


@pytest.mark.parametrize(("size", "sentence"), [((1400, 900), ""), ((390, 844), ""),
                                                ((1400, 900), LONGEST)],
                         ids=["1400", "390", "1400-longest"])
def test_each_step_fits_one_screen(browser, origin, size, sentence):
    width, height = size
    context, tab, errors = open_tour(browser, origin, width, height)
    try:
        if sentence:
            tab.fill("#tour-source", sentence)
            tab.wait_for_function("(t) => { const r = document.querySelector('#tour');"
                                  " return r.dataset.text !== t && r.dataset.state === 'done'; }",
                                  arg="four hundred and forty-one")
            assert len(tab.locator("#tour").get_attribute("data-src").split()) == 12
        count = tab.evaluate("() => document.querySelectorAll('#tour [data-tour-step]').length")
        header = tab.evaluate(HEADER)
        for step in range(1, count + 1):
            go(tab, step)
            if step == count:
                tab.wait_for_function("() => document.querySelector('.tour-beams').dataset.best")
            box = tab.evaluate("""() => {
              const root = document.querySelector('#tour');
              const step = root.querySelector('[data-tour-step]:not([hidden])');
              const picture = step.querySelector('.tour__picture');
              const map = root.querySelector('.tour__map').getBoundingClientRect();
              return {tour: root.getBoundingClientRect().height, map: map.height,
                      step: step.getBoundingClientRect().height,
                      sideways: picture.scrollWidth - picture.clientWidth,
                      page: document.documentElement.scrollWidth - innerWidth};
            }""")
            # the field, the map (above the step on a phone) and the step, under the header
            assert box["tour"] <= height - header, (step, box)
            assert box["sideways"] <= 1 and box["page"] <= 0, (step, box)
        assert not errors, errors
    finally:
        context.close()


def test_it_follows_a_typed_sentence_and_refuses_what_it_cannot_read(browser, origin,
                                                                      reference):
    context, tab, errors = open_tour(browser, origin, 390, 844, scheme="dark", hash_="#step-13")
    try:
        tab.fill("#tour-source", "Seventy-Three")
        tab.wait_for_function("() => document.querySelector('#tour').dataset.text === "
                              "'seventy-three' && document.querySelector('#tour').dataset.state"
                              " === 'done'")
        src = reference.tokenizer.encode("seventy-three") + [EOS]
        assert tab.locator("#tour").get_attribute("data-src") == " ".join(map(str, src))
        assert tab.locator("#tour").get_attribute("data-output") == reference.tokenizer.decode(
            reference.greedy(src))
        assert on_show(tab)["shown"] == [13]
        assert tab.locator("[data-tour-step='13'] .tour__picture svg").count() == 1
        # a #step-N address keeps the sentence, though the page is drawn again
        go(tab, 12)
        tab.wait_for_function("() => { const r = document.querySelector('#tour');"
                              " return r.dataset.state === 'done' && r.dataset.step === '12'"
                              " && r.dataset.text === 'seventy-three'; }")
        assert tab.input_value("#tour-source") == "Seventy-Three"
        tab.fill("#tour-source", LONGEST + " and " + LONGEST)
        tab.wait_for_function("() => document.querySelector('#tour').dataset.state === "
                              "'invalid'")
        assert "at most 16" in tab.inner_text("#tour-status")
        tab.fill("#tour-source", "twelve!")
        tab.wait_for_function("() => document.querySelector('#tour-status').textContent"
                              ".includes('\u201c!\u201d')")
        assert tab.locator("#tour").get_attribute("data-state") == "invalid"
        assert "no \u201c!\u201d" in tab.inner_text("#tour-status")
        assert tab.locator("[data-tour-step='13'] .tour__picture").inner_text() == ""
        assert not errors, errors
    finally:
        context.close()
