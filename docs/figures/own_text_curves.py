"""The measured run on the German gettext catalogs, from its committed results: the validation
loss, and the validation BLEU and chrF of greedy decoding, at each checkpoint; the checkpoints
that model.pt averages are shaded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

RESULTS = Path("benchmarks/results/catalogs_de.json")


def draw():
    result = json.loads(RESULTS.read_text(encoding="utf-8"))
    rows = result["training"]["validations"]
    steps = [r["step"] for r in rows]
    log = "\n".join(result["training"]["log"])
    start = re.search(r"\(from step (\d+)\)", log)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(5, 5.4), sharex=True)
    top.plot(steps, [r["valid_loss"] for r in rows], marker="o", color="tab:blue")
    top.set_ylabel("validation loss", fontsize=13)
    bottom.plot(steps, [r["valid_chrf"] for r in rows], marker="o", color="tab:orange",
                label="chrF")
    bottom.plot(steps, [r["valid_bleu"] for r in rows], marker="s", color="tab:green",
                label="BLEU")
    bottom.set_ylabel("score (greedy)", fontsize=13)
    bottom.set_xlabel("optimizer step", fontsize=13)
    bottom.legend(fontsize=13, frameon=False, loc="upper left")
    for ax in (top, bottom):
        ax.tick_params(labelsize=13)
        ax.grid(alpha=0.3)
        if start:
            ax.axvspan(int(start.group(1)), steps[-1], color="0.5", alpha=0.2, lw=0)
    if start:
        top.text(int(start.group(1)), top.get_ylim()[1], " averaged", va="top", fontsize=13)
    minutes = result["training"]["minutes"]
    fig.suptitle(f"{minutes:g} minutes on a shared CPU, one thread", fontsize=13)
    fig.tight_layout()
    return fig
