"""Run folders: the metrics file a kill cut short, the lock, stale temporary files."""

import json
import os

import pytest

from vanilla_transformer._io import RunLock
from vanilla_transformer.training.run_folder import metrics_writer, remove_stale_temporaries


def test_a_resumed_run_drops_a_cut_short_metrics_line_and_later_steps(tmp_path):
    path = tmp_path / "metrics.jsonl"
    write = metrics_writer(path, None)
    for step in (1, 2, 3):
        write({"step": step, "loss": 1.0 / step})
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"step": 4, "lo')  # killed halfway through a line
    metrics_writer(path, 2)  # resumed from the checkpoint of step 2
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2]


def test_a_lock_of_a_live_process_is_refused_and_a_dead_ones_taken_over(tmp_path):
    (tmp_path / ".lock").write_text(str(os.getppid()))
    with pytest.raises(ValueError, match=f"process {os.getppid()}"):
        RunLock(tmp_path).acquire()
    (tmp_path / ".lock").write_text("999999999")  # no such process
    with RunLock(tmp_path):
        assert (tmp_path / ".lock").read_text() == str(os.getpid())
    assert not (tmp_path / ".lock").exists()


def test_only_temporary_files_are_removed(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "model.pt").write_bytes(b"whole")
    (tmp_path / "checkpoints" / ".step-2.pt.abc.tmp").write_bytes(b"half")
    removed = remove_stale_temporaries(tmp_path)
    assert [p.name for p in removed] == [".step-2.pt.abc.tmp"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["checkpoints", "model.pt"]
