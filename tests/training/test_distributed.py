"""Data-parallel training in two local CPU processes equals one process on the combined batch."""

from __future__ import annotations

import os

import pytest
import torch
import torch.distributed as dist

from vanilla_transformer import data_gen
from vanilla_transformer.cli.distributed import main
from vanilla_transformer.training import (
    COPY_MODEL,
    CopyTaskConfig,
    default_backend,
    free_port,
    run_local,
    shard_batches,
    train_copy_model,
    train_distributed,
)

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="needs the gloo backend")

# two batches per optimizer step, so the gradients are averaged across ranks once per step
CONFIG = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, d_ff=32, h=2, dropout=0.0),
                        batch_size=4, steps=3, accum_iter=2, warmup=2, seed=3)


@pytest.fixture(scope="module")
def two_ranks():
    return run_local(CONFIG, world_size=2)


@pytest.fixture(scope="module")
def one_process():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train_copy_model(CONFIG.replace(batch_size=2 * CONFIG.batch_size))
    finally:
        torch.set_num_threads(threads)


def test_ranks_end_with_identical_parameters(two_ranks):
    first, second = (r["state_dict"] for r in two_ranks)
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name


def test_each_rank_trained_on_its_own_half(two_ranks):
    for r in two_ranks:
        assert r["train_state"] == dict(step=6, accum_step=3, samples=24, tokens=24 * 9)


def test_loss_equals_one_process_on_the_combined_batch(two_ranks, one_process):
    for r in two_ranks:
        assert r["losses"] == pytest.approx(one_process.losses, rel=1e-5)


def test_weights_equal_one_process_on_the_combined_batch(two_ranks, one_process):
    single = one_process.model.state_dict()
    for name, value in two_ranks[0]["state_dict"].items():
        if name.endswith("linears.1.bias"):
            # The key projection's bias adds the same number to every score of a query, which
            # the softmax ignores: its true gradient is 0. What is left is rounding noise, and
            # Adam divides it by its own size, so these biases take steps of random sign.
            continue
        torch.testing.assert_close(value, single[name], rtol=1e-4, atol=1e-5, msg=name)


def test_shards_are_disjoint_and_cover_the_global_batch():
    shards = [list(shard_batches(11, 3, 2, rank=r, world_size=3, seed=9)) for r in range(3)]
    for i, whole in enumerate(data_gen(11, 9, 2, seed=9)):
        parts = [s[i].src for s in shards]
        assert all(p.shape == (3, 10) for p in parts)
        assert torch.equal(torch.cat(parts), whole.src)
        assert all(torch.equal(s[i].tgt_y, s[i].src[:, 1:]) for s in shards)


def test_bad_arguments_and_missing_environment(monkeypatch):
    with pytest.raises(ValueError, match="rank"):
        next(shard_batches(11, 2, 1, rank=2, world_size=2))
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(RuntimeError, match="torchrun"):
        train_distributed(CONFIG)
    with pytest.raises(RuntimeError, match="torchrun"):
        main(["--steps", "1", "--no-progress"])


def test_one_rank_group_in_this_process(monkeypatch, capsys):
    # the torchrun entry point, run as a world of one: same code path, no second process
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    threads = torch.get_num_threads()
    try:
        assert main(["--steps", "2", "--batch-size", "3", "--N", "1", "--d-model", "16",
                     "--d-ff", "32", "--h", "2", "--warmup", "1", "--no-progress"]) == 0
    finally:
        torch.set_num_threads(threads)
    assert "1 ranks (gloo)" in capsys.readouterr().out
    assert not dist.is_initialized()
    assert default_backend() == ("nccl" if torch.cuda.is_available() else "gloo")
    assert os.environ["WORLD_SIZE"] == "1"


def test_a_finished_group_meets_at_a_barrier_before_it_is_destroyed(monkeypatch):
    # gloo's worker threads free the last collective's tensors after it returns; a process
    # that shuts down before they have could abort, so the ranks leave together
    import vanilla_transformer.training.copy_task as copy_task

    calls = []
    for name in ("barrier", "destroy_process_group"):
        real = getattr(dist, name)
        monkeypatch.setattr(dist, name,
                            lambda *a, real=real, name=name, **k: (calls.append(name), real())[1])
    for key, value in dict(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                           MASTER_PORT=str(free_port())).items():
        monkeypatch.setenv(key, value)
    threads = torch.get_num_threads()
    try:
        train_distributed(CONFIG)
        assert calls == ["barrier", "destroy_process_group"]
        calls.clear()
        monkeypatch.setattr(copy_task, "fit", lambda *a, **k: 1 / 0)
        monkeypatch.setenv("MASTER_PORT", str(free_port()))
        with pytest.raises(ZeroDivisionError):  # the other ranks may never reach a barrier
            train_distributed(CONFIG)
        assert calls == ["destroy_process_group"]
    finally:
        torch.set_num_threads(threads)
    assert not dist.is_initialized()


def test_the_process_group_gets_a_short_timeout(monkeypatch):
    import datetime

    from vanilla_transformer.config import DEFAULT_TIMEOUT

    seen = {}

    def init(**kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setattr(dist, "init_process_group", init)
    with pytest.raises(RuntimeError, match="stop here"):
        train_distributed(CONFIG)
    assert seen["timeout"] == datetime.timedelta(seconds=DEFAULT_TIMEOUT)
    assert DEFAULT_TIMEOUT < 30 * 60  # PyTorch's own default
    with pytest.raises(RuntimeError, match="stop here"):
        train_distributed(CONFIG, timeout=datetime.timedelta(seconds=7))
    assert seen["timeout"] == datetime.timedelta(seconds=7)
    with pytest.raises(RuntimeError, match="stop here"):
        main(["--steps", "1", "--no-progress", "--timeout", "12.5"])
    assert seen["timeout"] == datetime.timedelta(seconds=12.5)


@pytest.mark.parametrize("timeout, error", [(0, ValueError), (-1.0, ValueError),
                                            (float("nan"), ValueError), ("60", TypeError)])
def test_bad_timeouts_are_refused(timeout, error):
    with pytest.raises(error, match="timeout"):
        train_distributed(CONFIG, timeout=timeout)
    with pytest.raises(error, match="timeout"):
        run_local(CONFIG, timeout=timeout)


def test_bad_options_of_the_torchrun_entry_are_one_line(capsys):
    for argv in (["--timeout", "0"], ["--seed", str(10**20)], ["--steps", "0"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_one_wait_for_every_process():
    import inspect

    from vanilla_transformer.config import DEFAULT_TIMEOUT, TRANSLATE_TIMEOUT
    from vanilla_transformer.training.plan import TRAIN_DEFAULTS

    for function in (train_distributed, run_local):
        assert inspect.signature(function).parameters["timeout"].default == DEFAULT_TIMEOUT
    assert TRAIN_DEFAULTS["timeout"] == DEFAULT_TIMEOUT  # train_translation's
    assert TRANSLATE_TIMEOUT == DEFAULT_TIMEOUT < 30 * 60  # shorter than PyTorch's own
