r"""The greedy-decoding step: the learner's
[`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode] drives the package's model.

The models have random weights, so to make sentences end, each input's end symbol is a token that
the model does produce: one taken from a run without an end symbol.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from ..inference.greedy import greedy_decode
from ..model.encoder_decoder import EncoderDecoder, make_model
from ..model.masks import subsequent_mask
from ._core import Case, Mistake, Outputs, Step
from ._inputs import mask_text

__all__ = ["GreedyDecode"]


def _greedy_variant(case: Case, *, ignore_end: bool = False, position: int = -1,
                    first_row: bool = False, target_mask: bool = True, pad_after: bool = True,
                    stop_early: bool = True) -> Outputs:
    d = case.data
    model: EncoderDecoder = d["model"]
    src, src_mask, max_len, start = d["src"], d["src_mask"], d["max_len"], d["start_symbol"]
    end = None if ignore_end else d["end_symbol"]
    fill = d["pad_symbol"] if d["pad_symbol"] is not None else end
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), start, dtype=src.dtype)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len - 1):
        mask = subsequent_mask(ys.size(1)) if target_mask else None
        out = model.decode(memory, src_mask, ys, mask)
        word = model.generator(out[:, position]).argmax(-1)
        if first_row:
            word = word[:1].expand(src.size(0))
        if end is not None:
            if pad_after:
                word = word.masked_fill(done, fill)
            done = done | (word == end)
        ys = torch.cat([ys, word.unsqueeze(1).to(ys.dtype)], dim=1)
        if end is not None and stop_early and bool(done.all()):
            break
    return {"output": ys}


class GreedyDecode(Step):
    name, obj, kind = "greedy_decode", "greedy_decode", "function"
    summary = ("greedy_decode(model, src, src_mask, max_len, start_symbol, *, end_symbol=None, "
               "pad_symbol=None) -> token ids (batch, out_len)")
    mistakes = (
        Mistake("not stopping at </s>",
                "Once a sentence has produced end_symbol, write pad_symbol (or end_symbol "
                "when no pad_symbol is given) in its later places, and stop as soon as every "
                "sentence has ended.", lambda c: _greedy_variant(c, ignore_end=True)),
        Mistake("tokens after </s> not replaced by the padding symbol",
                "A sentence that has ended gets pad_symbol (or end_symbol) from then on: "
                "next_word.masked_fill(done, fill).",
                lambda c: _greedy_variant(c, pad_after=False)),
        Mistake("decoding does not stop when every sentence has ended",
                "Break out of the loop once every sentence has produced end_symbol; the "
                "output is then shorter than max_len.",
                lambda c: _greedy_variant(c, stop_early=False)),
        Mistake("feeding the wrong token back: the prediction read at the first position",
                "The next token is predicted from the last position's state: "
                "model.generator(out[:, -1]).", lambda c: _greedy_variant(c, position=0)),
        Mistake("feeding the wrong token back: the first sentence's token given to every "
                "sentence", "Append each sentence's own argmax, a (batch,) tensor, with "
                "torch.cat([ys, next_word.unsqueeze(1)], dim=1).",
                lambda c: _greedy_variant(c, first_row=True)),
        Mistake("the decoder run without the target mask",
                "Pass subsequent_mask(ys.size(1)) as tgt_mask, as in training.",
                lambda c: _greedy_variant(c, target_mask=False)),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        vocab = 9
        models = [make_model(vocab, vocab, N=2, d_model=8, d_ff=16, h=2, max_len=16,
                             layer_norm="torch").eval() for _ in range(2)]
        cases = []
        for i in range(12):
            model = models[i % 2]
            b, s_len, max_len = rng.randint(1, 3), rng.randint(1, 5), rng.randint(1, 8)
            src = torch.randint(3, vocab, (b, s_len), generator=g)
            if b > 1 and s_len > 1:
                src[-1, -1] = 0  # the last sentence is padded
            src_mask = (src != 0).unsqueeze(-2)
            free = greedy_decode(model, src, src_mask, max(max_len, 3), 1, use_cache=True)
            kind = ["end", "end and pad", "none"][i % 3]
            end = int(free[0, rng.randint(1, free.size(1) - 1)]) if kind != "none" else None
            pad = 0 if kind == "end and pad" else None
            text = (f"a model with random weights, vocab={vocab}, src {src.tolist()}, "
                    f"{mask_text('src_mask', src_mask)}, max_len={max_len}, start_symbol=1, "
                    f"end_symbol={end}, pad_symbol={pad}")
            cases.append(Case(text, b * (s_len + max_len),
                              {"model": model, "src": src, "src_mask": src_mask,
                               "max_len": max_len, "start_symbol": 1, "end_symbol": end,
                               "pad_symbol": pad}))
        return cases

    def _call(self, function: Any, case: Case) -> Outputs:
        d = case.data
        options = {}
        if d["end_symbol"] is not None:
            options["end_symbol"] = d["end_symbol"]
        if d["pad_symbol"] is not None:
            options["pad_symbol"] = d["pad_symbol"]
        return {"output": function(d["model"], d["src"], d["src_mask"], d["max_len"],
                                   d["start_symbol"], **options)}

    def expected(self, case: Case) -> Outputs:
        return self._call(greedy_decode, case)

    def run(self, implementation: Any, case: Case) -> Outputs:
        return self._call(implementation, case)
