"""Correct code written another way passes: einsum, scaled_dot_product_attention with a float
mask, unflatten and permute, a per-head loop, F.kl_div, and a greedy decoder that reruns the
whole model at each step."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from vanilla_transformer.practice import check

from ._answers import answer


def attention_einsum(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = torch.einsum("...qd,...kd->...qk", query, key) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(-1)
    if dropout is not None:
        weights = dropout(weights)
    return torch.einsum("...qk,...kd->...qd", weights, value), weights


def attention_sdpa(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    bias = None
    if mask is not None:  # a float mask: 0 where the query may attend, -1e9 where not
        bias = torch.zeros(mask.shape, dtype=query.dtype).masked_fill(mask == 0, -1e9)
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    weights = (scores if bias is None else scores.masked_fill(mask == 0, -1e9)).softmax(-1)
    if dropout is not None:
        weights = dropout(weights)
        return weights @ value, weights
    return F.scaled_dot_product_attention(query, key, value, attn_mask=bias), weights


def test_attention_with_einsum_passes() -> None:
    result = check("attention", attention_einsum, quiet=True)
    assert result.passed, result.message


def test_attention_with_sdpa_and_a_float_mask_passes() -> None:
    result = check("attention", attention_sdpa, quiet=True)
    assert result.passed, result.message


def test_a_float_mask_added_to_the_scores_is_named_on_a_fully_masked_row() -> None:
    def added(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores + torch.zeros(mask.shape, dtype=query.dtype).masked_fill(mask == 0, -1e9)
        weights = scores.softmax(-1)
        if dropout is not None:
            weights = dropout(weights)
        return weights @ value, weights

    result = check("attention", added, quiet=True)
    assert result.mistake == "a float mask of -1e9 added to the scores, not filled in"
    assert "fully masked: no key may be attended" in " ".join(result.message.split())


def _mha(forward: Any) -> type[nn.Module]:
    base = answer("multi_head_attention").MultiHeadedAttention
    return type("Variant", (base,), {"forward": forward})


def mha_unflatten_permute(self, query, key, value, mask=None):  # type: ignore[no-untyped-def]
    if mask is not None:
        mask = mask.unsqueeze(1)
    q, k, v = (lin(x).unflatten(-1, (self.h, self.d_k)).permute(0, 2, 1, 3)
               for lin, x in zip(self.linears, (query, key, value), strict=False))
    scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    x = self.dropout(scores.softmax(-1)) @ v
    return self.linears[3](x.permute(0, 2, 1, 3).flatten(2))


def mha_per_head_loop(self, query, key, value, mask=None):  # type: ignore[no-untyped-def]
    q, k, v = (lin(x) for lin, x in zip(self.linears, (query, key, value), strict=False))
    heads = []
    for i in range(self.h):
        part = slice(i * self.d_k, (i + 1) * self.d_k)
        scores = q[..., part] @ k[..., part].transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        heads.append(self.dropout(scores.softmax(-1)) @ v[..., part])
    return self.linears[3](torch.cat(heads, dim=-1))


def test_multi_head_attention_with_unflatten_and_permute_passes() -> None:
    result = check("multi_head_attention", _mha(mha_unflatten_permute), quiet=True)
    assert result.passed, result.message


def test_multi_head_attention_with_a_per_head_loop_passes() -> None:
    result = check("multi_head_attention", _mha(mha_per_head_loop), quiet=True)
    assert result.passed, result.message


def test_label_smoothing_with_f_kl_div_passes() -> None:
    base = answer("label_smoothing").LabelSmoothing

    def forward(self, x, target):  # type: ignore[no-untyped-def]
        true_dist = torch.full_like(x, self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.unsqueeze(1), 1.0 - self.smoothing)
        true_dist[:, self.padding_idx] = 0
        true_dist[target == self.padding_idx] = 0
        self.true_dist = true_dist
        return F.kl_div(x, true_dist, reduction="sum")

    result = check("label_smoothing", type("Variant", (base,), {"forward": forward}), quiet=True)
    assert result.passed, result.message


@torch.no_grad()
def greedy_rerun(model, src, src_mask, max_len, start_symbol, *, end_symbol=None,  # type: ignore[no-untyped-def]
                 pad_symbol=None):
    """Runs the whole model, encoder included, on the whole prefix at every step."""
    ys = torch.full((src.size(0), 1), start_symbol, dtype=src.dtype)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    fill = pad_symbol if pad_symbol is not None else end_symbol
    for _ in range(max_len - 1):
        future = torch.ones(ys.size(1), ys.size(1), dtype=torch.bool).triu(1)
        out = model(src, ys, src_mask, ~future.unsqueeze(0))
        next_word = model.generator(out)[:, -1].argmax(dim=-1)
        if end_symbol is not None:
            next_word = next_word.masked_fill(done, fill)
            done = done | (next_word == end_symbol)
        ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        if end_symbol is not None and bool(done.all()):
            break
    return ys


def test_greedy_decoding_that_reruns_the_whole_model_passes() -> None:
    result = check("greedy_decode", greedy_rerun, quiet=True)
    assert result.passed, result.message
