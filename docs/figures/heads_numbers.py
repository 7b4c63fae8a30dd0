"""The split worked in numbers: 3 tokens of 8 features cut into 2 heads by `split_heads`.

The entries of x are their own position (0 to 23), so each number in a head shows where it came
from. The heads are what the package's `MultiHeadedAttention(h=2, d_model=8).split_heads`
returns; heads numbered from 1. Explained on docs/learn/heads.md.
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

FONT = 11
COLOURS = [f"C{i}" for i in range(10)]  # matplotlib's default cycle, one colour a head
TOKENS, D_MODEL, H = 3, 8, 2


def split() -> tuple[torch.Tensor, torch.Tensor]:
    """x (seq_len, d_model) and its heads (h, seq_len, d_k), from the package's split_heads."""
    mha = MultiHeadedAttention(h=H, d_model=D_MODEL)
    x = torch.arange(TOKENS * D_MODEL).view(1, TOKENS, D_MODEL)
    return x[0], mha.split_heads(x)[0]


def _grid(ax: Axes, values: torch.Tensor, x0: float, y0: float, colours: list[str]) -> None:
    rows, cols = values.shape
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x0 + c, y0 - r), 1, 1, fc=colours[c], ec="white", lw=1.5,
                                   alpha=0.6))
            ax.text(x0 + c + 0.5, y0 - r + 0.5, f"{int(values[r, c])}", ha="center",
                    va="center", fontsize=FONT)


def draw() -> Figure:
    x, heads = split()
    h, _, d_k = heads.shape
    fig, ax = plt.subplots(figsize=(4.9, 4.3))
    ax.set_xlim(-1.6, D_MODEL + 1.2)
    ax.set_ylim(-7.1, 2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    _grid(ax, x, 0, 0, [COLOURS[c // d_k] for c in range(D_MODEL)])
    ax.text(0, 1.35, f"x: {TOKENS} tokens, d_model = {D_MODEL}", fontsize=FONT)
    for r in range(TOKENS):
        ax.text(-0.2, 0.5 - r, f"token {r + 1}", ha="right", va="center", fontsize=FONT)
    gap = 1.0
    for i in range(h):
        x0 = i * (d_k + gap) - gap / 2
        _grid(ax, heads[i], x0, -4.2, [COLOURS[i]] * d_k)
        ax.text(x0 + d_k / 2, -6.65, f"head {i + 1}", ha="center", va="center", fontsize=FONT,
                weight="bold")
        ax.add_patch(FancyArrowPatch((i * d_k + d_k / 2, -2.1), (x0 + d_k / 2, -3.1),
                                     arrowstyle="-|>", mutation_scale=11, lw=1.0,
                                     color="#555555"))
    ax.text(D_MODEL / 2, -2.6, "split_heads", ha="center", va="center", fontsize=FONT,
            style="italic", bbox={"fc": "white", "ec": "none", "pad": 1})
    fig.tight_layout()
    return fig
