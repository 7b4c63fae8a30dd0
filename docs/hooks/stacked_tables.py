"""Build hook: on a phone, a narrow table shows one card per row instead of scrolling.

A table's meaning is often in its last column, which a sideways scroll hides on a phone. The hook
marks every plain table of three to five columns with `data-stack`, and each of its cells with its
column's header as `data-label`; below 600 px docs/stylesheets/extra.css shows such a table as one
card per row, each value after its column's name.
"""

from __future__ import annotations

import re
from html import escape as html_escape
from html import unescape as html_unescape

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

STACK_COLUMNS = range(3, 6)  # tables of 3 to 5 columns become one card per row on a phone
_TABLE = re.compile(r"<table(?P<attrs>[^>]*)>(?P<body>.*?)</table>", re.DOTALL)
_HEADER_CELL = re.compile(r"<th\b[^>]*>(?P<text>.*?)</th>", re.DOTALL)
_ROW = re.compile(r"<tr\b[^>]*>.*?</tr>", re.DOTALL)
_DATA_CELL = re.compile(r"<td\b(?P<attrs>[^>]*)>")


def _text(html: str) -> str:
    return " ".join(html_unescape(re.sub(r"<[^>]+>", "", html)).split())


def mark_stackable_tables(html: str) -> str:
    """Give each plain table of 3 to 5 columns `data-stack` and its cells `data-label`."""

    def mark(match: re.Match[str]) -> str:
        attrs, body = match.group("attrs"), match.group("body")
        if "class=" in attrs or "data-stack" in attrs or "<table" in body:
            return match.group(0)
        head = re.search(r"<thead>(.*?)</thead>", body, re.DOTALL)
        labels = [_text(m.group("text")) for m in _HEADER_CELL.finditer(head.group(1))] if head else []
        if len(labels) not in STACK_COLUMNS:
            return match.group(0)

        def label_row(row: re.Match[str]) -> str:
            cells = iter(labels)

            def label(cell: re.Match[str]) -> str:
                name = next(cells, "")
                return f'<td data-label="{html_escape(name)}"{cell.group("attrs")}>'

            return _DATA_CELL.sub(label, row.group(0))

        return f"<table data-stack{attrs}>" + _ROW.sub(label_row, body) + "</table>"

    return _TABLE.sub(mark, html)


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return mark_stackable_tables(html)
