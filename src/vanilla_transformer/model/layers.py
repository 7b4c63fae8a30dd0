r"""Layer normalisation, the residual sublayer connection and the position-wise feed-forward
network (paper sections 3.1 and 3.3).

$$
\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))
\qquad
\mathrm{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2
$$

Taught in the lesson [Layers][residual-and-norm]; the two LayerNorm flavours are
compared in the *Layer normalisation* section of
[The Vanilla Transformer explained][layers-guide].
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .._checks import check_choice, check_dropout, check_positive_int
from .fast import fast_layer_norm

__all__ = [
    "LAYER_NORMS",
    "LayerNorm",
    "make_layer_norm",
    "SublayerConnection",
    "PositionwiseFeedForward",
]

LAYER_NORMS = ("annotated", "torch")
"""The names accepted by `make_layer_norm` and `make_model(layer_norm=...)`."""


class LayerNorm(nn.Module):
    r"""Layer normalisation as written in the Annotated Transformer.

    $$\mathrm{LN}(x) = a_2 \odot \frac{x - \mu}{s + \epsilon} + b_2$$

    where $\mu$ is the mean and $s$ the **unbiased** standard deviation of the last axis, and
    $\epsilon$ is **added to the standard deviation**. This differs slightly from
    `torch.nn.LayerNorm`, whose differences
    [`make_layer_norm`][vanilla_transformer.model.layers.make_layer_norm] lists.

    Args:
        features: size of the last axis (`d_model`).
        eps: added to the standard deviation.
        fast: compute the same function with
            [`fast_layer_norm`][vanilla_transformer.model.fast.fast_layer_norm] (fewer passes
            over memory, a hand-written backward); `False` runs the three lines below.

    Attributes:
        a_2: the gain $\gamma$, shape `(features,)`, initialised to ones.
        b_2: the bias $\beta$, shape `(features,)`, initialised to zeros.
        fast: as the argument; can be switched on an existing module.

    Raises:
        ValueError: if `features` < 2 (the unbiased std of one value is undefined).

    Examples:
        >>> ln = LayerNorm(4)
        >>> y = ln(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))
        >>> round(y.mean().item(), 6), y.shape
        (0.0, torch.Size([1, 4]))
    """

    def __init__(self, features: int, eps: float = 1e-6, fast: bool = True) -> None:
        super().__init__()
        check_positive_int("features", features)
        if features < 2:
            raise ValueError(
                f"the annotated LayerNorm uses the unbiased std, which needs at least 2 features; "
                f"got features={features} (use layer_norm='torch' for a width of 1)"
            )
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps
        self.fast = fast

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise `x` of shape `(..., features)` over its last axis."""
        if self.fast:
            return fast_layer_norm(x, self.a_2, self.b_2, self.eps)
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)  # unbiased, as in the Annotated Transformer
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2

    def extra_repr(self) -> str:
        return f"{self.a_2.numel()}, eps={self.eps}"


def make_layer_norm(features: int, flavour: str = "annotated") -> nn.Module:
    """Build a LayerNorm of the named flavour.

    Args:
        features: size of the last axis (`d_model`).
        flavour: `"annotated"` for
            [`LayerNorm`][vanilla_transformer.model.layers.LayerNorm] (unbiased
            std, eps 1e-6 added to the std) or `"torch"` for `nn.LayerNorm` (biased variance,
            eps 1e-5 inside the square root).

    Returns:
        The LayerNorm module; both flavours have `2 * features` parameters.

    Raises:
        ValueError: for an unknown flavour or a non-positive size.

    Examples:
        >>> type(make_layer_norm(8, "torch")).__name__
        'LayerNorm'
    """
    check_choice("layer_norm", flavour, LAYER_NORMS)
    check_positive_int("features", features)
    if flavour == "annotated":
        return LayerNorm(features)
    return nn.LayerNorm(features, eps=1e-5)


class SublayerConnection(nn.Module):
    r"""A residual connection around a sublayer, with layer normalisation and dropout.

    - pre-norm (`norm_first=True`, the Annotated Transformer's choice):
      $x + \mathrm{Dropout}(\mathrm{Sublayer}(\mathrm{LN}(x)))$;
    - post-norm (`norm_first=False`, the paper's formula):
      $\mathrm{LN}(x + \mathrm{Dropout}(\mathrm{Sublayer}(x)))$.

    The sublayer is passed to `forward` as a callable, so one class serves self-attention,
    cross-attention and the feed-forward network: the encoder layer passes
    `lambda x: self_attn(x, x, x, mask)`.

    Args:
        size: the model width `d_model`.
        dropout: dropout on the sublayer output, in [0, 1).
        norm_first: pre-norm (`True`) or post-norm (`False`).
        layer_norm: LayerNorm flavour, `"annotated"` or `"torch"`.

    Examples:
        >>> sub = SublayerConnection(8, dropout=0.0)
        >>> x = torch.randn(2, 3, 8)
        >>> torch.equal(sub(x, lambda t: torch.zeros_like(t)), x)
        True
    """

    def __init__(
        self,
        size: int,
        dropout: float,
        *,
        norm_first: bool = True,
        layer_norm: str = "annotated",
    ) -> None:
        super().__init__()
        check_dropout(dropout)
        self.norm = make_layer_norm(size, layer_norm)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(
        self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]
    ) -> torch.Tensor:
        """Apply `sublayer` to `x` `(batch, seq_len, d_model)` with the residual connection."""
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class PositionwiseFeedForward(nn.Module):
    r"""The position-wise feed-forward network $\mathrm{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2$.

    Applied to every position separately and identically: two linear maps with a ReLU between,
    widening from `d_model` to `d_ff` and back. Dropout is applied to the hidden activations, as
    in the Annotated Transformer (the paper's section 5.4 names dropout only on each sub-layer's
    output and on the embedding sums).

    Args:
        d_model: input and output width.
        d_ff: hidden width (2048 in the base model).
        dropout: dropout on the hidden activations, in [0, 1).

    Examples:
        >>> ff = PositionwiseFeedForward(512, 2048)
        >>> ff(torch.randn(2, 10, 512)).shape
        torch.Size([2, 10, 512])
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_dropout(dropout)
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map `(batch, seq_len, d_model)` to `(batch, seq_len, d_model)`."""
        # (batch, seq_len, d_model) -> (batch, seq_len, d_ff) -> (batch, seq_len, d_model)
        return self.w_2(self.dropout(self.w_1(x).relu()))
