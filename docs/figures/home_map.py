"""The map that Home's mini translator draws once its model has loaded, drawn at build time so
that the page shows it before: the trained translator (docs/assets/translator/model.pt) writes
the German for "four hundred and forty-one", and the map is the cross-attention of its last
decoder layer averaged over the heads, as docs/javascripts/translator.js draws it on Home.
Rows are the German pieces written, columns the English pieces read; each row sums to 1.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import keep_attention, padding_mask, subsequent_mask
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.inference import translate_sentences
from vanilla_transformer.training.translation import load_translator

TRANSLATOR = Path(__file__).resolve().parents[1] / "assets" / "translator"
ENGLISH = "four hundred and forty-one"  # the mini translator's sentence
FONT = 11


def home_map() -> tuple[torch.Tensor, list[str], list[str], str]:
    """(weights (tgt, src), German pieces written, English pieces read, the German)."""
    model, tok = load_translator(TRANSLATOR)
    src = torch.tensor([tok.encode(ENGLISH) + [EOS]])
    german = translate_sentences(model, tok, [ENGLISH], beam_size=1)[0]
    ids = [BOS] + tok.encode(german) + [EOS]
    tgt = torch.tensor([ids[:-1]])  # reads <s> + pieces, writes pieces + </s>
    with torch.no_grad(), keep_attention(model):
        model(src, tgt, padding_mask(src, PAD), subsequent_mask(tgt.size(1)))
    weights = model.decoder.layers[-1].src_attn.attn[0].mean(0)
    def pieces(row: list[int]) -> list[str]:
        return [tok.tokenizer.id_to_token(i).lstrip("▁") for i in row]

    return weights, pieces(ids[1:]), pieces(src[0].tolist()), german


def draw() -> plt.Figure:
    weights, rows, columns, german = home_map()
    fig, ax = plt.subplots(figsize=(3.6, 3.3), layout="constrained")
    ax.imshow(weights, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for i, row in enumerate(weights.tolist()):
        for j, w in enumerate(row):
            ax.text(j, i, f"{w:.2f}".lstrip("0"), ha="center", va="center", fontsize=FONT,
                    color="white" if w > 0.5 else "#333333")
    ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=FONT)
    ax.set_yticks(range(len(rows)), rows, fontsize=FONT)
    ax.tick_params(length=0)
    ax.set_title(f"-> {german}", fontsize=FONT, loc="left")
    return fig
