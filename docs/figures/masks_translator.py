"""The masks at work in the trained translator: attention weights of its first layer on the
lesson's batch. Top: encoder self-attention of the shorter sentence ("five" and four `<pad>`),
head 3; every query gives the padding keys a weight of zero. Bottom: decoder self-attention of
the longer sentence's target, head 1, with its target mask (nothing above the diagonal) and, for
comparison, run again with no mask at all: the early queries then read the pieces they are
meant to predict. Rows are queries, columns keys. Explained on docs/learn/masks.md.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import keep_attention

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
FONT = COMMON["FONT"]


def translator_weights(unmasked: bool = False) -> dict[str, object]:
    """Tokens and weights `(batch, h, query, key)` of each layer, on the lesson's batch.

    `unmasked=True` runs the decoder with a target mask that blocks nothing.
    """
    from vanilla_transformer.training.translation import load_translator

    name, batch = COMMON["translator_batch"]()
    model, _ = load_translator(COMMON["TRANSLATOR"])
    with torch.no_grad(), keep_attention(model):
        tgt_mask = torch.ones_like(batch.tgt_mask) if unmasked else batch.tgt_mask
        model(batch.src, batch.tgt, batch.src_mask, tgt_mask)
    return {"src": [[name(t) for t in row] for row in batch.src.tolist()],
            "tgt": [[name(t) for t in row] for row in batch.tgt.tolist()],
            "enc": [layer.self_attn.attn for layer in model.encoder.layers],
            "dec": [layer.self_attn.attn for layer in model.decoder.layers],
            "cross": [layer.src_attn.attn for layer in model.decoder.layers]}


def _heatmap(ax: plt.Axes, weights: torch.Tensor, keys: list[str], queries: list[str],
             title: str, fmt: str = "{:.2f}") -> None:
    ax.imshow(weights.tolist(), cmap="Blues", vmin=0, vmax=1)
    for i, row in enumerate(weights.tolist()):
        for j, w in enumerate(row):
            ax.text(j, i, fmt.format(w), ha="center", va="center", fontsize=FONT,
                    color="white" if w > 0.55 else "#333333")
    ax.set_xticks(range(len(keys)), keys, rotation=30, ha="right", rotation_mode="anchor",
                  fontsize=FONT)
    ax.set_yticks(range(len(queries)), queries, fontsize=FONT)
    ax.set_title(title, fontsize=FONT, loc="left")


def draw() -> plt.Figure:
    w, free = translator_weights(), translator_weights(unmasked=True)
    fig = plt.figure(figsize=(4.6, 6.2), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[5.2, 4])
    ax = top.subplots()
    _heatmap(ax, w["enc"][0][1, 2], w["src"][1], w["src"][1],
             "encoder, layer 1, head 3, src_mask")
    ax.set_ylabel("query", fontsize=FONT)
    axes = bottom.subplots(1, 2)
    tokens = [t.replace("undvierzig", "und-\nvierzig") for t in w["tgt"][0]]
    _heatmap(axes[0], w["dec"][0][0, 0], tokens, tokens, "decoder, head 1,\ntgt_mask", "{:.1f}")
    _heatmap(axes[1], free["dec"][0][0, 0], tokens, tokens, "the same,\nno mask", "{:.1f}")
    axes[1].set_yticks(range(len(tokens)), [str(i + 1) for i in range(len(tokens))],
                       fontsize=FONT)  # the same rows as the left panel's
    axes[0].set_ylabel("query", fontsize=FONT)
    return fig
