"""Where the trained translator's decoder looks: the encoder-decoder attention (`src_attn`) of
the second (last) decoder layer, heads 1 and 4 (`draw_layer` draws any of them), while it
writes the German for 102,441, a number of the test split that training never saw. Rows are
the German pieces written (queries), columns the English pieces read (keys); each row sums
to 1. The model is docs/assets/translator/model.pt.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import keep_attention, padding_mask, subsequent_mask
from vanilla_transformer.data import number_words
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.inference import translate_sentences
from vanilla_transformer.training.translation import load_translator

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
NUMBER = 102_441


def cross_attention(number: int = NUMBER):
    """(weights (layers, h, tgt, src), German pieces written, English pieces read)."""
    model, tok = load_translator(COMMON["TRANSLATOR"])
    english = number_words(number)
    src = torch.tensor([tok.encode(english) + [EOS]])
    german = translate_sentences(model, tok, [english], beam_size=1)[0]
    ids = [BOS] + tok.encode(german) + [EOS]
    tgt = torch.tensor([ids[:-1]])  # reads <s> + pieces, writes pieces + </s>
    with torch.no_grad(), keep_attention(model):
        model(src, tgt, padding_mask(src, PAD), subsequent_mask(tgt.size(1)))
    weights = torch.stack([layer.src_attn.attn[0] for layer in model.decoder.layers])
    name = tok.tokenizer.id_to_token
    return weights, [name(i) for i in ids[1:]], [name(i) for i in src[0].tolist()]


def draw_layer(layer: int, heads: tuple[int, ...] = (0, 1, 2, 3)) -> plt.Figure:
    """Some heads (0-based) of one decoder layer (0-based), one under the other, every panel
    labelled with the German and the English pieces."""
    weights, rows, columns = cross_attention()
    fig, axes = plt.subplots(len(heads), 1, figsize=(4.7, 2.75 * len(heads) + 0.9),
                             layout="constrained")
    for head, ax in zip(heads, axes.flat, strict=True):
        ax.imshow(weights[layer, head], cmap="Blues", vmin=0, vmax=1, aspect="auto")
        ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=11, loc="left")
        ax.set_xticks(range(len(columns)), columns, rotation=60, ha="right",
                      rotation_mode="anchor", fontsize=11)
        ax.set_yticks(range(len(rows)), rows, fontsize=11)
    german = "".join(rows[:-1]).lstrip("▁")
    fig.suptitle(f"{number_words(NUMBER)}\n-> {german}\n"
                 "the stronger the colour, the more weight", fontsize=11)
    return fig


def draw() -> plt.Figure:
    return draw_layer(1, heads=(0, 3))  # heads 1 and 4 of the second (last) decoder layer
