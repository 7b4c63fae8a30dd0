"""Tests of the Learn path's lessons as a reader gets them: in a browser, and as notebooks.

The lessons are the pages of the "Learn the Transformer" section of mkdocs.yml's navigation,
except its index, the Notation page and the Rebuild page. For each lesson, in the built site
(scripts/test.sh builds it into site/; VANILLA_TRANSFORMER_SITE_DIR points elsewhere):

- it shows at least `MIN_FIGURES` figures drawn by docs/figures/, and opens with one before any code;
- it is at most `MAX_SCREENS` screens long at 1400 px (page height / a 900 px viewport);
- an "In one minute" summary box sits right under its title, before any code;
- it links the Notation page at least once;
- at 390 px no code block scrolls sideways (answers and "Going deeper" blocks opened);
- it offers its notebook for download (docs/hooks/lesson_notebooks.py), a valid nbformat 4
  notebook whose code cells are the page's code blocks, in order;
- that notebook runs from top to bottom in a Jupyter kernel started in the repository's root.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("VANILLA_TRANSFORMER_SITE_DIR", ROOT / "site")).resolve()
TIMEOUT_MS = 30_000
NOT_LESSONS = {"index.md", "tour.md", "notation.md", "rebuild.md"}
LEARN_SECTION = "Learn the Transformer"

PHONE, DESKTOP, SCREEN_HEIGHT = 390, 1400, 900
MIN_FIGURES = 4
MAX_SCREENS = 8.0
SUMMARY_TITLE = "In one minute"
CELL_TIMEOUT_S = 600

WAIT_FOR_MATH = "() => document.documentElement.getAttribute('data-math-typeset') === location.pathname"


class _AnyTagLoader(yaml.SafeLoader):
    """A YAML loader that reads mkdocs.yml's own tags (!ENV, !relative) as plain values."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def lessons() -> list[str]:
    """The lessons' sources ("learn/attention.md", ...) in the navigation's order."""
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_AnyTagLoader)
    section = next(item[LEARN_SECTION] for item in config["nav"]
                   if isinstance(item, dict) and LEARN_SECTION in item)
    pages = [next(iter(entry.values())) if isinstance(entry, dict) else entry for entry in section]
    return [page for page in pages if Path(page).name not in NOT_LESSONS]


LESSONS = lessons()


def url_path(source: str) -> str:
    """The URL path of a lesson: "learn/attention.md" -> "/learn/attention/"."""
    return "/" + source.removesuffix(".md") + "/"


def notebook_file(site: Path, source: str) -> Path:
    """Where the build writes a lesson's notebook: next to its page."""
    stem = Path(source).stem
    return site / source.removesuffix(".md") / f"{stem}.ipynb"


def test_the_learn_section_lists_the_lessons():
    assert len(LESSONS) >= 7, LESSONS
    assert all(page.startswith("learn/") and page.endswith(".md") for page in LESSONS)
    for page in LESSONS:
        assert (ROOT / "docs" / page).is_file(), f"the navigation lists {page}, which does not exist"


# --------------------------------------------------------------------------------------------- #
# What the reader sees, measured once per width                                                 #
# --------------------------------------------------------------------------------------------- #

FACTS = """(openAll) => {
  if (openAll) document.querySelectorAll('.md-content details').forEach((d) => { d.open = true; });
  const content = document.querySelector('.md-content .md-typeset');
  const before = (a, b) => b === null
    || (a !== null && (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0);
  const h1 = content.querySelector('h1');
  let next = h1 ? h1.nextElementSibling : null;
  const summaries = Array.from(content.querySelectorAll('div.admonition.summary'));
  const summary = summaries.find((box) => {
    const title = box.querySelector(':scope > .admonition-title');
    return title && title.textContent.trim() === 'In one minute';
  }) || null;
  const firstCode = content.querySelector('div.highlight pre, pre > code');
  const figures = Array.from(content.querySelectorAll('img[src*="assets/figures/"]'));
  const codes = [];
  for (const code of content.querySelectorAll('pre > code')) {
    if (code.offsetParent === null) continue;
    codes.push({text: code.textContent.trim().slice(0, 60),
                scrolls: code.scrollWidth > code.clientWidth + 1,
                right: code.getBoundingClientRect().right});
  }
  const python = Array.from(content.querySelectorAll('div.language-python.highlight pre > code'))
    .map((code) => code.textContent);
  const link = content.querySelector('a.notebook-download[download]')
    || document.querySelector('.md-content a.notebook-download[download]');
  return {
    height: document.documentElement.scrollHeight,
    innerWidth: innerWidth,
    figures: figures.length,
    figureFirst: figures.length > 0 && before(figures[0], firstCode),
    summary: summary !== null,
    summaryUnderTitle: summary !== null && next === summary,
    summaryBeforeCode: summary !== null && before(summary, firstCode),
    notationLinks: Array.from(content.querySelectorAll('a[href]'))
      .filter((a) => new URL(a.href).pathname.endsWith('/learn/notation/')).length,
    codes: codes,
    python: python,
    notebookUrl: link ? link.href : null,
  };
}"""


