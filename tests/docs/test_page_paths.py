"""No page's code reads the repository's files: a reader copies a block into a folder of their
own, or runs a lesson's notebook, with nothing but the installed package.

Every fenced block of README.md and docs/**/*.md (Python, console and printed output alike) and
every code cell of the notebook pages (docs/**/*.py) is scanned for a path under `docs/` or
`benchmarks/`. Recorded results belong in the build's figures and tables, the trained
translators are the package's (`numbers-de`, `numbers-fr`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY_PATH = re.compile(r"(?<![\w/.-])(?:\./)?(?:docs|benchmarks)/")
OPENER = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")
NOTEBOOK_HEADER = "# ---\n# jupyter:"


def pages() -> list[Path]:
    docs = ROOT / "docs"
    markdown = [p for p in sorted(docs.rglob("*.md")) if "vendor" not in p.relative_to(docs).parts]
    notebooks = [p for p in sorted(docs.rglob("*.py"))
                 if p.read_text(encoding="utf-8").startswith(NOTEBOOK_HEADER)]
    return [ROOT / "README.md", *markdown, *notebooks]


def code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of every line of code on the page: inside a fence of a Markdown
    page, or in a code cell of a notebook page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[tuple[int, str]] = []
    if path.suffix == ".py":
        code = False
        for number, line in enumerate(lines, start=1):
            if line.startswith("# %%"):
                code = "[markdown]" not in line
            elif code:
                out.append((number, line))
        return out
    fence: str | None = None
    for number, line in enumerate(lines, start=1):
        opener = OPENER.match(line)
        if fence is None:
            fence = opener.group("fence") if opener else None
        elif opener and line.strip().startswith(fence[0] * len(fence)) and not line.strip(
                ).lstrip(fence[0]):
            fence = None
        else:
            out.append((number, line))
    return out


def test_the_scan_finds_a_path_in_code_and_not_in_prose(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Read docs/x.md.\n\n```python\nopen('docs/assets/a.json')\n```\n\n"
                    "~~~~console\n$ ls benchmarks/results\n~~~~\n", encoding="utf-8")
    found = [n for n, line in code_lines(page) if REPOSITORY_PATH.search(line)]
    assert found == [4, 8]
    notebook = tmp_path / "page.py"
    notebook.write_text(NOTEBOOK_HEADER + "\n# ---\n\n# %% [markdown]\n# docs/a\n\n# %%\n"
                        "x = 'docs/a'\ny = 'my_docs/a'\n", encoding="utf-8")
    assert [n for n, line in code_lines(notebook) if REPOSITORY_PATH.search(line)] == [9]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_code_names_a_path_of_the_repository(page: Path) -> None:
    found = [f"{page.relative_to(ROOT)}:{n}: {line.strip()}" for n, line in code_lines(page)
             if REPOSITORY_PATH.search(line)]
    assert not found, ("code that reads the repository's files, which a reader of the page "
                       "does not have:\n" + "\n".join(found))
