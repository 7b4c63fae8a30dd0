"""Where the LayerNorm sits around one sublayer, in the two arrangements.

Left, the paper's post-norm: the sublayer's output is added to the residual stream, then the sum
is normalised, so the stream itself is normalised after every sublayer. Right, pre-norm (the
Annotated Transformer's): the LayerNorm sits on the branch, before the sublayer, and the stream
only ever has corrections added to it. Drawn from the two `return` lines of
`SublayerConnection.forward`. Explained on docs/learn/layers.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

FONT = 11
STREAM, BRANCH, NORM = "#3060a8", "#555555", "#c8553d"


def box(ax: plt.Axes, x: float, y: float, text: str, colour: str, width: float = 1.5) -> None:
    ax.add_patch(FancyBboxPatch((x - width / 2, y - 0.3), width, 0.6,
                                boxstyle="round,pad=0.05", facecolor="white", edgecolor=colour,
                                linewidth=1.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT, color=colour)


def arrow(ax: plt.Axes, start: tuple[float, float], end: tuple[float, float], colour: str,
          width: float = 1.6) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12,
                                 color=colour, linewidth=width, shrinkA=0, shrinkB=0))


def plus(ax: plt.Axes, x: float, y: float) -> None:
    ax.add_patch(Circle((x, y), 0.2, facecolor="white", edgecolor=STREAM, linewidth=1.8))
    ax.text(x, y, "+", ha="center", va="center", fontsize=FONT + 2, color=STREAM)


def arrangement(ax: plt.Axes, norm_first: bool) -> None:
    """One sublayer with its residual connection: stream at x = 0, branch at x = 1.3."""
    s, b = 0.0, 1.35
    ax.text(s, 0.0, "x", ha="center", va="center", fontsize=FONT + 1, color=STREAM)
    add_y = 4.2
    if norm_first:
        arrow(ax, (s, 0.25), (s, add_y - 0.2), STREAM, 3)  # the stream, untouched
        ax.plot([s, b], [1.0, 1.0], color=BRANCH, linewidth=1.6)
        arrow(ax, (b, 1.0), (b, 1.5), BRANCH)
        box(ax, b, 1.8, "LayerNorm", NORM)
        arrow(ax, (b, 2.1), (b, 2.5), BRANCH)
        box(ax, b, 2.8, "Sublayer", BRANCH)
        box(ax, b, 3.6, "Dropout", BRANCH)
        arrow(ax, (b, 3.1), (b, 3.3), BRANCH)
        ax.plot([b, b], [3.9, add_y], color=BRANCH, linewidth=1.6)
        arrow(ax, (b, add_y), (s + 0.2, add_y), BRANCH)
        plus(ax, s, add_y)
        arrow(ax, (s, add_y + 0.2), (s, 5.6), STREAM, 3)
        formula = "x + Dropout(Sublayer(LN(x)))"
        title = "pre-norm"
    else:
        arrow(ax, (s, 0.25), (s, add_y - 0.2), STREAM, 3)
        ax.plot([s, b], [1.0, 1.0], color=BRANCH, linewidth=1.6)
        arrow(ax, (b, 1.0), (b, 1.9), BRANCH)
        box(ax, b, 2.2, "Sublayer", BRANCH)
        arrow(ax, (b, 2.5), (b, 3.0), BRANCH)
        box(ax, b, 3.3, "Dropout", BRANCH)
        ax.plot([b, b], [3.6, add_y], color=BRANCH, linewidth=1.6)
        arrow(ax, (b, add_y), (s + 0.2, add_y), BRANCH)
        plus(ax, s, add_y)
        arrow(ax, (s, add_y + 0.2), (s, 4.75), STREAM, 3)
        box(ax, s, 5.05, "LayerNorm", NORM)
        arrow(ax, (s, 5.35), (s, 5.6), STREAM, 3)
        formula = "LN(x + Dropout(Sublayer(x)))"
        title = "post-norm (the paper)"
    ax.text(s - 0.3, 2.4, "residual stream", ha="center", va="center", rotation=90,
            fontsize=FONT, color=STREAM)
    ax.text(0.6, 6.55, title, ha="center", va="bottom", fontsize=FONT + 1, fontweight="bold")
    ax.text(0.6, 6.0, formula, ha="center", va="bottom", fontsize=FONT)
    ax.set_xlim(-0.9, 2.2)
    ax.set_ylim(-0.3, 7.0)
    ax.set_aspect("equal")
    ax.axis("off")


def draw() -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(4.9, 3.8), layout="constrained")
    arrangement(axes[0], norm_first=False)
    arrangement(axes[1], norm_first=True)
    return fig
