r"""The worked example of the Attention lesson: scaled scores and attention weights of 4 tokens.

The same Q, K and V as docs/learn/attention.md (d_k = 4); the weights come from the package's
`attention` function, the scaled scores from $QK^\top / \sqrt{d_k}$.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import attention

TOKENS = ["four", "hundred", "forty", "one"]
Q = torch.tensor([[1.0, 1, 0, 0], [0, 2, 0, 0], [1, 0, 1, 0], [1, 0, 1, 1]])
K = torch.tensor([[1.0, 0, 0, 1], [0, 1, 0, 0], [1, 0, 2, 1], [0, 0, 1, 1]])
V = torch.tensor([[1.0, 2, 0, 0], [0, 0, 3, 0], [2, 0, 0, 4], [0, 1, 1, 1]])


def heatmap(ax, values, title, fmt):
    ax.imshow(values, cmap="Blues", vmin=0, vmax=float(values.max()) * 1.25)
    ax.set_xticks(range(len(TOKENS)), TOKENS, rotation=40, ha="right", fontsize=11)
    ax.set_yticks(range(len(TOKENS)), TOKENS, fontsize=11)
    ax.set_xlabel("key", fontsize=11)
    ax.set_title(title, fontsize=11)
    ax.tick_params(length=0)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = float(values[i, j])
            text = format(v, fmt)
            if fmt == ".2f":
                text = text.removeprefix("0")  # weights are below 1: ".28" fits the cell
            ax.text(j, i, text, ha="center", va="center", fontsize=11,
                    color="white" if v > 0.6 * float(values.max()) * 1.25 else "black")


def draw():
    d_k = Q.size(-1)
    scaled = Q @ K.T / math.sqrt(d_k)
    _, weights = attention(Q, K, V)
    fig, axes = plt.subplots(1, 2, figsize=(4.6, 2.9))
    heatmap(axes[0], scaled, "scores ÷ √d_k", ".1f")
    heatmap(axes[1], weights, "weights: softmax of each row", ".2f")
    axes[0].set_ylabel("query", fontsize=11)
    fig.tight_layout()
    return fig
