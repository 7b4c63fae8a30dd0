r"""The multi-head attention step: the learner's `MultiHeadedAttention` with the package's
weights, every projection its own, compared projection by projection.

Each of the four projections gets its own random weights, so that using one for another, or one
module shared by reference, shows; in training mode a fixed dropout shows where dropout is
applied.
"""

from __future__ import annotations

import math
import random
from functools import partial
from typing import Any, ClassVar

import torch
from torch import nn

from ..model.attention import MultiHeadedAttention
from ._core import Case, Mistake, Outputs, Step
from ._inputs import (
    TRAINING,
    FixedDropout,
    distinct_weights,
    fix_dropout,
    load_reference,
    mask_text,
    random_mask,
    shape,
    tapped,
)

__all__ = ["MultiHeadAttention"]


# ---------------------------------------------------------------- multi-head attention
def _mha_variant(case: Case, *, split: str = "ok", merge: str = "ok", scale: str = "d_k",
                 unsqueeze: bool = True, order: tuple[int, int, int] = (0, 1, 2),
                 w_o: bool = True, dropout: str = "weights") -> Outputs:
    ref: MultiHeadedAttention = case.data["reference"]
    query, key, value, mask = (case.data[n] for n in ("query", "key", "value", "mask"))
    h, d_k = ref.h, ref.d_k
    b = query.size(0)

    def heads(x: torch.Tensor) -> torch.Tensor:
        if split == "no-transpose":
            return x.view(b, h, -1, d_k)
        return x.view(b, -1, h, d_k).transpose(1, 2)

    projections = [ref.linears[i] for i in order]
    q, k, v = (heads(lin(x)) for lin, x in zip(projections, (query, key, value), strict=True))
    if mask is not None and unsqueeze:
        mask = mask.unsqueeze(1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k if scale == "d_k" else h * d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    drop = FixedDropout() if case.data["train"] else nn.Identity()
    weights = scores.softmax(-1)
    x = (drop(weights) if dropout == "weights" else weights) @ v  # (batch, h, query_len, d_k)
    if dropout == "heads":
        x = drop(x)
    if merge == "no-transpose":
        merged = x.reshape(b, -1, h * d_k)
    elif merge == "interleaved":
        merged = x.permute(0, 2, 3, 1).reshape(b, -1, h * d_k)
    else:
        merged = x.transpose(1, 2).reshape(b, -1, h * d_k)
    out = ref.linears[3](merged) if w_o else merged
    return {"merged heads": merged, "output": drop(out) if dropout == "output" else out}


_SWAPS = [(1, 0, 2), (2, 1, 0), (0, 2, 1), (1, 2, 0), (2, 0, 1)]


def _projection_mistakes() -> tuple[Mistake, ...]:
    swapped = tuple(
        Mistake("the Q, K and V projections swapped",
                "linears[0] projects the query, linears[1] the key and linears[2] the value, "
                "in that order: zip(self.linears, (query, key, value)).",
                partial(_mha_variant, order=order))
        for order in _SWAPS)
    reused = tuple(
        Mistake(f"one projection, linears[{i}], used for query, key and value",
                "Each of query, key and value has its own projection: linears[0], [1] and [2] "
                "(W^Q, W^K, W^V), and linears[3] is W^O.",
                partial(_mha_variant, order=(i, i, i)))
        for i in range(4))
    return swapped + reused


_MHA_TAPS = [("query projection", "linears.0", False), ("key projection", "linears.1", False),
             ("value projection", "linears.2", False), ("merged heads", "linears.3", True)]


class MultiHeadAttention(Step):
    name, obj, kind = "multi_head_attention", "MultiHeadedAttention", "class"
    summary = "MultiHeadedAttention(h, d_model, dropout=0.1); forward(query, key, value, mask=None)"
    stages: ClassVar[dict[str, str]] = {"query projection": "the output of linears[0]",
              "key projection": "the output of linears[1]",
              "value projection": "the output of linears[2]",
              "merged heads": "the heads concatenated, the input of linears[3]",
              "output": "the output of linears[3]"}
    mistakes = (
        Mistake("heads split with view but no transpose, so heads mix positions",
                "Split (batch, seq_len, d_model) with .view(batch, -1, h, d_k) and then "
                ".transpose(1, 2) to (batch, h, seq_len, d_k).",
                lambda c: _mha_variant(c, split="no-transpose")),
        Mistake("heads concatenated in the wrong order: no transpose back before merging",
                "Turn (batch, h, seq_len, d_k) back into (batch, seq_len, h, d_k) with "
                ".transpose(1, 2) before .reshape(batch, -1, h * d_k).",
                lambda c: _mha_variant(c, merge="no-transpose")),
        Mistake("heads concatenated in the wrong order: features interleaved",
                "Concatenate whole heads, head 0's d_k features then head 1's: "
                "x.transpose(1, 2).reshape(batch, -1, h * d_k).",
                lambda c: _mha_variant(c, merge="interleaved")),
        Mistake("scores scaled by √d_model instead of √d_k",
                "Each head works in d_k = d_model / h dimensions: divide by math.sqrt(d_k).",
                lambda c: _mha_variant(c, scale="d_model")),
        Mistake("mask not given a head axis",
                "A mask of shape (batch, 1 or query_len, key_len) needs .unsqueeze(1) to "
                "apply the same mask to every head.",
                lambda c: _mha_variant(c, unsqueeze=False)),
        Mistake("W^O left out: the merged heads are returned without the output projection",
                "Return self.linears[3](x), the merged heads times W^O.",
                lambda c: _mha_variant(c, w_o=False)),
        *_projection_mistakes(),
        Mistake("dropout left out of multi-head attention",
                "Pass self.dropout to attention(q, k, v, mask, self.dropout): dropout applies "
                "to the attention weights, before they multiply the values.",
                lambda c: _mha_variant(c, dropout="none")),
        Mistake("dropout applied to the output of W^O, not to the attention weights",
                "Dropout belongs to the attention weights, inside "
                "attention(...); the residual connection drops the sublayer's output.",
                lambda c: _mha_variant(c, dropout="output")),
        Mistake("dropout applied to the heads' outputs, not to the attention weights",
                "Apply self.dropout to the softmax weights, before they "
                "multiply the values: attention(q, k, v, mask, self.dropout).",
                lambda c: _mha_variant(c, dropout="heads")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(36):
            h, d_k, b = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 3)
            d_model = h * d_k
            q_len = rng.randint(1, 5)
            cross = i % 2 == 1
            k_len = rng.randint(1, 5) if cross else q_len
            kind = ["none", "padding", "subsequent" if not cross else "padding"][i % 3]
            query = torch.randn(b, q_len, d_model, generator=g)
            key = torch.randn(b, k_len, d_model, generator=g) if cross else query
            mask = random_mask(g, [b], q_len, k_len, kind)
            if kind == "subsequent" and mask is not None:
                mask = mask[0:1]
            train = i % 4 == 3
            # fast=False: the equations as written, with the dropout module as given
            reference = fix_dropout(MultiHeadedAttention(h, d_model, dropout=0.1, fast=False),
                                    train)
            distinct_weights(reference, g)
            text = (f"h={h}, d_model={d_model}, {shape('query', query)}, "
                    + (f"{shape('key = value', key)} (cross-attention)" if cross
                       else "key = value = query (self-attention)")
                    + f", {mask_text('mask', mask)}" + (f", {TRAINING}" if train else ""))
            data = {"h": h, "d_model": d_model, "query": query, "key": key, "value": key,
                    "mask": mask, "reference": reference, "train": train}
            cases.append(Case(text, query.numel() + key.numel() + d_model * h, data))
        return cases

    def expected(self, case: Case) -> Outputs:
        d = case.data
        return tapped(d["reference"], _MHA_TAPS,
                      lambda: d["reference"](d["query"], d["key"], d["value"], d["mask"]))

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        module = implementation(d["h"], d["d_model"], dropout=0.1 if d["train"] else 0.0)
        load_reference(module, d["reference"], "MultiHeadedAttention")
        fix_dropout(module, d["train"])
        return tapped(module, _MHA_TAPS,
                      lambda: module(d["query"], d["key"], d["value"], d["mask"]))
