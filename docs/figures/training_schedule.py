r"""The learning-rate schedule of paper section 5.3 for the base model: d_model = 512,
warmup = 4000, lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), from
`vanilla_transformer.training.rate` with factor 1 (the paper's formula has no factor).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from vanilla_transformer.training import rate

D_MODEL, WARMUP, STEPS = 512, 4000, 100_000


def draw() -> plt.Figure:
    steps = list(range(1, STEPS + 1, 50))
    fig, ax = plt.subplots(figsize=(4.7, 2.6), layout="constrained")
    ax.plot(steps, [rate(s, D_MODEL, 1.0, WARMUP) * 1e4 for s in steps], lw=2)
    peak = rate(WARMUP, D_MODEL, 1.0, WARMUP) * 1e4
    ax.plot([WARMUP], [peak], "o", color="#d62728")
    ax.annotate(f"step {WARMUP}: {peak:.2f}e-4", (WARMUP, peak), xytext=(16000, peak * 0.97),
                fontsize=11, arrowprops=dict(arrowstyle="->", color="#555555"))
    ax.axvline(WARMUP, color="#888888", lw=0.8, ls=":")
    ax.set_xlabel("optimizer step", fontsize=11)
    ax.set_ylabel("learning rate (x 1e-4)", fontsize=11)
    ax.set_title("a linear warm-up, then a decay as 1/sqrt(step)", fontsize=11)
    ax.set_xlim(0, STEPS)
    ticks = range(0, STEPS + 1, 25_000)
    ax.set_xticks(list(ticks), [f"{t // 1000}k" if t else "0" for t in ticks])
    ax.set_ylim(0, peak * 1.12)
    ax.tick_params(labelsize=11)
    ax.grid(alpha=0.3)
    return fig
