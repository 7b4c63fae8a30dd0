"""The encoder layer and the decoder layer, sublayer by sublayer, with the mask each attention
reads. Each sublayer is wrapped in a residual connection and a LayerNorm ("add & norm", post-norm
as in the paper); each stack repeats its layer N times, and every decoder layer reads the last
encoder layer's output (`memory`). Drawn from the package's `EncoderLayer` and `DecoderLayer`.
Explained on docs/learn/layers.md.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

DRAW = runpy.run_path(str(Path(__file__).with_name("layers_arrangements.py")))
FONT = DRAW["FONT"]
STREAM, BRANCH, NORM = DRAW["STREAM"], DRAW["BRANCH"], DRAW["NORM"]


def sublayers() -> dict[str, list[str]]:
    """The sublayer modules of one encoder layer and one decoder layer, in order."""
    from vanilla_transformer import make_model

    model = make_model(10, 10, N=1, d_model=8, d_ff=16, h=2)
    names = {"self_attn": "self-attention", "src_attn": "cross-attention",
             "feed_forward": "feed-forward"}
    return {side: [names[n] for n, _ in layer.named_children() if n in names]
            for side, layer in (("encoder", model.encoder.layers[0]),
                                ("decoder", model.decoder.layers[0]))}


def column(ax: plt.Axes, x: float, parts: list[tuple[str, str]], title: str) -> float:
    """Stack `(sublayer, mask)` boxes upwards; returns the y of the top of the column."""
    step = 1.7
    for i, (name, mask) in enumerate(parts):
        y = 0.9 + step * i
        DRAW["box"](ax, x, y, name, BRANCH, width=2.5)
        if mask:
            ax.text(x + 1.3, y - 0.42, mask, ha="right", va="top", fontsize=FONT, color=NORM)
        ax.text(x, y + 0.42, "add & norm", ha="center", va="bottom", fontsize=FONT,
                color=STREAM)
        DRAW["arrow"](ax, (x - 0.8, y - 0.85 - 0.35 * (i == 0)), (x - 0.8, y - 0.35), STREAM)
    top = 0.9 + step * (len(parts) - 1) + 0.85
    ax.add_patch(FancyBboxPatch((x - 1.45, -0.05), 2.9, top + 0.05, boxstyle="round,pad=0.06",
                                facecolor="none", edgecolor=STREAM, linewidth=1.2,
                                linestyle="--"))
    ax.text(x, top + 0.12, title, ha="center", va="bottom", fontsize=FONT + 1,
            fontweight="bold")
    return top


def draw() -> plt.Figure:
    parts = sublayers()
    enc = [(n, "src_mask" if n == "self-attention" else "") for n in parts["encoder"]]
    dec = [(n, {"self-attention": "tgt_mask", "cross-attention": "src_mask"}.get(n, ""))
           for n in parts["decoder"]]
    fig, ax = plt.subplots(figsize=(4.8, 4.1), layout="constrained")
    enc_top = column(ax, 0.0, enc, "encoder layer")
    column(ax, 3.3, dec, "decoder layer")
    cross_y = 0.9 + 1.7
    ax.plot([0.0, 0.0], [enc_top - 0.1, enc_top + 0.75], color=STREAM, linewidth=1.6)
    ax.plot([0.0, 1.6], [enc_top + 0.75, enc_top + 0.75], color=STREAM, linewidth=1.6)
    DRAW["arrow"](ax, (1.6, enc_top + 0.75), (3.3 - 1.3, cross_y + 0.1), STREAM)
    ax.text(0.1, enc_top + 0.85, "memory", ha="left", va="bottom", fontsize=FONT,
            color=STREAM)
    ax.text(0.0, -0.2, "source", ha="center", va="top", fontsize=FONT)
    ax.text(3.3, -0.2, "target so far", ha="center", va="top", fontsize=FONT)
    ax.text(1.65, -0.75, "each layer repeated N times", ha="center", va="top", fontsize=FONT)
    ax.set_xlim(-1.6, 4.9)
    ax.set_ylim(-1.2, 6.4)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig
