"""`fit`, the loop both tasks train with: one `run_epoch` pass that calls its callbacks
([`callbacks`][vanilla_transformer.training.callbacks]) after every optimizer step, in an
order they state and `check_order` checks, with `FitProgress`, where the loop is, as they see
it.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

import torch
from torch import nn

from .loop import TrainState, options_with_defaults, run_epoch

__all__ = ["check_order", "FitProgress", "FitOptions", "fit"]


def check_order(callbacks: Sequence[object]) -> None:
    """Refuse callbacks in an order their `after` forbids: a `ValueError` naming both.

    Examples:
        >>> class First: ...
        >>> class Second:
        ...     after = ("First",)
        >>> check_order([First(), Second()])
        >>> check_order([Second(), First()])
        Traceback (most recent call last):
        ValueError: Second must come after First among the callbacks of fit
    """
    seen: set[str] = set()
    names = {type(c).__name__ for c in callbacks}
    for callback in callbacks:
        for before in getattr(callback, "after", ()):
            if before in names and before not in seen:
                raise ValueError(f"{type(callback).__name__} must come after {before} among "
                                 "the callbacks of fit")
        seen.add(type(callback).__name__)


_END = object()


@dataclass
class FitProgress:
    """Where `fit` is, as its callbacks see it: optimizer steps, every step's loss and the
    seconds, resumed ones included; `stop`, a callback's reason to end early (`""` while
    none); and `run_epoch`'s counts of this call."""

    step: int = 0
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stop: str = ""
    counts: TrainState = field(default_factory=TrainState)

    @property
    def loss(self) -> float:
        """The last step's loss."""
        return self.losses[-1]


class FitOptions(TypedDict, total=False):
    """The keyword-only arguments of `fit` (see there)."""

    callbacks: Sequence[Any]
    progress: FitProgress | None
    accum_iter: int
    autocast: contextlib.AbstractContextManager[Any] | None
    scaler: torch.amp.GradScaler | None
    bar: bool
    total: int | None
    desc: str | None


_FIT_DEFAULTS: dict[str, Any] = {
    "callbacks": (), "progress": None, "accum_iter": 1, "autocast": None, "scaler": None,
    "bar": False, "total": None, "desc": None}


def fit(
    batches: Iterable[Any],
    model: nn.Module,
    loss_compute: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    optimizer: torch.optim.Optimizer,
    scheduler: Any | None = None,
    **options: Unpack[FitOptions],
) -> FitProgress:
    """Train `model` on `batches` (one `run_epoch` pass in training mode), calling the
    callbacks after every optimizer step, in their order (`check_order` refuses one their
    `after` forbids); no batch is drawn once one sets `progress.stop`.
    The other arguments are `run_epoch`'s.

    Keyword Args:
        callbacks (Sequence): called after every optimizer step, in order.
        progress (FitProgress | None): where a resumed run starts.
        accum_iter (int): batches per optimizer step (default 1).
        autocast (AbstractContextManager | None): `run_epoch`'s.
        scaler (GradScaler | None): `run_epoch`'s.
        bar (bool): `run_epoch`'s `progress` (default false).
        total (int | None): the bar's length.
        desc (str | None): the bar's label.

    Examples:
        >>> from vanilla_transformer.training import LabelSmoothing, SimpleLossCompute
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
        >>> opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        >>> compute = SimpleLossCompute(model.generator, LabelSmoothing(5, padding_idx=0))
        >>> done = fit(data_gen(5, 4, 6, seq_len=4, seed=0), model, compute, opt, accum_iter=2)
        >>> done.step, len(done.losses)
        (3, 3)
    """
    given = options_with_defaults(options, _FIT_DEFAULTS, "fit")
    callbacks: Sequence[Any] = given["callbacks"]
    check_order(callbacks)
    progress: FitProgress = given["progress"] or FitProgress()
    start = time.perf_counter() - progress.seconds

    def stream() -> Iterator[Any]:
        iterator = iter(batches)  # the stop is checked before a batch is drawn
        while not progress.stop and (batch := next(iterator, _END)) is not _END:
            yield batch

    def on_step(state: TrainState, loss: float) -> None:
        progress.step += 1
        progress.losses.append(loss)
        progress.seconds = time.perf_counter() - start
        progress.counts = state
        for callback in callbacks:
            callback.on_step(progress)

    model.train()
    try:
        run_epoch(stream(), model, loss_compute, optimizer, scheduler,
                  accum_iter=given["accum_iter"], progress=given["bar"], total=given["total"],
                  desc=given["desc"], on_step=on_step, autocast=given["autocast"],
                  scaler=given["scaler"])
    finally:
        for callback in callbacks:
            callback.on_end(progress)
    return progress
