"""The training loop: `run_epoch`, one pass over the data with gradient accumulation, counting
in a `TrainState`. [`fit`][vanilla_transformer.training.fit_loop.fit] runs it with callbacks.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypedDict, Unpack

import torch
from torch import nn

from .._checks import check_choice, check_positive_int
from .ranks import all_ranks_sum

__all__ = ['MODES', 'TrainState', 'TrainingDiverged', 'gradients_are_finite', 'EpochOptions',
           'run_epoch', 'options_with_defaults']

MODES = ("train", "train+log", "eval")
"""The values accepted by `run_epoch(mode=...)`; `"train+log"` is an alias of `"train"` kept
for code written against the Annotated Transformer."""


class TrainingDiverged(ValueError):  # noqa: N818 - a public name since 0.1
    """A loss or a gradient became NaN or infinite: training stops before that update. A
    `ValueError`, as the loop's earlier error was.

    Attributes:
        reason: what was not finite, e.g. `"the loss is nan"`.
        keywords: the arguments the message names (`factor`), for a command line's flags.
    """

    def __init__(self, message: str, reason: str = "", keywords: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.reason = reason
        self.keywords = tuple(keywords)


def gradients_are_finite(parameters: Iterable[torch.Tensor]) -> bool:
    """Whether every gradient of `parameters` is finite (one host sync for them all).

    Examples:
        >>> w = torch.ones(2, requires_grad=True)
        >>> (w * float("inf")).sum().backward()
        >>> gradients_are_finite([w])
        False
    """
    norms = [torch.linalg.vector_norm(p.grad.detach(), dtype=torch.float32)
             for p in parameters if p.grad is not None]
    return not norms or bool(torch.isfinite(torch.stack(norms).sum()))


@dataclass
class TrainState:
    """Counts kept by `run_epoch` across calls: training batches (`step`), optimizer updates
    (`accum_step`), sequences (`samples`) and target tokens, padding excluded (`tokens`)."""

    step: int = 0
    accum_step: int = 0
    samples: int = 0
    tokens: int = 0


def _windows(data_iter: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(data_iter)
    while window := list(islice(it, size)):
        yield window


def _data_parallel_ranks(model: nn.Module) -> int:
    """How many ranks' gradients `model` averages: 1 unless it is wrapped in DDP."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return torch.distributed.get_world_size(model.process_group)
    return 1


def _update(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any | None,
    scaler: torch.amp.GradScaler | None,
    check_gradients: bool,
    state: TrainState,
) -> None:
    """One optimizer step from the accumulated gradients, unless they are not finite."""
    if scaler is not None:
        scaler.unscale_(optimizer)
        scale = scaler.get_scale()
        scaler.step(optimizer)  # skipped by the scaler when a gradient overflowed
        scaler.update()
        stepped = scaler.get_scale() >= scale
    else:
        if check_gradients and not gradients_are_finite(model.parameters()):
            raise TrainingDiverged(
                f"a gradient is not finite at training step {state.step}, optimizer step "
                f"{state.accum_step + 1}; no update was made from it: lower the learning rate "
                "(a smaller factor) or check the data", reason="a gradient is not finite",
                keywords=("factor",))
        optimizer.step()
        stepped = True
    optimizer.zero_grad(set_to_none=True)
    if scheduler is not None and stepped:
        scheduler.step()


@dataclass
class _Pass:
    """What every window of one `run_epoch` pass is run with."""

    model: nn.Module
    loss_compute: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    training: bool
    ranks: int
    precision: contextlib.AbstractContextManager[Any]
    scaler: torch.amp.GradScaler | None
    state: TrainState
    bar: Any


def _window(window: list[Any], run: _Pass, seen: int) -> tuple[float, int]:
    """Forward (and backward) one window: `(loss sum, target tokens)` of every rank's batches."""
    model, loss_compute, training, ranks = run.model, run.loss_compute, run.training, run.ranks
    precision, scaler, state, bar = run.precision, run.scaler, run.state, run.bar
    window_tokens = sum(int(b.ntokens) for b in window)
    # with K ranks, DistributedDataParallel averages K gradients: each rank divides its loss
    # by the tokens of all ranks, times K, to get the global mean
    norm = window_tokens if ranks == 1 else all_ranks_sum(window_tokens) / ranks
    if norm <= 0:
        raise ValueError("a window of batches has no target tokens to predict")
    window_loss = 0.0
    for i, batch in enumerate(window):
        # DistributedDataParallel need only average the gradients once per window
        defer_sync = training and i < len(window) - 1 and hasattr(model, "no_sync")
        with model.no_sync() if defer_sync else contextlib.nullcontext():  # type: ignore[operator]
            with precision:
                out = model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
                loss_sum, loss_node = loss_compute(out, batch.tgt_y, norm)
            if training:
                (loss_node if scaler is None else scaler.scale(loss_node)).backward(
                )  # type: ignore[no-untyped-call]
        loss_value = float(loss_sum)  # after backward(): the GPU is kept busy
        if not math.isfinite(loss_value):
            where = (f"training step {state.step + 1}, optimizer step {state.accum_step + 1}; "
                     "no update was made from it" if training else "evaluation")
            raise TrainingDiverged(
                f"the loss is {loss_value} at batch {seen + i + 1} of this pass ({where}): "
                "training has diverged or the batch is bad; lower the learning rate "
                "(a smaller factor) or check the data",
                reason=f"the loss is {loss_value}", keywords=("factor",))
        if training:
            state.step += 1
            state.samples += int(batch.src.size(0))
            state.tokens += int(batch.ntokens)
        window_loss += loss_value
        if bar is not None:
            bar.update(1)
    if ranks > 1:  # the loss reported is the mean over every rank's tokens
        return all_ranks_sum(window_loss), round(norm * ranks)
    return window_loss, window_tokens


