"""How multi-head attention splits d_model into h heads, read from the package's own module.

A `MultiHeadedAttention(h=8, d_model=512)` splits a `(batch, seq_len, d_model)` tensor whose
entries are their own feature index; what lands in each head shows which features it gets.
Explained on docs/learn/heads.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyArrowPatch, Rectangle

from vanilla_transformer import MultiHeadedAttention

SEQ_LEN = 4


def head_features(h: int = 8, d_model: int = 512) -> list[tuple[int, int]]:
    """(first, last) feature index that each head receives from `split_heads`."""
    mha = MultiHeadedAttention(h=h, d_model=d_model)
    index = torch.arange(d_model).expand(1, SEQ_LEN, d_model)
    heads = mha.split_heads(index)  # (1, h, seq_len, d_k)
    # every token of a head gets the same features
    assert torch.equal(heads, heads[:, :, :1].expand_as(heads))
    return [(int(heads[0, i, 0].min()), int(heads[0, i, 0].max())) for i in range(h)]


def draw():
    ranges = head_features()
    h, d_model = len(ranges), ranges[-1][1] + 1
    colours = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(4.8, 3.5))
    ax.set_xlim(-0.9, 8.3)
    ax.set_ylim(-0.2, 5.2)
    ax.axis("off")
    # top: x, one row per token, d_model features wide
    width = 8.0
    for i, (lo, hi) in enumerate(ranges):
        x0 = width * lo / d_model
        w = width * (hi - lo + 1) / d_model
        ax.add_patch(Rectangle((x0, 3.2), w, 1.0, fc=colours[i], ec="white", lw=1.5, alpha=0.55))
        ax.text(x0, 4.25, f"{lo}", ha="center", va="bottom", fontsize=11)
    ax.text(width, 4.25, f"{d_model}", ha="center", va="bottom", fontsize=11)
    ax.text(0, 4.7, f"x: (seq_len={SEQ_LEN}, d_model={d_model}), feature index",
            fontsize=11, va="bottom")
    for t in range(1, SEQ_LEN):  # one row per token
        ax.plot([0, width], [3.2 + t / SEQ_LEN] * 2, color="white", lw=0.8)
    ax.text(-0.1, 3.7, "tokens", rotation=90, ha="right", va="center", fontsize=11)
    # bottom: h blocks of (seq_len, d_k)
    gap = 0.12
    bw = (width - gap * (h - 1)) / h
    for i, (lo, hi) in enumerate(ranges):
        x0 = i * (bw + gap)
        ax.add_patch(Rectangle((x0, 0.5), bw, 1.0, fc=colours[i], ec="#333333", lw=0.8, alpha=0.55))
        for t in range(1, SEQ_LEN):
            ax.plot([x0, x0 + bw], [0.5 + t / SEQ_LEN] * 2, color="white", lw=0.8)
        ax.text(x0 + bw / 2, 1.0, f"{i}", ha="center", va="center", fontsize=11, weight="bold")
        ax.add_patch(FancyArrowPatch((width * (lo + hi + 1) / 2 / d_model, 3.15),
                                     (x0 + bw / 2, 1.55), arrowstyle="-|>", mutation_scale=9,
                                     lw=0.9, color="#555555"))
    d_k = ranges[0][1] - ranges[0][0] + 1
    ax.text(0, 0.35, f"h={h} heads, each (seq_len={SEQ_LEN}, d_k={d_k})", fontsize=11, va="top")
    ax.text(width / 2, 2.35, "split_heads: view, then transpose", ha="center", va="center",
            fontsize=11,
            style="italic", bbox={"fc": "white", "ec": "none", "pad": 1})
    fig.tight_layout()
    return fig
