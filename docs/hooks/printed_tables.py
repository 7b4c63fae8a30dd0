"""Build hook: a table printed by a Markdown page's code is shown as a table.

A code block that prints a table has its output checked as text, like any other printed output
(`<!--pytest-codeblocks:expected-output-->`), but the page marks that output ```` ```table ````
instead of ```` ```text ````. The hook turns each such block into Markdown: one table per run of
two or more lines whose columns are separated by two or more spaces (a rule of dashes under the
first line makes it the header; a row after a later rule, a total, is bold), and the other lines
as text. See `printed_table_markdown`.
"""

from __future__ import annotations

import re

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

# A fenced block of printed output to show as a table (```table ... ```, alone on their lines).
# at any indent, so that a table printed inside an admonition ("Going deeper") is one too
_TABLE_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```table[ \t]*\n(?P<body>.*?)\n(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_RULE = re.compile(r"^\s*-{3,}\s*$")
_GUTTER = 2  # columns of printed tables are separated by at least this many spaces
_NUMBER = re.compile(r"^[-+]?[\d,.]+(e[-+]?\d+)?( ?(%|B|KiB|MiB|GiB|TiB|x|s|ms))?$")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|#])")


def _is_row(line: str) -> bool:
    return len(re.split(r" {2,}", line.strip())) >= 2


def _columns(lines: list[str]) -> list[tuple[int, int]]:
    """The (start, end) character spans of the columns of aligned text lines."""
    width = max(len(line) for line in lines)
    used = [any(i < len(line) and line[i] != " " for line in lines) for i in range(width)]
    spans, start, blank = [], None, 0
    for i, filled in enumerate(used + [False] * _GUTTER):
        if filled:
            if start is None:
                start = i
            blank = 0
        elif start is not None:
            blank += 1
            if blank == _GUTTER:
                spans.append((start, i - _GUTTER + 1))
                start = None
    return spans


def _cell(text: str, bold: bool = False) -> str:
    # angle brackets as entities: Markdown has no backslash escape for them (`</s>` stays text)
    text = _MD_SPECIAL.sub(r"\\\1", text.strip()).replace("<", "&lt;").replace(">", "&gt;")
    return f"**{text}**" if bold and text else text


def _table(lines: list[str]) -> list[str]:
    """A Markdown table from aligned lines. The first line is the header when a rule follows it
    or when it holds no digit; a row after a later rule (a total) is bold."""
    rows = [line for line in lines if not _RULE.match(line)]
    spans = _columns(rows)
    cells = [[line[a:b].strip() for a, b in spans] for line in rows]
    header_given = (len(lines) > 1 and _RULE.match(lines[1])) or not re.search(r"\d", lines[0])
    header = cells.pop(0) if header_given else [""] * len(spans)
    body_lines = lines[2:] if header_given and _RULE.match(lines[1]) else lines[1 if header_given else 0:]
    bold_from = None
    for i, line in enumerate(body_lines):
        if _RULE.match(line):
            bold_from = sum(1 for line_ in body_lines[:i] if not _RULE.match(line_))
    numeric = [all(_NUMBER.match(row[j]) for row in cells if row[j]) and any(row[j] for row in cells)
               for j in range(len(spans))]
    out = ["| " + " | ".join(_cell(h) for h in header) + " |",
           "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    for i, row in enumerate(cells):
        bold = bold_from is not None and i >= bold_from
        out.append("| " + " | ".join(_cell(c, bold) for c in row) + " |")
    return out


def printed_table_markdown(text: str) -> str:
    """Printed output as Markdown: each run of two or more lines with aligned columns (rules of
    dashes included) becomes a table, every other line a line of text."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and (_is_row(lines[j]) or (_RULE.match(lines[j]) and j > i)):
            j += 1
        if j - i >= 2:
            out += ["", *_table(lines[i:j]), ""]
            i = j
            continue
        if lines[i].strip():
            out.append(_cell(lines[i]) + "<br>")
        else:
            out.append("")
        i += 1
    body = "\n".join(out).replace("<br>\n\n", "\n\n").strip()
    body = body.removesuffix("<br>")
    return f'<div class="printed-table" markdown>\n\n{body}\n\n</div>'


def _replace(match: re.Match[str]) -> str:
    indent = match.group("indent")
    body = "\n".join(line.removeprefix(indent) for line in match.group("body").split("\n"))
    table = printed_table_markdown(body)
    return "\n".join(indent + line if line else line for line in table.split("\n"))


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _TABLE_FENCE.sub(_replace, markdown)
