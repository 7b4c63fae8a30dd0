r"""The steps for the building blocks without dropout sites of their own: the subsequent mask,
attention, the embeddings and layer normalisation.

Each step compares the learner's code with the package's own
([`model`][vanilla_transformer.model]) and knows the classic mistakes of its block.
"""

from __future__ import annotations

import math
import random
from typing import Any, ClassVar

import torch

from ..model.attention import attention
from ..model.embeddings import Embeddings
from ..model.layers import LayerNorm
from ..model.masks import subsequent_mask
from ._core import Case, Mistake, Outputs, Step
from ._inputs import (
    FixedDropout,
    load_reference,
    mask_text,
    random_mask,
    shape,
)

__all__ = ["SubsequentMask", "Attention", "EmbeddingsStep", "LayerNormStep"]


# ---------------------------------------------------------------- subsequent_mask
def _band(size: int, offset: int, upper: bool) -> torch.Tensor:
    ones = torch.ones(1, size, size, dtype=torch.bool)
    return ones.triu(offset) if upper else ones.tril(offset)


class SubsequentMask(Step):
    name, obj, kind = "subsequent_mask", "subsequent_mask", "function"
    summary = "subsequent_mask(size): the (1, size, size) keep-mask; position i sees 0..i"
    mistakes = (
        Mistake("the diagonal is off by one: a position cannot see itself",
                "Position i may attend to 0..i, itself included: keep the diagonal "
                "(torch.tril with diagonal=0).",
                lambda c: {"output": _band(c.data["size"], -1, False)}),
        Mistake("the diagonal is off by one: a position sees the next one",
                "Position i may attend to 0..i only, not i + 1: use torch.tril with "
                "diagonal=0.",
                lambda c: {"output": _band(c.data["size"], 1, False)}),
        Mistake("mask inverted (True marks a blocked position)",
                "In this package True means 'may attend': return the lower triangle, "
                "or write (upper triangle above the diagonal) == 0.",
                lambda c: {"output": _band(c.data["size"], 1, True)}),
        Mistake("mask transposed (upper triangle)",
                "Row i is the query and column j the key; keep j <= i, the lower "
                "triangle (torch.tril).",
                lambda c: {"output": _band(c.data["size"], 0, True)}),
        Mistake("no leading batch axis",
                "Return shape (1, size, size), so that the mask broadcasts over a batch: "
                "add .unsqueeze(0).",
                lambda c: {"output": _band(c.data["size"], 0, False)[0]}),
    )

    def cases(self, seed: int) -> list[Case]:
        return [Case(f"size={n}", n, {"size": n}) for n in range(12)]

    def expected(self, case: Case) -> Outputs:
        return {"output": subsequent_mask(case.data["size"])}

    def run(self, implementation: Any, case: Case) -> Outputs:
        return {"output": implementation(case.data["size"])}


# ---------------------------------------------------------------- attention
def _attention_variant(case: Case, *, scale: str = "sqrt", axis: int = -1, invert: bool = False,
                       after: bool = False, fill: float = -1e9, dropout_on: str = "weights",
                       return_before: bool = False, added: bool = False) -> Outputs:
    q, k, v, mask = (case.data[n] for n in ("query", "key", "value", "mask"))
    dropout = case.data["dropout"]
    scores = q @ k.transpose(-2, -1)
    if scale in ("sqrt", "d_k"):
        scores = scores / (math.sqrt(q.size(-1)) if scale == "sqrt" else q.size(-1))
    if mask is not None and added:
        scores = scores + torch.zeros(mask.shape, dtype=scores.dtype).masked_fill(mask == 0, fill)
    elif mask is not None and not after:
        scores = scores.masked_fill((mask != 0) if invert else (mask == 0), fill)
    p = scores.softmax(dim=axis)
    if scale == "after":
        p = p / math.sqrt(q.size(-1))
    if mask is not None and after:
        p = p.masked_fill(mask == 0, 0.0)
    kept = p
    if dropout is not None and dropout_on == "weights":
        kept = dropout(p)
    out = kept @ v
    if dropout is not None and dropout_on == "output":
        out = dropout(out)
    return {"weights": p if return_before or dropout_on != "weights" else kept, "output": out}


