"""Why the embedding is scaled: root mean squares of token and position in the trained translator.

From the shipped translator (docs/assets/translator/): the root mean square of its embedding
matrix's entries, of the same matrix times sqrt(d_model), and of the encoding table's entries
(128 positions). Explained on docs/learn/positions.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from vanilla_transformer import sinusoid_table
from vanilla_transformer.training.translation import load_translator

TRANSLATOR = Path(__file__).resolve().parents[1] / "assets" / "translator"
FONT = 11


def sizes() -> dict[str, float]:
    """Root mean square of the embedding, the scaled embedding and the encoding."""
    model, _ = load_translator(TRANSLATOR)
    embed: Any = model.src_embed[0]  # type: ignore[index]
    lut = embed.lut.weight.detach()  # (vocab, d_model)
    d_model = lut.size(1)

    def rms(t: torch.Tensor) -> float:
        return float(t.pow(2).mean().sqrt())

    return {
        "embedding": rms(lut),
        "embedding × √d_model": rms(lut * math.sqrt(d_model)),
        "positional encoding": rms(sinusoid_table(128, d_model)),
    }


def draw() -> Figure:
    values = sizes()
    names = list(values)
    fig, ax = plt.subplots(figsize=(4.8, 1.9))
    bars = ax.barh(names, list(values.values()), color=["#7a9cc6", "#3060a8", "#e08a2c"])
    for bar, v in zip(bars, values.values(), strict=True):
        ax.text(bar.get_width() + 0.02, bar.get_y() + bar.get_height() / 2, f"{v:.3f}",
                va="center", fontsize=FONT)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.2)
    ax.set_xlabel("root mean square of the entries", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig
