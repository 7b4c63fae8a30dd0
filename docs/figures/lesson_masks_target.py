"""The decoder's masks for the shorter sentence of a real batch: the subsequent mask, then the
target mask (subsequent AND padding). Rows are queries, columns keys; 1 = may attend.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from vanilla_transformer import subsequent_mask

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))


def draw() -> plt.Figure:
    name, batch = COMMON["translator_batch"]()
    tokens = [name(t) for t in batch.tgt[1].tolist()]
    n = len(tokens)
    fig, axes = plt.subplots(1, 2, figsize=(7.4, 3.9), layout="constrained")
    COMMON["draw_mask"](axes[0], subsequent_mask(n)[0], tokens, tokens,
                        f"subsequent_mask({n})[0]")
    COMMON["draw_mask"](axes[1], batch.tgt_mask[1], tokens, tokens,
                        "tgt_mask[1] = padding & subsequent")
    for ax in axes:
        ax.set_xlabel("key (attended to)", fontsize=11)
    axes[0].set_ylabel("query (attending)", fontsize=11)
    return fig
