"""Where a training process runs: the one way to join `torchrun`'s process group and talk
between processes, the device and its mixed precision, and whether a model fits there.

With one process every collective of `Ranks` returns its argument, so the copy task and the
translator read the same with or without `torchrun`.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import socket
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from ..analysis.memory import check_fits_memory as check_fits_memory
from ..config import AMP_MODES, DEFAULT_TIMEOUT, DEVICES

__all__ = ["DEFAULT_TIMEOUT", "RefusalError", "ProcessZeroError", "Ranks", "check_timeout",
           "default_backend", "free_port", "join", "leave", "all_ranks_sum", "resolve_device",
           "amp_context", "check_fits_memory", "random_state", "set_random_state",
           "process_rank"]


class RefusalError(ValueError):
    """A run refused; `keywords` are the arguments its message names (for a command line's
    flags)."""

    def __init__(self, message: str, *keywords: str) -> None:
        super().__init__(message)
        self.keywords = keywords


class ProcessZeroError(ValueError):
    """Process 0's refusal of a run, raised again on the other processes."""


def check_timeout(timeout: object) -> datetime.timedelta:
    """`timeout` (seconds or a `timedelta`) as a `timedelta`; a `ValueError` unless positive
    and finite, a `TypeError` for another type."""
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or a datetime.timedelta, "
                        f"got {timeout!r}")
    else:
        seconds = float(timeout)
    if not (math.isfinite(seconds) and 0 < seconds <= 10**9):
        raise ValueError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
    return datetime.timedelta(seconds=seconds)


def default_backend() -> str:
    """`"nccl"` when CUDA and NCCL are available, else `"gloo"`.

    Examples:
        >>> default_backend() in ("nccl", "gloo")
        True
    """
    return "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (for `MASTER_PORT`)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def leave(together: bool) -> None:
    """Destroy the default process group, after a barrier when every rank leaves `together`:
    a gloo thread still freeing a collective's tensors at shutdown aborts the process. After
    one rank's error the others may never meet at a barrier, so there is none."""
    if together:
        dist.barrier()
    dist.destroy_process_group()


def process_rank(distributed: bool) -> int:
    """This process's rank in the `torchrun` job it will join (0 without `distributed`), read
    before joining: whether it is the process that speaks and writes."""
    return int(os.environ.get("RANK", "0")) if distributed else 0


def random_state(device: torch.device) -> dict[str, torch.Tensor]:
    """The random state of this process: the CPU generator's (`"torch"`), and that of the
    accelerator it trains on, `"cuda"` or `"mps"`, when it uses one."""
    state = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    elif device.type == "mps":
        state["mps"] = torch.mps.get_rng_state()
    return state


def set_random_state(state: dict[str, torch.Tensor], device: torch.device) -> None:
    """Restore a `random_state`: the CPU's, and the accelerator's when it was saved on one of
    that type (a run moved from a GPU to the CPU keeps only the CPU's)."""
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)
    elif device.type == "mps" and "mps" in state:
        torch.mps.set_rng_state(state["mps"])


def all_ranks_sum(value: float) -> float:
    """The sum of `value` over the ranks of the default process group (one `all_reduce`)."""
    total = torch.tensor([float(value)], dtype=torch.float64)
    if dist.get_backend() == "nccl":
        total = total.cuda()
    dist.all_reduce(total)
    return float(total)


@dataclass(frozen=True)
class Ranks:
    """This process's place in a data-parallel run: `rank` of `size` (0 of 1 when alone)."""

    rank: int = 0
    size: int = 1
    device: torch.device | None = None  # where collectives put tensors (CUDA for NCCL)

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
        return value if self.size == 1 else all_ranks_sum(value)

    def gather(self, value: Any) -> list[Any]:
        """Every rank's `value`, in rank order, on every rank."""
        if self.size == 1:
            return [value]
        values: list[Any] = [None] * self.size
        dist.all_gather_object(values, value)
        return values


def join(distributed: bool, timeout: float | datetime.timedelta, device: torch.device, *,
         backend: str | None = None,
         outside: Exception | None = None) -> tuple[Ranks, bool, torch.device]:
    """`(ranks, whether this call started the process group, this process's device)`.

    Without `distributed`, one process on `device`. With it, `torchrun`'s process group,
    joined unless one is: `backend`, by default NCCL on CUDA and gloo otherwise (under NCCL
    each process takes `cuda:LOCAL_RANK`). A process waits `timeout` for the others.

    Raises:
        ValueError: (or `outside`) for `distributed` outside `torchrun`, or a bad `timeout`.
    """
    wait = check_timeout(timeout)
    if not distributed:
        return Ranks(), False, device
    owns = not dist.is_initialized()
    if owns:
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            raise outside or RefusalError(
                "distributed=True needs the environment torchrun sets (RANK, WORLD_SIZE, "
                "MASTER_ADDR, MASTER_PORT): start every process with torchrun", "distributed")
        dist.init_process_group(backend=backend or ("nccl" if device.type == "cuda"
                                                    else "gloo"), timeout=wait)
    collectives = torch.device("cpu")
    if dist.get_backend() == "nccl":
        device = collectives = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    return Ranks(dist.get_rank(), dist.get_world_size(), collectives), owns, device


def resolve_device(device: str | torch.device) -> torch.device:
    """The device `device` names (`"auto"`: CUDA when available); a `ValueError` for an
    unknown name or `"cuda"` without a GPU.

    Examples:
        >>> resolve_device("cpu")
        device(type='cpu')
    """
    if isinstance(device, torch.device):
        return device
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for, but PyTorch sees no CUDA GPU here; use "
                         "'cpu' or 'auto'")
    return torch.device(device)


def amp_context(device: torch.device, amp: str) -> contextlib.AbstractContextManager[Any]:
    """The autocast context of a mixed-precision mode (`AMP_MODES`) on `device`; a
    `ValueError` for an unknown mode or `fp16` off CUDA.

    Examples:
        >>> with amp_context(torch.device("cpu"), "bf16"):
        ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
        torch.bfloat16
    """
    if amp not in AMP_MODES:
        raise ValueError(f"amp must be one of {AMP_MODES}, got {amp!r}")
    if amp == "off":
        return contextlib.nullcontext()
    if amp == "fp16" and device.type != "cuda":
        raise ValueError("amp 'fp16' needs a CUDA device (float16 on the CPU is slow and needs "
                         "loss scaling); use 'bf16' or 'off'")
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)
