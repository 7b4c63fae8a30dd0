"""The starter files, the file loader, the comparison at the heart of every message, and the
`practice` command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vanilla_transformer.cli import main
from vanilla_transformer.cli.practice import STEP_NAMES
from vanilla_transformer.practice import (
    OBJECTS,
    STARTERS,
    STEPS,
    catalogue,
    check,
    load_file,
    tensor_difference,
    write_starters,
)
from vanilla_transformer.practice._starters import LoadError

from ._answers import SOLUTIONS

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_the_command_line_lists_the_same_steps() -> None:
    assert STEP_NAMES == STEPS
    assert list(OBJECTS) == list(STEPS)


def test_every_step_has_a_starter_and_the_readme_gives_the_order(tmp_path: Path) -> None:
    written = write_starters(tmp_path)
    names = [p.name for p in written]
    assert names == [f"{s}.py" for s in STEPS] + ["README.md"]
    readme = (tmp_path / "README.md").read_text()
    assert [line.split("`")[1] for line in readme.splitlines() if line.startswith("| `")] == list(STEPS)
    for step in STEPS[:-1]:
        text = (tmp_path / f"{step}.py").read_text()
        assert "raise NotImplementedError" in text and '"""' in text
        assert f"practice check {step} {step}.py" in " ".join(text.split())
        assert max(map(len, text.splitlines())) <= 88


@pytest.mark.parametrize("step", STEPS[:-1])
def test_an_untouched_starter_is_not_written_yet(tmp_path: Path, step: str) -> None:
    write_starters(tmp_path)
    implementation = getattr(load_file(tmp_path / f"{step}.py"), OBJECTS[step])
    result = check(step, implementation, quiet=True)
    assert not result.passed
    assert result.message.startswith(f"{step}: not written yet")


def test_a_starter_differs_from_its_answer_only_in_bodies() -> None:
    """The answers in the tests are the starters filled in: same signatures, same docstrings."""
    for step in STEPS:
        starter = [ln for ln in STARTERS[f"{step}.py"].splitlines()
                   if ln.lstrip().startswith(("def ", "class "))]
        answer = [ln for ln in (SOLUTIONS / f"{step}.py").read_text().splitlines()
                  if ln.lstrip().startswith(("def ", "class "))]
        assert starter == answer, step


def test_existing_files_are_kept_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "attention.py").write_text("# my work\n")
    written = write_starters(tmp_path)
    assert tmp_path / "attention.py" not in written
    assert (tmp_path / "attention.py").read_text() == "# my work\n"
    assert tmp_path / "attention.py" in write_starters(tmp_path, overwrite=True)
    with pytest.raises(ValueError, match="is not a folder"):
        write_starters(tmp_path / "attention.py")


def test_load_file_reports_what_went_wrong_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(:\n")
    (tmp_path / "imports.py").write_text("import no_such_module_here\n")
    with pytest.raises(LoadError, match=r"line 1: SyntaxError"):
        load_file(tmp_path / "bad.py")
    with pytest.raises(LoadError, match="raised ModuleNotFoundError while loading"):
        load_file(tmp_path / "imports.py")
    with pytest.raises(LoadError, match="no such file"):
        load_file(tmp_path / "none.py")


def test_sibling_modules_of_another_folder_do_not_leak(tmp_path: Path) -> None:
    for folder, value in (("a", 1), ("b", 2)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "shared.py").write_text(f"VALUE = {value}\n")
        (tmp_path / folder / "main.py").write_text("from shared import VALUE\n")
    assert load_file(tmp_path / "a" / "main.py").VALUE == 1
    assert load_file(tmp_path / "b" / "main.py").VALUE == 2
    assert "shared" not in sys.modules


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_the_first_difference_is_found_at_its_index(shape: list[int], data: st.DataObject) -> None:
    expected = torch.arange(float(torch.Size(shape).numel())).reshape(shape)
    index = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    got = expected.clone()
    got[index] += 0.5
    text = tensor_difference(expected, got, "y")
    assert text is not None
    assert text.startswith(f"y[{', '.join(map(str, index))}]: expected ")
    assert tensor_difference(expected, expected.clone(), "y") is None


def test_differences_in_shape_dtype_and_nan_are_said() -> None:
    x = torch.zeros(2, 3)
    assert tensor_difference(x, torch.zeros(3, 2)) == "output: expected shape (2, 3), got shape (3, 2)"
    assert "expected integers" in (tensor_difference(torch.zeros(2, dtype=torch.long), x[0, :2]) or "")
    nan = x.clone()
    nan[1, 2] = float("nan")
    assert tensor_difference(x, nan) == "output[1, 2]: expected 0, got nan (1 of 6 values differ)"
    assert tensor_difference(nan, nan.clone()) is None


def test_the_catalogue_covers_the_named_mistakes() -> None:
    names = {(step, name) for step, name, _ in catalogue()}
    for step, name in [("attention", "no √d_k scale"), ("attention", "softmax over the wrong axis"),
                       ("attention", "mask inverted"), ("attention", "mask applied after the softmax"),
                       ("positional_encoding", "sin and cos swapped"),
                       ("embeddings", "no √d_model scale"), ("greedy_decode", "not stopping at </s>")]:
        assert (step, name) in names
    assert all(fix.endswith(".") for _, _, fix in catalogue())


# ---------------------------------------------------------------- the command line
def test_practice_start_writes_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["practice", "start", str(tmp_path / "mine")]) == 0
    files = sorted(p.name for p in (tmp_path / "mine").iterdir())
    assert len(files) >= 11 and "README.md" in files
    assert "wrote 15 files" in capsys.readouterr().out


def test_practice_check_exit_statuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "mine"
    shutil.copytree(SOLUTIONS, folder)
    assert main(["practice", "check", "attention", str(folder / "attention.py")]) == 0
    assert capsys.readouterr().out.startswith("attention: passed")
    text = (folder / "attention.py").read_text().replace(" / math.sqrt(d_k)", "")
    (folder / "attention.py").write_text(text)
    assert main(["practice", "check", "attention", str(folder / "attention.py")]) == 1
    assert "Classic mistake: no √d_k scale." in capsys.readouterr().out
    (folder / "attention.py").write_text("def attention(:\n")
    assert main(["practice", "check", "attention", str(folder / "attention.py")]) == 2
    err = capsys.readouterr().err
    assert "SyntaxError" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert main(["practice", "check", "layer_norm", str(folder / "sublayer.py")]) == 0
    assert main(["practice", "check", "embeddings", str(folder / "sublayer.py")]) == 2
    assert "has no Embeddings" in capsys.readouterr().err


def test_practice_check_prints_no_traceback_when_the_code_raises(tmp_path: Path) -> None:
    (tmp_path / "subsequent_mask.py").write_text("def subsequent_mask(size):\n    return 1 / 0\n")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "vanilla_transformer", "practice", "check",
                           "subsequent_mask", str(tmp_path / "subsequent_mask.py")],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 1
    assert "raised ZeroDivisionError" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("argv", [["practice", "--help"], ["practice", "check", "--help"],
                                  ["practice", "start", "--help"]], ids=" ".join)
def test_help_does_not_import_torch(argv: list[str]) -> None:
    code = ("import sys\nfrom vanilla_transformer.cli import main\n"
            f"assert main({argv!r}) == 0\nprint('torch' in sys.modules, file=sys.stderr)\n")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False"
