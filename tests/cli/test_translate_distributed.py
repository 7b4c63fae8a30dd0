"""`translate train --distributed` under torchrun: two gloo processes train the run that one
process trains with twice the batches per step."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from vanilla_transformer.cli import main
from vanilla_transformer.training import free_port
from vanilla_transformer.training.translation import load_train_state

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="needs the gloo backend")

# dropout 0: the two processes draw other dropout masks than one process would
TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--dropout", "0",
        "--vocab-size", "60", "--max-tokens", "120", "--warmup", "5", "--save-every", "3",
        "--average", "2", "--eval-size", "2", "--max-steps", "6", "--no-progress",
        "--device", "cpu"]


@pytest.fixture(scope="module")
def data(make_numbers):
    return make_numbers(seed=2, train_size=60)


def _train_args(data, out, *extra):
    return ["translate", "train", "--train", str(data / "train.tsv"), "--valid",
            str(data / "valid.tsv"), "--out", str(out), *TINY, *extra]


def _torchrun(args, processes=2):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={processes}", f"--master-port={free_port()}",
               "-m", "vanilla_transformer", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def two_processes(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "run"
    done = _torchrun(_train_args(data, out, "--distributed"))
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


@pytest.fixture(scope="module")
def one_process(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("single") / "run"
    threads = torch.get_num_threads()
    try:
        assert main(_train_args(data, out, "--accum-iter", "2")) == 0
    finally:
        torch.set_num_threads(threads)
    return out


def _newest(run):
    return load_train_state(sorted((run / "checkpoints").glob("step-*.pt"))[-1])


def test_two_processes_compute_the_losses_of_one_with_twice_the_batches(two_processes,
                                                                         one_process):
    ddp, single = _newest(two_processes[0]), _newest(one_process)
    assert ddp["step"] == single["step"] == 6
    assert (ddp["epoch"], ddp["position"]) == (single["epoch"], single["position"])
    torch.testing.assert_close(ddp["losses"], single["losses"], rtol=1e-5, atol=0)


def test_two_processes_end_with_the_weights_of_one(two_processes, one_process):
    ddp = torch.load(two_processes[0] / "model.pt", weights_only=True)["state_dict"]
    single = torch.load(one_process / "model.pt", weights_only=True)["state_dict"]
    assert ddp.keys() == single.keys()
    for name in ddp:
        if name.endswith("linears.1.bias"):
            # the key projection's bias shifts every score of a query alike, which softmax
            # ignores: its gradient is rounding noise, which Adam scales up to full steps
            continue
        torch.testing.assert_close(ddp[name], single[name], rtol=1e-4, atol=1e-5, msg=name)


def test_process_zero_speaks_and_writes_the_folder_alone(two_processes):
    out, done = two_processes
    assert done.stdout.count("trained 6 steps") == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "checkpoints", "config.json", "ids", "metrics.jsonl", "model.pt", "tokenizer.json"]
    state = _newest(out)
    assert len(state["rng"]["ranks"]) == 2  # each process's random state, for an exact resume
    assert not torch.equal(state["rng"]["ranks"][0], state["rng"]["ranks"][1])


def test_a_distributed_run_resumes(data, two_processes, tmp_path):
    out = Path(shutil.copytree(two_processes[0], tmp_path / "run"))
    done = _torchrun(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                      str(data / "valid.tsv"), "--out", str(out), "--resume", "--max-steps",
                      "9", "--distributed", "--no-progress", "--device", "cpu"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resuming from step 6 of 9" in done.stdout
    assert _newest(out)["step"] == 9


def test_distributed_outside_torchrun_is_refused(data, tmp_path, capsys, monkeypatch):
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert main(_train_args(data, tmp_path / "run", "--distributed")) == 2
    assert "torchrun" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_resumed_distributed_run_with_dropout_continues_exactly(data, tmp_path):
    dropout = ["--dropout", "0.1"]  # each process draws its own masks: both states are kept
    whole, halves = tmp_path / "whole", tmp_path / "halves"
    assert _torchrun(_train_args(data, whole, "--distributed", *dropout)).returncode == 0
    assert _torchrun(_train_args(data, halves, "--distributed", *dropout, "--max-steps",
                                 "3")).returncode == 0
    done = _torchrun(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                      str(data / "valid.tsv"), "--out", str(halves), "--resume", "--max-steps",
                      "6", "--distributed", "--no-progress", "--device", "cpu"])
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = _newest(whole), _newest(halves)
    assert a["step"] == b["step"] == 6
    torch.testing.assert_close(a["losses"], b["losses"], rtol=0, atol=0)
    for name, value in a["model"].items():
        torch.testing.assert_close(value, b["model"][name], rtol=0, atol=0, msg=name)


def test_a_refused_distributed_run_is_refused_once_and_changes_nothing(data, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    done = _torchrun(_train_args(data, out, "--distributed"))
    assert done.returncode != 0
    assert "exitcode: 2" in done.stderr and "SIGABRT" not in done.stderr
    assert done.stderr.count("is not empty (it holds notes.txt)") == 1  # process 0 says it
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
