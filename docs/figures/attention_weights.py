r"""The Attention lesson's worked example for all four queries at once: the scaled scores
$QK^\top / \sqrt{d_k}$ and the attention weights, the softmax of each row, as two heatmaps with the
tokens on both axes. Q, K and V are those of attention_projection.py; the weights come from the
package's `attention` function.
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from vanilla_transformer import attention

EXAMPLE = runpy.run_path(str(Path(__file__).with_name("attention_projection.py")))
FONT = EXAMPLE["FONT"]


def heatmap(ax: Axes, values: torch.Tensor, tokens: list[str], title: str, fmt: str,
            cmap: str) -> None:
    top = float(values.max()) * 1.25
    ax.imshow(values, cmap=cmap, vmin=0, vmax=top)
    ax.set_xticks(range(len(tokens)), tokens, rotation=40, ha="right", rotation_mode="anchor",
                  fontsize=FONT)
    ax.set_yticks(range(len(tokens)), tokens, fontsize=FONT)
    ax.set_xlabel("key", fontsize=FONT)
    ax.set_title(title, fontsize=FONT)
    ax.tick_params(length=0)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = float(values[i, j])
            text = f"{v:g}" if fmt == "g" else format(v, fmt).removeprefix("0")
            ax.text(j, i, text, ha="center", va="center",
                    fontsize=FONT, color="white" if v > 0.6 * top else "black")


def draw() -> Figure:
    ex = EXAMPLE["example"]()
    Q, K, V, tokens = ex["Q"], ex["K"], ex["V"], ex["tokens"]
    scaled = Q @ K.T / math.sqrt(K.size(-1))
    _, weights = attention(Q, K, V)
    fig, axes = plt.subplots(1, 2, figsize=(4.85, 2.75))
    heatmap(axes[0], scaled, tokens, "score ÷ √d_k", "g", "Blues")
    heatmap(axes[1], weights, tokens, "weight", ".2f", "Oranges")
    axes[0].set_ylabel("query", fontsize=FONT)
    fig.tight_layout(w_pad=0.6)
    return fig
