"""The lesson's worked example of one post-norm sublayer, in numbers, for one position with
d_model = 4: the input x, the sublayer's output, their sum, and the LayerNorm of the sum (gain 1,
bias 0, as initialised), computed by the package's `SublayerConnection`.
Explained on docs/learn/layers.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import SublayerConnection

FONT = 11
X = [1.0, 2.0, 3.0, 6.0]
CORRECTION = [0.5, -0.5, 0.5, -0.5]


def worked_example() -> dict[str, list[float]]:
    """x, the sublayer's output, their sum and LayerNorm(x + Sublayer(x))."""
    x = torch.tensor([[X]])  # (batch, seq_len, d_model) = (1, 1, 4)
    correction = torch.tensor(CORRECTION)
    post = SublayerConnection(4, dropout=0.0, norm_first=False, layer_norm="torch")
    with torch.no_grad():
        out = post(x, lambda t: correction.expand_as(t))
    total = x + correction
    return {"x": X, "sublayer": CORRECTION, "sum": total.flatten().tolist(),
            "out": out.flatten().tolist(),
            "sum_mean": total.mean().item(), "sum_std": total.std(unbiased=False).item()}


def draw() -> plt.Figure:
    v = worked_example()
    panels = [("x", "x", "#3060a8"), ("sublayer", "Sublayer(x)", "#555555"),
              ("sum", "x + Sublayer(x)", "#3060a8"), ("out", "LayerNorm(sum)", "#c8553d")]
    fig, axes = plt.subplots(2, 2, figsize=(4.6, 3.4), layout="constrained", sharey=True)
    for ax, (key, title, colour) in zip(axes.flat, panels, strict=True):
        values = v[key]
        ax.bar(range(4), values, color=colour, width=0.65)
        for i, y in enumerate(values):
            label = f"{y:.2f}" if key == "out" else f"{y:g}"
            ax.text(i, y + (0.15 if y >= 0 else -0.15), label,
                    ha="center", va="bottom" if y >= 0 else "top", fontsize=FONT)
        ax.axhline(0, color="#555555", linewidth=0.8)
        ax.set_title(title, fontsize=FONT)
        ax.set_xticks(range(4), [str(i + 1) for i in range(4)], fontsize=FONT)
        ax.tick_params(labelsize=FONT)
        ax.spines[["top", "right"]].set_visible(False)
    axes[1, 0].axhline(v["sum_mean"], color="#3060a8", linestyle="--", linewidth=1)
    axes[1, 0].text(-0.45, v["sum_mean"] + 0.1, f"mean {v['sum_mean']:g}", ha="left",
                    va="bottom", fontsize=FONT, color="#3060a8")
    for ax in axes[1]:
        ax.set_xlabel("feature", fontsize=FONT)
    axes[0, 0].set_ylim(-2, 7.5)
    return fig
