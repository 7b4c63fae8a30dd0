"""Data-parallel training of the copy task with `DistributedDataParallel` (paper section 5.2
trained on 8 GPUs), launched by `torchrun` or, on CPU, by `run_local`.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import datetime
import os
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from .._checks import check_non_negative_int, check_positive_int
from .._io import atomic_torch_save
from ..config import DEFAULT_TIMEOUT, CopyTaskConfig
from ..data.batching import Batch
from ..data.copy_task import PAD, data_gen
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from .loop import TrainState, run_epoch
from .loss import LabelSmoothing, SimpleLossCompute
from .ranks import check_timeout, leave, nccl_device, start_group
from .schedule import make_optimizer

__all__ = ['DEFAULT_TIMEOUT', 'default_backend', 'shard_batches', 'DistributedRun',
           'train_distributed', 'free_port', 'run_local']

def default_backend() -> str:
    """`"nccl"` when CUDA and NCCL are available, else `"gloo"` (which works on CPU).

    Examples:
        >>> from vanilla_transformer.training import default_backend
        >>> default_backend() in ("nccl", "gloo")
        True
    """
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    return "gloo"


def shard_batches(
    vocab: int,
    batch_size: int,
    nbatches: int,
    *,
    rank: int,
    world_size: int,
    seq_len: int = 10,
    seed: int = 0,
) -> Iterator[Batch]:
    """This rank's slice of the copy-task batches.

    Every rank draws the same global batches of `batch_size * world_size` sequences from
    [`data_gen`][vanilla_transformer.data.copy_task.data_gen] with the same seed, and keeps the rows
    `rank * batch_size` to `(rank + 1) * batch_size - 1`. The slices are disjoint and together
    they are exactly the batches a single process would draw with `batch_size * world_size`.

    Args:
        vocab: vocabulary size.
        batch_size: sequences per batch on this rank.
        nbatches: number of batches.
        rank: this process's rank, in `[0, world_size)`.
        world_size: number of processes.
        seq_len: sequence length, start symbol included.
        seed: the data seed, the same on every rank.

    Yields:
        [`Batch`][vanilla_transformer.data.batching.Batch]es of `batch_size` sequences, `pad=0`.

    Raises:
        ValueError: if `rank` is not in `[0, world_size)` or a size is not positive.

    Examples:
        >>> from vanilla_transformer.training import shard_batches
        >>> a = next(shard_batches(11, 2, 1, rank=0, world_size=2, seed=5)).src
        >>> b = next(shard_batches(11, 2, 1, rank=1, world_size=2, seed=5)).src
        >>> torch.equal(torch.cat([a, b]), next(data_gen(11, 4, 1, seed=5)).src)
        True
    """
    check_positive_int("world_size", world_size)
    check_non_negative_int("rank", rank)
    if rank >= world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    check_positive_int("batch_size", batch_size)
    lo, hi = rank * batch_size, (rank + 1) * batch_size
    for batch in data_gen(vocab, batch_size * world_size, nbatches, seq_len=seq_len, seed=seed):
        src = batch.src[lo:hi]
        yield Batch(src, src.clone(), pad=PAD)


@dataclass
class DistributedRun:
    """What [`train_distributed`][vanilla_transformer.training.distributed.train_distributed] returns on
    each rank.

    Attributes:
        model: the trained model (unwrapped from `DistributedDataParallel`), in eval mode.
        losses: the mean loss per token of every optimizer step over the **global** batch (all
            ranks' tokens), the same on every rank.
        rank: this process's rank.
        world_size: number of processes.
        backend: the process-group backend used.
        train_state: this rank's training counts.

    Examples:
        See [`train_distributed`][vanilla_transformer.training.distributed.train_distributed].
    """

    model: EncoderDecoder
    losses: list[float] = field(default_factory=list)
    rank: int = 0
    world_size: int = 1
    backend: str = "gloo"
    train_state: TrainState = field(default_factory=TrainState)


def train_distributed(
    config: CopyTaskConfig | None = None,
    *,
    backend: str | None = None,
    progress: bool = False,
    timeout: float | datetime.timedelta = DEFAULT_TIMEOUT,
) -> DistributedRun:
    """Train the copy task on this rank of a data-parallel job.

    Call it in every process of a job started by `torchrun` (or
    [`run_local`][vanilla_transformer.training.distributed.run_local]): it reads `RANK`, `WORLD_SIZE`,
    `LOCAL_RANK`, `MASTER_ADDR` and `MASTER_PORT` from the environment, joins the process group
    unless one is already initialised (and then leaves it again), and trains with
    `config.batch_size` sequences **per rank**. Every rank builds the same initial weights from
    `config.seed`; the dropout generator is then seeded with `config.seed + rank` so the ranks
    draw different dropout masks.

    With dropout 0, the result equals
    [`train_copy_model`][vanilla_transformer.training.copy_task.train_copy_model] run in one process with
    `batch_size * world_size` sequences, up to floating-point rounding.

    Args:
        config: the run's settings (`batch_size` is per rank); the defaults if `None`.
        backend: `"gloo"`, `"nccl"`, or `None` for
            [`default_backend`][vanilla_transformer.training.distributed.default_backend].
        progress: show a progress bar on rank 0.
        timeout: how long a rank waits for the others, in seconds or as a `timedelta`
            (`DEFAULT_TIMEOUT`, 5 minutes, rather than PyTorch's 30), so a stalled worker
            fails the job instead of holding it; used when this call joins the process group.

    Returns:
        A [`DistributedRun`][vanilla_transformer.training.distributed.DistributedRun].

    Raises:
        RuntimeError: if the environment does not describe a distributed job.
        ValueError: if `timeout` is not positive. TypeError: if it is not a number or a
            `timedelta`.

    Examples:
        A world of one process, set up by hand as `torchrun` would:

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
    wait = check_timeout(timeout)
    owns_group = start_group(backend or default_backend(), wait, RuntimeError(
        "RANK and WORLD_SIZE are not set: start this with torchrun "
        "(torchrun --standalone --nproc_per_node=2 -m vanilla_transformer.cli.distributed) "
        "or use run_local"))
    together = False  # true once every rank is done: then they meet at a barrier
    try:
        rank, world_size = dist.get_rank(), dist.get_world_size()
        used_backend = dist.get_backend()
        device = nccl_device() or torch.device("cpu")

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)  # the same initial weights on every rank
            model = make_model_from_config(config.model).to(device)
            torch.manual_seed(config.seed + rank)  # different dropout masks on each rank
            device_ids = [device.index] if device.type == "cuda" else None
            ddp = DistributedDataParallel(model, device_ids=device_ids)
            optimizer, scheduler = make_optimizer(ddp, config.model.d_model, factor=config.factor,
                                                  warmup=config.warmup)
            criterion = LabelSmoothing(config.vocab, padding_idx=PAD, smoothing=config.smoothing)
            nbatches = config.steps * config.accum_iter
            data = (b.to(device) for b in shard_batches(
                config.vocab, config.batch_size, nbatches, rank=rank, world_size=world_size,
                seq_len=config.seq_len, seed=config.seed))
            sums: list[tuple[float, int]] = []
            last_tokens = [0]

            def record(state: TrainState, loss: float) -> None:
                tokens = state.tokens - last_tokens[0]
                last_tokens[0] = state.tokens
                sums.append((loss * tokens, tokens))

            model.train()
            # the generator runs outside DDP's forward; its gradients are still averaged,
            # because DDP hooks every parameter that receives a gradient in backward()
            _, state = run_epoch(
                data, ddp, SimpleLossCompute(model.generator, criterion), optimizer, scheduler,
                accum_iter=config.accum_iter, progress=progress and rank == 0, total=nbatches,
                on_step=record, desc=f"rank {rank}",
            )
        totals = torch.tensor(sums, dtype=torch.float64, device=device)  # (steps, 2)
        dist.all_reduce(totals)
        losses = (totals[:, 0] / totals[:, 1]).tolist()
        together = True
        return DistributedRun(model.eval(), losses, rank, world_size, used_backend, state)
    finally:
        if owns_group:
            leave(together)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (for `MASTER_PORT`).

    Examples:
        >>> from vanilla_transformer.training import free_port
        >>> 0 < free_port() < 65536
        True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _local_worker(rank: int, world_size: int, port: int, config: CopyTaskConfig, out_dir: str,
                  threads: int, timeout: datetime.timedelta) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
    torch.set_num_threads(threads)
    run = train_distributed(config, backend="gloo", timeout=timeout)
    atomic_torch_save({"losses": run.losses, "state_dict": run.model.state_dict(),
                       "train_state": vars(run.train_state)},
                      os.path.join(out_dir, f"rank{rank}.pt"))


def run_local(
    config: CopyTaskConfig | None = None,
    world_size: int = 2,
    *,
    threads: int = 1,
    timeout: float | datetime.timedelta = DEFAULT_TIMEOUT,
) -> list[dict[str, Any]]:
    """Run [`train_distributed`][vanilla_transformer.training.distributed.train_distributed] in
    `world_size` local CPU processes (gloo on 127.0.0.1), without `torchrun`.

    Args:
        config: the run's settings (`batch_size` is per rank).
        world_size: number of processes.
        threads: PyTorch threads per process.
        timeout: how long a rank waits for the others (see `train_distributed`).

    Returns:
        One dict per rank, in rank order, with `losses` (the global per-step losses),
        `state_dict` (the final weights) and `train_state` (that rank's counts, as a dict).

    Raises:
        torch.multiprocessing.ProcessRaisedException: if a rank fails.

    Examples:
        Two processes of 4 sequences each, compared with one process of 8 (this starts two
        Python processes, so it takes a few seconds):

        ```python
        from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig, train_copy_model
        from vanilla_transformer.training import run_local

        config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, d_ff=32, h=2),
                                batch_size=4, steps=3)
        ranks = run_local(config, world_size=2)
        single = train_copy_model(config.replace(batch_size=8))
        assert all(abs(a - b) <= 1e-5 * b for a, b in zip(ranks[0]["losses"], single.losses))
        ```
    """
    check_positive_int("world_size", world_size)
    check_positive_int("threads", threads)
    wait = check_timeout(timeout)
    config = CopyTaskConfig() if config is None else config
    with tempfile.TemporaryDirectory() as out_dir:
        spawn: Any = mp.spawn  # type: ignore[attr-defined]
        spawn(_local_worker, args=(world_size, free_port(), config, out_dir, threads, wait),
              nprocs=world_size, join=True)
        return [torch.load(os.path.join(out_dir, f"rank{r}.pt"), weights_only=True)
                for r in range(world_size)]
