"""Three LayerNorms side by side: the one of the article *The Vanilla Transformer Explained*
(biased variance, eps 1e-12 inside the square root), the package's annotated flavour (unbiased
std, eps 1e-6 added to the std) and `torch.nn.LayerNorm` (biased variance, eps 1e-5 inside the
square root), which the paper's arrangement uses.

Top: how much smaller the annotated output is, measured on random rows for many widths, against
the prediction sqrt((n - 1) / n). Bottom: one row of 8 features through all three. The article's
LayerNorm is written out here in four lines; the other two come from the package.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer.model import LayerNorm, make_layer_norm


def article_layer_norm(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """gamma = 1, beta = 0: (x - mean) / sqrt(biased variance + eps)."""
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


def draw() -> plt.Figure:
    torch.manual_seed(0)
    widths = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    annotated_ratio, torch_ratio = [], []
    for n in widths:
        x = torch.randn(64, n)
        ours = article_layer_norm(x)
        with torch.no_grad():
            annotated_ratio.append((LayerNorm(n)(x).std(-1) / ours.std(-1)).mean().item())
            torch_ratio.append((make_layer_norm(n, "torch")(x).std(-1) / ours.std(-1)).mean().item())

    fig, (left, right) = plt.subplots(2, 1, figsize=(7, 7.6))
    grid = [2 ** (k / 4) for k in range(4, 41)]
    left.plot(grid, [math.sqrt((n - 1) / n) for n in grid], color="#888888", lw=1,
              label=r"prediction $\sqrt{(n-1)/n}$")
    left.plot(widths, annotated_ratio, "o", color="#d62728",
              label="annotated (package default) / article")
    left.plot(widths, torch_ratio, "s", color="#1f77b4", ms=4,
              label="torch.nn.LayerNorm / article")
    left.set_xscale("log", base=2)
    left.set_xlabel("number of features n (d_model)")
    left.set_ylabel("ratio of output sizes")
    left.set_title("Output size relative to the article's LayerNorm")
    left.legend(fontsize=10, loc="lower right")
    left.grid(alpha=0.3)

    x = torch.randn(1, 8) * 2 + 1
    with torch.no_grad():
        rows = {
            "the article's (eps 1e-12, biased var)": article_layer_norm(x)[0],
            "annotated (eps 1e-6 on unbiased std)": LayerNorm(8)(x)[0],
            "torch.nn.LayerNorm (eps 1e-5)": make_layer_norm(8, "torch")(x)[0],
        }
    offsets = (-0.25, 0.0, 0.25)
    colours = ("#2ca02c", "#d62728", "#1f77b4")
    for (label, row), dx, colour in zip(rows.items(), offsets, colours):
        right.bar([i + dx for i in range(8)], row.tolist(), width=0.25, color=colour, label=label)
    right.axhline(0, color="black", lw=0.8)
    right.set_xlabel("feature index (one row, n = 8)")
    right.set_ylabel("normalised value")
    right.set_title("One row through the three LayerNorms")
    low, high = right.get_ylim()
    right.set_ylim(low, high + 1.2)  # room for the legend above the bars
    right.legend(fontsize=10, loc="upper left")
    fig.tight_layout()
    return fig
