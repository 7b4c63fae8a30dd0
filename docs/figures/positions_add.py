"""Token plus position: what the trained translator's encoder receives for one sentence.

From the shipped translator (docs/assets/translator/, d_model = 64): the embedding of each token of
"four hundred and forty-one", multiplied by sqrt(d_model); the sinusoidal encoding of positions 0
to 5; and their sum, which `model.src_embed` returns (dropout is off in eval mode).
Explained on docs/learn/positions.md.
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
from vanilla_transformer.data.tokenizer import EOS
from vanilla_transformer.training.translation import load_translator

TRANSLATOR = Path(__file__).resolve().parents[1] / "assets" / "translator"
SENTENCE = "four hundred and forty-one"
FONT = 11


def parts(sentence: str = SENTENCE) -> tuple[list[str], torch.Tensor, torch.Tensor, torch.Tensor]:
    """(tokens, scaled embeddings, encoding, sum), each (seq_len, d_model), from the model."""
    model, tokenizer = load_translator(TRANSLATOR)
    model.eval()
    ids = torch.tensor([tokenizer.encode(sentence) + [EOS]])
    tokens = [t.lstrip("▁") for t in tokenizer.tokens(sentence)] + ["</s>"]
    embed: Any = model.src_embed[0]  # type: ignore[index]
    with torch.no_grad():
        scaled = embed.lut(ids)[0] * math.sqrt(embed.d_model)
        total = model.src_embed(ids)[0]
    pe = sinusoid_table(ids.size(1), scaled.size(1))
    assert torch.allclose(scaled + pe, total, atol=1e-5)
    return tokens, scaled, pe, total


def draw() -> Figure:
    tokens, scaled, pe, total = parts()
    d_model = scaled.size(1)
    fig, axes = plt.subplots(3, 1, figsize=(4.4, 4.7),
                             layout="constrained")
    panels = [
        (scaled, tokens, "token embedding × √d_model"),
        (pe, [f"pos {p}" for p in range(len(tokens))], "+ positional encoding"),
        (total, tokens, "= the encoder's input"),
    ]
    limit = float(max(scaled.abs().max(), total.abs().max()))
    for ax, (values, labels, title) in zip(axes, panels, strict=True):
        ax.imshow(values, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto",
                          interpolation="nearest")
        ax.set_yticks(range(len(labels)), labels, fontsize=FONT)
        ax.set_title(title, fontsize=FONT, loc="left")
        ax.tick_params(labelsize=FONT, length=2)
        ax.set_xticks([0, 16, 32, 48, d_model - 1])
    axes[-1].set_xlabel(f"feature (d_model = {d_model}); red > 0, blue < 0", fontsize=FONT)
    return fig
