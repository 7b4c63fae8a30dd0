"""Why number words are a real translation task: the German says the units before the tens.
The trained translator's decoder finds the English it needs by cross-attention; each line joins
a German piece it wrote to an English piece it read, as thick as the weight of the last decoder
layer's cross-attention, averaged over its heads (weights under 0.1 are left out). Drawn for
"four hundred and forty-one" from docs/assets/translator/.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from vanilla_transformer import keep_attention, subsequent_mask
from vanilla_transformer.data.tokenizer import BOS, EOS
from vanilla_transformer.training.translation import load_translator

DECODE = runpy.run_path(str(Path(__file__).with_name("task_decode.py")))
FONT = DECODE["FONT"]
SHOWN = 0.1  # weights below this are not drawn


def cross_weights() -> tuple[torch.Tensor, list[str], list[str]]:
    """(weights (German pieces, English pieces) of the last decoder layer, averaged over its
    heads; German pieces written; English pieces read), the end tokens left out."""
    model, tok = load_translator(DECODE["TRANSLATOR"])

    def name(i: int) -> str:
        return str(tok.tokenizer.id_to_token(i))

    english = DECODE["ENGLISH"]
    src = torch.tensor([tok.encode(english) + [EOS]])
    german = DECODE["greedy_steps"](english)["german"]
    ids = [BOS, *tok.encode(german), EOS]
    tgt = torch.tensor([ids[:-1]])  # reads <s> + pieces, writes pieces + </s>
    with torch.no_grad(), keep_attention(model):
        model(src, tgt, None, subsequent_mask(tgt.size(1)))
    attn = model.decoder.layers[-1].src_attn.attn  # type: ignore[union-attr]
    assert isinstance(attn, torch.Tensor)
    weights = attn[0].mean(dim=0)  # (tgt, src)
    written = [name(i) for i in ids[1:-1]]
    read = [name(i) for i in src[0, :-1].tolist()]
    return weights[: len(written), : len(read)], written, read


def draw() -> Figure:
    weights, written, read = cross_weights()
    layers = len(load_translator(DECODE["TRANSLATOR"])[0].decoder.layers)
    width, height = 4.7, 2.0
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    piece, piece_width = DECODE["piece"], DECODE["piece_width"]

    def row(texts: list[str], y: float, fill: str) -> list[float]:
        widths = [piece_width(t) for t in texts]
        x = (width - sum(widths) - 0.12 * (len(texts) - 1)) / 2
        centres = []
        for t, w in zip(texts, widths, strict=True):
            piece(ax, x, y, t, fill, w)
            centres.append(x + w / 2)
            x += w + 0.12
        return centres

    top, bottom = 1.55, 0.35
    en = row(read, top, DECODE["READ"])
    de = row(written, bottom, DECODE["WRITTEN"])
    for i, x_de in enumerate(de):
        for j, x_en in enumerate(en):
            w = float(weights[i, j])
            if w >= SHOWN:
                ax.plot([x_de, x_en], [bottom + 0.16, top - 0.16], color="#2f6db5",
                        linewidth=0.5 + 8 * w, alpha=0.8, zorder=0)
    ax.text(0.05, top + 0.3, "English read", fontsize=FONT, va="center")
    ax.text(0.05, bottom - 0.3, f"German written (cross-attention of decoder layer {layers})",
            fontsize=FONT, va="center")
    return fig
