"""Build hook: code that wraps on a phone still reads as Python.

Below 600 px, docs/stylesheets/extra.css wraps a code line that is wider than the screen. A
wrapped line must go on further in than the statement it continues, not at the block's left
edge, and it must never break inside a string or a name. CSS cannot see how far a line is
indented, so this hook writes it on the line: pymdownx.highlight's `line_spans` puts each line
of a code block in `<span id="__span-B-L">`, and the hook gives that span the style
`--indent: Nch`, N the number of spaces it starts with; the stylesheet hangs the line's
continuation 4 characters past it. In a dotted module name (Pygments' `nn` span, such as
`vanilla_transformer.training.translation`) it allows a break after each dot, so that a long
name wraps between two of its names, never inside one.
"""

from __future__ import annotations

import re
from typing import Any

LINE = re.compile(r'<span id="(?P<id>__span-[\d-]+)">(?P<anchor><a [^>]*></a>)?(?P<indent> +)')
MODULE = re.compile(r'<span class="nn">(?P<name>[\w.]+)</span>')


def indent_lines(html: str) -> str:
    """`html` with each indented code line's span styled `--indent: Nch`, and break points
    after the dots of dotted module names."""

    def line(match: re.Match[str]) -> str:
        indent = match.group("indent")
        return (f'<span id="{match.group("id")}" style="--indent: {len(indent)}ch">'
                f'{match.group("anchor") or ""}{indent}')

    def module(match: re.Match[str]) -> str:
        return '<span class="nn">' + match.group("name").replace(".", ".<wbr>") + "</span>"

    return MODULE.sub(module, LINE.sub(line, html))


def on_page_content(html: str, **kwargs: Any) -> str:
    return indent_lines(html)
