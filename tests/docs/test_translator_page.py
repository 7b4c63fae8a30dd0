"""The "Try it" page translates in the browser exactly as the Python model does.

The page (docs/try-it.md, docs/javascripts/translator.js) runs the committed ONNX graphs of
docs/assets/translator/ with onnxruntime-web. These tests type phrases into it, numbers the model
never saw among them, and compare what it shows with greedy decoding of the committed checkpoint
in PyTorch: the German text, the tokens on both sides, and the heatmap's rows, columns and tick
labels. They also check the messages for inputs the model cannot take, the page at 390 px in
both colour schemes, that other pages load neither ort nor the model, and that the page works
when reached by instant navigation. Every test fails on a console error or on a request that
leaves the site.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from vanilla_transformer.data.numbers import DEFAULT_SIZES, number_words, split_numbers
from vanilla_transformer.data.tokenizer import EOS, SharedTokenizer
from vanilla_transformer.inference.evaluate import translate_ids
from vanilla_transformer.training.checkpoints import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets" / "translator"
PAGE = "/try-it/"
TIMEOUT_MS = 60_000
MIN_TEXT_PX = 11

# Numbers below 1000 are all in the training set; the test split's numbers are unseen.
SEEN = [0, 7, 13, 21, 40, 99, 100, 117, 421, 777, 808, 999]
PHRASES = [
    "one thousand",
    "one thousand, nine hundred and eighty-four",
    "twenty-one thousand",
    "one hundred thousand",
    "seven hundred and seventy-seven thousand, seven hundred and seventy-seven",
    "Four Hundred  and Twenty-One",  # read as lower case with single spaces
    "  ninety-nine ",
    "one one one",  # not a number, but in the vocabulary: translated all the same
    "hundred",
]


def unseen(count: int) -> list[str]:
    return [number_words(n) for n in split_numbers(DEFAULT_SIZES, seed=0)["test"][:count]]


def all_phrases() -> list[str]:
    return [number_words(n) for n in SEEN] + unseen(12) + PHRASES


def clean(text: str) -> str:
    """What the page translates: outer spaces dropped, runs of spaces as one, lower case."""
    return " ".join(text.split()).lower()


class Reference:
    """Greedy decoding of the committed checkpoint in PyTorch, as `translate_sentences` does."""

    def __init__(self) -> None:
        self.model = load_checkpoint(ASSETS / "model.pt")[0].eval()
        self.tokenizer = SharedTokenizer.load(ASSETS / "tokenizer.json")
        vocab = self.tokenizer.tokenizer.get_vocab()
        self.names = {i: token for token, i in vocab.items()}

    def __call__(self, text: str) -> dict:
        src = self.tokenizer.encode(text) + [EOS]
        (out,) = translate_ids(self.model, [src], beam_size=1, batch_size=1)
        steps = out + [EOS] if len(out) < len(src) + 50 else out
        return {"target": self.tokenizer.decode(out),
                "source_tokens": [self.names[i] for i in src],
                "target_tokens": [self.names[i] for i in steps]}


@pytest.fixture(scope="module")
def reference() -> Reference:
    return Reference()


STATE = """() => {
  const root = document.querySelector('.translator');
  if (!root) return null;
  const texts = (selector) => Array.from(root.querySelectorAll(selector), (el) => el.textContent);
  const svg = root.querySelector('#translator-heatmap svg');
  const tick = svg && svg.querySelector('text.translator-tick');
  return {
    state: root.dataset.state, source: root.dataset.source, ms: Number(root.dataset.ms),
    readyAt: Number(root.dataset.readyAt), status: root.querySelector('#translator-status').textContent,
    target: root.querySelector('#translator-target').textContent,
    source_tokens: texts('#translator-source-tokens li'),
    target_tokens: texts('#translator-target-tokens li'),
    rows: svg ? Number(svg.parentElement.dataset.rows) : 0,
    cols: svg ? Number(svg.parentElement.dataset.cols) : 0,
    cells: svg ? svg.querySelectorAll('rect.translator-cell').length : 0,
    x_ticks: svg ? texts('#translator-heatmap text.translator-tick--x') : [],
    y_ticks: svg ? texts('#translator-heatmap text.translator-tick--y') : [],
    tick_px: tick ? parseFloat(getComputedStyle(tick).fontSize) : 0,
  };
}"""

SETTLED = """(text) => {
  const root = document.querySelector('.translator');
  return root && root.dataset.source === text && ['done', 'invalid'].includes(root.dataset.state);
}"""


def shown(page, typed: str) -> dict:
    """Type `typed` into the page and return what it shows once it has translated it."""
    page.fill("#translator-source", typed)
    page.wait_for_function(SETTLED, arg=clean(typed), timeout=TIMEOUT_MS)
    return page.evaluate(STATE)


def open_page(page, url: str) -> dict:
    page.goto(url, wait_until="load")
    page.wait_for_function("() => ['done', 'invalid', 'failed'].includes("
                           "document.querySelector('.translator').dataset.state)",
                           timeout=TIMEOUT_MS)
    state = page.evaluate(STATE)
    assert state["state"] == "done", state["status"]
    return state


def assert_clean(page) -> None:
    blocked, errors = page.recorder.take()
    assert not blocked, f"requests outside the site: {blocked}"
    assert not errors, errors


def check_view(view: dict, want: dict) -> None:
    assert view["source_tokens"] == want["source_tokens"]
    assert view["target_tokens"] == want["target_tokens"]
    rows, cols = len(want["target_tokens"]), len(want["source_tokens"])
    assert (view["rows"], view["cols"], view["cells"]) == (rows, cols, rows * cols)
    assert view["x_ticks"] == want["source_tokens"]
    assert view["y_ticks"] == want["target_tokens"]
    assert view["tick_px"] >= MIN_TEXT_PX


def test_the_page_translates_as_the_python_model(origin, tab, reference, capsys):
    first = open_page(tab, origin + PAGE)
    phrases = all_phrases()
    assert len(phrases) >= 20 and len(unseen(12)) == 12
    agree, times, problems = 0, [], []
    for phrase in phrases:
        view = shown(tab, phrase)
        want = reference(clean(phrase))
        assert view["state"] == "done", (phrase, view["status"])
        if view["target"] == want["target"]:
            agree += 1
        else:
            problems.append(f"{phrase!r}: page {view['target']!r}, Python {want['target']!r}")
        check_view(view, want)
        times.append(view["ms"])
    with capsys.disabled():
        print(f"\ntry-it: model ready {first['readyAt']:.0f} ms after navigation; "
              f"median translation {statistics.median(times):.1f} ms over {len(times)} phrases; "
              f"agreement with Python {agree}/{len(phrases)}")
    assert not problems, "\n".join(problems)
    assert_clean(tab)


def test_the_javascript_tokenizer_is_the_python_one(origin, tab, reference):
    open_page(tab, origin + PAGE)
    texts = all_phrases() + [
        "", " ", "  four", "four  ", "<s>", "<s>four", "four<s>five", "a<unk>b", "</s></s>",
        "four\thundred", "fünf", "\U0001f600 four", "four\u2581five", "\u2581\u2581four",
        "x<s", "FOUR", "vierhunderteinundzwanzig", "twenty-one thousand, three",
    ]
    vocab = reference.tokenizer.vocab_size
    id_lists = [[5, 9, 2, 7], [1, 0, 3, 3, 40], [3], [], *[[(7 * i + 3 * j) % vocab for j in
                                                         range(1 + i % 9)] for i in range(40)]]
    got = tab.evaluate(
        """async ([texts, idLists]) => {
             const model = await window.translatorDemo.loadModel();
             const d = model.manifest.decoding;
             return {ids: texts.map((t) => model.tokenizer.encode(t)),
                     decoded: idLists.map((ids) => model.tokenizer.decode(ids, d))};
           }""",
        [texts, id_lists],
    )
    tok = reference.tokenizer
    assert got["ids"] == [tok.encode(t) for t in texts]
    assert got["decoded"] == [tok.decode(ids) for ids in id_lists]
    assert_clean(tab)


@pytest.mark.parametrize(("typed", "message"), [
    ("four hundred & five", "\u201c&\u201d"),
    ("zwölf ½", "\u201c\u00bd\u201d"),
    ("<s> one", "\u201c<\u201d, \u201c>\u201d"),
    ("   ", "Type a number"),
    ("one " * 80, "Too long: 81 tokens"),
])
def test_an_input_the_model_cannot_take_says_so(origin, tab, typed, message):
    if tab.evaluate("() => location.pathname") != PAGE:
        open_page(tab, origin + PAGE)
    view = shown(tab, typed)
    assert view["state"] == "invalid"
    assert message in view["status"], view["status"]
    assert view["target"] == "" and view["rows"] == 0 and not view["source_tokens"]
    view = shown(tab, "twelve")  # and the next input is translated again
    assert view["state"] == "done" and view["target"] == "zwölf"
    assert_clean(tab)


def test_other_pages_load_neither_ort_nor_the_model_and_instant_navigation_works(
        origin, tab, reference):
    tab.goto(origin + "/getting-started/", wait_until="load")
    tab.wait_for_timeout(500)
    resources = tab.evaluate(
        "() => performance.getEntriesByType('resource').map((entry) => entry.name)")
    assert not [r for r in resources if "onnxruntime-web" in r or "assets/translator/" in r]
    assert tab.evaluate("() => typeof window.ort") == "undefined"
    tab.evaluate("() => { window.__sameDocument = true; }")
    for _ in range(2):  # there, away and back again: the second visit reuses the model
        navigate_instantly(tab, origin + PAGE)
        tab.wait_for_function("(path) => location.pathname === path", arg=PAGE)
        tab.wait_for_function("() => { const r = document.querySelector('.translator');"
                              " return r && r.dataset.state === 'done'; }", timeout=TIMEOUT_MS)
        phrase = unseen(1)[0]
        view = shown(tab, phrase)
        want = reference(phrase)
        assert view["target"] == want["target"]
        check_view(view, want)
        navigate_instantly(tab, origin + "/")
        tab.wait_for_function("() => location.pathname === '/'")
    assert tab.evaluate("() => window.__sameDocument === true"), "a link reloaded the page"
    assert_clean(tab)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_fits_a_phone(browser, origin, scheme, reference):
    context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    page.recorder = recorder = _Recorder(origin)
    context.route("**/*", recorder.route)
    page.on("console", recorder.console)
    page.on("pageerror", recorder.page_error)
    try:
        open_page(page, origin + PAGE)
        assert page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == (
            "slate" if scheme == "dark" else "default")
        phrase = "seven hundred and seventy-seven thousand, seven hundred and seventy-seven"
        check_view(shown(page, phrase), reference(phrase))
        layout = page.evaluate("""() => {
          const box = document.querySelector('#translator-heatmap');
          const svg = box.querySelector('svg');
          return {scrollWidth: document.scrollingElement.scrollWidth, innerWidth: innerWidth,
                  boxRight: box.getBoundingClientRect().right, boxScrolls: box.scrollWidth > box.clientWidth,
                  overflowX: getComputedStyle(box).overflowX, svgWidth: svg.getBoundingClientRect().width,
                  svgNatural: Number(svg.getAttribute('width'))};
        }""")
        assert layout["scrollWidth"] <= layout["innerWidth"] + 1, layout
        assert layout["boxRight"] <= 390 + 1, layout
        assert layout["overflowX"] in ("auto", "scroll"), layout
        assert abs(layout["svgWidth"] - layout["svgNatural"]) < 1, "the heatmap was shrunk"
        blocked, errors = recorder.take()
        assert not blocked and not errors, blocked + errors
    finally:
        context.close()


class _Recorder:
    """Requests to other origins (aborted), console errors and page errors of one page."""

    def __init__(self, origin: str) -> None:
        self.origin, self.blocked, self.errors = origin, [], []

    def route(self, route) -> None:
        if route.request.url.startswith(self.origin + "/"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort("blockedbyclient")

    def console(self, message) -> None:
        if message.type == "error":
            self.errors.append(f"console error: {message.text}")

    def page_error(self, error) -> None:
        self.errors.append(f"page error: {error}")

    def take(self) -> tuple[list[str], list[str]]:
        taken = self.blocked, self.errors
        self.blocked, self.errors = [], []
        return taken


def navigate_instantly(tab, href: str) -> None:
    """Follow a link the way a reader does, so that Material's instant navigation handles it."""
    tab.evaluate(
        """(href) => {
          const a = document.createElement('a');
          a.href = href;
          document.body.appendChild(a);
          a.click();
        }""",
        href,
    )


def test_the_manifest_names_the_decoding_the_page_uses():
    manifest = json.loads((ASSETS / "manifest.json").read_text(encoding="utf-8"))
    script = (ROOT / "docs" / "javascripts" / "translator.js").read_text(encoding="utf-8")
    for key in ("start_symbol", "end_symbol", "max_extra", "max_src_tokens"):
        assert key in manifest["decoding"] and key in script
