"""The task lesson's opening picture: an English number goes into the trained translator
(docs/assets/translator/) and the German comes out. The English is cut into the tokenizer's
pieces, the encoder reads them all at once, and the decoder writes the German pieces one at a
time (task_decode.py's `greedy_steps`).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from vanilla_transformer.training.translation import load_translator

DECODE = runpy.run_path(str(Path(__file__).with_name("task_decode.py")))
FONT = DECODE["FONT"]


def draw() -> Figure:
    result = DECODE["greedy_steps"]()
    model, _ = load_translator(DECODE["TRANSLATOR"])
    c = model.config
    assert c is not None
    english, steps = result["english"], result["steps"]
    written = [(chosen, p) for _, chosen, p in steps if chosen != "</s>"]
    width, bottom, top = 4.7, 0.35, 3.55
    fig = plt.figure(figsize=(width, top - bottom))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(bottom, top)
    ax.axis("off")
    piece, piece_width = DECODE["piece"], DECODE["piece_width"]

    def row(texts: list[str], y: float, fill: str) -> list[float]:
        widths = [piece_width(t) for t in texts]
        x = (width - sum(widths) - 0.06 * (len(texts) - 1)) / 2
        centres = []
        for t, w in zip(texts, widths, strict=True):
            piece(ax, x, y, t, fill, w)
            centres.append(x + w / 2)
            x += w + 0.06
        return centres

    def arrow(y0: float, y1: float) -> None:
        ax.add_patch(FancyArrowPatch((width / 2, y0), (width / 2, y1), arrowstyle="-|>",
                                     mutation_scale=12, color="#555555", linewidth=1.2))

    ax.text(width / 2, 3.38, "“four hundred and forty-one”", ha="center", va="center",
            fontsize=FONT + 2)
    arrow(3.22, 3.0)
    row(english, 2.83, DECODE["READ"])
    arrow(2.65, 2.45)
    ax.add_patch(FancyBboxPatch((0.55, 1.5), width - 1.1, 0.9, boxstyle="round,pad=0.03",
                                facecolor="#dcd3f5", edgecolor=DECODE["EDGE"]))
    ax.text(width / 2, 2.15, "the trained translator", ha="center", va="center",
            fontsize=FONT + 1, fontweight="bold")
    ax.text(width / 2, 1.76, f"encoder and decoder, {c.N} layers each,\nd_model = {c.d_model}, "
            f"{c.h} heads", ha="center", va="center", fontsize=FONT, linespacing=1.2)
    arrow(1.48, 1.28)
    row([w for w, _ in written], 1.1, DECODE["WRITTEN"])
    arrow(0.92, 0.72)
    ax.text(width / 2, 0.55, f"“{result['german']}”", ha="center", va="center",
            fontsize=FONT + 2)
    return fig
