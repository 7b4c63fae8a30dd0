r"""The steps that assemble the blocks: the residual sublayer, the encoder layer and the decoder
layer.

The learner's layer receives the package's own attention and feed-forward modules and the
package's weights, so these steps check the wiring alone; each names the first stage (a
sublayer, a layer of the stack) whose output differs.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch import nn

from ..model.attention import MultiHeadedAttention
from ..model.decoder import DecoderLayer
from ..model.encoder import EncoderLayer
from ..model.layers import PositionwiseFeedForward, SublayerConnection
from ..model.masks import subsequent_mask
from ._core import Case, Mistake, Outputs, Step
from ._inputs import (
    TRAINING,
    FixedDropout,
    distinct_weights,
    fix_dropout,
    load_reference,
    mask_text,
    shape,
    tapped,
)

__all__ = ["Sublayer", "EncoderLayerStep", "DecoderLayerStep", "randomise_norms"]

ARRANGEMENTS = [(True, "annotated"), (False, "annotated"), (True, "torch"), (False, "torch")]


def _arrangement(norm_first: bool, layer_norm: str) -> str:
    return f"norm_first={norm_first}, layer_norm={layer_norm!r}"


def randomise_norms(module: nn.Module, g: torch.Generator) -> None:
    """Give every LayerNorm a random gain and bias, so that each one's place shows."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if ".norm." in f".{name}" and p.dim() == 1:
                p.copy_(torch.rand(p.shape, generator=g) + 0.5 if name.endswith(("a_2", "weight"))
                        else torch.randn(p.shape, generator=g))


# ---------------------------------------------------------------- sublayer
def _sub_variant(case: Case, how: str, dropout: str = "sublayer") -> Outputs:
    ref: SublayerConnection = case.data["reference"]
    x, sub = case.data["x"], case.data["sublayer"]
    drop = FixedDropout() if case.data["train"] else nn.Identity()

    def f(t: torch.Tensor) -> torch.Tensor:
        return drop(sub(t)) if dropout == "sublayer" else sub(t)

    def total(t: torch.Tensor) -> torch.Tensor:
        return drop(t) if dropout == "sum" else t

    pre = ref.norm_first if how == "ok" else {"swapped": not ref.norm_first, "pre": True,
                                              "post": False}.get(how, ref.norm_first)
    if how == "no residual":
        out = f(ref.norm(x)) if pre else ref.norm(f(x))
    elif how == "normalised residual":
        out = ref.norm(x) + f(ref.norm(x)) if pre else ref.norm(x) + ref.norm(f(x))
    else:
        out = total(x + f(ref.norm(x))) if pre else ref.norm(total(x + f(x)))
    return {"output": out}


