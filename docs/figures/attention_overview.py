"""The Attention lesson's opening picture: the query of "one" takes a share of every token's
value, a thicker line for a larger share (the softmax weights of the lesson's worked example,
computed by the package's `attention` from the Q, K, V of attention_projection.py).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from vanilla_transformer import attention

EXAMPLE = runpy.run_path(str(Path(__file__).with_name("attention_projection.py")))
FONT = EXAMPLE["FONT"]


def weights_of_one() -> list[float]:
    ex = EXAMPLE["example"]()
    _, weights = attention(ex["Q"], ex["K"], ex["V"])
    return weights[ex["query"]].tolist()


def box(ax: Axes, x: float, y: float, text: str, fill: str) -> None:
    ax.add_patch(FancyBboxPatch((x - 0.48, y - 0.17), 0.96, 0.34, boxstyle="round,pad=0.02",
                                facecolor=fill, edgecolor="#7a7a7a", linewidth=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT)


def draw() -> Figure:
    tokens, query = EXAMPLE["TOKENS"], EXAMPLE["QUERY"]
    weights = weights_of_one()
    fig, ax = EXAMPLE["canvas"](4.7, 2.3)
    xs = [0.65 + 1.13 * i for i in range(len(tokens))]
    top, bottom = 1.9, 0.5
    for x, token, w in zip(xs, tokens, weights, strict=True):
        ax.plot([xs[query], x], [top - 0.19, bottom + 0.19], color="#d0701a",
                linewidth=1 + 14 * w, solid_capstyle="butt", alpha=0.85)
        box(ax, x, bottom, token, EXAMPLE["VALUE_FILL"])
        ax.text(x, bottom - 0.3, f"{w:.3f}", ha="center", va="top", fontsize=FONT)
    for x, token in zip(xs, tokens, strict=True):
        box(ax, x, top, token, EXAMPLE["QUERY_FILL"] if token == tokens[query] else "#f2f2f2")
    ax.text(0.1, top + 0.3, "queries", ha="left", va="bottom", fontsize=FONT)
    ax.text(0.1, bottom + 0.55, "keys and values", ha="left", va="bottom", fontsize=FONT)
    return fig
