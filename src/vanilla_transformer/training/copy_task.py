r"""The copy task: train a small Transformer to output its input, judged by exact match, in one
process or in each process of a data-parallel job (paper section 5.2 trained on 8 GPUs), with
the label-smoothed loss, Adam and the schedule of section 5.3.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import datetime
import functools
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.multiprocessing as mp

from .._checks import check_positive_int
from ..config import COPY_MODEL, DEFAULT_TIMEOUT, CopyTaskConfig
from ..data.copy_task import PAD, shard_batches
from ..inference.likelihood import exact_match  # re-exported: the copy task's score
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from .callbacks import Callback
from .checkpoints import load_rank_result, save_rank_result
from .fit_loop import FitProgress, fit
from .loop import TrainState
from .loss import SimpleLossCompute, label_smoothed_kl
from .ranks import Ranks, check_fits_memory, check_timeout, default_backend, free_port, join, leave
from .schedule import make_optimizer

__all__ = ['COPY_MODEL', 'CopyTaskConfig', 'CopyTaskRun', 'train_copy_model', 'exact_match',
           'shard_batches', 'DistributedRun', 'train_distributed', 'run_local']
# COPY_MODEL and CopyTaskConfig live in vanilla_transformer.config, shard_batches in
# vanilla_transformer.data.copy_task; they are importable here too


@dataclass
class CopyTaskRun:
    """The result of [`train_copy_model`][vanilla_transformer.training.copy_task.train_copy_model].

    Attributes:
        model: the trained model, in eval mode. config: its settings.
        losses: the mean loss per token of every optimizer step.
        train_state: the training counts.
        seconds: wall time of the training (model building included).
    """

    model: EncoderDecoder
    config: CopyTaskConfig
    losses: list[float] = field(default_factory=list)
    train_state: TrainState = field(default_factory=TrainState)
    seconds: float = 0.0

    @property
    def final_loss(self) -> float:
        """The mean loss per token of the last optimizer step."""
        return self.losses[-1]


def train_copy_model(
    config: CopyTaskConfig | None = None,
    *,
    progress: bool = False,
    on_step: Callable[[TrainState, float], None] | None = None,
) -> CopyTaskRun:
    """Train a model on the copy task, reproducibly: weights, dropout and data draw from
    `config.seed` (the global generator's state is restored afterwards).

    Args:
        config: the run's settings; the defaults if `None`.
        progress: show a progress bar.
        on_step: called after every optimizer step with the counts and the step's loss.

    Returns:
        A `CopyTaskRun`.

    Examples:
        >>> from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig, train_copy_model
        >>> config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, d_ff=32), steps=3,
        ...                         batch_size=4)
        >>> run = train_copy_model(config)
        >>> len(run.losses), run.train_state.samples, run.final_loss == run.losses[-1]
        (3, 12, True)
    """
    config = CopyTaskConfig() if config is None else config
    check_fits_memory(config.model, torch.device("cpu"))
    start = time.perf_counter()
    model, done = _train(config, Ranks(), torch.device("cpu"), progress, on_step)
    return CopyTaskRun(model, config, done.losses, done.counts, time.perf_counter() - start)


def _train(config: CopyTaskConfig, ranks: Ranks, device: torch.device, progress: bool,
           on_step: Callable[[TrainState, float], None] | None = None,
           distributed: bool = False) -> tuple[EncoderDecoder, FitProgress]:
    """Build the model from `config.seed` and train it on this process's batches; with
    `distributed`, in `DistributedDataParallel`, each process with its own dropout masks."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)  # the same initial weights on every process
        model = make_model_from_config(config.model).to(device)
        trained: torch.nn.Module = model
        if distributed:
            torch.manual_seed(config.seed + ranks.rank)
            # the generator runs outside DDP's forward; its gradients are still averaged,
            # because DDP hooks every parameter that receives a gradient in backward()
            trained = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[device.index] if device.type == "cuda" else None)
        optimizer, scheduler = make_optimizer(model, config.model.d_model, factor=config.factor,
                                              warmup=config.warmup)
        criterion = functools.partial(label_smoothed_kl, padding_idx=PAD,
                                      smoothing=config.smoothing)
        nbatches = config.steps * config.accum_iter
        data = (b.to(device) for b in shard_batches(
            config.vocab, config.batch_size, nbatches, rank=ranks.rank, world_size=ranks.size,
            seq_len=config.seq_len, seed=config.seed))
        done = fit(data, trained, SimpleLossCompute(model.generator, criterion), optimizer,
                   scheduler, callbacks=[] if on_step is None else [_OnStep(on_step)],
                   accum_iter=config.accum_iter, bar=progress and ranks.rank == 0,
                   total=nbatches, desc=f"rank {ranks.rank}" if distributed else "copy task")
    return model.eval(), done


