r"""Why the Attention lesson divides by $\sqrt{d_k}$: the spread of the dot product $q \cdot k$ of
random vectors (components independent, mean 0, variance 1) grows like $\sqrt{d_k}$; divided by
$\sqrt{d_k}$ it is the same for every $d_k$. The same draw as the lesson's code (seed 0, ten
thousand pairs per $d_k$).
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

FONT = 11
D_KS = (4, 64, 512)
COLOURS = ("#d0701a", "#2f6db5", "#5a9a3c")


def dots() -> dict[int, torch.Tensor]:
    """q·k for 10,000 random pairs at each d_k, drawn in the order the lesson's code draws."""
    torch.manual_seed(0)
    out = {}
    for d_k in D_KS:
        q, k = torch.randn(10_000, d_k), torch.randn(10_000, d_k)
        out[d_k] = (q * k).sum(dim=-1)
    return out


def draw() -> Figure:
    samples = dots()
    fig, axes = plt.subplots(2, 1, figsize=(4.7, 3.3), height_ratios=(3, 2))
    edges = torch.linspace(-70, 70, 141).tolist()
    for d_k, colour in zip(D_KS, COLOURS, strict=True):
        d = samples[d_k]
        axes[0].hist(d.tolist(), bins=edges, histtype="step", color=colour, linewidth=1.6,
                     density=True, label=f"d_k = {d_k}: std {d.std():.1f}")
        axes[1].hist((d / math.sqrt(d_k)).tolist(), bins=torch.linspace(-5, 5, 41).tolist(),
                     histtype="step", color=colour, linewidth=1.6, density=True)
    axes[0].set_title("q·k", fontsize=FONT)
    axes[1].set_title("q·k ÷ √d_k: std 1 for every d_k", fontsize=FONT)
    axes[0].set_ylim(0, axes[0].get_ylim()[1] * 1.7)  # room for the legend above the curves
    axes[0].legend(fontsize=FONT, frameon=False, loc="upper right", handlelength=1.2)
    for ax in axes:
        ax.set_yticks([])
        ax.tick_params(labelsize=FONT)
        ax.spines[["top", "right", "left"]].set_visible(False)
    fig.tight_layout(h_pad=0.8)
    return fig
