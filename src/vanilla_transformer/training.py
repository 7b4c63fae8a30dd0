r"""Training: the learning-rate schedule, label smoothing, the loss and the epoch loop (paper
section 5.3 "Optimizer" and section 5.4 "Regularization").

- [`rate`][vanilla_transformer.training.rate] is the warm-up schedule of section 5.3,
  $lrate = factor \cdot d_{model}^{-0.5} \cdot \min(step^{-0.5}, step \cdot warmup^{-1.5})$,
  written to be used with `torch.optim.lr_scheduler.LambdaLR`.
- [`LabelSmoothing`][vanilla_transformer.training.LabelSmoothing] is the KL-divergence loss
  against a smoothed target distribution (section 5.4, $\epsilon_{ls} = 0.1$ in the paper).
- [`SimpleLossCompute`][vanilla_transformer.training.SimpleLossCompute] applies the generator
  and the criterion to a batch of decoder states.
- [`run_epoch`][vanilla_transformer.training.run_epoch] runs one pass over the data, with
  gradient accumulation, and keeps counts in a
  [`TrainState`][vanilla_transformer.training.TrainState].

These follow the Annotated Transformer's training code with its known problems fixed: the label
smoothing loss is never NaN where the model gives a log-probability of $-\infty$ to a token the
target rules out (padding rows included); gradient accumulation divides by the number of tokens
of the whole accumulation window, so the accumulated gradient is the gradient of the mean loss
over the combined batch; the optimizer and the scheduler step once per window, the last
incomplete window included; and no argument has a mutable default.

Explained on the *Training the copy task* page.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import torch
from torch import nn

from ._checks import check_choice, check_positive_int
from .config import ModelConfig
from .model import make_model_from_config

__all__ = [
    "rate",
    "make_optimizer",
    "LabelSmoothing",
    "SimpleLossCompute",
    "TrainState",
    "run_epoch",
    "save_checkpoint",
    "load_checkpoint",
]

MODES = ("train", "train+log", "eval")
"""The values accepted by `run_epoch(mode=...)`; `"train+log"` is an alias of `"train"` kept
for code written against the Annotated Transformer."""


def _check_positive_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a positive number, got {value!r} ({type(value).__name__})")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return float(value)


def rate(step: int, model_size: int, factor: float, warmup: int) -> float:
    r"""The learning rate of paper section 5.3 at optimizer step `step`.

    $$lrate = factor \cdot d_{model}^{-0.5} \cdot \min(step^{-0.5},\ step \cdot warmup^{-1.5})$$

    It grows linearly for the first `warmup` steps and then decays with the inverse square root
    of the step; the peak, at `step == warmup`, is `factor / sqrt(model_size * warmup)`.
    `torch.optim.lr_scheduler.LambdaLR` calls its function with step `0` before the first
    update, where the formula would divide by zero: step `0` is treated as step `1`. Give the
    optimizer a base learning rate of `1.0` so that `LambdaLR`'s multiplier *is* the rate.

    Args:
        step: the optimizer step, an int >= 0.
        model_size: `d_model`.
        factor: a constant scale (the paper uses 1).
        warmup: number of warm-up steps (the paper uses 4000).

    Returns:
        The learning rate, a float.

    Raises:
        TypeError: if an argument has the wrong type.
        ValueError: if `step` is negative, or `model_size`, `factor` or `warmup` is not positive.

    Example:
        >>> from vanilla_transformer.training import rate
        >>> round(rate(4000, model_size=512, factor=1.0, warmup=4000), 7)
        0.0006988
        >>> rate(0, 512, 1.0, 4000) == rate(1, 512, 1.0, 4000)
        True
        >>> opt = torch.optim.Adam(nn.Linear(2, 2).parameters(), lr=1.0, betas=(0.9, 0.98))
        >>> sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: rate(s, 512, 1.0, 4000))
        >>> opt.param_groups[0]["lr"] == rate(0, 512, 1.0, 4000)
        True
    """
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step must be an int, got {step!r} ({type(step).__name__})")
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    check_positive_int("model_size", model_size)
    factor = _check_positive_number("factor", factor)
    check_positive_int("warmup", warmup)
    step = max(step, 1)  # LambdaLR starts at step 0, where step ** -0.5 is undefined
    return factor * model_size**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(
    model: nn.Module, d_model: int, *, factor: float = 1.0, warmup: int = 4000
) -> tuple[torch.optim.Adam, torch.optim.lr_scheduler.LambdaLR]:
    r"""The paper's optimizer (section 5.3): Adam with $\beta_1 = 0.9$, $\beta_2 = 0.98$,
    $\epsilon = 10^{-9}$, and the [`rate`][vanilla_transformer.training.rate] schedule.

    The optimizer's base learning rate is `1.0`, so the scheduler's multiplier is the learning
    rate itself. Call `scheduler.step()` after every `optimizer.step()`
    ([`run_epoch`][vanilla_transformer.training.run_epoch] does).

    Args:
        model: the module whose parameters to train.
        d_model: the model width used by the schedule.
        factor: the schedule's scale.
        warmup: the schedule's warm-up steps.

    Returns:
        `(optimizer, scheduler)`.

    Raises:
        ValueError: if `d_model`, `factor` or `warmup` is not positive.

    Example:
        >>> from vanilla_transformer.training import make_optimizer, rate
        >>> optimizer, scheduler = make_optimizer(nn.Linear(4, 4), d_model=512, warmup=4000)
        >>> optimizer.param_groups[0]["lr"] == rate(1, 512, 1.0, 4000)
        True
    """
    rate(1, d_model, factor, warmup)  # checks the arguments now, not at the first step
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: rate(step, d_model, factor, warmup)
    )
    return optimizer, scheduler


class LabelSmoothing(nn.Module):
    r"""KL-divergence loss against a label-smoothed target distribution (paper section 5.4).

    For a row whose correct class is $y$, the target distribution puts $1 - \epsilon$ on $y$,
    nothing on the padding class, and spreads $\epsilon$ evenly over the other `size - 2` classes,
    so every row of the target sums to 1. Rows whose target *is* the padding id get an all-zero
    target and contribute exactly zero to the loss. The loss is the sum over every entry of
    $t \, (\log t - x)$, where $t$ is the target and $x$ the model's log-probability, with
    entries where $t = 0$ counted as zero (even where $x = -\infty$).

    With `smoothing=0` this is the negative log-likelihood summed over the non-padding rows.

    Compared with the Annotated Transformer's version, which sums `nn.KLDivLoss`: an entry
    whose target is 0 adds exactly 0 even where the model's log-probability is $-\infty$
    (`nn.KLDivLoss` gives NaN there, for instance for a padding row the model rules out),
    padding rows are zeroed with a boolean mask that works for any number of them, the input's
    size is checked, and `smoothing > 0` with fewer than 3 classes is refused instead of
    dividing by zero.

    Args:
        size: number of classes (the target vocabulary size).
        padding_idx: the padding id; it never receives probability mass.
        smoothing: $\epsilon_{ls}$, in [0, 1).

    Attributes:
        true_dist: the target distribution of the last call, `(rows, size)`, detached (for
            plotting), or `None` before the first call.
        confidence: $1 - \epsilon_{ls}$.

    Raises:
        ValueError: if `padding_idx` is not in `[0, size)`, `smoothing` is outside [0, 1), or
            `smoothing > 0` with `size < 3`.
        TypeError: if `size` or `padding_idx` is not an int.

    Example:
        >>> from vanilla_transformer.training import LabelSmoothing
        >>> crit = LabelSmoothing(size=6, padding_idx=0, smoothing=0.5)
        >>> x = torch.log_softmax(torch.zeros(2, 6), dim=-1)
        >>> loss = crit(x, torch.tensor([2, 0]))  # the second row is padding
        >>> crit.true_dist.tolist()
        [[0.0, 0.125, 0.5, 0.125, 0.125, 0.125], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    """

    def __init__(self, size: int, padding_idx: int, smoothing: float = 0.0) -> None:
        super().__init__()
        check_positive_int("size", size)
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, int):
            raise TypeError(f"padding_idx must be an int, got {padding_idx!r}")
        if not 0 <= padding_idx < size:
            raise ValueError(f"padding_idx must be in [0, {size}), got {padding_idx}")
        if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)):
            raise TypeError(f"smoothing must be a float in [0, 1), got {smoothing!r}")
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
        if smoothing > 0 and size < 3:
            raise ValueError(
                f"smoothing={smoothing} is spread over size - 2 classes (all but the correct one "
                f"and padding), so size must be at least 3; got size={size}"
            )
        self.size = size
        self.padding_idx = padding_idx
        self.smoothing = float(smoothing)
        self.confidence = 1.0 - self.smoothing
        self.true_dist: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The summed KL divergence between the smoothed target and `x`.

        Args:
            x: log-probabilities `(rows, size)` (e.g. `(batch * tgt_len, vocab)`).
            target: class ids `(rows,)`.

        Returns:
            A scalar tensor: the loss summed over rows (divide by the number of tokens for a
            mean).

        Raises:
            ValueError: if `x` is not `(rows, size)`, `target` is not `(rows,)`, or a target id
                is outside `[0, size)`.
            TypeError: if `target` is not an integer tensor.
        """
        if x.dim() != 2 or x.size(1) != self.size:
            raise ValueError(f"x must have shape (rows, {self.size}), got {tuple(x.shape)}")
        if target.dim() != 1 or target.size(0) != x.size(0):
            raise ValueError(
                f"target must have shape ({x.size(0)},) to match x, got {tuple(target.shape)}"
            )
        if target.dtype.is_floating_point or target.dtype == torch.bool:
            raise TypeError(f"target must hold integer class ids, got dtype {target.dtype}")
        if target.numel() and (int(target.min()) < 0 or int(target.max()) >= self.size):
            raise ValueError(f"target ids must lie in [0, {self.size})")
        with torch.no_grad():
            spread = self.smoothing / (self.size - 2) if self.smoothing > 0 else 0.0
            true_dist = torch.full_like(x, spread)
            true_dist.scatter_(1, target.long().unsqueeze(1), self.confidence)
            true_dist[:, self.padding_idx] = 0.0
            # a boolean row mask works for any number of padding rows, none included
            true_dist.masked_fill_((target == self.padding_idx).unsqueeze(1), 0.0)
        self.true_dist = true_dist
        # xlogy gives 0 where t == 0, and zeroing x there keeps x = -inf from making 0 * inf = NaN
        positive = true_dist > 0
        terms = torch.xlogy(true_dist, true_dist) - true_dist * x.masked_fill(~positive, 0.0)
        return terms.sum()


class SimpleLossCompute:
    """Apply the generator and a criterion to decoder states, and normalise the loss.

    Args:
        generator: maps decoder states `(batch, tgt_len, d_model)` to log-probabilities
            `(batch, tgt_len, vocab)` (the model's `generator`).
        criterion: a summed loss over `(rows, vocab)` log-probabilities and `(rows,)` targets,
            such as [`LabelSmoothing`][vanilla_transformer.training.LabelSmoothing].

    Example:
        >>> from vanilla_transformer.training import LabelSmoothing, SimpleLossCompute
        >>> gen = Generator(8, 5)
        >>> compute = SimpleLossCompute(gen, LabelSmoothing(5, padding_idx=0))
        >>> y = torch.tensor([[1, 2, 3], [4, 0, 0]])  # 4 tokens that are not padding
        >>> loss_sum, loss_node = compute(torch.randn(2, 3, 8), y, 4)
        >>> bool(torch.isclose(loss_sum, loss_node.detach() * 4)), loss_node.requires_grad
        (True, True)
    """

    def __init__(self, generator: nn.Module, criterion: nn.Module) -> None:
        self.generator = generator
        self.criterion = criterion

    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, norm: float | int | torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Compute the loss of decoder states `x` against target ids `y`.

        Args:
            x: decoder states `(batch, tgt_len, d_model)`.
            y: target ids `(batch, tgt_len)`.
            norm: what to divide the summed loss by, usually the number of non-padding tokens.

        Returns:
            `(loss_sum, loss_node)`: the summed loss, detached (for logging), and the summed loss
            divided by `norm`, still attached to the graph (call `.backward()` on it).

        Raises:
            ValueError: if `norm` is not positive.
        """
        if float(norm) <= 0:
            raise ValueError(f"norm must be positive (e.g. the number of tokens), got {norm}")
        logp = self.generator(x)
        sloss = self.criterion(logp.reshape(-1, logp.size(-1)), y.reshape(-1)) / norm
        return sloss.detach() * norm, sloss


@dataclass
class TrainState:
    """Counts kept by [`run_epoch`][vanilla_transformer.training.run_epoch] across calls.

    Attributes:
        step: training batches processed (forward and backward passes).
        accum_step: optimizer updates made (one per accumulation window).
        samples: training sequences seen.
        tokens: training target tokens seen (padding excluded).

    Example:
        >>> from vanilla_transformer.training import TrainState
        >>> TrainState()
        TrainState(step=0, accum_step=0, samples=0, tokens=0)
    """

    step: int = 0
    accum_step: int = 0
    samples: int = 0
    tokens: int = 0


def _windows(data_iter: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(data_iter)
    while window := list(islice(it, size)):
        yield window


def run_epoch(
    data_iter: Iterable[Any],
    model: nn.Module,
    loss_compute: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    mode: str = "train",
    accum_iter: int = 1,
    train_state: TrainState | None = None,
    *,
    progress: bool = True,
    total: int | None = None,
    on_step: Callable[[TrainState, float], None] | None = None,
    desc: str | None = None,
) -> tuple[float, TrainState]:
    """Run one pass over `data_iter`, training or evaluating.

    Batches are taken `accum_iter` at a time (a *window*). In training, each batch's loss is
    divided by the number of target tokens in the whole window before `backward()`, so after the
    window the accumulated gradient is exactly the gradient of the mean loss per token over the
    window's combined batch; when every batch holds the same number of tokens this is the same
    as scaling each batch's mean loss by `1 / accum_iter`. The optimizer and the scheduler then
    step once. A last, shorter window is stepped too, so no gradient leaks into the next epoch.

    The model's mode is not changed: call `model.train()` or `model.eval()` first. In `"eval"`
    mode nothing is updated and no graph is built.

    Args:
        data_iter: batches with `src`, `tgt`, `src_mask`, `tgt_mask`, `tgt_y` and `ntokens`
            (e.g. [`Batch`][vanilla_transformer.batching.Batch]es from
            [`data_gen`][vanilla_transformer.batching.data_gen]).
        model: called as `model(src, tgt, src_mask, tgt_mask)`. A `DistributedDataParallel`
            wrapper works; its gradients are averaged across processes once per window
            (`no_sync` for the other batches).
        loss_compute: called as `loss_compute(out, tgt_y, norm)`, returning `(loss_sum,
            loss_node)` like [`SimpleLossCompute`][vanilla_transformer.training.SimpleLossCompute],
            with `loss_node = loss_sum / norm`.
        optimizer: required in training modes.
        scheduler: stepped after every optimizer step, or `None`.
        mode: `"train"` (or its alias `"train+log"`) or `"eval"`.
        accum_iter: batches per optimizer step.
        train_state: counts to continue from (updated in place); a new one if `None`.
        progress: show a tqdm progress bar (on stderr) with the running loss.
        total: number of batches, for the progress bar, when `data_iter` has no length.
        on_step: called after every optimizer step as `on_step(train_state, loss)`, with the
            window's mean loss per token (e.g. to record a loss curve).
        desc: the progress bar's label.

    Returns:
        `(loss, train_state)`: the mean loss per target token over the pass, as a float, and the
        updated counts.

    Raises:
        ValueError: for an unknown `mode`, a non-positive `accum_iter`, a training mode without
            an optimizer, or an empty `data_iter`.

    Example:
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
    training = mode != "eval"
    if training and optimizer is None:
        raise ValueError(f"mode={mode!r} needs an optimizer; pass one or use mode='eval'")
    state = TrainState() if train_state is None else train_state
    if total is None and hasattr(data_iter, "__len__"):
        total = len(data_iter)  # type: ignore[arg-type]

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=desc or mode, unit="batch", leave=False)
    total_loss = 0.0
    total_tokens = 0
    start = time.perf_counter()
    try:
        with torch.set_grad_enabled(training):
            for window in _windows(data_iter, accum_iter):
                window_tokens = sum(int(b.ntokens) for b in window)
                if window_tokens <= 0:
                    raise ValueError("a window of batches has no target tokens to predict")
                window_loss = 0.0
                for i, batch in enumerate(window):
                    # DistributedDataParallel need only average the gradients once per window
                    defer_sync = training and i < len(window) - 1 and hasattr(model, "no_sync")
                    with model.no_sync() if defer_sync else contextlib.nullcontext():
                        out = model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
                        loss_sum, loss_node = loss_compute(out, batch.tgt_y, window_tokens)
                        if training:
                            loss_node.backward()
                    if training:
                        state.step += 1
                        state.samples += int(batch.src.size(0))
                        state.tokens += int(batch.ntokens)
                    window_loss += float(loss_sum)
                    if bar is not None:
                        bar.update(1)
                if training:
                    optimizer.step()  # type: ignore[union-attr]
                    optimizer.zero_grad(set_to_none=True)  # type: ignore[union-attr]
                    if scheduler is not None:
                        scheduler.step()
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


