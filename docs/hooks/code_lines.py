"""Build hook: code that wraps on a phone still reads as Python.

Below 600 px, docs/stylesheets/extra.css wraps a code line that is wider than the screen. A
wrapped line must go on further in than the statement it continues, not at the block's left
edge, and it must never break inside a string or a name. CSS can do neither alone, so this hook
marks up each line of a code block (pymdownx.highlight's `line_spans` puts each line in
`<span id="__span-B-L">`, its tokens in Pygments' flat `<span class="...">` elements):

- the line's span gets the style `--indent: Nch`, N the spaces it starts with; the stylesheet
  hangs the line's continuation 4 characters past it;
- each run of characters between two spaces becomes one `<span class="cw">`, which the
  stylesheet keeps on one row: a line breaks only at a space, so never inside a name, a number
  or a word of a string or a comment;
- a dotted module name (Pygments' `nn`, such as `vanilla_transformer.training.translation`) may
  break after each dot, between two of its names, never inside one; a line may break after an
  opening bracket and after a comma, where Python itself lets a statement go on.

What a reader copies is unchanged: only elements are added, never characters. It marks up the
pages of the Learn section; elsewhere a phone wraps code as before, anywhere in a long word.
"""

from __future__ import annotations

import re
from typing import Any

LINE = re.compile(
    r'<span id="(?P<id>__span-[\d-]+)">(?P<anchor><a [^>]*></a>)?(?P<body>.*?)(?P<end>\n?</span>)'
    r'(?=<span id="__span-|</code>)',
    re.S,
)
ITEM = re.compile(r'<span class="(?P<cls>[^"]*)">(?P<text>[^<]*)</span>|(?P<raw>[^<]+)|(?P<tag><[^>]*>)')
STRING = re.compile(r"^s[a-z0-9]*$")  # Pygments' string classes: s, s1, s2, sa, si, ...
COMMENT = re.compile(r"^c[a-z0-9]*$")


def _runs(body: str) -> list[tuple[bool, str]]:
    """The line's HTML as (is_space, html) pieces: spaces, and unbreakable runs between them."""
    pieces: list[tuple[bool, str]] = []

    def split(text: str, wrap: str | None) -> None:
        for part in re.split(r"( +)", text):
            if not part:
                continue
            if part.startswith(" "):
                pieces.append((True, part))
            else:
                pieces.append((False, f'<span class="{wrap}">{part}</span>' if wrap else part))

    for item in ITEM.finditer(body):
        cls, text = item.group("cls"), item.group("text")
        if item.group("raw") is not None:
            split(item.group("raw"), None)
        elif item.group("tag") is not None:
            pieces.append((False, item.group("tag")))
        elif cls is not None and text is not None:
            if cls == "nn" and "." in text:  # a dotted module name: a break after each dot
                names = text.split(".")
                for i, name in enumerate(names):
                    dot = "." if i < len(names) - 1 else ""
                    pieces.append((False, f'<span class="nn">{name}{dot}</span>'))
                    if dot:
                        pieces.append((True, "<wbr>"))
            elif cls == "p" and re.search(r"[(\[{,]", text):  # a break after ( [ { and ,
                for part in re.split(r"(?<=[(\[{,])(?=[^)\]}])", text):
                    pieces.append((False, f'<span class="p">{part}</span>'))
                    if part[-1] in "([{,":
                        pieces.append((True, "<wbr>"))
            elif cls == "w":
                split(text, None)
            elif STRING.match(cls) or COMMENT.match(cls):
                split(text, cls)  # it may break at its spaces, never inside a word
            else:
                pieces.append((False, item.group(0)))  # one token
    return pieces


def mark_line(body: str) -> str:
    """A line's HTML with each unbreakable run of tokens in a `<span class="cw">`."""
    out: list[str] = []
    run: list[str] = []
    for is_space, html in [*_runs(body), (True, "")]:
        if is_space:
            if run:
                out.append('<span class="cw">' + "".join(run) + "</span>")
                run = []
            out.append(html)
        else:
            run.append(html)
    return "".join(out)


def indent_lines(html: str) -> str:
    """`html` with each code line marked up for wrapping on a phone (see the module's doc)."""

    def line(match: re.Match[str]) -> str:
        body = match.group("body")
        # the indent: leading spaces, as text or as a whitespace token (shell lexers)
        lead = re.match(r' +|<span class="w">( +)</span>', body)
        head = lead.group(0) if lead else ""
        indent = len(lead.group(1) or head) if lead else 0
        style = f' style="--indent: {indent}ch"' if indent else ""
        return (f'<span id="{match.group("id")}"{style}>{match.group("anchor") or ""}'
                f'{head}{mark_line(body[len(head):])}{match.group("end")}')

    return LINE.sub(line, html)


LESSONS = "learn/"  # the pages whose code is marked up; the others keep the plain wrapping
NOT_LESSONS = {"learn/rebuild.md"}  # its long starter lines keep the plain wrapping


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    uri = page.file.src_uri
    return indent_lines(html) if uri.startswith(LESSONS) and uri not in NOT_LESSONS else html
