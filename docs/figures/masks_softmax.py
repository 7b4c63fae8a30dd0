"""What a mask does to one query's softmax, on the trained translator.

The query is the first source token of the shorter sentence of the lesson's batch ("five", padded
on the right with four `<pad>`), in head 3 of the first encoder layer: its scaled scores
`q . k / sqrt(d_k)` for the six keys, then the softmax of those scores without a mask and with
the padding blocked (the blocked scores replaced by -10^9). Explained on docs/learn/masks.md.
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
HEAD = 2  # 0-based: head 3
FONT = 11


def query_scores() -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """(key tokens, scaled scores, keep-mask) of the query "five" in layer 1, head 3."""
    from vanilla_transformer.training.translation import load_translator

    name, batch = COMMON["translator_batch"]()
    model, _ = load_translator(COMMON["TRANSLATOR"])
    attn = model.encoder.layers[0].self_attn
    with torch.no_grad():
        x = model.src_embed(batch.src)  # the first layer reads the embeddings
        q = attn.split_heads(attn.linears[0](x))  # (batch, h, src_len, d_k)
        k = attn.split_heads(attn.linears[1](x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(attn.d_k)
    tokens = [name(t) for t in batch.src[1].tolist()]
    return tokens, scores[1, HEAD, 0], batch.src_mask[1, 0]


def weights() -> dict[str, torch.Tensor]:
    """The softmax of the scores without a mask and with the padding blocked."""
    _, scores, keep = query_scores()
    return {"free": scores.softmax(-1),
            "masked": scores.masked_fill(~keep, -1e9).softmax(-1)}


def draw() -> plt.Figure:
    tokens, scores, keep = query_scores()
    w = weights()
    colours = ["#3060a8" if k else "#9a9a9a" for k in keep.tolist()]
    fig, axes = plt.subplots(3, 1, figsize=(4.6, 5.3), layout="constrained", sharex=True)
    rows = [(scores, "scores q·k/√d_k (grey: padding)", "{:.1f}"),
            (w["free"], "softmax with no mask", "{:.2f}"),
            (w["masked"], "softmax, padding scores set to −10⁹", "{:.2f}")]
    for ax, (values, title, fmt) in zip(axes, rows, strict=True):
        vals = values.tolist()
        ax.bar(range(len(vals)), vals, color=colours, width=0.7)
        for i, v in enumerate(vals):
            ax.text(i, v, fmt.format(v), ha="center", va="bottom" if v >= 0 else "top",
                    fontsize=FONT)
        ax.set_title(title, fontsize=FONT, loc="left")
        ax.axhline(0, color="#555555", linewidth=0.8)
        ax.tick_params(labelsize=FONT)
        ax.spines[["top", "right"]].set_visible(False)
        low, high = min(vals + [0]), max(vals)
        ax.set_ylim(low - 0.25 * (high - low) * (low < 0), high + 0.3 * (high - low))
    axes[1].set_ylim(0, 1.05)
    axes[2].set_ylim(0, 1.05)
    axes[-1].set_xticks(range(len(tokens)), tokens, rotation=30, ha="right",
                        rotation_mode="anchor", fontsize=FONT)
    axes[-1].set_xlabel("key", fontsize=FONT)
    return fig