def _facts(browser, origin, width: int, open_all: bool) -> dict[str, dict]:
    context = browser.new_context(viewport={"width": width, "height": SCREEN_HEIGHT}, color_scheme="light")
    context.route(
        "**/*", lambda route: route.continue_() if route.request.url.startswith(origin) else route.abort()
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    facts = {}
    try:
        for source in LESSONS:
            response = page.goto(origin + url_path(source), wait_until="load")
            if response is None or response.status != 200:
                facts[source] = {"error": f"{url_path(source)} answered {response and response.status}"}
                continue
            page.wait_for_function(WAIT_FOR_MATH, timeout=TIMEOUT_MS)
            facts[source] = page.evaluate(FACTS, open_all)
    finally:
        context.close()
    return facts


def _lesson(facts: dict[str, dict], lesson: str) -> dict:
    """The facts of one lesson; fails if its page could not be read."""
    assert "error" not in facts[lesson], f"{lesson}: {facts[lesson].get('error')}"
    return facts[lesson]


@pytest.fixture(scope="module")
def desktop(site, browser, origin) -> dict[str, dict]:
    """Each lesson at 1400 px as it opens (answers and asides folded)."""
    return _facts(browser, origin, DESKTOP, open_all=False)


@pytest.fixture(scope="module")
def phone(site, browser, origin) -> dict[str, dict]:
    """Each lesson at 390 px with every folded block opened."""
    return _facts(browser, origin, PHONE, open_all=True)


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_shows_a_picture_at_every_step(desktop, lesson):
    facts = _lesson(desktop, lesson)
    assert facts["figures"] >= MIN_FIGURES, (
        f"{lesson} shows {facts['figures']} figures drawn by docs/figures/; a lesson shows at least "
        f"{MIN_FIGURES}"
    )
    assert facts["figureFirst"], f"{lesson} does not open with a figure before its first code block"


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_fits_in_eight_screens(desktop, lesson):
    screens = _lesson(desktop, lesson)["height"] / SCREEN_HEIGHT
    assert screens <= MAX_SCREENS, (
        f"{lesson} is {screens:.1f} screens long at {DESKTOP} px (at most {MAX_SCREENS}); fold "
        "implementation asides into \"Going deeper\" blocks or move them to their own page"
    )


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_opens_with_its_summary(desktop, lesson):
    facts = _lesson(desktop, lesson)
    assert facts["summary"], (
        f'{lesson} has no "{SUMMARY_TITLE}" box (!!! summary "{SUMMARY_TITLE}" under the title)'
    )
    assert facts["summaryUnderTitle"], f'{lesson}: the "{SUMMARY_TITLE}" box is not right under the title'
    assert facts["summaryBeforeCode"], f'{lesson}: the "{SUMMARY_TITLE}" box comes after code'


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_links_the_notation_page(desktop, lesson):
    assert _lesson(desktop, lesson)["notationLinks"] >= 1, (
        f"{lesson} never links the Notation page (notation.md#<symbol> at a symbol's first use)"
    )


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_code_block_scrolls_sideways_on_a_phone(phone, lesson):
    facts = _lesson(phone, lesson)
    assert facts["codes"], f"{lesson}: no code block found"
    problems = [
        f"{code['text']!r} " + ("scrolls sideways" if code["scrolls"] else f"reaches {code['right']:.0f} px")
        for code in facts["codes"]
        if code["scrolls"] or code["right"] > facts["innerWidth"] + 1
    ]
    assert not problems, f"{lesson} at {PHONE} px:\n" + "\n".join(problems)


# --------------------------------------------------------------------------------------------- #
# The lesson's notebook                                                                         #
# --------------------------------------------------------------------------------------------- #


def _read_notebook(path: Path):
    import nbformat

    notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    nbformat.validate(notebook)
    return notebook


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_offers_its_notebook(site, desktop, lesson):
    import urllib.request

    import nbformat

    facts = _lesson(desktop, lesson)
    name = Path(lesson).stem + ".ipynb"
    expected = url_path(lesson) + name  # next to the page
    found = facts["notebookUrl"]
    assert found and urlsplit(found).path == expected, (
        f"{lesson}: no download button for {expected} (found {found!r})"
    )
    with urllib.request.urlopen(facts["notebookUrl"]) as response:
        served = response.read().decode("utf-8")
    json.loads(served)  # valid JSON
    notebook = nbformat.reads(served, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert "install" in code[0].metadata.get("tags", []) and "pip install" in code[0].source, (
        f"{lesson}: the notebook does not open with the cell that installs the package")
    cells = [cell.source.strip() for cell in code[1:]]
    page = [code.strip() for code in facts["python"]]
    assert page, f"{lesson}: no python block found on the page"
    assert cells == page, (
        f"{lesson}: the notebook's {len(cells)} code cells are not the page's {len(page)} python "
        "blocks, in order"
    )
    title = next(cell for cell in notebook.cells if cell.cell_type == "markdown").source
    assert title.lstrip().startswith("# "), f"{lesson}: the notebook does not open with the lesson's title"


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_notebook_runs_top_to_bottom(site, lesson):
    """The notebook runs in a fresh kernel, from the repository's root folder, like a reader's."""
    from nbclient import NotebookClient

    path = notebook_file(site, lesson)
    assert path.is_file(), f"{lesson}: the build wrote no notebook at {path}"
    notebook = _read_notebook(path)
    # the tests' environment has the package: leave out the cell that installs it
    notebook.cells = [c for c in notebook.cells if "install" not in c.metadata.get("tags", [])]
    code_cells = sum(cell.cell_type == "code" for cell in notebook.cells)
    assert code_cells > 0, f"{path.name} has no code cell"
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=False,
        resources={"metadata": {"path": str(ROOT)}},
    )
    client.execute()
    ran = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.execution_count]
    assert len(ran) == code_cells, f"{path.name}: {len(ran)} of {code_cells} code cells ran"


