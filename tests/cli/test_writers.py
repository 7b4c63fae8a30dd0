"""The output rule, seen from the command line: each way a writer could destroy a user's file,
and each way it could pass silently, is refused with one line that names the flag and the
path, and leaves the user's files as they were and nothing new behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vanilla_transformer.cli import main

SRC = str(Path(__file__).resolve().parents[2] / "src")
TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "2", "--average", "2",
        "--eval-size", "2", "--no-progress"]


@pytest.fixture(scope="module")
def data(make_numbers):
    return make_numbers(seed=2, train_size=40)


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    """A trained run folder (4 steps of a tiny model); the tests must leave it as it is."""
    out = tmp_path_factory.mktemp("trained") / "run"
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), "--max-steps", "4", *TINY]) == 0
    return out


@pytest.fixture
def fake_run(tmp_path):
    """A folder with a run's shape that no model loads from: a command that got past its
    checks would fail there, before it could write anything."""
    folder = tmp_path / "fake-run"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "config.json").write_text('{"model": {}, "training": {}}', encoding="utf-8")
    return folder


def _tree(folder: Path) -> dict[str, str]:
    """Every entry under `folder` with a hash of its content (files) or its kind."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file() and not p.is_symlink() else "link" if p.is_symlink() else "dir"
            for p in sorted(folder.rglob("*"))}


def _refused(capsys, argv: list[str], *says: str) -> str:
    """Run `argv`, expect exit status 2 and one line on stderr holding each of `says`."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for text in says:
        assert text in lines[0], lines[0]
    return lines[0]


def _command(*argv: str, stdin: Path | None = None,
             text: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, its standard input the file `stdin` or `text`."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, "-m", "vanilla_transformer", *argv]
    if stdin is None:
        return subprocess.run(command, input=text or "", capture_output=True, text=True,
                              env=env, timeout=300, check=False)
    with open(stdin, encoding="utf-8") as f:
        return subprocess.run(command, stdin=f, capture_output=True, text=True, env=env,
                              timeout=300, check=False)


# ---- 1. standard input is compared with the output, links included ----

@pytest.mark.parametrize("through_a_link", [False, True])
def test_output_that_is_standard_input_is_refused(run, tmp_path, through_a_link):
    mine = tmp_path / "lines.txt"
    mine.write_text("one\ntwo\n", encoding="utf-8")
    stdin = mine
    if through_a_link:
        stdin = tmp_path / "link.txt"
        stdin.symlink_to(mine)
    done = _command("translate", str(run), "--beam", "1", "--output", str(mine), "--overwrite",
                    stdin=stdin)
    assert done.returncode == 2, done.stderr
    assert f"--output {str(mine)!r} is the file this command reads as standard input" in (
        done.stderr)
    assert mine.read_text(encoding="utf-8") == "one\ntwo\n"


def test_streamed_output_replaces_the_file_only_when_standard_input_ends(run, tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old\n", encoding="utf-8")
    done = _command("translate", str(run), "--beam", "1", "--output", str(out), "--overwrite",
                    text="one\ntwo\n")
    assert done.returncode == 0, done.stderr
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary, no lock


# ---- 2. only regular files are replaced; `-` is standard output ----

def test_a_named_pipe_is_refused_even_with_overwrite(fake_run, tmp_path, capsys):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    _refused(capsys, ["translate", str(fake_run), "one", "--output", str(pipe), "--overwrite"],
             f"--output {str(pipe)!r} is a named pipe, not a regular file",
             "give - for standard output")
    assert Path(pipe).exists() and not Path(pipe).is_file()


def test_a_device_is_refused_even_with_overwrite(fake_run, capsys):
    before = os.stat("/dev/null")
    _refused(capsys, ["translate", str(fake_run), "one", "--output", "/dev/null",
                      "--overwrite"],
             "--output '/dev/null' is a character device, not a regular file")
    after = os.stat("/dev/null")
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_dash_is_standard_output(run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["translate", str(run), "--beam", "1", "one", "--output", "-"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no file named '-'


def test_copy_task_save_to_a_device_is_refused(capsys):
    _refused(capsys, ["copy-task", "--steps", "1", "--save", "/dev/null", "--overwrite"],
             "--save '/dev/null' is a character device")


# ---- 3. copy-task --save refuses a file that exists without --overwrite ----

def test_copy_task_save_keeps_a_file_that_exists(tmp_path, capsys):
    mine = tmp_path / "model.pt"
    mine.write_bytes(b"my own model")
    _refused(capsys, ["copy-task", "--steps", "1", "--save", str(mine)],
             f"--save {str(mine)!r} exists; give --overwrite")
    assert mine.read_bytes() == b"my own model"
    small = ["--steps", "1", "--N", "1", "--d-model", "16", "--d-ff", "32", "--examples", "0",
             "--eval-size", "2", "--no-progress"]
    assert main(["copy-task", *small, "--save", str(mine), "--overwrite"]) == 0
    assert main(["copy-task", "--load", str(mine), "--examples", "0", "--eval-size", "2"]) == 0


def test_copy_task_save_never_writes_a_runs_model(run, capsys):
    before = _tree(run)
    _refused(capsys, ["copy-task", "--steps", "1", "--save", str(run / "model.pt"),
                      "--overwrite"], "--save", "is in the run folder")
    assert _tree(run) == before


def test_copy_task_save_with_load_is_refused(tmp_path, capsys):
    model = tmp_path / "model.pt"
    model.write_bytes(b"x")
    _refused(capsys, ["copy-task", "--load", str(model), "--save", str(tmp_path / "b.pt")],
             "--save goes with training; --load")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]


# ---- 5. everything under a run folder is refused, its caches included ----

@pytest.mark.parametrize("where", ["ids/src.bin", "checkpoints/notes.txt", "notes.txt"])
def test_output_in_a_run_folder_is_refused(run, data, where, capsys):
    before = _tree(run)
    target = run / where
    _refused(capsys, ["translate", str(run), "one", "--output", str(target), "--overwrite"],
             f"--output {str(target)!r} is in the run folder {str(run)!r}")
    _refused(capsys, ["translate", "eval", str(run), "--data", str(data / "test.tsv"),
                      "--json", str(target), "--overwrite"],
             f"--json {str(target)!r} is in the run folder")
    assert _tree(run) == before


def test_folder_writers_refuse_a_runs_cache(run, capsys):
    before = _tree(run)
    _refused(capsys, ["translate", "numbers", "--out", str(run / "ids"), "--overwrite"],
             f"--out {str(run / 'ids')!r} is in the run folder {str(run)!r}")
    _refused(capsys, ["translate", "export", str(run), "--out", str(run / "ids"),
                      "--overwrite"], "--out", "is in the run folder")
    _refused(capsys, ["practice", "start", str(run / "ids")], "DIR", "is in the run folder")
    assert _tree(run) == before


# ---- 6. a run folder is known by its shape, not by one file name ----

def test_overwrite_never_clears_a_folder_that_is_not_a_run(data, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text('{"my": "settings"}', encoding="utf-8")
    before = _tree(mine)
    _refused(capsys, ["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                      str(data / "valid.tsv"), "--out", str(mine), "--overwrite", *TINY],
             f"--out {str(mine)!r} is not a run folder (it holds config.json",
             "--overwrite replaces only a run")
    assert _tree(mine) == before


def test_a_new_run_inside_a_run_is_refused(run, data, capsys):
    before = _tree(run)
    _refused(capsys, ["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                      str(data / "valid.tsv"), "--out", str(run / "inner"), *TINY],
             f"--out {str(run / 'inner')!r} is in the run folder {str(run)!r}")
    assert _tree(run) == before


def test_export_again_with_overwrite(run, tmp_path, capsys):
    out = tmp_path / "ct2"
    argv = ["translate", "export", str(run), "--format", "ctranslate2", "--out", str(out)]
    assert main(argv) == 0  # writes config.json and tokenizer.json: not a run's shape
    _refused(capsys, argv, f"--out {str(out)!r} already holds model.bin")
    assert main([*argv, "--overwrite"]) == 0
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))


# ---- a refused command leaves nothing behind ----

def test_refused_numbers_leaves_no_folder(tmp_path, capsys, monkeypatch):
    out = tmp_path / "a" / "b"
    _refused(capsys, ["translate", "numbers", "--out", str(out), "--train-size", "5",
                      "--always-train", "10"],
             "--train-size 5 cannot hold the 10 numbers below --always-train 10")
    assert list(tmp_path.iterdir()) == []

    import vanilla_transformer.data.numbers as numbers

    def half_written(*args, **kwargs):  # fails after the folder exists
        (out / "train.tsv").write_text("half\n", encoding="utf-8")
        raise ValueError("the corpus cannot be made")

    monkeypatch.setattr(numbers, "number_corpus", half_written)
    _refused(capsys, ["translate", "numbers", "--out", str(out)], "the corpus cannot be made")
    assert list(tmp_path.iterdir()) == []


def test_refused_export_leaves_the_folder_as_it_was(fake_run, tmp_path, capsys):
    out = tmp_path / "export"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    before = _tree(tmp_path)
    assert main(["translate", "export", str(fake_run), "--out", str(out)]) == 2
    assert _tree(tmp_path) == before


# ---- an empty path is refused, naming its flag ----

@pytest.mark.parametrize("argv, flag", [
    (["translate", "train", "--train", "{data}/train.tsv", "--valid", "{data}/valid.tsv",
      "--out", ""], "--out"),
    (["translate", "train", "--train", "", "--valid", "{data}/valid.tsv", "--out", "r"],
     "--train"),
    (["translate", "numbers", "--out", ""], "--out"),
    (["translate", "catalogs", "--lang", "de", "--out", ""], "--out"),
    (["translate", "export", "{run}", "--out", ""], "--out"),
    (["practice", "start", ""], "DIR"),
    (["translate", "{run}", "--input", ""], "--input"),
    (["translate", "{run}", "one", "--output", ""], "--output"),
    (["translate", "eval", "{run}", "--data", "{data}/test.tsv", "--output", ""], "--output"),
    (["translate", "eval", "{run}", "--data", "{data}/test.tsv", "--json", ""], "--json"),
    (["copy-task", "--load", ""], "--load"),
    (["copy-task", "--steps", "1", "--save", ""], "--save"),
])
def test_an_empty_path_is_refused(argv, flag, run, data, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [word.format(run=run, data=data) for word in argv]
    _refused(capsys, argv, f"{flag} is empty; give a path")
    assert list(tmp_path.iterdir()) == []


# ---- every writer takes the folder lock ----

@pytest.fixture
def other_writer():
    """A live process, standing for another writer."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield child.pid
    child.kill()
    child.wait()


