"""Build hook: notebook pages read like the Markdown pages (alt text, no build tags, exercises).

nbconvert renders a notebook page for a notebook reader; the hook reworks its HTML for a web
reader (see `rework_notebook_html`):

- every figure gets the alt text its code cell gives in its metadata (`# %% alt="..."` in the
  jupytext source; a list of strings for a cell that draws several figures), and the build fails
  on a figure without one;
- cell tags (build instructions such as hide-input, heatmap, answer) and In/Out prompts leave the
  page;
- the "Copied!" notice and the headings' "¶" links stay on the page but out of the search index;
- an exercise, a Markdown cell that starts with `**Exercise: title**` followed by cells tagged
  "answer", becomes the same HTML as an exercise of a Markdown page: `div.admonition.exercise`
  holding a closed `details.answer`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

NO_ALT = "No description has been provided for this image"  # what nbconvert writes without one
_EXERCISE_TITLE = re.compile(r"^\s*Exercise:\s*\S")


def _soup(html: str) -> Any:
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "html.parser")


def _alt_texts(metadata: dict[str, Any], count: int) -> list[str]:
    """The alt texts a code cell's metadata gives its `count` figures ("" where it gives none)."""
    alt = metadata.get("alt")
    if isinstance(alt, str):
        alt = [alt] * count if count == 1 else [alt]
    alt = [a.strip() for a in (alt or []) if isinstance(a, str)]
    return (alt + [""] * count)[:count]


def _tags(element: Any) -> set[str]:
    """The cell tags of a rendered cell (nbconvert writes each as a class `celltag_<tag>`)."""
    classes = list(element.get("class") or [])
    for inner in element.select(".jp-RenderedMarkdown"):
        classes += inner.get("class") or []
    return {c.removeprefix("celltag_") for c in classes if c.startswith("celltag_")}


def _wrap_exercises(soup: Any, where: str) -> int:
    """Wrap each question cell and the "answer" cells after it into an exercise box."""
    cells = soup.select("div.jp-Notebook > div.jp-Cell")
    count, i = 0, 0
    while i < len(cells):
        if "answer" not in _tags(cells[i]):
            i += 1
            continue
        question = cells[i - 1] if i else None
        rendered = question.select_one(".jp-RenderedMarkdown") if question else None
        first = rendered.find(["p", "h2", "h3", "h4"]) if rendered else None
        strong = first.find("strong") if first else None
        if strong is None or not _EXERCISE_TITLE.match(strong.get_text()):
            raise PluginError(
                f"{where}: a cell tagged \"answer\" must follow a Markdown cell that starts with "
                "**Exercise: <title>** (the question)"
            )
        assert question is not None and first is not None  # a <strong> was found in them
        answers = []
        while i < len(cells) and "answer" in _tags(cells[i]):
            answers.append(cells[i])
            i += 1
        title = " ".join(strong.get_text().split()).rstrip(".")
        strong.decompose()
        if not first.get_text().strip():
            first.decompose()
        box = soup.new_tag("div", attrs={"class": "admonition exercise"})
        heading = soup.new_tag("p", attrs={"class": "admonition-title"})
        heading.string = title
        details = soup.new_tag("details", attrs={"class": "answer"})
        summary = soup.new_tag("summary")
        summary.string = "Answer"
        question.insert_before(box)
        box.append(heading)
        box.append(question.extract())
        box.append(details)
        details.append(summary)
        for cell in answers:
            details.append(cell.extract())
        count += 1
    return count


def rework_notebook_html(html: str, code_cells: list[dict[str, Any]], where: str) -> str:
    """A notebook page's HTML with alt text, without tags and prompts, with exercise boxes.

    `code_cells` are the metadata of the page's code cells, in order (from its jupytext source).
    Raises PluginError for a figure without alt text and for a malformed exercise.
    """
    soup = _soup(html)
    rendered = soup.select("div.jp-Notebook > div.jp-Cell.jp-CodeCell")
    if len(rendered) != len(code_cells):
        raise PluginError(
            f"{where}: {len(rendered)} rendered code cells, but the source has {len(code_cells)}"
        )
    missing = []
    for number, (cell, metadata) in enumerate(zip(rendered, code_cells, strict=True), start=1):
        images = cell.select(".jp-RenderedImage img")
        for img, alt in zip(images, _alt_texts(metadata, len(images)), strict=True):
            if alt and alt != NO_ALT:
                img["alt"] = alt
            else:
                missing.append(number)
    if missing:
        raise PluginError(
            f"{where}: code cell(s) {sorted(set(missing))} draw a figure without alt text; "
            'give the cell an alt text in its metadata (`# %% alt="What the figure shows"`, '
            "or a list of strings for several figures)"
        )
    # Cell tags are for the build (hide-input, heatmap, answer), not for the reader.
    for toolbar in soup.select(".celltoolbar"):
        toolbar.decompose()
    for prompt in soup.select(".jp-InputPrompt, .jp-OutputPrompt"):
        prompt.clear()
    # Kept on the page, left out of the search index (Material drops the attribute afterwards).
    for element in soup.select(".zeroclipboard-container, a.anchor-link"):
        element["data-search-exclude"] = ""
    _wrap_exercises(soup, where)
    return str(soup)


def _code_cell_metadata(path: Path) -> list[dict[str, Any]]:
    import jupytext  # type: ignore[import-untyped]

    return [dict(c.metadata) for c in jupytext.read(path).cells if c.cell_type == "code"]


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if "jupyter-wrapper" in html:
        source = page.file.abs_src_path
        assert source is not None, "a notebook page is a file of docs/"
        html = rework_notebook_html(html, _code_cell_metadata(Path(source)), page.file.src_uri)
    return html
