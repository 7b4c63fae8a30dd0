r"""Label smoothing and the loss of a batch of decoder states.

The paper's section 5.4 gives only $\epsilon_{ls} = 0.1$. The target here has the Annotated
Transformer's form: $1 - \epsilon_{ls}$ on the correct class, nothing on padding and
$\epsilon_{ls} / (V - 2)$ on each other class; the loss is $KL(target \,\|\, p_{model})$.
`LabelSmoothing` builds that target row by row, which shows the idea; `label_smoothed_kl`,
what training uses, needs three numbers per row. Validation measures `teacher_forced_nll`.

Taught in the lesson [Training][training-lesson]; used on the
[Training the copy task][training-guide] page.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .._checks import check_positive_int, reads_values
from ..config.model import check_int, check_probability
from ..inference.likelihood import teacher_forced_nll  # re-exported: the loss the validator reports

__all__ = ['LabelSmoothing', 'label_smoothed_kl', 'SimpleLossCompute', 'teacher_forced_nll']


def _check_smoothing(size: int, padding_idx: object, smoothing: object, size_name: str) -> None:
    """Raise unless `padding_idx` is a class of `size` and `smoothing` in [0, 1) has a class
    to spread over besides the label and padding."""
    if not 0 <= check_int("padding_idx", padding_idx, 0) < size:
        raise ValueError(f"padding_idx must be in [0, {size}), got {padding_idx}")
    smoothing = check_probability(smoothing, "smoothing")
    if smoothing > 0 and size < 3:
        raise ValueError(
            f"smoothing={smoothing} is spread over {size_name} - 2 classes (all but the correct "
            f"one and padding), so {size_name} must be at least 3; got {size_name}={size}"
        )

def _check_rows(x: torch.Tensor, target: torch.Tensor, x_name: str, size: int | None) -> None:
    """Raise unless `x` is `(rows, size)` and `target` `rows` ids in `[0, size)` (read only
    where that costs no host sync)."""
    if x.dim() != 2 or (size is not None and x.size(1) != size):
        raise ValueError(f"{x_name} must have shape (rows, {size or 'V'}), got "
                         f"{tuple(x.shape)}")
    if target.dtype.is_floating_point or target.dtype.is_complex or target.dtype == torch.bool:
        raise TypeError(f"target must hold integer class ids, got dtype {target.dtype}")
    if target.dim() != 1 or target.size(0) != x.size(0):
        raise ValueError(f"target must have shape ({x.size(0)},) to match {x_name}, got "
                         f"{tuple(target.shape)}")
    if target.numel() and reads_values(target):
        lo, hi = (int(v) for v in torch.aminmax(target))
        if lo < 0 or hi >= x.size(1):
            raise ValueError(f"target ids must lie in [0, {x.size(1)}); found id "
                             f"{lo if lo < 0 else hi}")


class LabelSmoothing(nn.Module):
    r"""KL-divergence loss against a label-smoothed target, built row by row.

    A row whose label is a padding id gets an all-zero target and adds exactly 0. Unlike the
    Annotated Transformer's `nn.KLDivLoss` sum, an entry whose target is 0 adds 0 even where
    the log-probability is $-\infty$ (no NaN), any number of padding rows is zeroed, and
    `smoothing > 0` with fewer than 3 classes is refused instead of dividing by zero.

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

    Examples:
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
        _check_smoothing(size, padding_idx, smoothing, "size")
        self.size = size
        self.padding_idx = padding_idx
        self.smoothing = float(smoothing)
        self.confidence = 1.0 - self.smoothing
        self.true_dist: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The KL divergence, summed over rows, between the smoothed target of class ids
        `target` `(rows,)` and log-probabilities `x` `(rows, size)`.

        Raises:
            ValueError: for a wrong shape, or (read where that costs no host sync) an id
                outside `[0, size)` or probabilities in `x`. TypeError: for non-integer ids.
        """
        _check_rows(x, target, "x", self.size)
        if x.numel() and reads_values(x):
            low, high = (float(v) for v in torch.aminmax(x.detach()))
            # log-probabilities are <= 0 (a tolerance for rounding); a probability row is >= 0
            if high > 1e-3 or low >= 0:
                raise ValueError(
                    f"x must hold log-probabilities (<= 0, e.g. from log_softmax), got values in "
                    f"[{low:.4g}, {high:.4g}]; did you pass probabilities (softmax) instead?"
                )
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


def _xlogx(p: float) -> float:
    """$p \\log p$, with its limit 0 at $p = 0$ (the `xlogy(p, p)` of a Python float)."""
    return p * math.log(p) if p > 0 else 0.0


class _LabelSmoothedKL(torch.autograd.Function):
    """The summed KL divergence to the smoothed target; the backward pass writes the gradient,
    minus the target, directly and saves only `target`."""

    @staticmethod
    def forward(
        ctx: Any, log_probs: torch.Tensor, target: torch.Tensor, padding_idx: int,
        confidence: float, spread: float,
    ) -> torch.Tensor:
        size = log_probs.size(1)
        acc = torch.promote_types(log_probs.dtype, torch.float32)  # sums of V halves overflow
        x_label = log_probs.gather(1, target.unsqueeze(1)).squeeze(1).to(acc)  # (rows,)
        # sum_j t_j log t_j: the same for every row that is not padding
        constant = _xlogx(confidence) + (size - 2) * _xlogx(spread)
        rows = constant - confidence * x_label
        if spread > 0:
            # the row's sum without the padding column, where the model may put -inf
            total = (log_probs[:, :padding_idx].sum(1, dtype=acc)
                     + log_probs[:, padding_idx + 1:].sum(1, dtype=acc))
            others = total - x_label  # every column but the label and padding
            # a label the model rules out costs +inf (and -inf - -inf would be NaN)
            rows = torch.where(x_label == float("-inf"), float("inf"), rows - spread * others)
        keep = target != padding_idx
        ctx.save_for_backward(target)
        ctx.shape, ctx.dtype = log_probs.shape, log_probs.dtype
        ctx.padding_idx, ctx.confidence, ctx.spread = padding_idx, confidence, spread
        # where, not a product: a padding row may hold -inf, and 0 * inf is NaN
        return torch.where(keep, rows, 0.0).sum()

    @staticmethod
    def backward(ctx: Any, grad_loss: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (target,) = ctx.saved_tensors
        # d loss / d x = -t: -spread everywhere, -confidence on the label, 0 on padding
        scale = (target != ctx.padding_idx).to(grad_loss.dtype) * grad_loss  # (rows,)
        grad = torch.empty(ctx.shape, dtype=ctx.dtype, device=grad_loss.device)
        grad.copy_((scale * -ctx.spread).unsqueeze(1).expand(ctx.shape))
        grad.scatter_(1, target.unsqueeze(1), (scale * -ctx.confidence).unsqueeze(1).to(ctx.dtype))
        grad[:, ctx.padding_idx] = 0.0
        return grad, None, None, None, None


def label_smoothed_kl(
    log_probs: torch.Tensor, target: torch.Tensor, padding_idx: int, smoothing: float = 0.0
) -> torch.Tensor:
    r"""The loss of [`LabelSmoothing`][vanilla_transformer.training.loss.LabelSmoothing], without
    building the `(rows, V)` target distribution.

    With $c = 1 - \epsilon$ and $s = \epsilon / (V - 2)$ the target is $t_y = c$,
    $t_{pad} = 0$ and $t_j = s$ elsewhere, so

    $$KL(t \,\|\, p) = H - c\, x_y - s \Big(\sum_{j \ne pad} x_j - x_y\Big),
      \quad H = c \log c + (V - 2)\, s \log s.$$

    Only the label's log-probability and the row's sum are read, and the backward pass writes
    the gradient $-t$ directly. It equals `F.cross_entropy` over the $C = V - 1$ classes that
    are not padding with `label_smoothing=ε·C/(C−1)`, plus $H$ per row that is not padding.

    Args:
        log_probs: floating-point log-probabilities `(rows, V)`.
        target: integer class ids `(rows,)`.
        padding_idx: the padding id, in `[0, V)`.
        smoothing: $\epsilon_{ls}$, in [0, 1); 0 gives the summed negative log-likelihood.

    Returns:
        A scalar tensor: the loss summed over rows, in float32 for half-precision inputs.

    Raises:
        ValueError: for a wrong shape, `padding_idx` or `smoothing`, `smoothing > 0` with
            `V < 3`, or (on the CPU outside `torch.compile`) a target id outside `[0, V)`.
        TypeError: for a non-tensor, non-float `log_probs`, non-integer `target`, or a
            `padding_idx` or `smoothing` of the wrong type.

    Examples:
        >>> from vanilla_transformer.training import LabelSmoothing, label_smoothed_kl
        >>> x = torch.randn(4, 6).log_softmax(-1)
        >>> y = torch.tensor([2, 0, 5, 1])  # the second row is padding
        >>> fused = label_smoothed_kl(x, y, padding_idx=0, smoothing=0.1)
        >>> bool(torch.isclose(fused, LabelSmoothing(6, 0, 0.1)(x, y)))
        True
    """
    for name, value in (("log_probs", log_probs), ("target", target)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if not log_probs.is_floating_point():
        raise TypeError(f"log_probs must be a floating-point tensor, got dtype {log_probs.dtype}")
    _check_rows(log_probs, target, "log_probs", None)
    size = log_probs.size(1)
    _check_smoothing(size, padding_idx, smoothing, "V")
    smoothing = float(smoothing)
    spread = smoothing / (size - 2) if smoothing > 0 else 0.0
    result: torch.Tensor = _LabelSmoothedKL.apply(  # type: ignore[no-untyped-call]
        log_probs, target.long(), padding_idx, 1.0 - smoothing, spread)
    return result


class SimpleLossCompute:
    """Apply the generator and a criterion to decoder states, and normalise the loss.

    Args:
        generator: decoder states `(batch, tgt_len, d_model)` to log-probabilities.
        criterion: a summed loss of `(rows, vocab)` log-probabilities and `(rows,)` targets,
            such as `LabelSmoothing` or a `functools.partial` of `label_smoothed_kl`.

    Examples:
        >>> from vanilla_transformer.training import LabelSmoothing, SimpleLossCompute
        >>> gen = Generator(8, 5)
        >>> compute = SimpleLossCompute(gen, LabelSmoothing(5, padding_idx=0))
        >>> y = torch.tensor([[1, 2, 3], [4, 0, 0]])  # 4 tokens that are not padding
        >>> loss_sum, loss_node = compute(torch.randn(2, 3, 8), y, 4)
        >>> bool(torch.isclose(loss_sum, loss_node.detach() * 4)), loss_node.requires_grad
        (True, True)
    """

    def __init__(
        self, generator: nn.Module, criterion: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    ) -> None:
        self.generator = generator
        self.criterion = criterion

    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, norm: float | int | torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`(loss_sum, loss_node)` of decoder states `x` `(batch, tgt_len, d_model)` against
        ids `y` `(batch, tgt_len)`: the sum, detached for logging, and the sum over `norm`
        (usually the tokens that are not padding), attached to the graph.

        Raises:
            ValueError: if `norm` is not positive.
        """
        if float(norm) <= 0:
            raise ValueError(f"norm must be positive (e.g. the number of tokens), got {norm}")
        logp = self.generator(x)
        sloss = self.criterion(logp.reshape(-1, logp.size(-1)), y.reshape(-1)) / norm
        return sloss.detach() * norm, sloss