class Sublayer(Step):
    name, obj, kind = "sublayer", "SublayerConnection", "class"
    summary = ("SublayerConnection(size, dropout, *, norm_first=True, layer_norm='annotated'); "
               "forward(x, sublayer)")
    stages: ClassVar[dict[str, str]] = {"sublayer input": "what your code handed to the sublayer",
              "norm": "the output of self.norm", "output": "the result"}
    mistakes = (
        Mistake("the two arrangements swapped",
                "norm_first=True is pre-norm, x + sublayer(norm(x)); norm_first=False is "
                "the paper's post-norm, norm(x + sublayer(x)).",
                lambda c: _sub_variant(c, "swapped")),
        Mistake("always pre-norm (norm_first ignored)",
                "With norm_first=False return norm(x + sublayer(x)).",
                lambda c: _sub_variant(c, "pre")),
        Mistake("always post-norm (norm_first ignored)",
                "With norm_first=True return x + sublayer(norm(x)).",
                lambda c: _sub_variant(c, "post")),
        Mistake("no residual connection",
                "Add the input back: x + sublayer(norm(x)) (pre-norm) or "
                "norm(x + sublayer(x)) (post-norm).", lambda c: _sub_variant(c, "no residual")),
        Mistake("the residual taken from the normalised x",
                "The residual path carries x itself, not norm(x): x + sublayer(norm(x)).",
                lambda c: _sub_variant(c, "normalised residual")),
        Mistake("dropout left out of the residual connection",
                "Drop the sublayer's output before adding it back: x + "
                "self.dropout(sublayer(self.norm(x))) (pre-norm), or self.norm(x + "
                "self.dropout(sublayer(x))) (post-norm).",
                lambda c: _sub_variant(c, "ok", dropout="none")),
        Mistake("dropout applied after the residual sum, not to the sublayer's output",
                "Drop only the sublayer's output, before the addition: "
                "x + self.dropout(sublayer(...)); the residual path x is never dropped.",
                lambda c: _sub_variant(c, "ok", dropout="sum")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(24):
            size = rng.randint(2, 8)
            norm_first, layer_norm = ARRANGEMENTS[i % 4]
            x = torch.randn(rng.randint(1, 3), rng.randint(1, 4), size, generator=g)
            train = i % 3 == 2
            reference = fix_dropout(SublayerConnection(size, 0.1, norm_first=norm_first,
                                                       layer_norm=layer_norm), train)
            randomise_norms(reference, g)
            linear = nn.Linear(size, size)

            def sublayer(t: torch.Tensor, linear: nn.Linear = linear) -> torch.Tensor:
                return torch.tanh(linear(t))

            text = (f"size={size}, {_arrangement(norm_first, layer_norm)}, {shape('x', x)}, "
                    "sublayer = tanh of a random linear map, random norm weights"
                    + (f", {TRAINING}" if train else ""))
            cases.append(Case(text, x.numel(), {"x": x, "size": size, "norm_first": norm_first,
                                                "layer_norm": layer_norm, "sublayer": sublayer,
                                                "reference": reference, "train": train}))
        return cases

    def _run(self, module: nn.Module, case: Case) -> Outputs:
        given: list[torch.Tensor] = []

        def sublayer(t: torch.Tensor) -> torch.Tensor:
            given.append(t)
            return case.data["sublayer"](t)

        out = tapped(module, [("norm", "norm", False)], lambda: module(case.data["x"], sublayer))
        stages: Outputs = {"sublayer input": given[0]} if given else {}
        if "norm" in out:
            stages["norm"] = out["norm"]
        if not case.data["norm_first"]:
            stages = dict(reversed(list(stages.items())))  # post-norm: the sublayer runs first
        stages["output"] = out["output"]
        return stages

    def expected(self, case: Case) -> Outputs:
        return self._run(case.data["reference"], case)

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        module = implementation(d["size"], 0.1 if d["train"] else 0.0,
                                norm_first=d["norm_first"], layer_norm=d["layer_norm"])
        load_reference(module, d["reference"], "SublayerConnection")
        fix_dropout(module, d["train"])
        return self._run(module, case)


# ---------------------------------------------------------------- encoder layer
def _enc_variant(case: Case, how: str) -> Outputs:
    ref: EncoderLayer = case.data["reference"]
    x, mask = case.data["x"], case.data["mask"]
    if how == "no mask":
        mask = None

    def attend(y: torch.Tensor) -> torch.Tensor:
        return ref.self_attn(y, y, y, mask)

    if how == "swapped":
        return {"output": ref.sublayer[1](ref.sublayer[0](x, ref.feed_forward), attend)}
    second = ref.sublayer[0] if how == "shared" else ref.sublayer[1]
    return {"output": second(ref.sublayer[0](x, attend), ref.feed_forward)}


_ENC_TAPS = [("self-attention", "self_attn", False), ("first sublayer", "sublayer.0", False),
             ("feed-forward", "feed_forward", False)]


def _parts(h: int, d_model: int, d_ff: int) -> tuple[MultiHeadedAttention, PositionwiseFeedForward]:
    return MultiHeadedAttention(h, d_model, 0.0), PositionwiseFeedForward(d_model, d_ff, 0.0)


class EncoderLayerStep(Step):
    name, obj, kind = "encoder_layer", "EncoderLayer", "class"
    summary = ("EncoderLayer(size, self_attn, feed_forward, dropout, *, norm_first=True, "
               "layer_norm='annotated'); forward(x, mask)")
    stages: ClassVar[dict[str, str]] = {"self-attention": "the output of self_attn",
              "first sublayer": "the output of sublayer[0], around self-attention",
              "feed-forward": "the output of feed_forward", "output": "the layer's output"}
    mistakes = (
        Mistake("the mask not passed to self-attention",
                "Call self.self_attn(x, x, x, mask): without the mask, queries attend to "
                "padding.", lambda c: _enc_variant(c, "no mask")),
        Mistake("the feed-forward network runs before self-attention",
                "Self-attention comes first (sublayer[0]), then the feed-forward network "
                "(sublayer[1]).", lambda c: _enc_variant(c, "swapped")),
        Mistake("one SublayerConnection used for both sublayers",
                "Each sublayer has its own LayerNorm: use sublayer[0] around self-attention "
                "and sublayer[1] around the feed-forward network.",
                lambda c: _enc_variant(c, "shared")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(16):
            h, d_k, d_ff, b, n = (rng.randint(1, 3), rng.randint(1, 3), rng.randint(2, 8),
                                  rng.randint(1, 3), rng.randint(1, 5))
            d_model = max(2, h * d_k)
            h = h if d_model % h == 0 else 1
            norm_first, layer_norm = ARRANGEMENTS[i % 4]
            x = torch.randn(b, n, d_model, generator=g)
            lengths = torch.randint(1, n + 1, (b, 1, 1), generator=g)
            mask = (torch.arange(n) < lengths) if i % 3 else None
            attn, ff = _parts(h, d_model, d_ff)
            reference = EncoderLayer(d_model, attn, ff, 0.0, norm_first=norm_first,
                                     layer_norm=layer_norm).eval()
            distinct_weights(reference, g)
            randomise_norms(reference, g)
            text = (f"h={h}, d_model={d_model}, d_ff={d_ff}, "
                    f"{_arrangement(norm_first, layer_norm)}, {shape('x', x)}, "
                    f"{mask_text('mask', mask)}")
            cases.append(Case(text, x.numel(), {"x": x, "mask": mask, "d_model": d_model,
                                                "norm_first": norm_first,
                                                "layer_norm": layer_norm, "reference": reference}))
        return cases

    def expected(self, case: Case) -> Outputs:
        ref, d = case.data["reference"], case.data
        return tapped(ref, _ENC_TAPS, lambda: ref(d["x"], d["mask"]))

    def run(self, implementation: Any, case: Case) -> Outputs:
        d, ref = case.data, case.data["reference"]
        module = implementation(d["d_model"], copy.deepcopy(ref.self_attn),
                                copy.deepcopy(ref.feed_forward), 0.0,
                                norm_first=d["norm_first"], layer_norm=d["layer_norm"])
        load_reference(module, ref, "EncoderLayer")
        module.eval()
        return tapped(module, _ENC_TAPS, lambda: module(d["x"], d["mask"]))


# ---------------------------------------------------------------- decoder layer
def _dec_variant(case: Case, how: str) -> Outputs:
    ref: DecoderLayer = case.data["reference"]
    x, m, src_mask, tgt_mask = (case.data[k] for k in ("x", "memory", "src_mask", "tgt_mask"))
    self_mask = {"no target mask": None, "masks swapped": src_mask}.get(how, tgt_mask)
    cross_mask = tgt_mask if how == "masks swapped" else src_mask

    def cross(y: torch.Tensor) -> torch.Tensor:
        kv = y if how == "decoder keys" else m
        return ref.src_attn(y, kv, kv, cross_mask)

    x = ref.sublayer[0](x, lambda y: ref.self_attn(y, y, y, self_mask))
    x = ref.sublayer[1](x, cross)
    return {"output": ref.sublayer[2](x, ref.feed_forward)}


_DEC_TAPS = [("self-attention", "self_attn", False), ("first sublayer", "sublayer.0", False),
             ("source attention", "src_attn", False), ("second sublayer", "sublayer.1", False),
             ("feed-forward", "feed_forward", False)]


class DecoderLayerStep(Step):
    name, obj, kind = "decoder_layer", "DecoderLayer", "class"
    summary = ("DecoderLayer(size, self_attn, src_attn, feed_forward, dropout, *, norm_first=True, "
               "layer_norm='annotated'); forward(x, memory, src_mask, tgt_mask)")
    stages: ClassVar[dict[str, str]] = {"self-attention": "the output of self_attn",
              "first sublayer": "the output of sublayer[0], around masked self-attention",
              "source attention": "the output of src_attn, attending to memory",
              "second sublayer": "the output of sublayer[1]",
              "feed-forward": "the output of feed_forward", "output": "the layer's output"}
    mistakes = (
        Mistake("cross-attention keys and values taken from the decoder instead of the memory",
                "The second sublayer attends from the decoder to the encoder's output: "
                "self.src_attn(x, memory, memory, src_mask).",
                lambda c: _dec_variant(c, "decoder keys")),
        Mistake("the target mask not passed to self-attention, so positions see the future",
                "Call self.self_attn(x, x, x, tgt_mask).",
                lambda c: _dec_variant(c, "no target mask")),
        Mistake("src_mask and tgt_mask swapped",
                "Self-attention takes tgt_mask (no peeking ahead); attention to memory takes "
                "src_mask (the source's padding).", lambda c: _dec_variant(c, "masks swapped")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(16):
            h, d_k, d_ff, b = rng.randint(1, 3), rng.randint(1, 3), rng.randint(2, 8), rng.randint(1, 3)
            d_model = max(2, h * d_k)
            h = h if d_model % h == 0 else 1
            t_len, s_len = rng.randint(1, 5), rng.randint(1, 5)
            if i % 4 == 0:
                s_len = t_len
            norm_first, layer_norm = ARRANGEMENTS[i % 4]
            x = torch.randn(b, t_len, d_model, generator=g)
            memory = torch.randn(b, s_len, d_model, generator=g)
            lengths = torch.randint(1, s_len + 1, (b, 1, 1), generator=g)
            src_mask = (torch.arange(s_len) < lengths) if i % 3 else None
            tgt_mask = subsequent_mask(t_len)
            attn, ff = _parts(h, d_model, d_ff)
            reference = DecoderLayer(d_model, attn, copy.deepcopy(attn), ff, 0.0,
                                     norm_first=norm_first, layer_norm=layer_norm).eval()
            distinct_weights(reference, g)
            randomise_norms(reference, g)
            text = (f"h={h}, d_model={d_model}, {_arrangement(norm_first, layer_norm)}, "
                    f"{shape('x', x)}, {shape('memory', memory)}, {mask_text('src_mask', src_mask)}, "
                    f"tgt_mask = subsequent_mask({t_len})")
            cases.append(Case(text, x.numel() + memory.numel(),
                              {"x": x, "memory": memory, "src_mask": src_mask,
                               "tgt_mask": tgt_mask, "d_model": d_model, "norm_first": norm_first,
                               "layer_norm": layer_norm, "reference": reference}))
        return cases

    def _call(self, module: nn.Module, d: dict[str, Any]) -> Callable[[], Any]:
        return lambda: module(d["x"], d["memory"], d["src_mask"], d["tgt_mask"])

    def expected(self, case: Case) -> Outputs:
        return tapped(case.data["reference"], _DEC_TAPS, self._call(case.data["reference"], case.data))

    def run(self, implementation: Any, case: Case) -> Outputs:
        d, ref = case.data, case.data["reference"]
        module = implementation(d["d_model"], copy.deepcopy(ref.self_attn),
                                copy.deepcopy(ref.src_attn), copy.deepcopy(ref.feed_forward), 0.0,
                                norm_first=d["norm_first"], layer_norm=d["layer_norm"])
        load_reference(module, ref, "DecoderLayer")
        module.eval()
        return tapped(module, _DEC_TAPS, self._call(module, d))
