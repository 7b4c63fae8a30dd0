"""The sinusoidal positional encoding, from the package's `sinusoid_table`.

Top: the table for 64 positions and d_model = 128, one row per position. Bottom: four of its
features along the positions, sines of ever longer wavelengths. Explained on
docs/learn/positions.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from vanilla_transformer import sinusoid_table

MAX_LEN, D_MODEL = 64, 128
FEATURES = (0, 8, 24, 48)


def draw():
    pe = sinusoid_table(MAX_LEN, D_MODEL)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(4.9, 5.4), height_ratios=(1.25, 1))
    top.imshow(pe, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    top.set_xticks([*range(0, D_MODEL, 32), D_MODEL - 1])
    top.set_yticks([*range(0, MAX_LEN, 16), MAX_LEN - 1])
    top.tick_params(labelsize=11)
    top.set_xlabel("feature (even: sin, odd: cos)", fontsize=11)
    top.set_ylabel("position", fontsize=11)
    top.set_title(f"sinusoid_table({MAX_LEN}, {D_MODEL}): red +1, blue -1", fontsize=11)
    for i in FEATURES:
        bottom.plot(pe[:, i], lw=1.5, label=f"feature {i}")
    bottom.set_xlabel("position", fontsize=11)
    bottom.set_ylabel("value", fontsize=11)
    bottom.tick_params(labelsize=11)
    bottom.set_xlim(0, MAX_LEN - 1)
    bottom.legend(fontsize=11, ncols=2, loc="lower left", framealpha=0.9)
    bottom.set_ylim(-2.3, 1.15)
    bottom.set_yticks([-1, 0, 1])
    fig.tight_layout()
    return fig