CHECKPOINT_FORMAT = "vanilla-transformer-checkpoint"
"""The `format` field of files written by `save_checkpoint`."""


def save_checkpoint(path: str | os.PathLike[str], model: nn.Module, **metadata: Any) -> None:
    """Save a model built by `make_model` with its configuration, so it can be rebuilt later.

    The file is written with `torch.save` and holds plain data only (the configuration as a
    dict, the `state_dict`, and `metadata`), so
    [`load_checkpoint`][vanilla_transformer.training.load_checkpoint] can read it with
    `torch.load(..., weights_only=True)`.

    Args:
        path: the file to write.
        model: a model with a `config` (one built by `make_model` or `make_model_from_config`).
        **metadata: extra plain values to store (numbers, strings, lists, dicts, tensors).

    Raises:
        ValueError: if `model` has no `config`.

    Example:
        >>> import tempfile, os
        >>> from vanilla_transformer.training import load_checkpoint, save_checkpoint
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
        >>> path = os.path.join(tempfile.mkdtemp(), "model.pt")
        >>> save_checkpoint(path, model, steps=10)
        >>> again, meta = load_checkpoint(path)
        >>> meta, again.config == model.config
        ({'steps': 10}, True)
    """
    config = getattr(model, "config", None)
    if config is None:
        raise ValueError(
            "model has no config to rebuild it from; build it with make_model or "
            "make_model_from_config"
        )
    torch.save(
        {
            "format": CHECKPOINT_FORMAT,
            "version": 1,
            "config": config.to_dict(),
            "state_dict": model.state_dict(),
            "metadata": dict(metadata),
        },
        path,
    )


def load_checkpoint(
    path: str | os.PathLike[str], map_location: str | torch.device = "cpu"
) -> tuple[nn.Module, dict[str, Any]]:
    """Rebuild a model saved by [`save_checkpoint`][vanilla_transformer.training.save_checkpoint].

    Args:
        path: the file to read.
        map_location: where to load the tensors.

    Returns:
        `(model, metadata)`: the model in eval mode with the saved weights, and the saved
        metadata dict.

    Raises:
        ValueError: if the file is not such a checkpoint.

    Example:
        See [`save_checkpoint`][vanilla_transformer.training.save_checkpoint].
    """
    data = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a checkpoint written by save_checkpoint")
    model = make_model_from_config(ModelConfig.from_dict(data["config"]))
    model.load_state_dict(data["state_dict"])
    return model.eval(), data["metadata"]
