"""Matrix-multiply FLOPs per second of each package recipe's training step, as a fraction of the
machine's measured matrix-multiply peak, from the committed benchmark results."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

SHARED = Path(__file__).with_name("_performance_data.py")  # the results loader and colours
SHOWN = ("paper", "paper-ff-dropout", "annotated")


def draw():
    d = SimpleNamespace(**runpy.run_path(str(SHARED)))
    res = d.load()
    rows = res["fraction_of_peak"]
    lengths = list(rows)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.27
    for i, impl in enumerate(SHOWN):
        vals = [rows[n][impl] for n in lengths]
        xs = [j + (i - 1) * width for j in range(len(lengths))]
        ax.bar(xs, vals, width, color=d.COLOURS[impl], label=d.LABELS[impl])
        for x, v in zip(xs, vals):
            ax.text(x, v, f"{v:.0%}", ha="center", va="bottom", fontsize=10)
    ax.set_xticks(range(len(lengths)), [f"length {n}" for n in lengths])
    ax.set_ylabel("fraction of matmul peak")
    ax.set_ylim(0, 1)
    peak = res["matmul_peak"]["peak_flop_s"] / 1e9
    ax.set_title(f"training-step FLOP/s (the calculator's count / median time); "
                 f"peak {peak:.0f} GFLOP/s", fontsize=10)
    ax.legend(fontsize=10, loc="upper right")
    fig.tight_layout()
    return fig
