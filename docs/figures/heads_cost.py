"""What the number of heads costs: FLOPs counted by PyTorch, and the score entries softmaxed.

A `MultiHeadedAttention(h, d_model=512)` runs on 64 tokens for h = 1 to 64. Left: the FLOPs that
`torch.utils.flop_counter.FlopCounterMode` counts, split into the four projections (`addmm`) and
the two products of attention (`bmm`); they do not change with h. Right: the number of attention
scores that are scaled and softmaxed (the weights' size), which grows as h n^2; FlopCounterMode
does not count that work. Explained on docs/learn/heads.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from torch.utils.flop_counter import FlopCounterMode

from vanilla_transformer import MultiHeadedAttention, attention

FONT = 11
TOKENS, D_MODEL = 64, 512
HEADS = (1, 4, 16, 64)


def costs(heads: tuple[int, ...] = HEADS, n: int = TOKENS, d_model: int = D_MODEL) -> dict[str, list[int]]:
    """Per h: FLOPs of the projections, FLOPs of attention's products, and score entries."""
    torch.manual_seed(0)
    x = torch.randn(1, n, d_model)
    out: dict[str, list[int]] = {"projections": [], "products": [], "scores": []}
    for h in heads:
        mha = MultiHeadedAttention(h=h, d_model=d_model, dropout=0.0, fast=False)
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            mha(x, x, x)
        by_op = {str(op): flops for op, flops in counter.get_flop_counts()["Global"].items()}
        assert set(by_op) == {"aten.addmm", "aten.bmm"}, by_op
        out["projections"].append(by_op["aten.addmm"])
        out["products"].append(by_op["aten.bmm"])
        with torch.no_grad():
            q = mha.split_heads(mha.linears[0](x))
            _, weights = attention(q, q, q)
        out["scores"].append(weights.numel())
    return out


def draw() -> Figure:
    c = costs()
    labels = [str(h) for h in HEADS]
    fig, (left, right) = plt.subplots(1, 2, figsize=(4.7, 2.9))
    mega = [p / 1e6 for p in c["projections"]]
    left.bar(labels, mega, color="#3060a8", label="projections")
    left.bar(labels, [p / 1e6 for p in c["products"]], bottom=mega, color="#e08a2c",
             label="$QK^\\top$ and $\\cdot V$")
    left.set_title("FLOPs counted (millions)", fontsize=FONT)
    left.set_ylim(0, 1.6 * (mega[0] + c["products"][0] / 1e6))
    left.legend(fontsize=FONT, loc="upper center", framealpha=0.95)
    right.bar(labels, [s / 1e3 for s in c["scores"]], color="#7a4fa0")
    right.set_title("scores softmaxed (thousands)", fontsize=FONT)
    for ax in (left, right):
        ax.set_xlabel("heads h", fontsize=FONT)
        ax.tick_params(labelsize=FONT)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    fig.tight_layout(w_pad=1.5)
    return fig
