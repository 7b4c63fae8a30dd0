"""Shifting is a rotation: two pairs of the sinusoidal encoding drawn as clock hands.

Each pair of features (sin w pos, cos w pos) of `sinusoid_table(8, 8)` is a point on the unit
circle; drawn with the sine across and the cosine up, position 0 points to twelve o'clock and each
step turns the hand clockwise by w radians. Left: features 0 and 1 (w = 1). Right: features 2 and
3 (w = 0.1). The arc marks a shift of three positions, the same turn from any position.
Explained on docs/learn/positions.md.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from vanilla_transformer import sinusoid_table

FONT = 11
POSITIONS, D_MODEL = 5, 8
PAIRS = (0, 1)  # the first two pairs: features 0, 1 and 2, 3


def speeds(d_model: int = D_MODEL) -> list[float]:
    """w_i = 1 / 10000^(2i / d_model), the turn of pair i per position, in radians."""
    return [1 / 10000 ** (2 * i / d_model) for i in range(d_model // 2)]


def draw() -> Figure:
    pe = sinusoid_table(POSITIONS, D_MODEL)
    colours = ["#3b2a7a", "#2f6fb0", "#1b8a6b", "#b8560b", "#8e3a9d"]  # one a position
    fig, axes = plt.subplots(1, 2, figsize=(4.5, 2.8))
    circle = np.linspace(0, 2 * math.pi, 200)
    for ax, pair in zip(axes, PAIRS, strict=True):
        w = speeds()[pair]
        ax.plot(np.sin(circle), np.cos(circle), color="#999999", lw=1)
        for pos in range(POSITIONS):
            s, c = float(pe[pos, 2 * pair]), float(pe[pos, 2 * pair + 1])
            assert math.isclose(math.atan2(s, c) % (2 * math.pi), w * pos % (2 * math.pi),
                                abs_tol=1e-5)
            ax.annotate("", (s, c), (0, 0), arrowprops={"arrowstyle": "-|>", "lw": 1.8,
                                                        "color": colours[pos]})
            if pair == 0 or pos in (0, POSITIONS - 1):
                ax.text(1.25 * s, 1.25 * c, f"{pos}", ha="center", va="center", fontsize=FONT,
                        color=colours[pos])
        if pair == 0:  # a shift of 3 positions: from 1 to 4, one turn of 3 radians
            arc = np.linspace(w * 1, w * 4, 60)
            ax.plot(0.45 * np.sin(arc), 0.45 * np.cos(arc), color="#c0392b", lw=1.5)
            mid = w * 2.5
            ax.text(0.68 * math.sin(mid), 0.68 * math.cos(mid), "+3", ha="center",
                    va="center", fontsize=FONT, color="#c0392b")
        ax.set_title(f"features {2 * pair} and {2 * pair + 1}\nturn {w:g} rad a step", fontsize=FONT)
        ax.set_xlim(-1.45, 1.45)
        ax.set_ylim(-1.45, 1.45)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.tight_layout(w_pad=0.5)
    return fig
