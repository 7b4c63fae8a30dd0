"""Numbers of the Tracing the data flow article: the shipped translator and its greedy trace."""

from __future__ import annotations

from typing import Any


def values() -> dict[str, Any]:
    import torch

    from vanilla_transformer import subsequent_mask
    from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
    from vanilla_transformer.training.translation import load_translator

    model, tokenizer = load_translator("docs/assets/translator")
    c = model.config
    assert c is not None  # a model built by make_model records its configuration
    src = torch.tensor([tokenizer.encode("four hundred twenty-one") + [EOS]])
    src_mask = (src != PAD).unsqueeze(-2)
    best = []  # the probability of the piece chosen at each greedy step
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.tensor([[BOS]])
        while ys[0, -1] != EOS and ys.size(1) < 20:
            out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)))
            p, next_id = model.generator(out[:, -1]).exp().max(dim=-1)
            best.append(p.item())
            ys = torch.cat([ys, next_id.view(1, 1)], dim=1)
    return {
        "d_model": c.d_model,
        "d_ff": c.d_ff,
        "h": c.h,
        "d_k": c.d_model // c.h,
        "narrower": 512 // c.d_model,  # the base model's d_model over this one's
        "vocab": c.src_vocab,
        "four_id": int(src[0, 0]),
        "best_probability": max(best),
    }
