"""Inside the feed-forward network of the trained translator's first encoder layer.

For each token of "four hundred and forty-one", the hidden layer max(0, x W_1 + b_1): d_ff = 256
numbers per position (d_model = 64 in and out), most of them zeroed by the ReLU. Each row is
computed from its own position alone; the number on the right counts the units left non-zero.
Explained on docs/learn/layers.md.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
FONT = COMMON["FONT"]


def hidden() -> tuple[list[str], torch.Tensor]:
    """The tokens of sentence 1 and its hidden activations `(src_len, d_ff)` in layer 1."""
    from vanilla_transformer.training.translation import load_translator

    name, batch = COMMON["translator_batch"]()
    model, _ = load_translator(COMMON["TRANSLATOR"])
    ffn = model.encoder.layers[0].feed_forward
    seen: list[torch.Tensor] = []
    handle = ffn.w_1.register_forward_hook(lambda m, i, out: seen.append(out.relu()))
    with torch.no_grad():
        model.encode(batch.src[:1], batch.src_mask[:1])
    handle.remove()
    return [name(t) for t in batch.src[0].tolist()], seen[0][0]


def draw() -> plt.Figure:
    tokens, h = hidden()
    fig, ax = plt.subplots(figsize=(4.6, 2.6), layout="constrained")
    ax.imshow(h.tolist(), aspect="auto", cmap="Blues", interpolation="nearest",
              vmin=0, vmax=float(h[h > 0].quantile(0.75)))
    d_ff = h.size(1)
    ax.set_yticks(range(len(tokens)), tokens, fontsize=FONT)
    ticks = [0, d_ff // 4, d_ff // 2, 3 * d_ff // 4, d_ff - 1]
    ax.set_xticks(ticks, [str(t + 1) for t in ticks], fontsize=FONT)
    ax.set_xlabel(f"hidden unit (d_ff = {d_ff})", fontsize=FONT)
    right = ax.secondary_yaxis("right")
    right.set_yticks(range(len(tokens)), [f"{int((row > 0).sum())} on" for row in h],
                     fontsize=FONT)
    right.tick_params(length=0)
    ax.set_title("max(0, xW₁ + b₁), one row per position", fontsize=FONT, loc="left")
    return fig
