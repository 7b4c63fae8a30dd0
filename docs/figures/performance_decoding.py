"""Decoding speed of the paper's model: greedy with and without the key/value cache, and beam
search (beam 4) with it, from the committed benchmark results."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

SHARED = Path(__file__).with_name("_performance_data.py")  # the results loader

RUNS = {
    "greedy-recompute": ("greedy, recompute the prefix", "#f28e2b"),
    "greedy-cache": ("greedy, key/value cache", "#3b7dd8"),
    "beam4-cache": ("beam 4, key/value cache", "#59a14f"),
}


def draw():
    d = SimpleNamespace(**runpy.run_path(str(SHARED)))
    rows = d.load()["decoding"]
    counts = [int(n) for n in rows]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6.8))
    for name, (label, colour) in RUNS.items():
        ax.plot(counts, [rows[str(n)]["tokens_per_s"][name] for n in counts], "o-",
                color=colour, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts, [str(n) for n in counts])
    ax.set_xlabel("generated tokens")
    ax.set_ylabel("tokens per second")
    ax.legend(fontsize=10)
    ax.set_title("decoding, paper's base model, batch 1", fontsize=10)
    med = {n: rows[str(n)]["median_s"] for n in counts}
    speedups = [med[n]["greedy-recompute"] / med[n]["greedy-cache"] for n in counts]
    ax2.bar([str(n) for n in counts], speedups, color="#3b7dd8")
    for i, s in enumerate(speedups):
        ax2.text(i, s, f"{s:.1f}x", ha="center", va="bottom", fontsize=10)
    ax2.set_xlabel("generated tokens")
    ax2.set_ylabel("speed-up of the cache")
    fig.tight_layout()
    return fig
