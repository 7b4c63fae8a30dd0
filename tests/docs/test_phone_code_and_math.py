"""At 390 px, code still reads as Python and no display equation is cut off or scrolls.

Measured in Chromium on the built site (scripts/test.sh builds it into site/):

- every display equation (MathJax's `mjx-container[display="true"]`) of every page fits its
  column: its SVG ends inside the column, its box does not scroll sideways, and it is not
  shrunk to nothing;
- in every code block of a Learn page (printed output aside), a line that wraps
  (docs/stylesheets/extra.css) goes on further in than the line's own indent, and a line
  never breaks inside a word: each place
  where a line's rendered text goes to a new row is at a space, after an opening bracket or a
  comma, or right after a dot of a dotted module name (docs/hooks/code_lines.py), never inside
  a word of a string or inside a name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TIMEOUT_MS = 30_000
PHONE = 390
LESSONS = "/learn/"  # the pages whose code docs/hooks/code_lines.py marks up
NOT_LESSONS = {"/learn/rebuild/"}  # left with the plain wrapping
WAIT_FOR_MATH = (
    "() => document.documentElement.getAttribute('data-math-typeset') === location.pathname"
)

MEASURE = """() => {
  document.querySelectorAll('.md-content details').forEach((d) => { d.open = true; });
  const column = document.querySelector('.md-content .md-typeset');
  const right = column ? column.getBoundingClientRect().right : innerWidth;
  const equations = [];
  for (const box of document.querySelectorAll('.md-content mjx-container[display="true"]')) {
    if (box.offsetParent === null) continue;
    const svg = box.querySelector('svg');
    const holder = box.closest('div.arithmatex') || box;
    const b = svg.getBoundingClientRect();
    equations.push({tex: (holder.textContent || '').trim().slice(0, 60),
                    width: b.width, right: b.right, column: right,
                    scrolls: holder.scrollWidth > holder.clientWidth + 1
                      || box.scrollWidth > box.clientWidth + 1});
  }
  // each code line: where its text goes to a new row
  const lines = [];
  // code, not printed output (a language-text block may break a word wider than the screen)
  const code = '.md-content .highlight:not(.language-text) pre > code > span[id^="__span-"]';
  for (const span of document.querySelectorAll(code)) {
    if (span.offsetParent === null) continue;
    const style = getComputedStyle(span);
    const rowHeight = parseFloat(style.lineHeight) || 1.4 * parseFloat(style.fontSize);
    if (span.getBoundingClientRect().height < 1.5 * rowHeight) continue;  // one row: no wrap
    const text = span.textContent.replace(/\\n$/, '');
    const indent = text.length - text.replace(/^ +/, '').length;
    const walker = document.createTreeWalker(span, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let top = null, first = null, offset = 0;
    const breaks = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++, offset++) {
        if (node.data[i] === '\\n') continue;
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect || rect.width === 0) continue;
        if (top === null) { top = rect.top; first = rect.left; continue; }
        if (rect.top > top + 2) {
          breaks.push({at: offset, left: rect.left});
          top = rect.top;
        }
      }
    }
    if (breaks.length) {
      const ch = parseFloat(style.fontSize) * 0.6;  // a monospace character's width
      lines.push({text: text, indent: indent, first: first, breaks: breaks, ch: ch});
    }
  }
  return {equations: equations, lines: lines};
}"""


def _site_pages(site: Path) -> list[str]:
    pages = []
    for index in sorted(site.rglob("index.html")):
        rel = index.parent.relative_to(site).as_posix()
        if rel.startswith("assets") or rel == "404":
            continue
        pages.append("/" if rel == "." else f"/{rel}/")
    return pages


def _pages_with(site: Path, marker: str) -> list[str]:
    return [p for p in _site_pages(site)
            if marker in (site / p.lstrip("/") / "index.html").read_text(encoding="utf-8")]


@pytest.fixture(scope="module")
def measured(site, browser, origin) -> dict[str, dict]:
    """Each page with an equation or a code block, measured at 390 px, folded blocks opened."""
    pages = sorted(set(_pages_with(site, 'class="arithmatex"'))
                   | {p for p in _pages_with(site, 'class="cw"') if p.startswith(LESSONS)})
    context = browser.new_context(viewport={"width": PHONE, "height": 844})
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith(origin) else route.abort())
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    out = {}
    try:
        for path in pages:
            page.goto(origin + path, wait_until="load")
            page.wait_for_function(WAIT_FOR_MATH, timeout=TIMEOUT_MS)
            out[path] = page.evaluate(MEASURE)
    finally:
        context.close()
    return out


def test_no_display_equation_is_cut_or_scrolls_on_a_phone(measured):
    problems = [
        f"{path}: {eq['tex']!r} is {eq['width']:.0f} px wide, ends at {eq['right']:.0f} px "
        f"(column ends at {eq['column']:.0f} px)" + (", scrolls" if eq["scrolls"] else "")
        for path, facts in measured.items() for eq in facts["equations"]
        if eq["scrolls"] or eq["right"] > eq["column"] + 1 or eq["width"] <= 50
    ]
    assert sum(len(f["equations"]) for f in measured.values()) > 10
    assert not problems, f"display equations at {PHONE} px:\n" + "\n".join(problems)


def bad_break(text: str, at: int) -> bool:
    """A row that starts at `text[at]` breaks inside a word: not after a space, an opening
    bracket or a comma (where Python lets a statement go on), nor after a dot of a name."""
    before = text[:at].rstrip(" ")
    return bool(before) and text[at - 1] not in " ([{," and not (
        before.endswith(".") and re.match(r"[A-Za-z_]", text[at]))


def test_wrapped_code_reads_as_python_on_a_phone(measured):
    wrapped, problems = 0, []
    for path, facts in measured.items():
        if not path.startswith(LESSONS) or path in NOT_LESSONS:
            continue
        for line in facts["lines"]:
            wrapped += 1
            for row in line["breaks"]:
                shown = line["text"][: row["at"]][-20:] + "⏎" + line["text"][row["at"]:][:20]
                if bad_break(line["text"], row["at"]):
                    problems.append(f"{path}: breaks inside a word: {shown!r}")
                # the row goes on past the line's own indent
                past = (row["left"] - line["first"]) / line["ch"]
                if past < line["indent"] + 2:
                    problems.append(f"{path}: a continuation at {past:.1f} characters, not past "
                                    f"the indent of {line['indent']}: {shown!r}")
    assert wrapped > 0, "no code line wraps at 390 px: the check measured nothing"
    assert not problems, "\n".join(problems[:40])


def test_the_break_check():
    assert not bad_break("x = load(folder, name)", 16)  # after a space
    assert not bad_break("from vanilla_transformer.training import x", 25)  # after a dot
    assert not bad_break("model(src, tgt)", 6)  # after an opening bracket
    assert bad_break('path = "docs/assets/translator"', 14)  # inside the string
