r"""Scaled dot-product attention and multi-head attention (paper sections 3.2.1 and 3.2.2).

$$
\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V
\qquad
\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W^O
$$

where $\mathrm{head}_i = \mathrm{Attention}(Q W_i^Q, K W_i^K, V W_i^V)$ and $d_k = d_{model} / h$.

[`MultiHeadedAttention`][vanilla_transformer.attention.MultiHeadedAttention] has two paths that
compute the same function:

- the **fast path**, used whenever the attention weights are not needed. It calls
  `torch.nn.functional.scaled_dot_product_attention`, except when training with dropout on the
  CPU: PyTorch has no fused CPU kernel for that case and falls back to a sequence of kernels
  that is slower than the explicit one, so the fast path then runs the explicit computation
  with fewer passes over the scores (the scale applied to the queries, the mask filled in
  place), with the same dropout;
- the **reference path**, the explicit [`attention`][vanilla_transformer.attention.attention]
  function below, used when the weights are kept for visualisation (`keep_attn=True`, or inside
  [`keep_attention`][vanilla_transformer.attention.keep_attention]) or when `fast=False`.

Both fill masked scores so that masked keys get exactly zero weight. They differ only on a query
whose *every* key is masked: the reference path's `-1e9` fill then spreads its weight evenly over
all keys, and the fast path returns a zero vector.

Explained on the *Annotated walkthrough* page.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_dropout, check_heads, check_positive_int
from .masks import as_keep_mask

__all__ = [
    "clones",
    "attention",
    "MultiHeadedAttention",
    "KVCache",
    "keep_attention",
    "MASK_FILL",
]

MASK_FILL = -1e9
"""The score given to masked positions by the reference path (as in the Annotated Transformer)."""


def clones(module: nn.Module, N: int) -> nn.ModuleList:
    """Produce `N` independent deep copies of `module`.

    The copies share no parameters: each layer of a stack learns its own weights. The copying
    happens once, when the model is built, never in the forward pass.

    Args:
        module: the module to copy.
        N: how many copies.

    Returns:
        An `nn.ModuleList` of `N` copies.

    Raises:
        ValueError: if `N` is not a positive int.

    Example:
        >>> layers = clones(nn.Linear(4, 4), 3)
        >>> len(layers), layers[0].weight is layers[1].weight
        (3, False)
    """
    check_positive_int("N", N)
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def _mask_fill(dtype: torch.dtype) -> float:
    """`MASK_FILL`, or the dtype's most negative value where -1e9 overflows (float16: -65504)."""
    return max(MASK_FILL, torch.finfo(dtype).min)


def attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Scaled dot-product attention, written out step by step.

    Computes $\mathrm{softmax}(QK^\top / \sqrt{d_k})\,V$. Scores of masked positions are replaced
    by `-1e9` (or the dtype's most negative value, for float16) before the softmax, so those
    positions get a weight of exactly zero.

    Args:
        query: `(..., query_len, d_k)`, e.g. `(batch, h, query_len, d_k)`.
        key: `(..., key_len, d_k)`.
        value: `(..., key_len, d_v)`.
        mask: keep-mask broadcastable to `(..., query_len, key_len)`; `True` or non-zero = may
            attend. `None` attends everywhere.
        dropout: a dropout module applied to the attention weights, or `None`.

    Returns:
        `(output, weights)`: the output `(..., query_len, d_v)` and the attention weights
        `(..., query_len, key_len)`, whose rows sum to 1.

    Example:
        >>> q = k = v = torch.randn(2, 5, 8)
        >>> out, w = attention(q, k, v)
        >>> out.shape, w.shape
        (torch.Size([2, 5, 8]), torch.Size([2, 5, 5]))
    """
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        blocked = ~mask if mask.dtype == torch.bool else mask == 0
        scores = scores.masked_fill(blocked, _mask_fill(scores.dtype))
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


def _attention_with_dropout(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout: nn.Module,
) -> torch.Tensor:
    """`attention(...)[0]` with fewer passes over the scores: the scale is applied to the queries
    and the mask is filled in place. Same result and same dropout masks as `attention`."""
    scores = torch.matmul(query * (1.0 / math.sqrt(query.size(-1))), key.transpose(-2, -1))
    if mask is not None:
        scores.masked_fill_(~mask, _mask_fill(scores.dtype))
    return torch.matmul(dropout(scores.softmax(dim=-1)), value)


@dataclass
class KVCache:
    """Projected keys and values of one attention module, kept between decoding steps.

    Used by incremental decoding. A self-attention cache (`static=False`) grows by one position
    per generated token; a cross-attention cache (`static=True`) is filled once from the encoder
    memory and then reused.

    Attributes:
        static: whether the keys and values are computed once and reused.
        k: cached keys `(batch, h, key_len, d_k)`, or `None` before the first step.
        v: cached values `(batch, h, key_len, d_k)`, or `None` before the first step.
    """

    static: bool
    k: torch.Tensor | None = None
    v: torch.Tensor | None = None

    def reorder(self, index: torch.Tensor) -> None:
        """Select batch rows (e.g. surviving beams) in place: `k = k[index]`."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


class MultiHeadedAttention(nn.Module):
    """Multi-head attention: `h` attention heads of size `d_k = d_model / h` run in parallel.

    Four `d_model x d_model` linear maps are kept in `linears`: $W^Q, W^K, W^V$ and the output
    map $W^O$. The projected queries, keys and values are split into heads with `view` and
    `transpose`, attended, and concatenated back.

    Args:
        h: number of heads.
        d_model: model width; must be divisible by `h`.
        dropout: dropout on the attention weights, in [0, 1).
        keep_attn: keep the last attention weights in `.attn` (forces the reference path).
        fast: use `scaled_dot_product_attention` when the weights are not kept. `False` always
            uses the explicit [`attention`][vanilla_transformer.attention.attention] function.

    Attributes:
        attn: the attention weights `(batch, h, query_len, key_len)` of the last forward pass
            that took the reference path (detached), else `None`.

    Raises:
        ValueError: if `d_model % h != 0`, a size is not positive, or `dropout` is outside [0, 1).

    Example:
        >>> mha = MultiHeadedAttention(h=8, d_model=512, keep_attn=True)
        >>> x = torch.randn(2, 10, 512)
        >>> mha(x, x, x).shape, mha.attn.shape
        (torch.Size([2, 10, 512]), torch.Size([2, 8, 10, 10]))
    """

    def __init__(
        self,
        h: int,
        d_model: int,
        dropout: float = 0.1,
        *,
        keep_attn: bool = False,
        fast: bool = True,
    ) -> None:
        super().__init__()
        check_heads(h, d_model)
        check_dropout(dropout)
        self.d_k = d_model // h  # we assume d_v == d_k
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn: torch.Tensor | None = None
        self.dropout = nn.Dropout(p=dropout)
        self.keep_attn = keep_attn
        self.fast = fast

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        # (batch, seq_len, d_model) -> (batch, h, seq_len, d_k)
        return x.view(x.size(0), -1, self.h, self.d_k).transpose(1, 2)

    def _project(self, x: torch.Tensor, n: int, first: int = 0) -> tuple[torch.Tensor, ...]:
        """Apply `linears[first:first + n]` to the same tensor `x` as one matrix multiply."""
        lins = self.linears[first : first + n]
        weight = torch.cat([lin.weight for lin in lins])
        bias = torch.cat([lin.bias for lin in lins])
        return F.linear(x, weight, bias).chunk(n, dim=-1)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """Attend from `query` to `key`/`value`.

        Args:
            query: `(batch, query_len, d_model)`.
            key: `(batch, key_len, d_model)`.
            value: `(batch, key_len, d_model)`.
            mask: keep-mask `(batch or 1, query_len or 1, key_len)`, any dtype, non-zero = may
                attend; or `None`.
            cache: a [`KVCache`][vanilla_transformer.attention.KVCache] for incremental
                decoding. A static cache that is already filled skips the key/value projections;
                a growing cache appends this step's keys and values to the cached ones.

        Returns:
            `(batch, query_len, d_model)`.

        Raises:
            ValueError: if the inputs are not 3-D with a last axis of `d_model`, their batch
                sizes differ, or the mask cannot broadcast to `(batch, query_len, key_len)`.
        """
        d_model = self.h * self.d_k
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.dim() != 3 or t.size(-1) != d_model:
                raise ValueError(
                    f"{name} must have shape (batch, seq_len, {d_model}), got {tuple(t.shape)}"
                )
        nbatches = query.size(0)
        if key.size(0) != nbatches or value.size(0) != nbatches or key.size(1) != value.size(1):
            raise ValueError(
                f"query, key and value must share the batch size and key/value the length; got "
                f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
            )

        static_hit = cache is not None and cache.static and cache.k is not None
        # Fusing the projections pays for concatenating the weights only when many rows are
        # projected (training); a decoding step projects a handful of rows.
        fuse = query.numel() >= d_model * d_model
        if fuse and query is key and key is value and not static_hit:
            # self-attention: the three projections as one matrix multiply
            q, k, v = (self._split_heads(t) for t in self._project(query, 3))
        else:
            q = self._split_heads(self.linears[0](query))
            if static_hit:
                k, v = cache.k, cache.v
            elif key is value and key.numel() >= d_model * d_model:
                k, v = (self._split_heads(t) for t in self._project(key, 2, first=1))
            else:
                k = self._split_heads(self.linears[1](key))
                v = self._split_heads(self.linears[2](value))
        if cache is not None and not static_hit:
            if not cache.static and cache.k is not None:
                k = torch.cat([cache.k, k], dim=2)
                v = torch.cat([cache.v, v], dim=2)
            cache.k, cache.v = k, v
        mask = as_keep_mask(mask, nbatches, query.size(1), k.size(2))

        if self.keep_attn or not self.fast:
            x, p_attn = attention(q, k, v, mask=mask, dropout=self.dropout)
            self.attn = p_attn.detach()
        elif self.training and self.dropout.p > 0 and q.device.type == "cpu":
            # PyTorch has no fused CPU kernel with dropout on the weights; its fallback makes
            # more passes over the (batch, h, query_len, key_len) scores than this does
            x = _attention_with_dropout(q, k, v, mask, self.dropout)
            self.attn = None
        else:
            x = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=self.dropout.p if self.training else 0.0
            )
            self.attn = None
        # (batch, h, query_len, d_k) -> (batch, query_len, d_model)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, d_model)
        return self.linears[-1](x)


@contextlib.contextmanager
def keep_attention(model: nn.Module, enabled: bool = True) -> Iterator[nn.Module]:
    """Keep every attention module's weights in `.attn` while the block runs.

    Sets `keep_attn` on each [`MultiHeadedAttention`][vanilla_transformer.attention.MultiHeadedAttention]
    inside `model` and restores the previous values on exit.

    Args:
        model: any module containing `MultiHeadedAttention` modules.
        enabled: the value to set.

    Yields:
        `model`.

    Example:
        >>> mha = MultiHeadedAttention(2, 8)
        >>> x = torch.randn(1, 3, 8)
        >>> with keep_attention(mha):
        ...     _ = mha(x, x, x)
        >>> mha.attn.shape
        torch.Size([1, 2, 3, 3])
    """
    modules = [m for m in model.modules() if isinstance(m, MultiHeadedAttention)]
    saved = [m.keep_attn for m in modules]
    for m in modules:
        m.keep_attn = enabled
    try:
        yield model
    finally:
        for m, s in zip(modules, saved):
            m.keep_attn = s
