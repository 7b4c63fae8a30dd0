"""Every Python code block in the docs and the README is really executed, and can really fail.

pytest-codeblocks runs a Markdown fence only when its info string is exactly `python` (or `sh` /
`bash`, which it runs as shell commands). Anything else is silently left out: ```py, ```python3,
```python title="x", ```pycon, ~~~python, fences inside a blockquote, a block glued to a
non-Python block by `<!--pytest-codeblocks:cont-->`, or a block read as the expected output of the
previous one. Code under `if __name__ == "__main__":` never runs either, because the blocks are
executed without that name. These tests scan every page (docs/**/*.md) and README.md with a fence
parser of their own, compare what they find with what `pytest_codeblocks.main.extract_from_file`
collects, and list every block that would not run, or that runs but cannot fail (no assert, no
checked expected output, no saved figure), or that is skipped without a stated reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pytest_codeblocks.main import extract_from_file

ROOT = Path(__file__).resolve().parents[2]


def markdown_files() -> list[Path]:
    docs = ROOT / "docs"
    files = [p for p in sorted(docs.rglob("*.md")) if "vendor" not in p.relative_to(docs).parts]
    return [ROOT / "README.md", *files]


# The first word of an info string that names Python code, in any of its spellings.
PYTHON_LIKE = re.compile(
    r"^\{?\s*\.?(python[0-9.]*|py[0-9]?|pycon|pyi|ipython[0-9]?|python-repl|pytb|sage)(?![\w-])",
    re.IGNORECASE,
)
SHELL_RUN = re.compile(r"^(sh|bash|zsh)$")
OPENER = re.compile(r"^(?P<indent>[ \t]*)(?P<quote>(?:>[ \t]?)*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARKER = re.compile(r"<!--[-\s]*(pytest-codeblocks:.*?|pytest\.mark\..*?)[-\s]*-->")
CAN_FAIL = re.compile(
    r"(^|\W)assert\W|pytest\.raises|assert_close|assert_allclose|assert_equal|\.savefig\(",
)
MAIN_GUARD = re.compile(r"""^\s*if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.MULTILINE)
REASON = re.compile(r"""reason\s*=\s*(['"])\s*\S.*?\1""")


@dataclass
class Fence:
    lineno: int  # 1-based line of the opening fence, as pytest-codeblocks numbers it
    fence: str
    info: str
    quoted: bool
    body: str
    before: list[str] = field(default_factory=list)  # markers since the previous fence
    after: list[str] = field(default_factory=list)  # markers up to the next fence
    runs: bool = False  # run as Python by pytest-codeblocks (set by mark_what_runs)
    head: Fence | None = None  # the first fence of the block this one belongs to

    @property
    def language(self) -> str:
        return self.info.strip()

    @property
    def is_python_like(self) -> bool:
        return bool(PYTHON_LIKE.match(self.language))

    @property
    def continues(self) -> bool:
        return any(m.startswith("pytest-codeblocks:cont") for m in self.before)

    @property
    def has_expected_output(self) -> bool:
        return any(m.startswith("pytest-codeblocks:expected-output") for m in self.after)


def scan(text: str) -> list[Fence]:
    """Every fenced block of a Markdown text (CommonMark rules: ``` or ~~~, nested in lists or
    blockquotes), with the pytest-codeblocks markers written between it and the blocks before
    and after it (the collector reads a marker as applying to the next fence, however far)."""
    lines = text.splitlines()
    fences: list[Fence] = []
    pending: list[str] = []  # markers since the last line of prose or code
    last: Fence | None = None  # the block just closed, while only markers and blank lines follow
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        marker = MARKER.fullmatch(stripped)
        if marker:
            pending.append(marker.group(1).strip())
            if last is not None:
                last.after.append(marker.group(1).strip())
            i += 1
            continue
        opener = OPENER.match(line)
        if opener and not (opener["fence"][0] == "`" and "`" in opener["info"]):
            fence_chars = opener["fence"]
            indent = len(opener["indent"])
            body_lines = []
            j = i + 1
            while j < len(lines):
                candidate = re.sub(r"^[ \t]*(?:>[ \t]?)*", "", lines[j]).rstrip()
                if candidate and set(candidate) == {fence_chars[0]} and len(candidate) >= len(fence_chars):
                    break
                body = lines[j]
                if opener["quote"]:
                    body = re.sub(r"^[ \t]*(?:>[ \t]?)*", "", body)
                else:
                    body = body[min(indent, len(body) - len(body.lstrip())) :]  # as the collector does
                body_lines.append(body)
                j += 1
            last = Fence(
                lineno=i + 1,
                fence=fence_chars,
                info=opener["info"],
                quoted=bool(opener["quote"]),
                body="".join(b + "\n" for b in body_lines),
                before=pending,
            )
            fences.append(last)
            pending = []
            i = j + 1
            continue
        i += 1
    return fences


