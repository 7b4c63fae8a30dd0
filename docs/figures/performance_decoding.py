"""Greedy decoding time, cached against full recompute, from the committed benchmark results."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

SHARED = Path(__file__).with_name("_performance_data.py")  # the results loader and colours


def draw():
    d = SimpleNamespace(**runpy.run_path(str(SHARED)))
    res = d.load()
    rows = res["decoding"]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6.8))
    for cached, colour, label in ((False, "#f28e2b", "recompute the prefix"), (True, "#3b7dd8", "key/value cache")):
        pts = sorted((r["tokens"], r["median_s"]) for r in rows if r["cached"] == cached)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=colour, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("generated tokens")
    ax.set_ylabel("seconds (median)")
    ax.legend()
    ax.set_title("greedy decoding, base model, batch 1", fontsize=10)
    counts = sorted({r["tokens"] for r in rows})
    med = {(r["tokens"], r["cached"]): r["median_s"] for r in rows}
    speedups = [med[(n, False)] / med[(n, True)] for n in counts]
    ax2.bar([str(n) for n in counts], speedups, color="#3b7dd8")
    ax2.axhline(4.0, color="grey", linestyle="--", linewidth=1, label="target 4x")
    for i, s in enumerate(speedups):
        ax2.text(i, s, f"{s:.1f}x", ha="center", va="bottom", fontsize=10)
    ax2.set_xlabel("generated tokens")
    ax2.set_ylabel("speed-up of the cache")
    ax2.legend()
    fig.tight_layout()
    return fig
