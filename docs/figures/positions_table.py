"""The encoding table in numbers: `sinusoid_table(8, 8)`, one row per position.

Each cell holds its value, coloured from -1 (blue) to +1 (red). Features 0 and 1 (the fastest
pair) change at every step; features 6 and 7 (the slowest) stay near 0 and 1 over these eight
positions. Explained on docs/learn/positions.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from vanilla_transformer import sinusoid_table

FONT = 11
POSITIONS, D_MODEL = 8, 8


def draw() -> Figure:
    pe = sinusoid_table(POSITIONS, D_MODEL)
    fig, ax = plt.subplots(figsize=(4.7, 3.3))
    ax.imshow(pe, cmap="RdBu_r", vmin=-1.6, vmax=1.6, aspect="auto")
    for pos in range(POSITIONS):
        for f in range(D_MODEL):
            v = float(pe[pos, f])
            text = f"{v:.2f}".replace("-0.00", "0.00")
            ax.text(f, pos, text, ha="center", va="center", fontsize=FONT,
                    color="white" if abs(v) > 0.8 else "black")
    ax.set_xticks(range(D_MODEL), [f"{f}\n{'cos' if f % 2 else 'sin'}" for f in range(D_MODEL)],
                  fontsize=FONT)
    ax.xaxis.tick_top()
    ax.set_yticks(range(POSITIONS), [str(p) for p in range(POSITIONS)], fontsize=FONT)
    ax.set_ylabel("position", fontsize=FONT)
    ax.tick_params(length=0)
    ax.set_xticks([x + 0.5 for x in range(D_MODEL - 1)], minor=True)
    ax.set_yticks([y + 0.5 for y in range(POSITIONS - 1)], minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig
