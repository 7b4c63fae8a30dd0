"""Why the fill value of a mask matters only in corner cases.

One query attends to four keys; the last two are masked. The two unmasked keys share a score s,
swept from -20000 to 0 (top) and around -10000 (bottom). The plot shows the total weight that
leaks to the masked keys when masked scores are replaced by -10000 (the article *The Vanilla
Transformer Explained*) and by -1e9 (the package's reference path,
`vanilla_transformer.model.attention.attention`). The fills agree (zero leak) until the unmasked
scores come near the fill value itself.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer.model.attention import attention
from vanilla_transformer.model.masks import MASK_FILL

KEEP = torch.tensor([[1, 1, 0, 0]])  # (query_len, key_len): the last two keys are masked


def leak_article(score: float) -> float:
    scores = torch.full((1, 4), score).masked_fill(KEEP == 0, -10000)
    return scores.softmax(-1)[0, 2:].sum().item()


def leak_package(score: float) -> float:
    # q . k / sqrt(d_k) = score with d_k = 1, q = score and every k = 1
    q = torch.full((1, 1), score)
    k = v = torch.ones(4, 1)
    _, weights = attention(q, k, v, mask=KEEP)
    return weights[0, 2:].sum().item()


def draw() -> plt.Figure:
    fig, axes = plt.subplots(2, 1, figsize=(7, 7.2))
    ranges = ((-20000, 0), (-10030, -9970))
    for ax, (low, high) in zip(axes, ranges):
        scores = torch.linspace(low, high, 601).tolist()
        ax.plot(scores, [leak_article(s) for s in scores], color="#d62728", lw=2,
                label="fill -10000 (the article)")
        ax.plot(scores, [leak_package(s) for s in scores], color="#1f77b4", lw=2, ls="--",
                label=f"fill {MASK_FILL:g} (package reference path)")
        ax.axvline(-10000, color="#888888", lw=0.8, ls=":")
        ax.set_xlabel("score of the unmasked keys, q.k / sqrt(d_k)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("total weight on the masked keys")
    axes[0].set_title("2 of 4 keys masked: weight leaking through")
    axes[1].set_title("zoom: the unmasked scores near the fill value")
    axes[0].legend(loc="center left", fontsize=10)
    fig.tight_layout()
    return fig
