"""The copy task learning: the loss per token of each optimizer step of the run on the Training
lesson (`CopyTaskConfig(steps=300, batch_size=32, warmup=50)`, seed 0, one thread), with the
learning rate the schedule gave each step.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import runpy
from pathlib import Path

import matplotlib.pyplot as plt

from vanilla_transformer.training import rate

RUNS = runpy.run_path(str(Path(__file__).with_name("_training_runs.py")))
CONFIG = RUNS["CONFIG"]


def draw() -> plt.Figure:
    run = RUNS["copy_run"]()
    steps = range(1, len(run.losses) + 1)
    fig, ax = plt.subplots(figsize=(4.7, 2.7), layout="constrained")
    ax.plot(steps, run.losses, lw=1.5, label="loss per token")
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step", fontsize=11)
    ax.set_ylabel("loss per token (log scale)", fontsize=11)
    ax.grid(alpha=0.3)
    lr = ax.twinx()
    lr.plot(steps, [rate(s, CONFIG.d_model, CONFIG.factor, CONFIG.warmup) * 1e3
                    for s in steps], color="#ff7f0e", lw=1.5, ls="--", label="learning rate")
    lr.set_ylabel("learning rate (x 1e-3)", fontsize=11)
    lr.set_ylim(0, None)
    for axis in (ax, lr):
        axis.tick_params(labelsize=11)
    lines = ax.get_lines() + lr.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], fontsize=11, loc="upper right")
    return fig
