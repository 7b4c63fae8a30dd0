"""What the heads of the trained translator look at: the source attention of its last decoder layer.

The model is the trained English-to-German number translator shipped in docs/assets/translator/.
It translates "four hundred and forty-one"; each panel is one head's attention weights from the
token being predicted (rows) to the source tokens (columns), heads numbered from 1.
Explained on docs/learn/heads.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from vanilla_transformer import greedy_decode, keep_attention, subsequent_mask
from vanilla_transformer.data.tokenizer import BOS, EOS
from vanilla_transformer.training.translation import load_translator

TRANSLATOR = Path(__file__).resolve().parents[1] / "assets" / "translator"
SENTENCE = "four hundred and forty-one"


def source_attention(sentence: str = SENTENCE) -> tuple[list[str], list[str], torch.Tensor]:
    """(source tokens, predicted tokens, weights (h, tgt_len, src_len)) of the last layer."""
    model, tokenizer = load_translator(TRANSLATOR)
    src = torch.tensor([tokenizer.encode(sentence) + [EOS]])
    with torch.no_grad():
        ys = greedy_decode(model, src, None, 16, BOS, end_symbol=EOS)
        tgt = ys[:, :-1]
        with keep_attention(model):
            model(src, tgt, None, subsequent_mask(tgt.size(1)))
    pieces = [str(tokenizer.tokenizer.id_to_token(i)) for i in ys[0].tolist()]
    predicted = [p.lstrip("▁") for p in pieces[1:]]
    source = [p.lstrip("▁") for p in tokenizer.tokens(sentence)] + ["</s>"]
    last: Any = model.decoder.layers[-1]
    return source, predicted, last.src_attn.attn[0]


def draw() -> Figure:
    source, predicted, weights = source_attention()
    h, rows, cols = weights.shape
    per_row = 2  # heads side by side in one heatmap, one blank column between two heads
    fig, axes = plt.subplots(h // per_row, 1, figsize=(4.7, 5.4))
    for a, ax in enumerate(axes):
        heads = range(a * per_row, (a + 1) * per_row)
        grid = torch.full((rows, per_row * (cols + 1) - 1), float("nan"))
        ticks, labels = [], []
        for j, i in enumerate(heads):
            grid[:, j * (cols + 1): j * (cols + 1) + cols] = weights[i]
            ticks += [j * (cols + 1) + c for c in range(cols)]
            labels += source
            ax.text(j * (cols + 1) + (cols - 1) / 2, -0.7, f"head {i + 1}", ha="center",
                    fontsize=11)
            for r in range(rows):
                for c in range(cols):
                    w = float(weights[i, r, c])
                    if w >= 0.3:
                        text = "1" if w >= 0.95 else f"{w:.1f}".removeprefix("0")
                        ax.text(j * (cols + 1) + c, r, text, ha="center", va="center",
                                fontsize=11, color="white" if w > 0.75 else "black")
        ax.imshow(grid, cmap="Blues", vmin=0, vmax=1.25, aspect="auto")
        ax.set_xticks(ticks, labels, rotation=90, fontsize=11)
        ax.set_yticks(range(rows), predicted, fontsize=11)
        ax.tick_params(length=0)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        ax.set_ylabel("predicting", fontsize=11)
    fig.tight_layout(h_pad=1.5)
    return fig
