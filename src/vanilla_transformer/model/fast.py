"""Fast attention kernels, chosen in this one place.

The model's code is the paper's equations
([`attention`][vanilla_transformer.model.attention.attention]). When the attention weights are
not needed, `MultiHeadedAttention` calls
[`fast_attention`][vanilla_transformer.model.fast.fast_attention] instead, which computes the
same function with PyTorch's fused kernel. `benchmarks/fast_paths.py` measures each branch. In
our runs the fused kernel made a training step on an H100 12 to 23 % faster than the explicit
computation; on 2 CPU cores the dropout branch beat PyTorch's fallback at length 1024 but not
at 64 or 256. The [Performance][performance-guide] page has the figures.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .masks import mask_fill_value

__all__ = ["fast_attention"]


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
      scale folded into the queries and the mask filled in place.

    Apart from float rounding, the only difference from the reference is a query whose every
    key is masked: the fused
    kernel returns a zero vector there, the reference spreads the weight evenly.

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
        if mask is not None:
            scores.masked_fill_(~mask, mask_fill_value(scores.dtype))
        return torch.matmul(dropout(scores.softmax(dim=-1)), value)
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=p)

