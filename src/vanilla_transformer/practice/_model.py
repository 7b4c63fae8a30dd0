r"""The whole encoder-decoder step: the learner's `make_model`, compared stage by stage (the
embeddings, each layer, the stacks, the generator, `encode()` and `decode()`).
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import torch
from torch import nn

from ..model.encoder_decoder import EncoderDecoder, make_model
from ..model.masks import subsequent_mask
from ._core import Case, Mistake, Outputs, Step
from ._inputs import StructureError, load_reference, tapped
from ._layers import randomise_norms

__all__ = ["EncoderDecoderStep", "model_taps"]


# ---------------------------------------------------------------- encoder-decoder
def model_taps(n_layers: int) -> list[tuple[str, str, bool]]:
    """The stages of a whole model, by submodule name, in the order they run."""
    taps = [("source embeddings", "src_embed.0", False),
            ("source positional encoding", "src_embed.1", False)]
    taps += [(f"encoder layer {i}", f"encoder.layers.{i}", False) for i in range(n_layers)]
    taps += [("encoder output", "encoder", False), ("target embeddings", "tgt_embed.0", False),
             ("target positional encoding", "tgt_embed.1", False)]
    taps += [(f"decoder layer {i}", f"decoder.layers.{i}", False) for i in range(n_layers)]
    taps += [("decoder output", "decoder", False)]
    return taps


OPTION_SETS = [
    dict(norm_first=True, layer_norm="annotated", tie_weights=False, generator_bias=True),
    dict(norm_first=False, layer_norm="torch", tie_weights=True, generator_bias=False),
    dict(norm_first=False, layer_norm="annotated", tie_weights=False, generator_bias=True),
    dict(norm_first=True, layer_norm="torch", tie_weights=True, generator_bias=False),
]


def _generator_variant(case: Case, how: str) -> Outputs:
    ref: EncoderDecoder = case.data["reference"]
    d = case.data
    states = ref(d["src"], d["tgt"], d["src_mask"], d["tgt_mask"])
    logits = ref.generator.proj(states)
    return {"log-probabilities": logits if how == "logits" else logits.softmax(-1)}


def _model_variant(case: Case, how: str) -> Outputs:
    ref: EncoderDecoder = case.data["reference"]
    d = case.data
    memory = ref.encode(d["src"], d["src_mask"])
    if how == "source embedding":
        decoded = ref.decoder(ref.src_embed(d["tgt"]), memory, d["src_mask"], d["tgt_mask"])
        return {"decoder states": decoded, "decode()": decoded}
    states = ref.decode(memory, d["src_mask"], d["tgt"], d["tgt_mask"])
    return {"decoder states": ref.generator(states)}


def _tied(model: nn.Module) -> bool:
    try:
        weights = [model.get_submodule(p).weight for p in ("src_embed.0.lut", "tgt_embed.0.lut",
                                                             "generator.proj")]
    except AttributeError:
        return False
    return weights[0] is weights[1] is weights[2]


class EncoderDecoderStep(Step):
    name, obj, kind = "encoder_decoder", "make_model", "function"
    summary = ("make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1, "
               "*, norm_first, layer_norm, tie_weights, generator_bias, max_len)")
    stages: ClassVar[dict[str, str]] = {
              "source embeddings": "model.src_embed[0]",
              "source positional encoding": "model.src_embed[1]",
              "encoder output": "model.encoder", "target embeddings": "model.tgt_embed[0]",
              "target positional encoding": "model.tgt_embed[1]",
              "decoder output": "model.decoder",
              "log-probabilities": "model.generator(states)",
              "encode()": "model.encode(src, src_mask)",
              "decode()": "model.decode(memory, src_mask, tgt, tgt_mask)",
              "decoder states": "model(src, tgt, src_mask, tgt_mask)"}
    mistakes = (
        Mistake("the generator returns scores, not log-probabilities",
                "End the generator with log_softmax(self.proj(x), dim=-1): the loss and "
                "decoding read log-probabilities.", lambda c: _generator_variant(c, "logits")),
        Mistake("the generator returns probabilities (softmax), not log-probabilities",
                "Use log_softmax(..., dim=-1) instead of softmax.",
                lambda c: _generator_variant(c, "softmax")),
        Mistake("decode() embeds the target with the source embedding",
                "The decoder reads the target sentence: self.decoder(self.tgt_embed(tgt), "
                "memory, src_mask, tgt_mask).", lambda c: _model_variant(c, "source embedding")),
        Mistake("forward() applies the generator",
                "forward returns the decoder's states, (batch, tgt_len, d_model); the "
                "generator is applied separately, by the loss and by decoding.",
                lambda c: _model_variant(c, "generator")),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(6):
            h, d_k, n = rng.randint(1, 2), rng.choice([2, 4]), rng.randint(1, 2)
            d_model, d_ff, vocab = h * d_k, rng.randint(4, 12), rng.randint(5, 12)
            options = OPTION_SETS[i % 4]
            b, s_len, t_len = rng.randint(1, 3), rng.randint(1, 5), rng.randint(1, 5)
            src = torch.randint(1, vocab, (b, s_len), generator=g)
            tgt = torch.randint(1, vocab, (b, t_len), generator=g)
            src[1:, -1] = 0  # every row but the first ends with padding
            src[:, 0] = torch.randint(1, vocab, (b,), generator=g)
            src_mask = (src != 0).unsqueeze(-2)
            tgt_mask = subsequent_mask(t_len)
            args: dict[str, Any] = dict(src_vocab=vocab, tgt_vocab=vocab, N=n, d_model=d_model,
                                        d_ff=d_ff, h=h, dropout=0.1, max_len=32, **options)
            reference = make_model(**args).eval()
            randomise_norms(reference, g)
            opts = ", ".join(f"{k}={v!r}" for k, v in args.items())
            text = f"make_model({opts}), src {src.tolist()}, tgt {tgt.tolist()}"
            cases.append(Case(text, d_model * n * 4 + src.numel() + tgt.numel(),
                              {"args": args, "src": src, "tgt": tgt, "src_mask": src_mask,
                               "tgt_mask": tgt_mask, "reference": reference}))
        return cases

    def _run(self, model: Any, case: Case) -> Outputs:
        d = case.data
        out = tapped(model, model_taps(d["args"]["N"]),
                     lambda: model(d["src"], d["tgt"], d["src_mask"], d["tgt_mask"]),
                     last="decoder states")
        states = out["decoder states"]
        if isinstance(states, torch.Tensor) and states.size(-1) == d["args"]["d_model"]:
            out["log-probabilities"] = model.generator(states)
        memory = model.encode(d["src"], d["src_mask"])
        out["encode()"] = memory
        out["decode()"] = model.decode(memory, d["src_mask"], d["tgt"], d["tgt_mask"])
        return out

    def expected(self, case: Case) -> Outputs:
        return self._run(case.data["reference"], case)

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        model = implementation(**d["args"])
        if d["args"]["tie_weights"] and isinstance(model, nn.Module) and not _tied(model):
            raise StructureError("with tie_weights=True, src_embed[0].lut.weight, "
                             "tgt_embed[0].lut.weight and generator.proj.weight must be one "
                             "and the same Parameter")
        load_reference(model, d["reference"], "make_model")
        for stage, path, _ in model_taps(d["args"]["N"]):
            try:
                model.get_submodule(path)
            except AttributeError:
                raise StructureError(f"your model has no {path} (the {stage}): build the model as "
                                 "make_model's docstring shows, so that every stage has its "
                                 "place") from None
        model.eval()
        return self._run(model, case)
