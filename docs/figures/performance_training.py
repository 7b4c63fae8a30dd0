"""Training-step time of the two recipes and of nn.Transformer at each length, from the committed
benchmark results: median bars with the fastest and slowest round as the error bar."""

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
    impls = list(d.LABELS)
    fig, axes = plt.subplots(1, len(rows), figsize=(7.2, 4.6))
    for ax, (length, row) in zip(axes, rows.items()):
        for i, impl in enumerate(impls):
            med, times = row["median_s"][impl], row["times_s"][impl]
            err = [[med - min(times)], [max(times) - med]]
            ax.bar(i, med, yerr=err, color=d.COLOURS[impl], capsize=3, label=d.LABELS[impl])
            ax.text(i, med / 2, f"{med:.1f} s", ha="center", va="center", rotation=90,
                    fontsize=10)
        ax.set_title(f"length {length}, batch {row['batch']}", fontsize=10)
        ax.set_xticks([])
        ax.set_ylabel("seconds per step (median)" if ax is axes[0] else "")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=10, frameon=False)
    fig.suptitle("Training step, base size (forward + backward + Adam)", fontsize=10)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    return fig
