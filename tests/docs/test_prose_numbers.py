"""No number typed into prose: every number that code computes is written there by the build.

A page writes `{{ n.<script>.<key> }}` where a computed number goes, and `docs/hooks/numbers.py`
fills it in from `docs/numbers/<script>.py` at every build. This test reads the prose of every page
under docs/ (Markdown pages, and the Markdown cells of the jupytext `.py` pages) with code blocks,
inline code, TeX, link targets, HTML tags' attributes other than alt text, and HTML comments left
out, and lists every decimal, every percentage and every number of three or more digits that is
left. The allow-list below holds what is not computed: the paper's constants, section, table and
figure numbers, years and versions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# The paper's constants (its sizes, its recipe, its data) and other numbers nobody computes.
ALLOWED = {
    # model sizes of the base and big models (Table 3)
    "512", "1024", "2048", "4096", "0.1", "0.3",
    # the positional encoding's base, the schedule's warm-up, the optimiser's betas and epsilon
    "10000", "10,000", "4000", "4,000", "0.9", "0.98",
    # the data and the training of section 5: tokens a batch, vocabularies, steps
    "25000", "25,000", "37000", "37,000", "32000", "32,000", "100000", "100,000", "300000",
    "300,000", "4.5", "36",
    # the beam search of section 6.1 and the checkpoint averaging
    "0.6",
    # the big model's parameter count in Table 3 (millions)
    "213",
    # the paper's BLEU scores (Table 2)
    "27.3", "38.1", "28.4", "41.8", "41.0",
    # arXiv identifier
    "1706.03762",
}
# A number right after one of these words is a reference, not a quantity.
REFERENCE = re.compile(
    r"(?:[Ss]ections?|§|[Tt]ables?|[Ff]igures?|[Ee]quations?|[Ll]essons?|[Ll]ines?|[Vv]ersions?|"
    r"Python|PyTorch|torch|v|[Ii]ssues?|PEP|RFC)"
    r"\s*(?:[\d.]+\s*(?:,|and|or|to|–|-)\s*)*$"
)
YEAR = re.compile(r"^(19[5-9]\d|20[0-4]\d)$")
NUMBER = re.compile(
    r"(?<![\w.\-/#])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+)(?:\s?%)?(?![\w/])"
)


def prose_files() -> list[Path]:
    pages = []
    for path in sorted(DOCS.rglob("*")):
        parts = path.relative_to(DOCS).parts
        if path.suffix not in (".md", ".py") or parts[0] in {"hooks", "figures", "numbers", "snippets"}:
            continue
        if "vendor" in parts or "assets" in parts:
            continue
        if path.suffix == ".py" and "# %% [markdown]" not in path.read_text(encoding="utf-8"):
            continue
        pages.append(path)
    return pages


def markdown_of(path: Path) -> str:
    """A page's Markdown: the file itself, or the Markdown cells of a jupytext page."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return text
    lines, in_markdown = [], False
    for line in text.splitlines():
        if line.startswith("# %%"):
            in_markdown = "[markdown]" in line
            continue
        if in_markdown:
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    return "\n".join(lines)


def prose(markdown: str) -> str:
    """The prose of a page: what a reader reads as sentences, alt text included."""
    text = re.sub(r"^---\n.*?\n---\n", "", markdown, flags=re.S)  # front matter
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2[ \t]*$", " ", text, flags=re.S | re.M)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\\\(.*?\\\)|\\\[.*?\\\]", " ", text, flags=re.S)
    text = re.sub(r"(?<![\\$])\$[^$\n]+\$", " ", text)
    text = re.sub(r"``.*?``|`[^`\n]*`", " ", text)
    text = re.sub(r"\{\{\s*n\.\w+\.\w+(?::[^}\s]*)?\s*\}\}", " ", text)  # written by the build
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"^\s*\[[^\]]+\]:\s*\S+.*$", " ", text, flags=re.M)  # reference links
    text = re.sub(r"\{[#.][^}]*\}", " ", text)  # attribute lists
    text = re.sub(r"^\s*:::.*$", " ", text, flags=re.M)  # mkdocstrings directives
    text = re.sub(r"https?://\S+", " ", text)
    # HTML tags: keep alt and title text, drop the other attributes
    text = re.sub(
        r"<[a-zA-Z][^>]*>",
        lambda m: " ".join(re.findall(r'\b(?:alt|title|aria-label)="([^"]*)"', m.group(0))),
        text,
    )
    return re.sub(r"</[a-zA-Z]+>", " ", text)


def typed_numbers(text: str) -> list[str]:
    """The numbers of `text` that need a placeholder: decimals, percentages, three digits or more."""
    found = []
    for match in NUMBER.finditer(text):
        token = match.group(0)
        value = token.rstrip("% ").strip()
        digits = value.replace(",", "")
        if not ("." in value or token.endswith("%") or len(digits.split(".")[0]) >= 3):
            continue
        if value in ALLOWED or YEAR.match(value):
            continue
        if REFERENCE.search(text[max(0, match.start() - 40) : match.start()]) and not token.endswith("%"):
            continue
        line = text.count("\n", 0, match.start()) + 1
        found.append(f"{token!r} near: {text[max(0, match.start() - 40) : match.end() + 20]!r} (line {line})")
    return found


@pytest.mark.parametrize("path", prose_files(), ids=lambda p: str(p.relative_to(DOCS)))
def test_no_number_is_typed_into_prose(path: Path) -> None:
    found = typed_numbers(prose(markdown_of(path)))
    assert not found, (
        f"docs/{path.relative_to(DOCS)} types these numbers into its prose; write each with a "
        "placeholder {{ n.<script>.<key> }} filled from docs/numbers/<script>.py "
        "(docs/hooks/numbers.py), or state it as the paper's constant:\n  " + "\n  ".join(found)
    )


def test_the_check_finds_typed_numbers() -> None:
    text = prose("The weight is 0.534, 95 %, and 1234 steps; `0.5` and $0.25$ are code.\n")
    assert [t.split(" near")[0] for t in typed_numbers(text)] == ["'0.534'", "'95 %'", "'1234'"]
    assert typed_numbers(prose("The paper's section 5.4 and Table 3 use d = 512 (2017).")) == []
    assert typed_numbers(prose("It gives {{ n.attention.forty_weight }} of its weight.")) == []
    assert typed_numbers(prose('![Loss 2.45 at the end](x.svg)')) != []
