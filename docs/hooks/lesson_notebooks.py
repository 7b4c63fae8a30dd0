"""Build hook: each lesson of the Learn path offers itself as a Jupyter notebook.

A lesson (`docs/learn/*.md`, except the index, the Notation page and the Rebuild page) is a
Markdown page whose python blocks run in order. The hook converts the lesson into `<lesson>.ipynb`,
written next to the page, and puts the same download button at the top of the page as the notebook
pages have (docs/hooks/notebook_download.py):

- prose becomes Markdown cells, with the numbers the build wrote into it (docs/hooks/numbers.py
  runs first), the page's live widgets left out (they need the site's scripts), admonitions turned into a bold title over their de-indented text, heading ids and
  HTML comments dropped, links to other pages made absolute (`site_url`), and the figures of
  `assets/figures/` attached to their cell as SVG, so the notebook shows them offline;
- every python block becomes a code cell, in page order, de-indented: those of the main text and
  those folded into exercises' answers and "Going deeper" blocks alike. Printed output that the
  tests check (```` ```text ```` or ```` ```table ```` after an expected-output marker) stays as
  a Markdown code block under its cell.

The notebook opens with one cell, tagged `install`, that installs the package with its
`translate` extra from the wheel the site serves (docs/hooks/package_wheel.py writes it and its
address); the trained translator the lessons load is inside that wheel. So the notebook runs top
to bottom from any empty folder, in a fresh environment: tests/docs/test_lessons.py runs every
lesson's notebook (without the install cell, in the environment of the tests), and
scripts/reader_test.sh runs them as a reader would, from the built wheel. See `lesson_notebook`,
which does the conversion without MkDocs.
"""

from __future__ import annotations

import base64
import logging
import posixpath
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

if str(Path(__file__).parent) not in sys.path:  # loaded by path, as mkdocs and the tests do
    sys.path.append(str(Path(__file__).parent))
from package_wheel import install_command  # the wheel hook, beside this file

log = logging.getLogger("mkdocs.hooks.lesson_notebooks")

LESSONS_DIR = "learn/"
NOT_LESSONS = {"index.md", "notation.md", "rebuild.md"}
FIGURES = "assets/figures/"
# Material's "download" icon (Material Design Icons, Apache 2.0), as on the notebook pages.
DOWNLOAD_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" aria-hidden="true">'
    '<path d="M5 20h14v-2H5m14-9h-4V3H9v6H5l7 7 7-7Z"/></svg>'
)

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)(?P<rest>.*)$")
_BOX = re.compile(  # an admonition, a collapsible block or a content tab
    r'^(?P<indent>[ \t]*)(?:!!!|\?\?\?\+?|===\+?)[ \t]*(?P<kind>[\w-]*)[ \t]*(?:"(?P<title>[^"]*)")?[ \t]*$'
)
_HEADING_ATTRS = re.compile(r"^(#{1,6}[ \t].*?)[ \t]*\{[^{}]*\}[ \t]*$")
_IMAGE = re.compile(
    r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]*" + re.escape(FIGURES) + r"(?P<name>[\w.-]+\.svg))\)"
)
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<href>[^)\s]+)\)")
_WIDGET = re.compile(r'^[ \t]*<div class="(?:predict-reveal|live-model)\b')
_AUTOREF = re.compile(r"\[(?P<text>[^\]]+)\]\[(?P<id>[^\]]+)\]")

# Lessons of this build: (page's src_uri, its notebook cells, destination in the site).
_notebooks: list[tuple[str, list[dict[str, Any]], Path]] = []


def is_lesson(src_uri: str) -> bool:
    """Whether the page `src_uri` (relative to docs/) is a lesson of the Learn path."""
    name = posixpath.basename(src_uri)
    return src_uri.startswith(LESSONS_DIR) and src_uri.endswith(".md") and name not in NOT_LESSONS


