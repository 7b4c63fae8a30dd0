"""Dropout is checked where it belongs: the steps with a dropout site run some inputs in training
mode with a fixed dropout on both sides, so that a dropout left out or applied elsewhere is
refused and named with its site."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch

from vanilla_transformer.practice import check

from ._answers import answer


def _subclass(step: str, name: str, forward: Callable[..., Any]) -> Any:
    base = getattr(answer(step), name)
    return type("Buggy", (base,), {"forward": forward})


def mha_forward(dropout: str) -> Callable[..., Any]:
    def forward(self, query, key, value, mask=None):  # type: ignore[no-untyped-def]
        if mask is not None:
            mask = mask.unsqueeze(1)
        b = query.size(0)
        q, k, v = (lin(x).view(b, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip(self.linears, (query, key, value), strict=False))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        x = scores.softmax(-1) @ v  # dropout on the weights left out
        x = x.transpose(1, 2).reshape(b, -1, self.h * self.d_k)
        out = self.linears[3](x)
        return self.dropout(out) if dropout == "output" else out

    return forward


def ff_without_dropout(self, x):  # type: ignore[no-untyped-def]
    return self.w_2(self.w_1(x).relu())


def ff_dropout_after_w_2(self, x):  # type: ignore[no-untyped-def]
    return self.dropout(self.w_2(self.w_1(x).relu()))


def pe_without_dropout(self, x):  # type: ignore[no-untyped-def]
    return x + self.pe[:, : x.size(1)]


def pe_dropout_on_the_table(self, x):  # type: ignore[no-untyped-def]
    return x + self.dropout(self.pe[:, : x.size(1)])


def sublayer_without_dropout(self, x, sublayer):  # type: ignore[no-untyped-def]
    if self.norm_first:
        return x + sublayer(self.norm(x))
    return self.norm(x + sublayer(x))


def sublayer_dropout_after_the_sum(self, x, sublayer):  # type: ignore[no-untyped-def]
    if self.norm_first:
        return self.dropout(x + sublayer(self.norm(x)))
    return self.norm(self.dropout(x + sublayer(x)))


MISPLACED = [
    ("multi_head_attention", "MultiHeadedAttention", mha_forward("none"),
     "dropout left out of multi-head attention"),
    ("multi_head_attention", "MultiHeadedAttention", mha_forward("output"),
     "dropout applied to the output of W^O, not to the attention weights"),
    ("feed_forward", "PositionwiseFeedForward", ff_without_dropout,
     "dropout left out of the feed-forward network"),
    ("feed_forward", "PositionwiseFeedForward", ff_dropout_after_w_2,
     "dropout in the feed-forward network applied after w_2, not to the hidden layer"),
    ("positional_encoding", "PositionalEncoding", pe_without_dropout,
     "dropout left out of the positional encoding"),
    ("positional_encoding", "PositionalEncoding", pe_dropout_on_the_table,
     "dropout in the positional encoding applied to the table alone, not to the sum"),
    ("sublayer", "SublayerConnection", sublayer_without_dropout,
     "dropout left out of the residual connection"),
    ("sublayer", "SublayerConnection", sublayer_dropout_after_the_sum,
     "dropout applied after the residual sum, not to the sublayer's output"),
]


@pytest.mark.parametrize(("step", "name", "forward", "mistake"), MISPLACED,
                         ids=[f"{m[0]}: {m[2].__name__}" for m in MISPLACED])
def test_a_missing_or_misplaced_dropout_is_named_with_its_site(
        step: str, name: str, forward: Callable[..., Any], mistake: str) -> None:
    result = check(step, _subclass(step, name, forward), quiet=True)
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert "in training mode" in " ".join(result.message.split())


def test_dropout_per_head_in_a_loop_passes() -> None:
    """The fixed dropout drops by position along the keys, so a per-head loop drops the same."""
    def forward(self, query, key, value, mask=None):  # type: ignore[no-untyped-def]
        q, k, v = (lin(x) for lin, x in zip(self.linears, (query, key, value), strict=False))
        heads = []
        for i in range(self.h):
            part = slice(i * self.d_k, (i + 1) * self.d_k)
            scores = q[..., part] @ k[..., part].transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(mask == 0, -1e9)
            heads.append(self.dropout(scores.softmax(-1)) @ v[..., part])
        return self.linears[3](torch.cat(heads, dim=-1))

    result = check("multi_head_attention",
                   _subclass("multi_head_attention", "MultiHeadedAttention", forward), quiet=True)
    assert result.passed, result.message
