"""Greedy decoding against beam search (beam 4, length penalty 0.6) on the number task: for
each of five models trained with different seeds (benchmarks/results/translate_numbers.json,
the averaged checkpoints), how many of the 1000 test numbers each decoder translated wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "translate_numbers.json"
GREEDY, BEAM = "#3060a8", "#b35806"


def wrong() -> dict[str, list[int]]:
    """Seed -> test numbers wrong, greedy and beam 4, of the averaged model of each run."""
    runs = json.loads(RESULTS.read_text())["runs"]
    out: dict[str, list[int]] = {"seed": [], "greedy": [], "beam 4": []}
    for run in runs:
        size = 1000  # the task's test split
        out["seed"].append(run["seed"])
        for key, decoder in (("greedy", "greedy"), ("beam 4", "beam4")):
            exact = run["scores"][f"averaged/{decoder}"]["exact_match"]
            out[key].append(round(size * (100 - exact) / 100))
    return out


def draw() -> plt.Figure:
    data = wrong()
    fig, ax = plt.subplots(figsize=(4.7, 2.5), layout="constrained")
    x = range(len(data["seed"]))
    for shift, key, colour in ((-0.2, "greedy", GREEDY), (0.2, "beam 4", BEAM)):
        bars = ax.bar([i + shift for i in x], data[key], width=0.4, color=colour, label=key)
        ax.bar_label(bars, fontsize=11, padding=2)
    ax.set_xticks(list(x), [f"seed {s}" for s in data["seed"]], fontsize=11)
    ax.set_ylabel("wrong, of 1000", fontsize=11)
    ax.set_ylim(0, max(data["beam 4"]) * 1.25)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelsize=11)
    ax.legend(fontsize=11, frameon=False, loc="upper right")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig
