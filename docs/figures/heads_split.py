"""Split and concat: how multi-head attention cuts d_model into h heads and joins them again.

The feature ranges are read from the package's own `MultiHeadedAttention(h=8, d_model=512)`:
`split_heads` is applied to a tensor whose entries are their own feature index, and what lands in
each head shows which features it gets. One colour per head, heads numbered from 1.
Explained on docs/learn/heads.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from vanilla_transformer import MultiHeadedAttention

SEQ_LEN = 4
FONT = 11
COLOURS = [f"C{i}" for i in range(10)]  # matplotlib's default cycle, one colour a head


def head_features(h: int = 8, d_model: int = 512) -> list[tuple[int, int]]:
    """(first, last) feature index that each head receives from `split_heads`."""
    mha = MultiHeadedAttention(h=h, d_model=d_model)
    index = torch.arange(d_model).expand(1, SEQ_LEN, d_model)
    heads = mha.split_heads(index)  # (1, h, seq_len, d_k)
    # every token of a head gets the same features
    assert torch.equal(heads, heads[:, :, :1].expand_as(heads))
    return [(int(heads[0, i, 0].min()), int(heads[0, i, 0].max())) for i in range(h)]


def _bar(ax: Axes, ranges: list[tuple[int, int]], d_model: int, y: float, width: float) -> None:
    """A (seq_len, d_model) matrix drawn as one bar, one coloured slice per head."""
    for i, (lo, hi) in enumerate(ranges):
        x0, w = width * lo / d_model, width * (hi - lo + 1) / d_model
        ax.add_patch(Rectangle((x0, y), w, 0.8, fc=COLOURS[i], ec="white", lw=1.5, alpha=0.6))
        ax.text(x0 + w / 2, y + 0.4, f"{i + 1}", ha="center", va="center", fontsize=FONT)


def draw() -> Figure:
    ranges = head_features()
    h, d_model = len(ranges), ranges[-1][1] + 1
    d_k = ranges[0][1] - ranges[0][0] + 1
    width, gap = 8.0, 0.16
    bw = (width - gap * (h - 1)) / h
    fig, ax = plt.subplots(figsize=(4.9, 4.0))
    ax.set_xlim(-0.1, width + 0.1)
    ax.set_ylim(-0.75, 7.6)
    ax.axis("off")

    # top: the projected queries, one bar of d_model features
    ax.text(0, 7.15, f"$Q = xW^Q$: (n, {d_model}), one colour per head", fontsize=FONT)
    _bar(ax, ranges, d_model, 5.6, width)
    for lo, _ in ranges[::2]:
        ax.text(width * lo / d_model, 6.45, f"{lo}", ha="center", va="bottom", fontsize=FONT)
    ax.text(width, 6.45, f"{d_model}", ha="center", va="bottom", fontsize=FONT)

    # middle: h heads of (n, d_k), each attending on its own
    for i, (lo, hi) in enumerate(ranges):
        x0 = i * (bw + gap)
        ax.add_patch(Rectangle((x0, 3.3), bw, 0.8, fc=COLOURS[i], ec="#333333", lw=0.8, alpha=0.6))
        ax.text(x0 + bw / 2, 3.7, f"{i + 1}", ha="center", va="center", fontsize=FONT,
                weight="bold")
        top = width * (lo + hi + 1) / 2 / d_model
        ax.add_patch(FancyArrowPatch((top, 5.55), (x0 + bw / 2, 4.15), arrowstyle="-|>",
                                     mutation_scale=9, lw=0.9, color="#555555"))
        ax.add_patch(FancyArrowPatch((x0 + bw / 2, 3.25), (top, 1.85), arrowstyle="-|>",
                                     mutation_scale=9, lw=0.9, color="#555555"))
    ax.text(width / 2, 4.85, "split: view, then transpose", ha="center", va="center",
            fontsize=FONT, style="italic", bbox={"fc": "white", "ec": "none", "pad": 1})
    ax.text(width / 2, 2.95, f"heads 1 to {h}: attention, each (n, {d_k})", ha="center",
            va="top", fontsize=FONT, bbox={"fc": "white", "ec": "none", "pad": 1})

    # bottom: the heads side by side again, then W^O
    _bar(ax, ranges, d_model, 1.0, width)
    ax.text(0, 0.55, f"Concat(head 1, ..., head {h}): (n, {d_model})", fontsize=FONT, va="top")
    ax.text(0, -0.15, f"then times $W^O$: (n, {d_model}), the layer's output", fontsize=FONT,
            va="top")
    fig.tight_layout()
    return fig
