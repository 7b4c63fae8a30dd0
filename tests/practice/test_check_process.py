"""`practice check` runs the learner's code in a child process: a check always ends, and only a
pass exits 0, whatever the code does (loops forever, calls exit(), ends the process, prints
without end); `practice status` checks a whole folder and `practice hint` prints hints."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vanilla_transformer.cli import main
from vanilla_transformer.cli._practice_process import OUTPUT_LINES
from vanilla_transformer.practice import STEPS, write_starters
from vanilla_transformer.practice._hints import HINTS

from ._answers import SOLUTIONS


def _check(tmp_path: Path, body: str, *extra: str) -> int:
    (tmp_path / "subsequent_mask.py").write_text(body)
    return main(["practice", "check", "subsequent_mask", str(tmp_path / "subsequent_mask.py"),
                 *extra])


def test_an_infinite_loop_ends_at_the_time_limit(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    body = "def subsequent_mask(size):\n    n = 0\n    while True:\n        n += 1\n"
    assert _check(tmp_path, body, "--timeout", "40") == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "did not finish within 40 seconds" in out
    assert "did not return: subsequent_mask (subsequent_mask.py, line " in out


@pytest.mark.parametrize(("body", "said"), [
    ("def subsequent_mask(size):\n    exit()\n",
     "subsequent_mask (subsequent_mask.py, line 2: exit()) called exit() or sys.exit()"),
    ("import sys\nsys.exit(0)\ndef subsequent_mask(size):\n    pass\n",
     "subsequent_mask.py as it loads (line 2: sys.exit(0)) called exit() or sys.exit(0)"),
    ("import os\ndef subsequent_mask(size):\n    os._exit(0)\n",
     "your code ended the check's process (exit status 0) before the check finished"),
], ids=["exit() in the function", "sys.exit(0) as the file loads", "os._exit(0)"])
def test_ending_the_process_is_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         body: str, said: str) -> None:
    assert _check(tmp_path, body) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("subsequent_mask: FAILED:") and said in out


def test_printed_output_is_passed_through_capped(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    body = ("import torch\ndef subsequent_mask(size):\n    for i in range(50):\n"
            "        print('row', i)\n"
            "    return torch.ones(1, size, size, dtype=torch.bool).tril()\n")
    assert _check(tmp_path, body) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Your code printed:" and out[1] == "row 0"
    assert out[OUTPUT_LINES] == f"row {OUTPUT_LINES - 1}" and f"row {OUTPUT_LINES}" not in out
    assert "left out" in out[OUTPUT_LINES + 1]
    assert out[-1] == "subsequent_mask: passed, on all 12 inputs."


def test_the_time_limit_is_stated_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["practice", "check", "--help"]) == 0
    assert "(default 120)" in " ".join(capsys.readouterr().out.split())
    assert main(["practice", "check", "attention", "a.py", "--timeout", "0"]) == 2
    assert "expected a positive number of seconds" in capsys.readouterr().err


def test_status_checks_every_step_in_order(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    write_starters(tmp_path)
    for step in STEPS:
        if step not in ("subsequent_mask", "attention", "embeddings"):
            (tmp_path / f"{step}.py").unlink()
    shutil.copy(SOLUTIONS / "subsequent_mask.py", tmp_path)
    (tmp_path / "embeddings.py").write_text(
        (SOLUTIONS / "embeddings.py").read_text().replace(" * math.sqrt(self.d_model)", ""))
    assert main(["practice", "status", str(tmp_path)]) == 1
    rows = {line.split()[0]: " ".join(line.split()[1:])
            for line in capsys.readouterr().out.splitlines()[1:-1]}
    assert list(rows) == list(STEPS)
    assert rows["subsequent_mask"] == "passed"
    assert rows["attention"] == "not started"
    assert rows["embeddings"].startswith("FAILED on 20 of 20 inputs")
    assert rows["translator"] == "not started (no file)"


def test_hint_gives_one_level_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["practice", "hint", "attention"]) == 0
    first = capsys.readouterr().out
    assert first.startswith("attention, hint 1 of 3:") and "--level 2" in first
    assert main(["practice", "hint", "attention", "--level", "3"]) == 0
    assert "masked_fill(mask == 0, -1e9)" in " ".join(capsys.readouterr().out.split())
    assert main(["practice", "hint", "attention", "--level", "4"]) == 2
    assert "attention has hints 1 to 3, got level 4" in capsys.readouterr().err
    assert set(HINTS) == set(STEPS)
