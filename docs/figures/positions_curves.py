"""A few columns of the encoding as curves: sines whose wavelength grows from pair to pair.

Features 0, 8, 16 and 24 of `sinusoid_table(64, 64)` (d_model = 64, as in the shipped translator)
along positions 0 to 63, each labelled with its wavelength 2 pi 10000^(2i / d_model).
Explained on docs/learn/positions.md.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from vanilla_transformer import sinusoid_table

FONT = 11
MAX_LEN, D_MODEL = 64, 64
FEATURES = (0, 8, 16, 24)


def wavelength(feature: int, d_model: int = D_MODEL) -> float:
    """The number of positions over which a feature repeats: 2 pi 10000^(2i / d_model)."""
    return 2 * math.pi * 10000 ** (2 * (feature // 2) / d_model)


def draw() -> Figure:
    pe = sinusoid_table(MAX_LEN, D_MODEL)
    fig, axes = plt.subplots(len(FEATURES), 1, figsize=(4.8, 3.4), sharex=True)
    for ax, f, colour in zip(axes, FEATURES, [f"C{i}" for i in range(len(FEATURES))], strict=True):
        ax.plot(pe[:, f], lw=1.8, color=colour, marker="o", markersize=2.5)
        ax.set_ylim(-1.25, 1.25)
        ax.set_yticks([-1, 1])
        ax.tick_params(labelsize=FONT, length=2)
        ax.text(MAX_LEN - 1, 1.3, f"feature {f}: wavelength {wavelength(f):.1f}", ha="right",
                va="bottom", fontsize=FONT)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlim(0, MAX_LEN - 1)
    axes[-1].set_xlabel("position", fontsize=FONT)
    fig.tight_layout(h_pad=1.2)
    return fig