class _OnStep(Callback):
    """A function `on_step(counts, loss)` as a callback of `fit`."""

    def __init__(self, function: Callable[[TrainState, float], None]) -> None:
        self.function = function

    def on_step(self, progress: FitProgress) -> None:
        self.function(progress.counts, progress.loss)


@dataclass
class DistributedRun:
    """What `train_distributed` returns on each process: the unwrapped model in eval mode,
    every step's loss over all processes' tokens, `rank` of `world_size`, the `backend` and
    this process's counts."""

    model: EncoderDecoder
    losses: list[float] = field(default_factory=list)
    rank: int = 0
    world_size: int = 1
    backend: str = "gloo"
    train_state: TrainState = field(default_factory=TrainState)


def train_distributed(config: CopyTaskConfig | None = None, *, backend: str | None = None,
                      progress: bool = False,
                      timeout: float | datetime.timedelta = DEFAULT_TIMEOUT) -> DistributedRun:
    """Train the copy task in this process of a `torchrun` (or `run_local`) job, with
    `config.batch_size` sequences **per process**, joining the process group unless one is
    joined. With dropout 0 it equals `train_copy_model` with `batch_size * world_size`
    sequences, up to rounding.

    Args:
        config: the run's settings; the defaults if `None`.
        backend: `"gloo"`, `"nccl"`, or `None` for `default_backend()`.
        progress: show a progress bar on process 0.
        timeout: seconds (or a `timedelta`) a process waits for the others.

    Raises:
        RuntimeError: outside a distributed job. ValueError: for a bad `timeout`.

    Examples:
        >>> import os
        >>> from unittest import mock
        >>> from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig
        >>> from vanilla_transformer.training import free_port, train_distributed
        >>> config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, d_ff=32), steps=2)
        >>> env = dict(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
        ...            MASTER_PORT=str(free_port()))
        >>> with mock.patch.dict(os.environ, env):
        ...     run = train_distributed(config)
        >>> run.world_size, run.backend, len(run.losses)
        (1, 'gloo', 2)
    """
    config = CopyTaskConfig() if config is None else config
    backend = backend or default_backend()
    ranks, owns_group, device = join(
        True, timeout, torch.device("cuda" if backend == "nccl" else "cpu"), backend=backend,
        outside=RuntimeError("RANK and WORLD_SIZE are not set: start this with torchrun "
                             "(torchrun --standalone --nproc_per_node=2 -m "
                             "vanilla_transformer.cli.distributed) or use run_local"))
    together = False  # true once every process is done: then they meet at a barrier
    try:
        model, done = _train(config, ranks, device, progress, distributed=True)
        together = True
        return DistributedRun(model, done.losses, ranks.rank, ranks.size,
                              torch.distributed.get_backend(), done.counts)
    finally:
        if owns_group:
            leave(together)


def _local_worker(rank: int, world_size: int, port: int, config: CopyTaskConfig, out_dir: str,
                  threads: int, timeout: datetime.timedelta) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
    torch.set_num_threads(threads)
    run = train_distributed(config, backend="gloo", timeout=timeout)
    save_rank_result(out_dir, rank, losses=run.losses, state_dict=run.model.state_dict(),
                     train_state=vars(run.train_state))


def run_local(config: CopyTaskConfig | None = None, world_size: int = 2, *, threads: int = 1,
              timeout: float | datetime.timedelta = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    """Run `train_distributed` in `world_size` local CPU processes (gloo) of `threads` threads,
    without `torchrun`: per process, in rank order, a dict of its `losses`, `state_dict` and
    `train_state`. With dropout 0 their losses are `train_copy_model`'s with
    `batch_size * world_size` sequences, up to rounding.

    Raises:
        torch.multiprocessing.ProcessRaisedException: if a process fails.
    """
    check_positive_int("world_size", world_size)
    check_positive_int("threads", threads)
    wait = check_timeout(timeout)
    config = CopyTaskConfig() if config is None else config
    with tempfile.TemporaryDirectory() as out_dir:
        spawn: Any = mp.spawn  # type: ignore[attr-defined]
        spawn(_local_worker, args=(world_size, free_port(), config, out_dir, threads, wait),
              nprocs=world_size, join=True)
        return [load_rank_result(out_dir, r) for r in range(world_size)]
