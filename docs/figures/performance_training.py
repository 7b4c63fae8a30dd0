"""Training-step time of the base configuration for the three implementations, from the committed
benchmark results: median bars with the fastest and slowest repetition as the error bar."""

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
    rows = res["training_step"]
    lengths = sorted({r["length"] for r in rows})
    impls = list(d.LABELS)
    fig, axes = plt.subplots(1, len(lengths), figsize=(7.2, 3.8))
    for ax, length in zip(axes, lengths):
        for i, impl in enumerate(impls):
            r = next(r for r in rows if r["impl"] == impl and r["length"] == length)
            err = [[r["median_s"] - r["min_s"]], [r["max_s"] - r["median_s"]]]
            ax.bar(i, r["median_s"], yerr=err, color=d.COLOURS[impl], capsize=4, label=d.LABELS[impl])
            ax.text(i, r["median_s"] / 2, f"{r['median_s']:.2f} s", ha="center", va="center", rotation=90, fontsize=10)
        batch = next(r["batch"] for r in rows if r["length"] == length)
        ax.set_title(f"length {length}, batch {batch}", fontsize=10)
        ax.set_xticks([])
        ax.set_ylabel("seconds per step (median)" if length == lengths[0] else "")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=10, frameon=False)
    fig.suptitle(f"Training step, base configuration (forward + backward + Adam)\n{res['machine']['cpu']}",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig
