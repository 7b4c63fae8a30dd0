"""Numbers of the "Break it and watch" part of Try it: the shipped German translator with each
switch of `vanilla_transformer.analysis.switches` on, measured in PyTorch.

- the greedy outputs of two inputs made of the same pieces in two orders, with and without the
  source's positions;
- the one output the model writes for every input without cross-attention;
- the sharpness of the cross-attention (the mean over rows of a row's largest weight) on the
  page's example, with and without the division by sqrt(d_k);
- the greedy exact match on the first validation numbers with each switch on (head 1 of the
  last cross-attention for silence-head, the head the page opens on).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ASSETS = Path("docs/assets/translator")
IN_ORDER = "four hundred and twenty-one"
SWAPPED = "twenty-one and four hundred"
EXAMPLE = "four hundred and forty-one"
PAIRS = 100  # validation numbers measured per switch, to keep the build fast


def values() -> dict[str, Any]:
    import torch

    from vanilla_transformer.analysis.switches import record_attention, switched
    from vanilla_transformer.data.numbers import number_corpus
    from vanilla_transformer.data.tokenizer import SharedTokenizer
    from vanilla_transformer.inference.evaluate import translate_sentences
    from vanilla_transformer.model.masks import subsequent_mask
    from vanilla_transformer.training.checkpoints import load_checkpoint

    manifest = json.loads((ASSETS / "manifest.json").read_text())
    model = load_checkpoint(ASSETS / "model.pt")[0].eval()
    tokenizer = SharedTokenizer.load(ASSETS / "tokenizer.json")
    corpus = manifest["corpus"]
    pairs = number_corpus(manifest["target_language"], seed=corpus["seed"])["valid"][:PAIRS]
    heads = {"kind": "cross", "layer": model.config.N - 1, "head": 0}

    def greedy(texts: list[str]) -> list[str]:
        return translate_sentences(model, tokenizer, texts, beam_size=1)

    def exact() -> float:
        hyps = greedy([s for s, _ in pairs])
        return round(100 * sum(h == t for h, (_, t) in zip(hyps, pairs)) / len(pairs), 1)

    def sharpness() -> float:
        src = torch.tensor([tokenizer.encode(EXAMPLE) + [2]])
        (out,) = greedy([EXAMPLE])
        ys = torch.tensor([[1] + tokenizer.encode(out)])
        with record_attention(model) as maps, torch.no_grad():
            model.decode(model.encode(src, None), None, ys, subsequent_mask(ys.size(1)))
        weights = maps["cross", model.config.N - 1][1]
        return round(float(weights.max(-1).values.mean()), 2)

    found: dict[str, Any] = {"pairs": len(pairs), "in_order": IN_ORDER, "swapped": SWAPPED}
    found["d_k"] = model.config.d_model // model.config.h
    found["root_d_k"] = round(found["d_k"] ** 0.5)
    found["trained_in_order"], found["trained_swapped"] = greedy([IN_ORDER, SWAPPED])
    found["exact_none"] = exact()
    found["sharp_none"] = sharpness()
    with switched(model, "no-positions"):
        found["blind_in_order"], found["blind_swapped"] = greedy([IN_ORDER, SWAPPED])
        found["exact_no_positions"] = exact()
    with switched(model, "no-scale"):
        found["exact_no_scale"] = exact()
        found["sharp_no_scale"] = sharpness()
        found["unscaled_swapped"] = greedy([SWAPPED])[0]
    with switched(model, "no-cross-attention"):
        outputs = set(greedy([s for s, _ in pairs]))
        assert len(outputs) == 1, outputs
        found["blind_output"] = outputs.pop()
        found["exact_no_cross_attention"] = exact()
    with switched(model, "silence-head", **heads):
        found["exact_silence_head"] = exact()
    with switched(model, "silence-head", kind="cross", layer=model.config.N - 1, head=2):
        found["exact_silence_head_3"] = exact()
    assert found["blind_in_order"] == found["blind_swapped"]
    assert found["trained_in_order"] != found["trained_swapped"]
    return found


if __name__ == "__main__":
    print(values())