class EpochOptions(TypedDict, total=False):
    """The keyword-only arguments of `run_epoch` (see there)."""

    train_state: TrainState | None
    progress: bool
    total: int | None
    on_step: Callable[[TrainState, float], None] | None
    desc: str | None
    autocast: contextlib.AbstractContextManager[Any] | None
    scaler: torch.amp.GradScaler | None
    check_gradients: bool


_EPOCH_DEFAULTS: dict[str, Any] = {
    "train_state": None, "progress": True, "total": None, "on_step": None, "desc": None,
    "autocast": None, "scaler": None, "check_gradients": True}


def options_with_defaults(given: Mapping[str, Any], defaults: dict[str, Any],
                          where: str) -> dict[str, Any]:
    """`given` keyword arguments of `where` over their `defaults`; a `TypeError` naming an
    unknown one."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"{where} got unknown keyword arguments {unknown}; expected some of "
                        f"{sorted(defaults)}")
    return {**defaults, **given}


def run_epoch(
    data_iter: Iterable[Any],
    model: nn.Module,
    loss_compute: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    mode: str = "train",
    accum_iter: int = 1,
    **options: Unpack[EpochOptions],
) -> tuple[float, TrainState]:
    """Run one pass over `data_iter`, training or evaluating (the model's mode is not changed).

    Batches come `accum_iter` at a time (a *window*); each loss is divided by the window's
    target tokens before `backward()`, then the optimizer and scheduler step once. Under
    `DistributedDataParallel` the divisor counts **all** processes' tokens (one `all_reduce`
    a window), so `K` processes of one batch compute what one does with `accum_iter=K`.

    Args:
        data_iter: batches with `src`, `tgt`, `src_mask`, `tgt_mask`, `tgt_y` and `ntokens`.
        model: called as `model(src, tgt, src_mask, tgt_mask)`, possibly wrapped in DDP.
        loss_compute: `(out, tgt_y, norm) -> (loss_sum, loss_sum / norm)`, like
            `SimpleLossCompute`.
        optimizer: required in training. scheduler: stepped after each optimizer step.
        mode: one of `MODES`; `"eval"` builds no graph and updates nothing.
        accum_iter: batches per optimizer step.
        **options: the keyword-only `EpochOptions` below; another keyword is a `TypeError`.

    Keyword Args:
        train_state (TrainState | None): counts to continue (updated in place).
        progress (bool): a tqdm bar on stderr, of length `total` and label `desc` (default
            true).
        total (int | None): the bar's length.
        desc (str | None): the bar's label.
        on_step (Callable | None): called after every update as
            `on_step(train_state, window's mean loss)`.
        autocast (AbstractContextManager | None): a context around each forward pass and loss.
        scaler (GradScaler | None): a `GradScaler` for float16.
        check_gradients (bool): check gradients are finite before an update (a host sync;
            default true).

    Returns:
        `(loss, train_state)`: the mean loss per target token over the pass, and the counts.

    Raises:
        ValueError: for a bad `mode` or `accum_iter`, training without an optimizer, or no
            batches. `TrainingDiverged` for a loss or gradient that is not finite.

    Examples:
        >>> from vanilla_transformer.training import LabelSmoothing, SimpleLossCompute, run_epoch
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
        >>> opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        >>> compute = SimpleLossCompute(model.generator, LabelSmoothing(5, padding_idx=0))
        >>> data = data_gen(5, batch_size=4, nbatches=6, seq_len=4, seed=0)
        >>> loss, state = run_epoch(data, model, compute, opt, accum_iter=4, progress=False)
        >>> state
        TrainState(step=6, accum_step=2, samples=24, tokens=72)
    """
    check_choice("mode", mode, MODES)
    check_positive_int("accum_iter", accum_iter)
    given = options_with_defaults(options, _EPOCH_DEFAULTS, "run_epoch")
    training = mode != "eval"
    if training and optimizer is None:
        raise ValueError(f"mode={mode!r} needs an optimizer; pass one or use mode='eval'")
    state = given["train_state"] or TrainState()
    total, on_step, scaler = given["total"], given["on_step"], given["scaler"]
    if total is None and hasattr(data_iter, "__len__"):
        total = len(data_iter)  # type: ignore[arg-type]

    bar = None
    if given["progress"]:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=given["desc"] or mode, unit="batch", leave=False)
    run = _Pass(model, loss_compute, training, _data_parallel_ranks(model),
                given["autocast"] or contextlib.nullcontext(), scaler, state, bar)
    total_loss = 0.0
    total_tokens = seen = 0
    start = time.perf_counter()
    try:
        with torch.set_grad_enabled(training):
            for window in _windows(data_iter, accum_iter):
                window_loss, window_tokens = _window(window, run, seen)
                seen += len(window)
                if training:
                    _update(model, optimizer, scheduler, scaler,  # type: ignore[arg-type]
                            given["check_gradients"], state)
                    state.accum_step += 1
                    if on_step is not None:
                        on_step(state, window_loss / window_tokens)
                total_loss += window_loss
                total_tokens += window_tokens
                if bar is not None:
                    postfix = {"loss": f"{window_loss / window_tokens:.4f}"}
                    if training:
                        lr = optimizer.param_groups[0]["lr"]  # type: ignore[union-attr]
                        postfix["lr"] = f"{lr:.2e}"
                    postfix["tok/s"] = f"{total_tokens / (time.perf_counter() - start):.0f}"
                    bar.set_postfix(postfix, refresh=False)
    finally:
        if bar is not None:
            bar.close()
    if total_tokens == 0:
        raise ValueError("data_iter yielded no batches")
    return total_loss / total_tokens, state
