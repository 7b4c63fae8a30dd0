"""Step 4 of the Attention lesson's worked example: the output of the query of "one" is the
sum of the value vectors, each scaled by its weight. Each row is a value of the example
(attention_projection.py), its weight from the package's `attention`, and the scaled vector;
the last row is their sum, the output, which is checked against `attention`'s own.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import torch
from matplotlib.figure import Figure

from vanilla_transformer import attention

EXAMPLE = runpy.run_path(str(Path(__file__).with_name("attention_projection.py")))
FONT = EXAMPLE["FONT"]


def draw() -> Figure:
    ex = EXAMPLE["example"]()
    tokens, V = ex["tokens"], ex["V"]
    output, weights = attention(ex["Q"], ex["K"], V)
    w = weights[ex["query"]]
    scaled = w[:, None] * V
    assert torch.allclose(scaled.sum(dim=0), output[ex["query"]])
    grid = EXAMPLE["grid"]
    cell = 0.36
    fig, ax = EXAMPLE["canvas"](4.75, 2.6)
    x0, top = 0.8, 2.3
    grid(ax, V.tolist(), x0, top, fill=EXAMPLE["VALUE_FILL"], rows=tokens, cell=cell)
    ax.text(x0 + 2 * cell, top + 0.03, "values", ha="center", va="bottom", fontsize=FONT)
    x_scaled = x0 + 4 * cell + 0.95
    for i in range(len(tokens)):
        y = top - (i + 0.5) * cell
        ax.text(x0 + 4 * cell + 0.08, y, f"× {float(w[i]):.3f} =", ha="left", va="center",
                fontsize=FONT)
    grid(ax, scaled.tolist(), x_scaled, top, fill="#dff0da", cell=cell)
    ax.text(x_scaled + 2 * cell, top + 0.03, "weighted", ha="center", va="bottom", fontsize=FONT)
    bottom = top - 4 * cell - 0.12
    ax.plot([x_scaled, x_scaled + 4 * cell], [bottom, bottom], color="#444444", linewidth=1.2)
    ax.text(x_scaled - 0.1, bottom - 0.08 - cell / 2, "the sum, output of one =", ha="right",
            va="center", fontsize=FONT)
    grid(ax, [output[ex["query"]].tolist()], x_scaled, bottom - 0.08, fill="#7cc071", cell=cell)
    return fig
