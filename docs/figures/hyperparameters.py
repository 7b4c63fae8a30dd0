"""The paper's two model sizes drawn to scale: the width `d_model` split into `h` heads of `d_k`
features, and the feed-forward hidden width `d_ff`.

The numbers are read from `PRESETS` through `ModelConfig`, the same objects `make_model` uses.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from vanilla_transformer import PRESETS, ModelConfig

HEAD_COLOURS = ("#f4a6a0", "#f9d3a8")


def draw():
    configs = {name: ModelConfig(0, 0, **PRESETS[name]) for name in ("base", "big")}
    widest = max(c.d_ff for c in configs.values())
    fig, axes = plt.subplots(len(configs), 1, figsize=(7.2, 2.1 * len(configs)), sharex=True)
    for ax, (name, cfg) in zip(axes, configs.items()):
        # d_model as h head slices of d_k features each
        for i in range(cfg.h):
            ax.add_patch(Rectangle((i * cfg.d_k, 1.1), cfg.d_k, 0.7, fc=HEAD_COLOURS[i % 2],
                                   ec="#7a2a22", lw=0.6))
        ax.text(cfg.d_model + widest * 0.01, 1.45,
                f"d_model = {cfg.d_model} = h x d_k = {cfg.h} x {cfg.d_k}", va="center", fontsize=10)
        ax.add_patch(Rectangle((0, 0.1), cfg.d_ff, 0.7, fc="#9cc9ef", ec="#1f4e79", lw=0.6))
        ax.text(cfg.d_ff + widest * 0.01 if cfg.d_ff < widest * 0.7 else cfg.d_ff / 2, 0.45,
                f"d_ff = {cfg.d_ff} = {cfg.d_ff // cfg.d_model} x d_model",
                va="center", ha="left" if cfg.d_ff < widest * 0.7 else "center", fontsize=10)
        ax.set_ylim(0, 2.0)
        ax.set_yticks([])
        ax.set_title(f'"{name}": N = {cfg.N} encoder and {cfg.N} decoder layers, '
                     f"dropout = {cfg.dropout}", fontsize=10, loc="left")
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlim(0, widest * 1.02)
    axes[-1].set_xlabel("features per token (to scale)")
    fig.tight_layout()
    return fig
