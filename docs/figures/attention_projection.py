r"""The Attention lesson's worked example, and its first step: the projections $Q = XW^Q$,
$K = XW^K$, $V = XW^V$ drawn as grids of numbers.

The example lives here, once: the vectors $X$ of the four tokens `four hundred forty one`
($d_{model} = 4$) and the three matrices $W^Q$, $W^K$, $W^V$ ($d_k = d_v = 4$), small integers
that a reader can multiply by hand. The other `attention_*.py` figures and
`docs/numbers/attention.py` load them from this file with `runpy`; docs/learn/attention.md types
the same matrices into its first code block, whose printed output is checked by the tests.

`grid` draws a matrix as a grid of numbered cells; the other figures of the lesson use it too.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

TOKENS = ["four", "hundred", "forty", "one"]
QUERY = 3  # the query of "one" is the one followed step by step
X = torch.tensor([[1.0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 1, 0], [0, 1, 0, 1]])
W_Q = torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, 0], [1, 0, 1, 1], [0, 1, 0, 0]])
W_K = torch.tensor([[0.0, 0, 1, 0], [1, 1, 0, 1], [0, 1, 0, 0], [0, 0, 0, 1]])
W_V = torch.tensor([[1.0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]])

FONT = 11
CELL = 0.27  # inches
QUERY_FILL, KEY_FILL, VALUE_FILL = "#f6c48f", "#a9cbee", "#b9e0b0"  # inverted: dark orange, blue, green
PLAIN = "#f2f2f2"
EDGE = "#7a7a7a"


def example() -> dict[str, torch.Tensor | list[str] | int]:
    """The tokens, X, the three matrices and the Q, K, V they give."""
    return {"tokens": TOKENS, "query": QUERY, "X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V,
            "Q": X @ W_Q, "K": X @ W_K, "V": X @ W_V}


def number(v: float) -> str:
    """An integer as an integer, anything else with two decimals and no leading zero."""
    if float(v).is_integer():
        return str(int(v))
    text = f"{v:.2f}"
    return text.removeprefix("0") if v >= 0 else text


def grid(ax: Axes, values: Any, x: float, y: float, fill: str = PLAIN, highlight: int | None = None,
         highlight_fill: str | None = None, title: str | None = None, rows: list[str] | None = None,
         cell: float = CELL) -> None:
    """Draw a matrix (rows top to bottom) with its top-left corner at (x, y), in inches."""
    values = [[float(v) for v in row] for row in values]
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            colour = highlight_fill if (highlight == i and highlight_fill) else fill
            ax.add_patch(Rectangle((x + j * cell, y - (i + 1) * cell), cell, cell, facecolor=colour,
                                   edgecolor=EDGE, linewidth=0.8))
            ax.text(x + (j + 0.5) * cell, y - (i + 0.5) * cell, number(v), ha="center",
                    va="center", fontsize=FONT)
        if rows is not None:
            ax.text(x - 0.08, y - (i + 0.5) * cell, rows[i], ha="right", va="center",
                    fontsize=FONT, fontweight="bold" if i == highlight else "normal")
    if title is not None:
        ax.text(x + len(values[0]) * cell / 2, y + 0.06, title, ha="center", va="bottom",
                fontsize=FONT + 5)  # the superscripts of W^Q at 70 % stay above 11 pt


def canvas(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure of `width` x `height` inches whose axes measure inches, without ticks."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def draw() -> Figure:
    ex = example()
    side = 4 * CELL
    width, row_h = 4.75, side + 0.45
    fig, ax = canvas(width, 3 * row_h + 0.1)
    products = [("Q", "W^Q", W_Q, QUERY_FILL), ("K", "W^K", W_K, KEY_FILL),
                ("V", "W^V", W_V, VALUE_FILL)]
    for r, (name, w_name, w, fill) in enumerate(products):
        top = 3 * row_h - 0.35 - r * row_h
        x0 = 0.8
        grid(ax, X, x0, top, rows=TOKENS, highlight=QUERY if name == "Q" else None,
             highlight_fill="#dddddd", title="$X$")
        ax.text(x0 + side + 0.17, top - side / 2, "×", ha="center", va="center", fontsize=FONT + 3)
        grid(ax, w, x0 + side + 0.34, top, title=f"${w_name}$")
        ax.text(x0 + 2 * side + 0.51, top - side / 2, "=", ha="center", va="center",
                fontsize=FONT + 3)
        grid(ax, ex[name], x0 + 2 * side + 0.68, top, fill=fill, title=f"${name}$",
             highlight=QUERY if name == "Q" else None, highlight_fill="#f0a050")
    return fig