def test_notebook_links_resolve_from_the_page(site):
    """The download button's href is the file the build wrote, next to the page."""
    for lesson in LESSONS:
        html = (site / lesson.removesuffix(".md") / "index.html").read_text(encoding="utf-8")
        match = re.search(r'<a href="([^"]+)" download(?:="")? class="[^"]*notebook-download', html)
        assert match, f"{lesson}: no notebook download button in the built page"
        target = urljoin("/" + lesson.removesuffix(".md") + "/", match.group(1))
        assert (site / target.lstrip("/")).is_file(), f"{lesson}: {target} is not in the site"


# --------------------------------------------------------------------------------------------- #
# The conversion itself (no build)                                                              #
# --------------------------------------------------------------------------------------------- #


def _lesson_notebooks_hook():
    import importlib.util

    path = ROOT / "docs" / "hooks" / "lesson_notebooks.py"
    spec = importlib.util.spec_from_file_location("lesson_notebooks_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LESSON = '''# A lesson { #top }

!!! summary "In one minute"

    - One line.

![Bars](../assets/figures/bars.svg)

Text with [a link](notation.md#h) and [`x`][vanilla_transformer.x].

--8<-- "docs/snippets/live-attention.html"

<div class="predict-reveal" data-question="q" markdown>
**Predict:** a question.
<div class="inner">Needs the page.</div>
</div>

```python
a = 1
```

<!--pytest-codeblocks:expected-output-->

```text
1
```

??? note "Going deeper: more"

    Folded text.

    ```python
    b = a + 1
    ```

!!! exercise "Exercise: add"

    What is a + b?

    ??? answer "Answer"

        ```python
        assert a + b == 3
        ```
'''


def test_a_lesson_becomes_markdown_and_code_cells_in_page_order():
    hook = _lesson_notebooks_hook()
    cells = hook.lesson_notebook(LESSON, lambda href: "https://site/" + href)
    code = [cell["source"] for cell in cells if cell["cell_type"] == "code"]
    assert code == ["a = 1", "b = a + 1", "assert a + b == 3"]  # de-indented, folded ones too
    prose = "\n".join(cell["source"] for cell in cells if cell["cell_type"] == "markdown")
    assert prose.startswith("# A lesson\n")  # no attribute list
    assert "**In one minute**\n\n- One line." in prose  # de-indented: not a Markdown code block
    assert "![Bars](attachment:bars.svg)" in prose
    assert cells[0]["figures"] == ["bars.svg"]
    assert "[a link](https://site/notation.md#h)" in prose and "`x`" in prose
    assert "[vanilla_transformer.x]" not in prose and "<!--" not in prose
    assert "**Going deeper: more**\n\nFolded text." in prose
    assert "**Exercise: add**" in prose and "**Answer**" in prose
    assert "```text\n1\n```" in prose  # the checked output stays under its cell
    assert "--8<--" not in prose and "Predict" not in prose and "Needs the page" not in prose


def test_the_notebook_attaches_its_figures(tmp_path):
    import base64

    import nbformat

    hook = _lesson_notebooks_hook()
    (tmp_path / "bars.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>", encoding="utf-8")
    notebook = nbformat.reads(hook.notebook_json(hook.lesson_notebook(LESSON), tmp_path), as_version=4)
    nbformat.validate(notebook)
    attached = notebook.cells[0].attachments["bars.svg"]["image/svg+xml"]
    assert base64.b64decode(attached).startswith(b"<svg")
    assert [cell.id for cell in notebook.cells] == [f"cell-{i}" for i in range(1, len(notebook.cells) + 1)]
    assert notebook.metadata.kernelspec.name == "python3"
