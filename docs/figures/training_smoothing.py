r"""The target of one position, for a vocabulary of V = 11 pieces with padding id 0 and the right
piece 3: the one-hot target (dashed outline) beside two smoothed ones: label smoothing as
Szegedy et al. define it (the paper's section 5.4 cites them), epsilon spread over all V
classes, so the right one gets 1 - eps + eps / V; and the package's `LabelSmoothing` (the
Annotated Transformer's form): 1 - eps on the right piece, nothing on padding, eps / (V - 2)
on each of the others. eps = 0.1.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer.training import LabelSmoothing

V, PAD, RIGHT, EPS = 11, 0, 3, 0.1
RIGHT_COLOUR, OTHER_COLOUR = "#3060a8", "#9ab3d6"


def targets() -> dict[str, list[float]]:
    """The one-hot row and the two smoothed ones, the package's read from
    `LabelSmoothing.true_dist`."""
    one_hot = [1.0 if i == RIGHT else 0.0 for i in range(V)]
    szegedy = [(1 - EPS) * p + EPS / V for p in one_hot]
    criterion = LabelSmoothing(size=V, padding_idx=PAD, smoothing=EPS)
    criterion(torch.log_softmax(torch.zeros(1, V), dim=-1), torch.tensor([RIGHT]))
    assert criterion.true_dist is not None
    return {"one-hot": one_hot, "Szegedy et al.": szegedy,
            "this package": criterion.true_dist[0].tolist()}


def short(p: float) -> str:
    """A probability to four decimals, without trailing zeros."""
    return f"{p:.4f}".rstrip("0").rstrip(".")


def draw() -> plt.Figure:
    rows = targets()
    one_hot = rows.pop("one-hot")
    fig, axes = plt.subplots(len(rows), 1, figsize=(4.7, 3.7), layout="constrained",
                             sharex=True)
    for ax, (title, row) in zip(axes, rows.items(), strict=True):
        colours = [RIGHT_COLOUR if i == RIGHT else OTHER_COLOUR for i in range(V)]
        ax.bar(range(V), one_hot, color="none", edgecolor="#555555", lw=1.2, ls="--",
               label="one-hot")
        ax.bar(range(V), row, color=colours, label="smoothed")
        ax.set_yscale("log")
        ax.set_ylim(0.003, 3)
        ax.set_yticks([0.01, 0.1, 1], ["0.01", "0.1", "1"])
        ax.text(RIGHT + 0.5, row[RIGHT] * 1.05, short(row[RIGHT]), fontsize=11, va="center")
        other = row[RIGHT + 1]
        ax.text(V - 1, other * 1.6, f"{short(other)} each", fontsize=11, ha="right")
        if row[PAD] == 0:
            ax.text(PAD, 0.005, "0", fontsize=11, ha="center")
        ax.set_title(title, fontsize=11, loc="left")
        ax.tick_params(labelsize=11)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[0].legend(fontsize=11, frameon=False, loc="upper right", ncol=2,
                   bbox_to_anchor=(1, 1.25))
    axes[-1].set_xticks(range(V), ["pad" if i == PAD else str(i) for i in range(V)])
    axes[-1].set_xlabel("piece id (the right piece is 3)", fontsize=11)
    return fig
