r"""Label smoothing (paper section 5.4) and the loss of a batch of decoder states.

For the correct class $y$ the target puts $1 - \epsilon_{ls}$ on $y$, nothing on padding and
$\epsilon_{ls} / (V - 2)$ on each other class; the loss is $KL(target \,\|\, p_{model})$.

Taught in the lesson [Training][training-lesson]; used on the
[Training the copy task][training-guide] page.
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import check_positive_int, reads_values

__all__ = ['LabelSmoothing', 'SimpleLossCompute']


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
            ValueError: if `x` is not `(rows, size)`, `target` is not `(rows,)`, or, for CPU
                tensors outside `torch.compile`, a target id is outside `[0, size)` or `x` holds
                probabilities rather than log-probabilities (a value above 0, or none below).
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
        if target.numel() and reads_values(target):
            lo, hi = (int(v) for v in torch.aminmax(target))
            if lo < 0 or hi >= self.size:
                raise ValueError(f"target ids must lie in [0, {self.size}); found id "
                                 f"{lo if lo < 0 else hi}")
        if x.numel() and reads_values(x):
            lo, hi = (float(v) for v in torch.aminmax(x.detach()))
            # log-probabilities are <= 0 (a tolerance for rounding); a probability row is >= 0
            if hi > 1e-3 or lo >= 0:
                raise ValueError(
                    f"x must hold log-probabilities (<= 0, e.g. from log_softmax), got values in "
                    f"[{lo:.4g}, {hi:.4g}]; did you pass probabilities (softmax) instead?"
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


class SimpleLossCompute:
    """Apply the generator and a criterion to decoder states, and normalise the loss.

    Args:
        generator: maps decoder states `(batch, tgt_len, d_model)` to log-probabilities
            `(batch, tgt_len, vocab)` (the model's `generator`).
        criterion: a summed loss over `(rows, vocab)` log-probabilities and `(rows,)` targets,
            such as [`LabelSmoothing`][vanilla_transformer.training.loss.LabelSmoothing].

    Examples:
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
