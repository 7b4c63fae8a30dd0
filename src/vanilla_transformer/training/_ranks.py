"""The few collective operations a data-parallel translation run needs, and none without one.

With one process every method is a no-op that returns its argument, so the training code
reads the same with or without `torchrun`.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from .distributed import _check_timeout, _nccl_device, _start_group
from .loop import _all_ranks_sum


class ProcessZeroError(ValueError):
    """Process 0's refusal of a run, raised again on the other processes (where a command
    line stays quiet: process 0 has said it)."""


@dataclass
class Ranks:
    """This process's place in a data-parallel run: `rank` of `size` (0 of 1 when alone)."""

    rank: int = 0
    size: int = 1
    device: torch.device | None = None  # where collectives put tensors (CUDA for NCCL)
    shared: bool = False  # process 0 has told the others how the preparation went

    def share(self, value: Any) -> Any:
        """Rank 0's `value`, on every rank (a broadcast; every rank must call it)."""
        if self.size == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0, device=self.device)
        return box[0]

    def any(self, *flags: bool) -> list[bool]:
        """Each flag, true if it is true on any rank."""
        if self.size == 1:
            return list(flags)
        values = torch.tensor([float(f) for f in flags], device=self.device)
        dist.all_reduce(values, op=dist.ReduceOp.MAX)
        return [bool(v) for v in values.tolist()]

    def total(self, value: float) -> float:
        """The sum of `value` over the ranks."""
        return value if self.size == 1 else _all_ranks_sum(value)

    def gather(self, value: Any) -> list[Any]:
        """Every rank's `value`, in rank order, on every rank."""
        if self.size == 1:
            return [value]
        values: list[Any] = [None] * self.size
        dist.all_gather_object(values, value)
        return values


def join(distributed: bool, timeout: float | datetime.timedelta,
         device: torch.device) -> tuple[Ranks, bool, torch.device]:
    """`(ranks, whether this call started the process group, this rank's device)`.

    Without `distributed`, one rank on `device`. With it, the process group that `torchrun`
    describes in the environment (joined unless one is already), NCCL on `cuda:LOCAL_RANK`
    when `device` is CUDA, otherwise gloo on the CPU.

    Raises:
        ValueError: if `distributed` is asked for outside `torchrun` (no `RANK` and
            `WORLD_SIZE` in the environment), or `timeout` is not positive. TypeError: if it
            is not a number of seconds or a `timedelta`.
    """
    if not distributed:
        return Ranks(), False, device
    wait = _check_timeout(timeout)
    owns = _start_group("nccl" if device.type == "cuda" else "gloo", wait, ValueError(
        "distributed training needs the environment torchrun sets (RANK, WORLD_SIZE, "
        "MASTER_ADDR, MASTER_PORT): start it as 'torchrun --standalone --nproc-per-node K "
        "-m vanilla_transformer translate train --distributed ...'"))
    gpu = _nccl_device()
    device = device if gpu is None else gpu
    collectives = torch.device("cpu") if gpu is None else gpu
    return Ranks(dist.get_rank(), dist.get_world_size(), collectives), owns, device
