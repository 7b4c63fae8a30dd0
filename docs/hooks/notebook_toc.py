"""Build hook: a notebook page's table of contents matches its headings.

mkdocs-jupyter builds a notebook page's table of contents from a Markdown copy of the notebook
without its inline code, so a heading such as "`clones`: N copies" gets a contents link that
matches no id on the page. The hook rebuilds that table from the headings of the rendered page,
and records the page's ids, so that the strict build checks links to its anchors too.
"""

from __future__ import annotations

import re
from html import escape as html_escape
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any, cast

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import get_toc

if TYPE_CHECKING:
    from mkdocs.structure.toc import _TocToken


class _Headings(HTMLParser):
    """The ids of a page, and its headings as table-of-contents tokens."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.headings: list[dict[str, Any]] = []
        self._heading: dict[str, Any] | None = None
        self._skip = 0  # depth inside a heading's permalink

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if re.fullmatch(r"h[1-6]", tag) and values.get("id"):
            self._heading = {"level": int(tag[1]), "id": values["id"], "text": []}
        elif self._heading is not None and (self._skip or "anchor-link" in (values.get("class") or "")):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if self._heading is None:
            return
        if self._skip:
            self._skip -= 1
        elif re.fullmatch(r"h[1-6]", tag):
            name = " ".join("".join(self._heading.pop("text")).split())
            self.headings.append({**self._heading, "name": html_escape(name, quote=False), "children": []})
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None and not self._skip:
            self._heading["text"].append(data)


def _nest(headings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    roots: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []
    for heading in headings:
        while stack and stack[-1]["level"] >= heading["level"]:
            stack.pop()
        (stack[-1]["children"] if stack else roots).append(heading)
        stack.append(heading)
    return roots


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if "jupyter-wrapper" in html:
        parser = _Headings()
        parser.feed(html)
        page.toc = get_toc(cast("list[_TocToken]", _nest(parser.headings)))
        page.present_anchor_ids = parser.ids
    return html
