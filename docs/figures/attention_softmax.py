r"""Step 3 of the Attention lesson's worked example: the softmax of the scaled scores of the
query of "one", as bars. Left, $e^{x}$ of each scaled score; right, each divided by their sum:
the weights, positive and summing to 1 (attention_projection.py's Q and K).
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

EXAMPLE = runpy.run_path(str(Path(__file__).with_name("attention_projection.py")))
FONT = EXAMPLE["FONT"]


def draw() -> Figure:
    ex = EXAMPLE["example"]()
    tokens, d_k = ex["tokens"], ex["K"].size(-1)
    scaled = (ex["K"] @ ex["Q"][ex["query"]] / math.sqrt(d_k)).tolist()
    exps = [math.exp(s) for s in scaled]
    weights = [e / sum(exps) for e in exps]
    fig, axes = plt.subplots(1, 2, figsize=(4.7, 2.15))
    panels = ((axes[0], exps, "exp(score ÷ √d_k)", ".2f", "#f0a050"),
              (axes[1], weights, f"÷ their sum {sum(exps):.2f}", ".3f", "#d0701a"))
    for ax, values, title, fmt, colour in panels:
        ax.bar(range(len(tokens)), values, 0.7, color=colour)
        for x, v in enumerate(values):
            ax.text(x, v + max(values) * 0.03, format(v, fmt).removeprefix("0"), ha="center",
                    va="bottom", fontsize=FONT)
        ax.set_xticks(range(len(tokens)), tokens, rotation=40, ha="right",
                      rotation_mode="anchor", fontsize=FONT)
        ax.set_ylim(0, max(values) * 1.22)
        ax.set_yticks([])
        ax.set_title(title, fontsize=FONT)
        ax.spines[["top", "right", "left"]].set_visible(False)
    fig.tight_layout()
    return fig
