"""What training changes, in one picture: the probability the translator gives the right next
piece at each position of "four hundred and forty-one" -> "vierhunderteinundvierzig", all
positions scored in one pass (the decoder reads <s> and the right pieces before each one).
Three checkpoints of a run of the recipe kept for the Try it page (docs/assets/translator/steps/:
the untrained model, steps 100 and 400) and the translator this site ships (model.pt, the
average of its checkpoints at steps 800 to 1200). `right_piece_probs` is also read by
docs/numbers/training.py.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import padding_mask, subsequent_mask
from vanilla_transformer.data import SharedTokenizer
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.training.checkpoints import load_checkpoint

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
ENGLISH, GERMAN = "four hundred and forty-one", "vierhunderteinundvierzig"
MODELS = {"untrained": "steps/0000", "step 100": "steps/0100", "step 400": "steps/0400",
          "shipped model": "."}
COLOURS = ["#c6d5ea", "#8eacd5", "#5681bf", "#1f4a8a"]


def right_piece_probs() -> tuple[list[str], dict[str, list[float]]]:
    """(the pieces to write, model name -> the probability it gives each of them)."""
    folder = COMMON["TRANSLATOR"]
    tok = SharedTokenizer.load(folder / "tokenizer.json")
    src = torch.tensor([tok.encode(ENGLISH) + [EOS]])
    ids = [BOS] + tok.encode(GERMAN) + [EOS]
    tgt_in, tgt_out = torch.tensor([ids[:-1]]), torch.tensor(ids[1:])
    probs = {}
    for label, sub in MODELS.items():
        model, _ = load_checkpoint(folder / sub / "model.pt")
        with torch.no_grad():
            out = model(src, tgt_in, padding_mask(src, PAD), subsequent_mask(tgt_in.size(1)))
            p = model.generator(out).exp()[0]  # (positions, vocab), all at once
        probs[label] = p[torch.arange(len(tgt_out)), tgt_out].tolist()
    return [tok.tokenizer.id_to_token(i) for i in ids[1:]], probs


def draw() -> plt.Figure:
    pieces, probs = right_piece_probs()
    fig, ax = plt.subplots(figsize=(4.7, 2.8), layout="constrained")
    width = 0.8 / len(probs)
    for m, ((label, row), colour) in enumerate(zip(probs.items(), COLOURS, strict=True)):
        x = [i - 0.4 + width * (m + 0.5) for i in range(len(pieces))]
        ax.bar(x, row, width=width, color=colour, label=label)
    ax.set_xticks(range(len(pieces)), pieces, fontsize=11)
    ax.set_ylabel("probability of the right piece", fontsize=11)
    ax.set_xlabel("the piece to write at each position", fontsize=11)
    ax.set_ylim(0, 1.45)
    ax.set_yticks([0, 0.5, 1])
    ax.axhline(1, color="#888888", lw=0.8, ls=":")
    ax.tick_params(labelsize=11)
    ax.legend(fontsize=11, ncol=2, frameon=False, loc="upper center")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig
