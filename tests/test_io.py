"""The output rule: `_io.output_file` and `_io.output_folder`, and the checks of `_checks` they
make, called directly."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from vanilla_transformer._checks import (
    check_output_file,
    check_output_folder,
    check_path,
    has_run_shape,
    run_folder_of,
)
from vanilla_transformer._io import LOCK_FILE, output_file, output_folder


def _run_shape(folder: Path, beside: str = "tokenizer.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model": {}, "training": {}}),
                                        encoding="utf-8")
    if beside == "checkpoints":
        (folder / beside).mkdir()
    else:
        (folder / beside).write_text("{}", encoding="utf-8")
    return folder


@pytest.mark.parametrize("beside", ["tokenizer.json", "model.pt", "checkpoints"])
def test_a_run_is_known_by_its_shape(tmp_path, beside):
    run = _run_shape(tmp_path / "run", beside)
    assert has_run_shape(run)
    assert run_folder_of(run / "ids" / "src.bin") == run.resolve()
    assert run_folder_of(run / "checkpoints") == run.resolve()


@pytest.mark.parametrize("config", [
    '{"my": "settings"}',  # a user's own config.json
    '{"add_source_bos": false, "unk_token": "<unk>"}',  # a CTranslate2 export's
    "not json",
    '{"model": {}, "training": 3}',
])
def test_one_file_of_a_runs_name_is_not_a_run(tmp_path, config):
    (tmp_path / "config.json").write_text(config, encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    assert not has_run_shape(tmp_path)
    assert run_folder_of(tmp_path / "x.txt") is None
    (tmp_path / "config.json").unlink()
    _run_shape(tmp_path / "alone", "model.pt")
    (tmp_path / "alone" / "model.pt").unlink()  # config.json with nothing beside it
    assert not has_run_shape(tmp_path / "alone")


def test_an_empty_path_names_its_flag():
    with pytest.raises(ValueError, match="^--out is empty; give a path$"):
        check_path("--out", "")
    assert check_path("--out", " ") == " "  # a name of one space is a name


def test_a_hard_link_to_a_file_read_is_refused(tmp_path):
    data = tmp_path / "data.tsv"
    data.write_text("a\tb\n", encoding="utf-8")
    os.link(data, tmp_path / "same.tsv")
    with pytest.raises(ValueError, match=r"--output '.*same.tsv' is the file this command "
                                         r"reads as --data"):
        check_output_file(str(tmp_path / "same.tsv"), "--output", reads={"--data": str(data)},
                          overwrite=True)
    assert data.read_text(encoding="utf-8") == "a\tb\n"


def test_a_link_is_written_through_to_its_file(tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text("old", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to(mine)
    assert check_output_file(str(tmp_path / "link.txt"), "--output",
                             overwrite=True) == mine.resolve()


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(ValueError, match="is a socket, not a regular file"):
            check_output_file(str(path), "--output", overwrite=True)


def test_dash_is_standard_output_only_where_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert check_output_file("-", "--output", stdout=True) is None
    assert check_output_file("-", "--save") == tmp_path.resolve() / "-"  # a file named '-'


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"--save '.*/no/m.pt': the folder '.*/no' does not "
                                         "exist"):
        check_output_file(str(tmp_path / "no" / "m.pt"), "--save")


def test_output_folder_leaves_nothing_when_the_block_raises(tmp_path):
    out = tmp_path / "a" / "b"

    def half_written() -> None:
        with output_folder(str(out), "--out", ["x.tsv"]) as folder:
            (folder / "x.tsv").write_text("half", encoding="utf-8")
            raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError):
        half_written()
    assert list(tmp_path.iterdir()) == []


def test_output_folder_keeps_what_was_there(tmp_path):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    (tmp_path / "x.tsv").write_text("old", encoding="utf-8")
    locked = []

    def half_written() -> None:
        with output_folder(str(tmp_path), "--out", ["x.tsv"], overwrite=True) as folder:
            (folder / "y.tsv").write_text("new", encoding="utf-8")
            locked.append((folder / LOCK_FILE).read_text())
            raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError):
        half_written()
    assert locked == [str(os.getpid())]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "x.tsv"]


def test_output_folder_refuses_a_folder_entry_of_an_output_name(tmp_path):
    (tmp_path / "x.tsv").mkdir()
    with pytest.raises(ValueError, match="holds x.tsv, which is a folder, not a regular file"):
        check_output_folder(str(tmp_path), "--out", ["x.tsv"], overwrite=True)


def test_output_file_holds_the_files_lock(tmp_path):
    target = tmp_path / "out.txt"
    with output_file(str(target), "--output") as path:
        assert path == target.resolve()
        assert (tmp_path / ".out.txt.lock").read_text() == str(os.getpid())
        seen = _seen_by_another_process(target)
    assert f"--output {str(target)!r}: file {str(target)!r} is in use: process {os.getpid()}" in (
        seen)
    assert list(tmp_path.iterdir()) == []


def _seen_by_another_process(target: Path) -> str:
    """What a second writer of `target` is told."""
    code = ("from vanilla_transformer._io import output_file\n"
            "try:\n"
            f"    with output_file({str(target)!r}, '--output'):\n"
            "        pass\n"
            "except ValueError as error:\n"
            "    print(error)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, check=True).stdout


def test_a_stale_file_lock_is_taken_over(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    (tmp_path / ".out.txt.lock").write_text(str(child.pid), encoding="ascii")
    with output_file(str(tmp_path / "out.txt"), "--output"):
        pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make", ["fifo", "folder"])
def test_an_atomic_write_replaces_only_a_regular_file(tmp_path, make):
    from vanilla_transformer._io import atomic_write

    target = tmp_path / "x"
    os.mkfifo(target) if make == "fifo" else target.mkdir()
    with pytest.raises(ValueError, match="is not a regular file"):
        atomic_write(target, lambda f: f.write(b"data"))
    assert not target.is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["x"]