@pytest.mark.parametrize("argv", [
    ["translate", "numbers", "--out", "{out}", "--overwrite"],
    ["translate", "catalogs", "--lang", "de", "--out", "{out}", "--overwrite"],
    ["translate", "export", "{run}", "--out", "{out}", "--overwrite"],
    ["practice", "start", "{out}", "--force"],
])
def test_a_folder_another_writer_holds_is_refused(argv, run, tmp_path, other_writer, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").write_text(str(other_writer), encoding="ascii")
    (out / "train.tsv").write_text("theirs\n", encoding="utf-8")
    before = _tree(tmp_path)
    _refused(capsys, [word.format(out=out, run=run) for word in argv],
             f"--out {str(out)!r}" if "--out" in argv else f"DIR {str(out)!r}",
             f"folder {str(out)!r} is in use: process {other_writer} is writing it")
    assert _tree(tmp_path) == before


def test_a_file_another_writer_holds_is_refused(run, data, tmp_path, other_writer, capsys):
    out = tmp_path / "out.txt"
    (tmp_path / ".out.txt.lock").write_text(str(other_writer), encoding="ascii")
    _refused(capsys, ["translate", str(run), "one", "--output", str(out)],
             f"--output {str(out)!r}: file {str(out)!r} is in use: process {other_writer}")
    _refused(capsys, ["translate", "eval", str(run), "--data", str(data / "test.tsv"),
                      "--output", str(out)], "is in use")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.txt.lock"]


def test_two_numbers_at_once_cannot_both_succeed(tmp_path):
    out = tmp_path / "N"
    argv = ["translate", "numbers", "--out", str(out), "--train-size", "3000",
            "--valid-size", "10", "--test-size", "10", "--limit", "100000"]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    children = [subprocess.Popen([sys.executable, "-m", "vanilla_transformer", *argv, *seed],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for seed in (["--seed", "1"], ["--seed", "2"])]
    results = [(child.wait(timeout=300), child.communicate()[1]) for child in children]
    assert sorted(status for status, _ in results) == [0, 2], results
    refused = next(err for status, err in results if status == 2)
    # refused while the other writes, or after it: the files exist and --overwrite is not given
    assert "is in use" in refused or "already holds train.tsv" in refused, refused
    assert sorted(p.name for p in out.iterdir()) == ["test.tsv", "train.tsv", "valid.tsv"]


# ---- over-long lines are refused by their length, before tokenising ----

def test_a_five_megabyte_line_is_refused_before_tokenising(data, tmp_path, capsys):
    big = tmp_path / "big.tsv"
    big.write_text("one\teins\n" + "x" * 5_000_000 + "\ty\n", encoding="utf-8")
    _refused(capsys, ["translate", "train", "--train", str(big), "--valid",
                      str(data / "valid.tsv"), "--out", str(tmp_path / "run"), *TINY],
             f"{big} line 2: 5,000,002 characters, more than the 10,000 a line may hold")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.tsv"]


def test_an_over_long_input_line_is_refused(fake_run, tmp_path, capsys):
    lines = tmp_path / "in.txt"
    lines.write_text("one\n" + "x" * 10_001 + "\n", encoding="utf-8")
    _refused(capsys, ["translate", str(fake_run), "--input", str(lines)],
             f"--input {lines} line 2: 10,001 characters")


# ---- small lies of the interface ----

def test_timeout_without_distributed_is_refused(data, tmp_path, capsys):
    _refused(capsys, ["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                      str(data / "valid.tsv"), "--out", str(tmp_path / "run"), "--timeout",
                      "60", *TINY], "--timeout", "without --distributed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extra, says", [
    (["--always-train", "-1"], "--always-train must be an int >= 0, got -1"),
    (["--limit", "50", "--train-size", "40", "--valid-size", "10", "--test-size", "10"],
     "add up to 60 numbers, but --limit 50 allows only 50"),
    (["--train-size", "5", "--always-train", "10"],
     "--train-size 5 cannot hold the 10 numbers below --always-train 10"),
    (["--limit", "0"], "--limit must be a positive int, got 0"),
    (["--valid-size", "-2"], "--valid-size must be an int >= 0, got -2"),
])
def test_numbers_errors_name_flags(extra, says, tmp_path, capsys):
    line = _refused(capsys, ["translate", "numbers", "--out", str(tmp_path / "n"), *extra],
                    says)
    assert "always_first" not in line and "range(" not in line
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_top_level_option_is_named(capsys):
    assert main(["--bogus"]) == 2
    assert "unknown option '--bogus'" in capsys.readouterr().err
    assert main(["--vers"]) == 0  # an abbreviation argparse accepts still works
