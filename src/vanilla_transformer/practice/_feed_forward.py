r"""The steps of the position-wise feed-forward network and the positional encoding.

Both apply dropout; in training mode a fixed dropout shows where.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import torch
from torch import nn

from ..model.embeddings import PositionalEncoding
from ..model.layers import PositionwiseFeedForward
from ._core import Case, Mistake, Outputs, Step
from ._inputs import TRAINING, FixedDropout, fix_dropout, load_reference, shape, tapped

__all__ = ["FeedForward", "PositionalEncodingStep"]


# ---------------------------------------------------------------- feed-forward
def _ff_variant(case: Case, *, relu: str = "hidden", dropout: str = "hidden") -> Outputs:
    ref: PositionwiseFeedForward = case.data["reference"]
    drop = FixedDropout() if case.data["train"] else nn.Identity()
    hidden = ref.w_1(case.data["x"])
    if relu in ("hidden", "both"):
        hidden = hidden.relu()
    elif relu == "gelu":
        hidden = nn.functional.gelu(hidden)
    if dropout == "hidden":
        hidden = drop(hidden)
    out = ref.w_2(hidden)
    if relu == "both":
        out = out.relu()
    return {"after ReLU": hidden, "output": drop(out) if dropout == "output" else out}


_FF_TAPS = [("hidden", "w_1", False), ("after ReLU", "w_2", True)]


class FeedForward(Step):
    name, obj, kind = "feed_forward", "PositionwiseFeedForward", "class"
    summary = "PositionwiseFeedForward(d_model, d_ff, dropout=0.1): w_2(relu(w_1(x)))"
    stages: ClassVar[dict[str, str]] = {"hidden": "the output of w_1",
              "after ReLU": "the input of w_2, after the ReLU and dropout",
              "output": "the output of w_2"}
    mistakes = (
        Mistake("no ReLU between the two linear maps",
                "FFN(x) = max(0, x W_1 + b_1) W_2 + b_2: apply .relu() to w_1's output.",
                lambda c: _ff_variant(c, relu="none")),
        Mistake("ReLU applied after the second linear map too",
                "Only the hidden layer has a ReLU; w_2's output goes out as it is.",
                lambda c: _ff_variant(c, relu="both")),
        Mistake("GELU instead of ReLU",
                "The paper's network uses max(0, x): .relu(), not gelu.",
                lambda c: _ff_variant(c, relu="gelu")),
        Mistake("dropout left out of the feed-forward network",
                "Apply self.dropout to the hidden layer, after the ReLU and before w_2: "
                "w_2(dropout(relu(w_1(x)))).", lambda c: _ff_variant(c, dropout="none")),
        Mistake("dropout in the feed-forward network applied after w_2, not to the hidden "
                "layer", "Apply self.dropout after the ReLU, before w_2: "
                "w_2(dropout(relu(w_1(x)))).", lambda c: _ff_variant(c, dropout="output")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(24):
            d_model, d_ff = rng.randint(1, 8), rng.randint(1, 16)
            x = torch.randn(rng.randint(1, 3), rng.randint(1, 4), d_model, generator=g)
            train = i % 3 == 2
            reference = fix_dropout(PositionwiseFeedForward(d_model, d_ff, dropout=0.1), train)
            text = (f"d_model={d_model}, d_ff={d_ff}, {shape('x', x)}"
                    + (f", {TRAINING}" if train else ""))
            cases.append(Case(text, x.numel() + d_ff, {"x": x, "d_model": d_model, "d_ff": d_ff,
                                                        "reference": reference, "train": train}))
        return cases

    def expected(self, case: Case) -> Outputs:
        ref, x = case.data["reference"], case.data["x"]
        return tapped(ref, _FF_TAPS, lambda: ref(x))

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        module = implementation(d["d_model"], d["d_ff"], dropout=0.1 if d["train"] else 0.0)
        load_reference(module, d["reference"], "PositionwiseFeedForward")
        fix_dropout(module, d["train"])
        return tapped(module, _FF_TAPS, lambda: module(d["x"]))


# ---------------------------------------------------------------- positional encoding
def _table(length: int, d_model: int, *, swap: bool = False, exponent: str = "2i",
           start: int = 0, halves: bool = False) -> torch.Tensor:
    position = torch.arange(start, start + length, dtype=torch.float64).unsqueeze(1)
    pairs = torch.arange(0, d_model // 2, dtype=torch.float64)
    if exponent == "2i":
        power = 2 * pairs / d_model
    elif exponent == "i":
        power = pairs / d_model
    else:  # "j": each feature uses its own index, so the cosines get (2i + 1) / d_model
        power = 2 * pairs / d_model
    angle = position / 10000.0 ** power
    first, second = (torch.cos(angle), torch.sin(angle)) if swap else (torch.sin(angle),
                                                                        torch.cos(angle))
    if exponent == "j":
        second = torch.cos(position / 10000.0 ** ((2 * pairs + 1) / d_model))
    if halves:
        return torch.cat([first, second], dim=1)
    table = torch.empty(length, d_model, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = first, second
    return table


def _pe_variant(case: Case, dropout: str = "sum", **how: Any) -> Outputs:
    x = case.data["x"]
    drop = FixedDropout() if case.data["train"] else nn.Identity()
    table = _table(x.size(1), x.size(2), **how).to(torch.promote_types(x.dtype, torch.float32))
    if dropout == "table":
        return {"output": x + drop(table)}
    out = x + table
    return {"output": drop(out) if dropout == "sum" else out}


class PositionalEncodingStep(Step):
    name, obj, kind = "positional_encoding", "PositionalEncoding", "class"
    summary = "PositionalEncoding(d_model, dropout, max_len=5000): x + the sinusoid table"
    tolerance = (1e-4, 2e-5)
    mistakes = (
        Mistake("sin and cos swapped",
                "Even features (0, 2, 4, ...) hold sines and odd features cosines: "
                "pe[:, 0::2] = sin, pe[:, 1::2] = cos.", lambda c: _pe_variant(c, swap=True)),
        Mistake("the exponent 2i/d_model written as i/d_model",
                "Pair i (features 2i and 2i+1) uses 10000^(2i/d_model): take the exponents "
                "from torch.arange(0, d_model, 2), the even feature indices.",
                lambda c: _pe_variant(c, exponent="i")),
        Mistake("each feature uses its own index in the exponent",
                "A sine and its cosine share one frequency: feature 2i+1 uses 2i/d_model, "
                "like feature 2i.", lambda c: _pe_variant(c, exponent="j")),
        Mistake("positions counted from 1",
                "The first position is 0: torch.arange(0, max_len).",
                lambda c: _pe_variant(c, start=1)),
        Mistake("sines and cosines concatenated instead of interleaved",
                "Interleave them: sines in the even features, cosines in the odd ones.",
                lambda c: _pe_variant(c, halves=True)),
        Mistake("dropout left out of the positional encoding",
                "Return self.dropout(x + self.pe[:, : x.size(1)]): dropout applies to the sum "
                "of the embeddings and the table.", lambda c: _pe_variant(c, dropout="none")),
        Mistake("dropout in the positional encoding applied to the table alone, not to the sum",
                "Add first, then drop: self.dropout(x + self.pe[:, : x.size(1)]).",
                lambda c: _pe_variant(c, dropout="table")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(24):
            d_model, length = 2 * rng.randint(1, 8), rng.randint(1, 12)
            dtype = torch.float64 if i % 6 == 5 else torch.float32
            x = torch.randn(rng.randint(1, 3), length, d_model, generator=g, dtype=dtype)
            max_len = None if i % 4 == 0 else length + rng.randint(0, 20)
            train = i % 3 == 1
            text = (f"d_model={d_model}, "
                    + ("max_len left at its default" if max_len is None else f"max_len={max_len}")
                    + f", {shape('x', x)}" + (f", {TRAINING}" if train else ""))
            cases.append(Case(text, x.numel(), {"x": x, "d_model": d_model, "max_len": max_len,
                                                "train": train}))
        return cases

    def expected(self, case: Case) -> Outputs:
        d = case.data
        module = PositionalEncoding(d["d_model"], 0.1, d["max_len"] or 5000)
        return {"output": fix_dropout(module, d["train"])(d["x"])}

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        p = 0.1 if d["train"] else 0.0
        args = (d["d_model"], p) if d["max_len"] is None else (d["d_model"], p, d["max_len"])
        module = fix_dropout(implementation(*args), d["train"])
        return {"output": module(d["x"])}