def _dedent(line: str, width: int) -> str:
    """`line` without up to `width` characters of leading whitespace."""
    stripped = len(line) - len(line.lstrip(" \t"))
    return line[min(width, stripped):]


def _markdown_cell(lines: list[str]) -> dict[str, Any] | None:
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return None
    source = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    figures = sorted(set(re.findall(r"\(attachment:([\w.-]+\.svg)\)", source)))
    cell: dict[str, Any] = {"cell_type": "markdown", "metadata": {}, "source": source}
    if figures:
        cell["figures"] = figures  # filled with the SVG files when the site is written
    return cell


def lesson_notebook(markdown: str, link: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
    """The cells of a lesson's notebook, from the lesson's Markdown.

    Args:
        markdown: the lesson's Markdown, with its numbers written in.
        link: a function from a link's target to the target the notebook should use, or None to
            keep links as they are.

    Returns:
        Cells as dicts: `{"cell_type": "markdown" | "code", "source": str, ...}`; a Markdown cell
        with figures lists their file names under "figures".
    """
    lines = markdown.splitlines()
    cells: list[dict[str, Any]] = []
    prose: list[str] = []
    boxes: list[int] = []  # the content indent of each open admonition, innermost last
    i = 0

    def flush() -> None:
        cell = _markdown_cell(prose)
        if cell is not None:
            cells.append(cell)
        prose.clear()

    while i < len(lines):
        line = lines[i]
        if line.strip():
            indent = len(line) - len(line.lstrip(" \t"))
            while boxes and indent < boxes[-1]:
                boxes.pop()
        depth = boxes[-1] if boxes else 0
        fence = _FENCE.match(line)
        if fence:
            indent, mark = len(fence.group("indent")), fence.group("fence")
            close = re.compile(r"^[ \t]*" + re.escape(mark[0]) + "{" + str(len(mark)) + r",}[ \t]*$")
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            body = [_dedent(b, indent) for b in lines[i + 1 : j]]
            if fence.group("lang") in ("python", "py"):
                flush()
                cells.append({"cell_type": "code", "metadata": {}, "source": "\n".join(body).rstrip()})
            else:
                lang = "text" if fence.group("lang") == "table" else fence.group("lang")
                prose += ["", mark + lang, *body, mark, ""]
            i = j + 1
            continue
        if line.lstrip().startswith("--8<--"):  # a snippet: the live widgets, page only
            i += 1
            continue
        if _WIDGET.match(line):  # a question for the live model: it needs the page's script
            depth_html = 0
            while i < len(lines):
                depth_html += lines[i].count("<div") - lines[i].count("</div>")
                i += 1
                if depth_html <= 0:
                    break
            continue
        if line.lstrip().startswith("<!--"):
            while i < len(lines) and "-->" not in lines[i]:
                i += 1
            i += 1
            continue
        box = _BOX.match(line)
        if box:
            title = box.group("title")
            if title is None:
                title = box.group("kind").replace("-", " ").capitalize()
            if title:
                prose += ["", f"**{title}**", ""]
            boxes.append(len(box.group("indent")) + 4)
            i += 1
            continue
        text = _dedent(line, depth)
        heading = _HEADING_ATTRS.match(text)
        if heading:
            text = heading.group(1)
        text = _IMAGE.sub(lambda m: f"![{m.group('alt')}](attachment:{m.group('name')})", text)
        text = _AUTOREF.sub(lambda m: m.group("text"), text)
        if link is not None:
            text = _LINK.sub(lambda m: f"[{m.group('text')}]({link(m.group('href'))})", text)
        prose.append(text)
        i += 1
    flush()
    return cells


def _link_resolver(page: Page, config: MkDocsConfig, files: Files) -> Callable[[str], str]:
    """A function that makes a lesson's relative link to a page of the site absolute."""
    base = config.site_url or ""

    def resolve(href: str) -> str:
        if re.match(r"^[a-z][a-z0-9+.-]*:", href) or href.startswith(("#", "attachment:")):
            return href
        path, _, anchor = href.partition("#")
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), path))
        file = files.get_file_from_path(target)
        if file is None:
            return href
        return base + file.url + (f"#{anchor}" if anchor else "")

    return resolve