def mark_what_runs(fences: list[Fence]) -> None:
    """Follow pytest-codeblocks through the fences: which block each one joins, and whether that
    block is run as Python. Its collector sees only ``` fences outside blockquotes; a fence after
    an expected-output marker is the expected output of the block before it; a fence after a cont
    marker is appended to the block before it, whatever that block's language."""
    head: Fence | None = None
    for fence in fences:
        fence.runs = False
        if fence.fence[0] != "`" or fence.quoted:
            continue
        markers = fence.before
        if head is not None and any(m.startswith("pytest-codeblocks:expected-output") for m in markers):
            continue  # the expected output of `head`
        if head is None or not fence.continues:
            head = fence
        fence.head = head
        fence.runs = head.info.rstrip() == "python"


def problems_in(path: Path) -> list[str]:
    """Why blocks of `path` would not run, could not fail, or are skipped without a reason."""
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    problems: list[str] = []
    try:
        collected = extract_from_file(path)
    except RuntimeError as exc:
        return [f"{rel}: pytest-codeblocks cannot read the file: {exc}"]
    python_blocks = [b for b in collected if b.syntax == "python"]
    heads = {b.lineno for b in python_blocks}

    fences = scan(path.read_text(encoding="utf-8"))
    mark_what_runs(fences)
    for fence in fences:
        where = f"{rel}:{fence.lineno}"
        if SHELL_RUN.match(fence.language):
            problems.append(
                f"{where}: ```{fence.language} blocks are run as shell commands by the tests; "
                "show commands in a ```console block"
            )
            continue
        if not fence.is_python_like:
            continue
        if fence.fence[0] != "`" or fence.info.rstrip() != "python":
            problems.append(
                f"{where}: {fence.fence}{fence.info.rstrip()} is not run by the tests; "
                "write a bare ```python fence"
            )
            continue
        if fence.quoted:
            problems.append(f"{where}: a ```python block inside a blockquote is not run by the tests")
            continue
        joined = (fence.runs and fence.head.lineno in heads
                  and any(fence.body in b.code for b in python_blocks))
        if not joined:
            problems.append(
                f"{where}: this ```python block is not run by the tests (read as the expected output "
                "of the block before, or continuing a block that is not Python?)"
            )
            continue
        if MAIN_GUARD.search(fence.body):
            problems.append(
                f"{where}: code under `if __name__ == \"__main__\":` never runs in the tests; "
                "write it at top level"
            )
        if not (CAN_FAIL.search(fence.body) or fence.has_expected_output):
            problems.append(
                f"{where}: this block cannot fail; end it with an assert, a checked expected output "
                "(<!--pytest-codeblocks:expected-output--> and a ```text block) or a saved figure"
            )

    for block in collected:
        where = f"{rel}:{block.lineno}"
        for mark in block.marks:
            if re.match(r"pytest\.mark\.(skip|skipif|xfail)\b", mark) and not REASON.search(mark):
                problems.append(f"{where}: `{mark}` skips the block without a reason=...")
        if block.importorskip is not None:
            problems.append(
                f"{where}: importorskip({block.importorskip}) skips the block silently when the "
                "import fails; every dependency of the docs is installed"
            )
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_python_block_runs_and_can_fail(path):
    problems = problems_in(path)
    assert not problems, "\n".join(problems)


def test_the_checker_catches_each_bad_form(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "\n".join(
            [
                "# A page",  # 1
                "",
                "```python",  # 3: fine
                "x = 1",
                "assert x == 1",
                "```",
                "",
                "```py",  # 8
                "assert True",
                "```",
                "",
                '```python title="a.py"',  # 12
                "assert True",
                "```",
                "",
                "~~~python",  # 16
                "assert True",
                "~~~",
                "",
                "```pycon",  # 20
                ">>> 1 + 1",
                "2",
                "```",
                "",
                "> ```python",  # 25
                "> assert True",
                "> ```",
                "",
                "```python",  # 29
                'if __name__ == "__main__":',
                "    assert True",
                "```",
                "",
                "```python",  # 34: cannot fail
                "y = 2",
                "```",
                "",
                "<!--pytest.mark.skip-->",
                "```python",  # 39: skipped without a reason
                "assert False",
                "```",
                "",
                "```text",
                "not code",
                "```",
                "",
                "<!--pytest-codeblocks:cont-->",
                "```python",  # 48: continues a text block, never runs
                "assert True",
                "```",
                "",
                "```bash",  # 52
                "echo hi",
                "```",
                "",
                "1. In a list:",
                "",
                "    ```python",  # 58: fine, the collector finds indented fences
                "    assert 2 > 1",
                "    ```",
                "",
                "```python",  # 62: fine, checked by its expected output
                "print(3)",
                "```",
                "",
                "<!--pytest-codeblocks:expected-output-->",
                "",
                "```text",
                "3",
                "```",
                "",
                '<!--pytest.mark.skip(reason="needs a GPU")-->',
                "```python",  # 73: fine, skipped with a reason
                "assert torch.cuda.is_available()",
                "```",
                "",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    problems = problems_in(page)
    flagged = sorted({int(p.split(":")[1]) for p in problems})
    assert flagged == [8, 12, 16, 20, 25, 29, 34, 39, 48, 52], problems