class Attention(Step):
    name, obj, kind = "attention", "attention", "function"
    summary = "attention(query, key, value, mask=None, dropout=None) -> (output, weights)"
    stages: ClassVar[dict[str, str]] = {"weights": "the softmax of the scaled scores, after dropout",
              "output": "the weights times value"}
    mistakes = (
        Mistake("no √d_k scale",
                "Divide the scores Q K^T by math.sqrt(d_k), where d_k = query.size(-1), "
                "before the softmax.", lambda c: _attention_variant(c, scale="none")),
        Mistake("scores scaled by d_k instead of √d_k",
                "Divide by the square root of d_k, math.sqrt(query.size(-1)), not by d_k.",
                lambda c: _attention_variant(c, scale="d_k")),
        Mistake("the scale applied after the softmax",
                "Divide the scores by math.sqrt(d_k) before the softmax: dividing the weights "
                "after it leaves rows that no longer sum to 1.",
                lambda c: _attention_variant(c, scale="after")),
        Mistake("masked scores filled with 0 instead of -1e9",
                "A score of 0 still gets weight after the softmax: fill the masked scores "
                "with -1e9 so that they get (almost) none.",
                lambda c: _attention_variant(c, fill=0.0)),
        Mistake("softmax over the wrong axis",
                "Each query's weights over the keys must sum to 1: softmax over the last "
                "axis (dim=-1), the keys.", lambda c: _attention_variant(c, axis=-2)),
        Mistake("mask inverted",
                "A keep-mask is True where the query MAY attend: fill the scores where "
                "mask == 0, not where it is 1.", lambda c: _attention_variant(c, invert=True)),
        Mistake("mask applied after the softmax",
                "Zeroing weights after the softmax leaves rows that no longer sum to 1: "
                "fill the masked scores with -1e9 before the softmax.",
                lambda c: _attention_variant(c, after=True)),
        Mistake("masked scores filled with -inf",
                "A query whose every key is masked then gets NaN weights: fill with a large "
                "finite negative number, -1e9, so such a row gets uniform weights.",
                lambda c: _attention_variant(c, fill=float("-inf"))),
        Mistake("a float mask of -1e9 added to the scores, not filled in",
                "Adding -1e9 keeps the differences between masked scores in float64, so a "
                "fully masked row is not uniform: set them to -1e9 with "
                "scores.masked_fill(mask == 0, -1e9).",
                lambda c: _attention_variant(c, added=True)),
        Mistake("dropout applied to the output instead of the weights",
                "Apply dropout to the attention weights, then multiply by value (and return "
                "the weights after dropout).", lambda c: _attention_variant(c, dropout_on="output")),
        Mistake("weights returned before dropout",
                "Return the weights that multiplied value, after dropout.",
                lambda c: _attention_variant(c, return_before=True)),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(48):
            lead = [(), (rng.randint(1, 3),), (rng.randint(1, 3), rng.randint(1, 3))][i % 3]
            q_len, k_len, d_k, d_v = (rng.randint(1, 5) for _ in range(4))
            kind = ["none", "padding", "subsequent", "rows"][(i // 3) % 4]
            if kind == "subsequent":
                k_len = q_len
            dtype = torch.float64 if i % 7 == 6 else torch.float32
            q = torch.randn(*lead, q_len, d_k, generator=g, dtype=dtype)
            k = torch.randn(*lead, k_len, d_k, generator=g, dtype=dtype)
            v = torch.randn(*lead, k_len, d_v, generator=g, dtype=dtype)
            mask = random_mask(g, lead, q_len, k_len, kind)
            dropout = FixedDropout() if i % 5 == 4 else None
            text = (f"{shape('query', q)}, {shape('key', k)}, {shape('value', v)}, "
                    f"{mask_text('mask', mask)}"
                    + (", dropout that doubles each weight but zeroes the last key's"
                       if dropout else ""))
            data = {"query": q, "key": k, "value": v, "mask": mask, "dropout": dropout}
            cases.append(Case(text, q.numel() + k.numel() + v.numel(), data))
        return cases

    def expected(self, case: Case) -> Outputs:
        d = case.data
        out, weights = attention(d["query"], d["key"], d["value"], mask=d["mask"],
                                 dropout=d["dropout"])
        return {"weights": weights, "output": out}

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        result = implementation(d["query"], d["key"], d["value"], mask=d["mask"],
                                dropout=d["dropout"])
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(f"attention must return (output, weights), got {type(result).__name__}")
        return {"weights": result[1], "output": result[0]}


# ---------------------------------------------------------------- embeddings
def _emb_variant(case: Case, factor: str) -> Outputs:
    ref: Embeddings = case.data["reference"]
    looked = ref.lut(case.data["x"])
    d, vocab = case.data["d_model"], case.data["vocab"]
    scale = {"none": 1.0, "divided": 1 / math.sqrt(d), "d_model": float(d),
             "vocab": math.sqrt(vocab)}[factor]
    return {"output": looked * scale}


class EmbeddingsStep(Step):
    name, obj, kind = "embeddings", "Embeddings", "class"
    summary = "Embeddings(d_model, vocab): lut(x) * sqrt(d_model)"
    mistakes = (
        Mistake("no √d_model scale",
                "Multiply the looked-up vectors by math.sqrt(d_model) (paper section 3.4).",
                lambda c: _emb_variant(c, "none")),
        Mistake("divided by √d_model instead of multiplied",
                "Multiply by math.sqrt(d_model).", lambda c: _emb_variant(c, "divided")),
        Mistake("scaled by d_model instead of √d_model",
                "The factor is the square root: math.sqrt(d_model).",
                lambda c: _emb_variant(c, "d_model")),
        Mistake("scaled by √vocab instead of √d_model",
                "The factor is math.sqrt(d_model), the embedding width.",
                lambda c: _emb_variant(c, "vocab")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for _ in range(20):
            d_model, vocab = rng.randint(1, 8), rng.randint(2, 12)
            x = torch.randint(0, vocab, (rng.randint(1, 3), rng.randint(1, 5)), generator=g)
            reference = Embeddings(d_model, vocab)
            text = f"d_model={d_model}, vocab={vocab}, token ids {x.tolist()}"
            cases.append(Case(text, x.numel() + d_model,
                              {"x": x, "d_model": d_model, "vocab": vocab, "reference": reference}))
        return cases

    def expected(self, case: Case) -> Outputs:
        return {"output": case.data["reference"](case.data["x"])}

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        module = implementation(d["d_model"], d["vocab"])
        load_reference(module, d["reference"], "Embeddings")
        return {"output": module(d["x"])}


# ---------------------------------------------------------------- layer norm
def _ln_variant(case: Case, *, unbiased: bool = True, inside: bool = False, axis: int = -1,
                eps: bool = True) -> Outputs:
    ref: LayerNorm = case.data["reference"]
    x = case.data["x"]
    e = ref.eps if eps else 0.0
    mean = x.mean(axis, keepdim=True)
    var = x.var(axis, keepdim=True, unbiased=unbiased)
    scale = torch.sqrt(var + e) if inside else var.sqrt() + e
    return {"output": ref.a_2 * (x - mean) / scale + ref.b_2}


class LayerNormStep(Step):
    name, obj, kind = "layer_norm", "LayerNorm", "class"
    summary = "LayerNorm(features, eps=1e-6): a_2 * (x - mean) / (std + eps) + b_2, unbiased std"
    mistakes = (
        Mistake("biased variance (divided by n), eps added to the standard deviation",
                "The reference uses the unbiased standard deviation, x.std(-1, keepdim=True) "
                "(divided by n - 1), and adds eps to it, outside the square root.",
                lambda c: _ln_variant(c, unbiased=False)),
        Mistake("unbiased variance, eps inside the square root",
                "The reference adds eps to the standard deviation, outside the root: "
                "(x - mean) / (std + eps).", lambda c: _ln_variant(c, inside=True)),
        Mistake("biased variance, eps inside the square root (torch.nn.LayerNorm's formula)",
                "That is nn.LayerNorm's formula; the reference uses the unbiased std, "
                "x.std(-1, keepdim=True), with eps added to it: (x - mean) / (std + eps).",
                lambda c: _ln_variant(c, unbiased=False, inside=True)),
        Mistake("no eps",
                "Add eps to the standard deviation, so a constant row does not divide by 0.",
                lambda c: _ln_variant(c, eps=False)),
        Mistake("statistics over the wrong axis",
                "Normalise each position over its features: mean and std over the last "
                "axis (dim=-1, keepdim=True).", lambda c: _ln_variant(c, axis=-2)),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        kinds = ["random", "tiny", "constant row", "offset"]
        for i in range(32):
            features = rng.randint(2, 8)
            dtype = torch.float64 if i % 8 == 7 else torch.float32
            x = torch.randn(rng.randint(1, 3), rng.randint(2, 4), features, generator=g,
                            dtype=dtype)
            kind = kinds[i % 4]
            if kind == "tiny":
                x = x * 1e-3
            elif kind == "constant row":
                x[..., 0, :] = 0.5
            elif kind == "offset":
                x = x + 10.0
            eps = [None, 1e-2, 0.3][(i // 4) % 3]
            reference = LayerNorm(features, **({} if eps is None else {"eps": eps}), fast=False)
            with torch.no_grad():
                reference.a_2.copy_(torch.rand(features, generator=g) + 0.5)
                reference.b_2.copy_(torch.randn(features, generator=g))
            text = (f"features={features}, "
                    + ("eps left at its default" if eps is None else f"eps={eps}")
                    + f", {shape('x', x)} ({kind}), random a_2 and b_2")
            cases.append(Case(text, x.numel(),
                              {"x": x, "features": features, "eps": eps, "reference": reference}))
        return cases

    def expected(self, case: Case) -> Outputs:
        return {"output": case.data["reference"](case.data["x"])}

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        module = (implementation(d["features"]) if d["eps"] is None
                  else implementation(d["features"], eps=d["eps"]))
        load_reference(module, d["reference"], "LayerNorm")
        return {"output": module(d["x"])}