def download_button(name: str) -> str:
    """The button that downloads the notebook `name`, a file next to the page."""
    return (
        f'<a href="{name}" download class="md-content__button md-icon notebook-download" '
        f'title="Download this page as a Jupyter notebook ({name})" '
        f'aria-label="Download this page as a Jupyter notebook">{DOWNLOAD_ICON}</a>\n'
    )


def notebook_name(src_uri: str) -> str:
    return Path(src_uri).stem + ".ipynb"


def on_pre_build(config: MkDocsConfig) -> None:
    _notebooks.clear()


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    src_uri = page.file.src_uri
    if is_lesson(src_uri):
        cells = lesson_notebook(markdown, _link_resolver(page, config, files))
        target = Path(config.site_dir) / Path(page.file.dest_uri).parent / notebook_name(src_uri)
        _notebooks[:] = [n for n in _notebooks if n[0] != src_uri]  # `mkdocs serve` rebuilds
        _notebooks.append((src_uri, cells, target))
    return markdown


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if is_lesson(page.file.src_uri):
        return download_button(notebook_name(page.file.src_uri)) + html
    return html


INSTALL_TAG = "install"
"""The tag of a notebook's first code cell, the one that installs the package."""


def install_cells(command: str) -> list[dict[str, Any]]:
    """The cells that open a lesson's notebook: what the install is for, and the install."""
    note = ("**Set-up.** In a fresh environment, run this cell first: it installs this site's "
            "`vanilla-transformer` package, the trained translator inside it, with the "
            "`translate` extra (PyTorch comes with it). Where the package is installed already, "
            "skip it.")
    return [{"cell_type": "markdown", "metadata": {}, "source": note},
            {"cell_type": "code", "metadata": {"tags": [INSTALL_TAG]},
             "source": f"%{command}"}]


def notebook_json(cells: list[dict[str, Any]], figures_dir: Path) -> str:
    """The notebook of `cells` as nbformat 4 JSON, its figures read from `figures_dir`."""
    import nbformat

    notebook = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    notebook.metadata.update({
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    for number, cell in enumerate(cells, start=1):
        if cell["cell_type"] == "code":
            new = nbformat.v4.new_code_cell(cell["source"])  # type: ignore[no-untyped-call]
            new.metadata.update(cell.get("metadata", {}))
        else:
            new = nbformat.v4.new_markdown_cell(cell["source"])  # type: ignore[no-untyped-call]
            attachments = {}
            for name in cell.get("figures", []):
                path = figures_dir / name
                if not path.is_file():  # a broken link, which the build reports on its own
                    log.warning("lesson_notebooks hook: no figure %s to attach", name)
                    continue
                svg = path.read_bytes()
                attachments[name] = {"image/svg+xml": base64.b64encode(svg).decode("ascii")}
            if attachments:
                new.attachments = attachments
        new.id = f"cell-{number}"  # stable from build to build
        notebook.cells.append(new)
    nbformat.validate(notebook)
    return str(nbformat.writes(notebook))  # type: ignore[no-untyped-call]


@event_priority(-100)  # at the end of the build, when the figures are in the site directory
def on_post_build(config: MkDocsConfig) -> None:
    figures_dir = Path(config.site_dir) / FIGURES
    command = install_command(config)
    for _, cells, target in _notebooks:
        target.parent.mkdir(parents=True, exist_ok=True)
        title, rest = cells[:1], cells[1:]  # the lesson's title first, then the install
        target.write_text(notebook_json([*title, *install_cells(command), *rest], figures_dir),
                          encoding="utf-8")
    if _notebooks:
        log.info("lesson_notebooks hook: wrote %d lesson notebook(s)", len(_notebooks))
