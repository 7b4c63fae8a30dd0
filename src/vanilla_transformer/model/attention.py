r"""Scaled dot-product attention and multi-head attention (paper sections 3.2.1 and 3.2.2).

$$
\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V
\qquad
\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W^O
$$

where $\mathrm{head}_i = \mathrm{Attention}(Q W_i^Q, K W_i^K, V W_i^V)$ and $d_k = d_{model} / h$.
Taught in the lessons [Attention][attention-lesson] and [Several heads][heads-lesson].
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator

import torch
from torch import nn

from .._checks import check_dropout, check_heads, check_positive_int
from .cache import KVCache
from .fast import fast_attention
from .masks import mask_fill_value

__all__ = ["clones", "attention", "MultiHeadedAttention", "keep_attention"]


def clones(module: nn.Module, N: int) -> nn.ModuleList:
    """Produce `N` independent deep copies of `module`.

    The copies share no parameters: each layer of a stack learns its own weights.

    Args:
        module: the module to copy.
        N: how many copies.

    Returns:
        An `nn.ModuleList` of `N` copies.

    Raises:
        ValueError: if `N` is not a positive int.

    Examples:
        >>> layers = clones(nn.Linear(4, 4), 3)
        >>> len(layers), layers[0].weight is layers[1].weight
        (3, False)
    """
    check_positive_int("N", N)
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Scaled dot-product attention, $\mathrm{softmax}(QK^\top / \sqrt{d_k})\,V$.

    Masked scores are replaced by `-1e9` (the float16 minimum in float16) before the softmax, so
    masked keys get a weight of zero (it underflows) as long as the query may attend to at
    least one key. In a row where every key is masked, all scores are equal and the weights
    are uniform.

    Args:
        query: `(..., query_len, d_k)`, e.g. `(batch, h, query_len, d_k)`.
        key: `(..., key_len, d_k)`.
        value: `(..., key_len, d_v)`.
        mask: keep-mask broadcastable to `(..., query_len, key_len)`; `True` or non-zero = may
            attend. `None` attends everywhere.
        dropout: a dropout module applied to the attention weights, or `None`.

    Returns:
        `(output, weights)`: the output `(..., query_len, d_v)` and the attention weights
        `(..., query_len, key_len)`, whose rows sum to 1 unless `dropout` is training (then
        they are the weights after dropout, some zeroed and the rest scaled by `1 / (1 - p)`).

    Examples:
        >>> q = k = v = torch.randn(2, 5, 8)
        >>> out, w = attention(q, k, v)
        >>> out.shape, w.shape, torch.allclose(w.sum(-1), torch.ones(2, 5))
        (torch.Size([2, 5, 8]), torch.Size([2, 5, 5]), True)
        >>> mask = torch.tensor([[True, True, False, False, False]])
        >>> w = attention(q, k, v, mask=mask)[1]
        >>> bool((w[..., 2:] == 0).all()), torch.allclose(w.sum(-1), torch.ones(2, 5))
        (True, True)
    """
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, mask_fill_value(scores.dtype))
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    """Multi-head attention: `h` heads of width `d_k = d_model / h`, attending in parallel.

    `linears` holds the four `d_model x d_model` maps $W^Q, W^K, W^V$ and $W^O$.

    Args:
        h: number of heads.
        d_model: model width; must be divisible by `h`.
        dropout: dropout on the attention weights, in [0, 1).
        keep_attn: keep the last attention weights in `.attn`.
        fast: when the weights are not kept, compute attention with
            [`fast_attention`][vanilla_transformer.model.fast.fast_attention] (the same function
            by a fused kernel, except in a query row whose every key is masked); `False` always
            uses
            [`attention`][vanilla_transformer.model.attention.attention].

    Attributes:
        attn: the attention weights `(batch, h, query_len, key_len)` of the last forward pass,
            detached, when they were kept; else `None`.

    Raises:
        ValueError: if `d_model % h != 0`, a size is not positive, or `dropout` is outside [0, 1).

    Examples:
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
        self.dropout = nn.Dropout(p=dropout)
        self.attn: torch.Tensor | None = None
        self.keep_attn = keep_attn
        self.fast = fast

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """`(batch, seq_len, d_model)` -> `(batch, h, seq_len, d_k)`."""
        return x.view(x.size(0), -1, self.h, self.d_k).transpose(1, 2)

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
            mask: keep-mask `(batch or 1, query_len or 1, key_len)`, non-zero = may attend.
            cache: a [`KVCache`][vanilla_transformer.model.cache.KVCache] when decoding one
                token at a time: it supplies the keys and values of earlier steps.

        Returns:
            `(batch, query_len, d_model)`.
        """
        if mask is not None:
            mask = mask.unsqueeze(1)  # the same mask for all h heads
        batch = query.size(0)

        # 1) project, then split d_model into h heads of d_k: Q W^Q, K W^K, V W^V
        def project_kv() -> tuple[torch.Tensor, torch.Tensor]:
            return self.split_heads(self.linears[1](key)), self.split_heads(self.linears[2](value))

        q = self.split_heads(self.linears[0](query))  # (batch, h, query_len, d_k)
        # (batch, h, key_len, d_k); when decoding, the cache adds the keys of earlier steps
        k, v = project_kv() if cache is None else cache.update(project_kv)

        # 2) softmax(Q K^T / sqrt(d_k)) V, on all heads at once
        if self.keep_attn or not self.fast:
            x, attn = attention(q, k, v, mask=mask, dropout=self.dropout)
            self.attn = attn.detach()
        else:
            x, self.attn = fast_attention(q, k, v, mask, self.dropout), None

        # 3) concatenate the heads and apply W^O
        x = x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k)  # (batch, query_len, d_model)
        return self.linears[3](x)


@contextlib.contextmanager
def keep_attention(model: nn.Module, enabled: bool = True) -> Iterator[nn.Module]:
    """Keep every attention module's weights in `.attn` while the block runs.

    Sets `keep_attn` on each `MultiHeadedAttention` inside `model` and restores the previous
    values on exit.

    Args:
        model: any module containing `MultiHeadedAttention` modules.
        enabled: the value to set.

    Yields:
        `model`.

    Examples:
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
