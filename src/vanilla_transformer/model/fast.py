"""Fast kernels for attention and the Annotated LayerNorm, chosen in this one place.

The model's code is the paper's equations
([`attention`][vanilla_transformer.model.attention.attention],
[`LayerNorm`][vanilla_transformer.model.layers.LayerNorm]). When the attention weights are
not needed, `MultiHeadedAttention` calls
[`fast_attention`][vanilla_transformer.model.fast.fast_attention] instead, which computes the
same function with PyTorch's fused kernel; `LayerNorm` calls
[`fast_layer_norm`][vanilla_transformer.model.fast.fast_layer_norm], the same function in
fewer passes over memory. `benchmarks/fast_paths.py` measures each branch. In
our runs a training step on an H100 took 12 to 23 % longer with the explicit computation
than with the fused kernel; on 2 CPU cores the dropout branch beat PyTorch's fallback at
length 1024 but not at 64 or 256. The [Performance][performance-guide] page has the figures.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

from .masks import mask_fill_value

__all__ = ["fast_attention", "fast_layer_norm"]


def fast_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout: nn.Dropout,
) -> torch.Tensor:
    """`attention(query, key, value, mask, dropout)[0]`, computed by a fused kernel where one fits.

    - `torch.nn.functional.scaled_dot_product_attention` (fused; no weights are materialised);
    - on the CPU when training with dropout on the weights, where PyTorch has no fused kernel
      and its fallback makes more passes over the scores, the explicit computation with the
      scale folded into the queries and the mask filled in place, unless it blocks nothing.

    Apart from float rounding, it differs from the reference in two ways: a query whose every
    key is masked gets a zero vector from the fused kernel where the reference spreads the
    weight evenly, and when it drops attention weights on a GPU the fused kernel draws its own
    dropout masks, so the same seed drops different weights (the CPU branch draws the same
    masks as the reference).

    Args:
        query: `(batch, h, query_len, d_k)`.
        key: `(batch, h, key_len, d_k)`.
        value: `(batch, h, key_len, d_k)`.
        mask: keep-mask broadcastable to `(batch, h, query_len, key_len)`, or `None`.
        dropout: the dropout module on the attention weights.

    Returns:
        `(batch, h, query_len, d_k)`.
    """
    if mask is not None and mask.dtype != torch.bool:
        mask = mask != 0  # a float mask would be *added* to the scores by the fused kernel
    p = dropout.p if dropout.training else 0.0
    if p > 0 and query.device.type == "cpu":
        scores = torch.matmul(query * (1.0 / math.sqrt(query.size(-1))), key.transpose(-2, -1))
        # a mask that blocks nothing (a batch without padding) is skipped: on the CPU, reading
        # it costs no synchronisation, and filling nothing still costs passes over the scores.
        # A compiled graph cannot branch on a tensor's value, so it always fills.
        if mask is not None and (torch.compiler.is_compiling() or not bool(mask.all())):
            scores.masked_fill_(~mask, mask_fill_value(scores.dtype))
        return torch.matmul(dropout(scores.softmax(dim=-1)), value)
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=p)



def _normalise(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`(x - mean) / (std + eps)` with the unbiased std, its std and `1 / (std + eps)`.

    The variance is the sum of squared deviations over `n - 1` (two passes over `x`): on the CPU,
    `Tensor.std` over the last axis took tens of times as long as a sum over it in our runs.
    """
    centred = x - x.mean(-1, keepdim=True)
    std = torch.linalg.vecdot(centred, centred).unsqueeze_(-1).div_(x.size(-1) - 1).sqrt_()
    inv = (std + eps).reciprocal_()
    return centred.mul_(inv), std, inv


class _AnnotatedLayerNorm(torch.autograd.Function):
    r"""`a * (x - mean) / (std + eps) + b` with its gradient written out.

    With $\hat{x} = (x - \mu) / (s + \epsilon)$ and $g' = g \odot a$ (over the last axis of
    $n$ values, $s$ the unbiased std):

    $$\frac{\partial L}{\partial x} = \frac{g' - \overline{g'}}{s + \epsilon}
      - \hat{x} \, \frac{\sum g' \hat{x}}{(n - 1) s}$$

    (the last term is 0 where $s = 0$: a constant row, where $\hat{x} = 0$).
    """

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, eps: float
    ) -> torch.Tensor:
        xhat, std, inv = _normalise(x, eps)
        ctx.save_for_backward(xhat, std, inv, a)
        return torch.addcmul(b, xhat, a)

    @staticmethod
    @once_differentiable
    def backward(
        ctx: Any, grad: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        xhat, std, inv, a = ctx.saved_tensors
        n = xhat.size(-1)
        g = grad * a
        coef = torch.linalg.vecdot(g, xhat).unsqueeze_(-1).div_((n - 1) * std)
        coef.masked_fill_(std == 0, 0.0)
        dx = g.sub_(g.mean(-1, keepdim=True)).mul_(inv).addcmul_(xhat, coef, value=-1.0)
        rows, xhat_rows = grad.reshape(-1, n), xhat.reshape(-1, n)
        return dx, (rows * xhat_rows).sum(0), rows.sum(0), None


def fast_layer_norm(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    """The Annotated Transformer's LayerNorm, `a * (x - mean) / (std + eps) + b`, in fewer passes.

    The same function as [`LayerNorm`][vanilla_transformer.model.layers.LayerNorm]'s forward
    (unbiased std, `eps` added to the std), apart from float rounding: the std is taken as the
    square root of a sum of squared deviations, and the backward pass is one hand-written
    function instead of the seven operations autograd records for the formula. The
    reference runs instead while compiling, tracing or exporting to ONNX, where the graph
    should hold the plain operations, and when `x` and the parameters differ in dtype (under
    autocast).

    Args:
        x: `(..., features)`.
        a: the gain, `(features,)`.
        b: the bias, `(features,)`.
        eps: added to the std.

    Returns:
        A tensor shaped like `x`.

    Examples:
        >>> x = torch.randn(3, 8)
        >>> a, b = torch.rand(8), torch.rand(8)
        >>> y = a * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-6) + b
        >>> torch.allclose(fast_layer_norm(x, a, b, 1e-6), y, atol=1e-6)
        True
    """
    tracing = torch.jit.is_tracing()  # type: ignore[attr-defined, no-untyped-call]
    if (torch.compiler.is_compiling() or tracing or torch.onnx.is_in_onnx_export()
            or not x.dtype == a.dtype == b.dtype):
        return a * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) + b
    if torch.is_grad_enabled() and (x.requires_grad or a.requires_grad or b.requires_grad):
        return _AnnotatedLayerNorm.apply(x, a, b, eps)  # type: ignore[no-untyped-call]
    return torch.addcmul(b, _normalise(x, eps)[0], a)
