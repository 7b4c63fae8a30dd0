"""Training, as a filmstrip: one sentence's cross-attention at every kept checkpoint of the
replayed run (docs/assets/translator/steps/NNNN/model.pt, the checkpoints of Try it's training
slider), beside that run's validation loss (docs/assets/translator/checkpoint_stats.json).

Every frame feeds the same right German pieces to the decoder (teacher forcing), so the frames
have the same rows and differ only in where each checkpoint looks: the cross-attention of the
last decoder layer, averaged over its heads. Under each frame's step: whether what that
checkpoint writes on its own (greedy decoding) is right. The last frame is the run's final
average of its last checkpoints.

"The units come before the tens" is defined on the map (`units_first`): the row that writes
the unit piece (*ein*) looks most at the English unit ("one"), and the row that writes the
tens piece (*undvierzig*) looks most at the English tens ("forty-"). German reads "one" before
"forty-", against the English order. The marked step (`marked_step`) is the first checkpoint
where that holds; docs/numbers/try_filmstrip.py writes it into the page's prose, and
tests/docs/test_explorer_extras.py computes it again.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "translator"
ENGLISH = "four hundred and forty-one"  # the page's default sentence
GERMAN = "vierhunderteinundvierzig"
UNIT = ("one", "ein")  # (English piece, German piece) of the units
TENS = ("forty-", "undvierzig")  # (English piece, German piece) of the tens
FONT = 11
HIGHLIGHT = "#c05000"  # the dark scheme inverts it to a light blue


def units_first(weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str]) -> bool:
    """Whether a cross-attention map (German rows, English columns) reads the unit first: the
    unit's German row looks most at the English unit and the tens' row at the English tens."""
    src = [p.lstrip("▁") for p in src_pieces]
    tgt = [p.lstrip("▁") for p in tgt_pieces]
    unit_row, tens_row = tgt.index(UNIT[1]), tgt.index(TENS[1])
    assert unit_row < tens_row  # German writes the unit first
    best = weights.argmax(-1).tolist()
    return best[unit_row] == src.index(UNIT[0]) and best[tens_row] == src.index(TENS[0])


@cache
def frames() -> dict[str, Any]:
    """Every checkpoint's step, folder, validation loss, greedy output, map and verdict."""
    from vanilla_transformer import keep_attention, padding_mask, subsequent_mask
    from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, SharedTokenizer
    from vanilla_transformer.inference import translate_sentences
    from vanilla_transformer.training.checkpoints import load_checkpoint

    manifest = json.loads((ASSETS / "manifest.json").read_text())
    stats = json.loads((ASSETS / "checkpoint_stats.json").read_text())["checkpoints"]
    tok = SharedTokenizer.load(ASSETS / "tokenizer.json")
    name = tok.tokenizer.id_to_token
    src = torch.tensor([tok.encode(ENGLISH) + [EOS]])
    ids = [BOS] + tok.encode(GERMAN) + [EOS]
    tgt = torch.tensor([ids[:-1]])  # reads <s> + pieces, writes pieces + </s>
    src_pieces = [name(i) for i in src[0].tolist()]
    tgt_pieces = [name(i) for i in ids[1:]]
    out = []
    for entry in manifest["training_steps"]:
        folder = entry["folder"].split("/")[1]
        model = load_checkpoint(ASSETS / entry["folder"] / "model.pt")[0].eval()
        with torch.no_grad(), keep_attention(model):
            model(src, tgt, padding_mask(src, PAD), subsequent_mask(tgt.size(1)))
        weights = model.decoder.layers[-1].src_attn.attn[0].mean(0)  # (tgt, src)
        output = translate_sentences(model, tok, [ENGLISH], beam_size=1)[0]
        out.append({"step": entry["step"], "folder": folder, "loss": stats[folder]["loss"],
                    "exact": stats[folder]["exact"], "output": output, "weights": weights,
                    "units_first": units_first(weights, src_pieces, tgt_pieces)})
    return {"frames": out, "src": [p.lstrip("▁") for p in src_pieces],
            "tgt": [p.lstrip("▁") for p in tgt_pieces]}


def marked_step() -> int:
    """The first checkpoint whose map reads the unit before the tens."""
    return next(f["step"] for f in frames()["frames"] if f["units_first"])


def draw() -> plt.Figure:
    data = frames()
    film, src, tgt = data["frames"], data["src"], data["tgt"]
    marked = marked_step()
    cols = 3  # frames per row
    rows = (len(film) + cols - 1) // cols
    fig = plt.figure(figsize=(4.8, 2.2 + 2.2 * rows), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[2.2, 2.2 * rows])

    ax = top.subplots()
    steps = [f["step"] for f in film]
    ax.plot(steps, [f["loss"] for f in film], "o-", color="#3060a8")
    ax.set_yscale("log")
    ax.axvline(marked, color=HIGHLIGHT, linestyle="--")
    ax.annotate("units first", (marked, max(f["loss"] for f in film)), xytext=(6, -4),
                textcoords="offset points", ha="left", va="top", color=HIGHLIGHT,
                fontsize=FONT)
    ax.set_xticks(steps, [str(s) for s in steps], fontsize=FONT, rotation=90)
    ax.tick_params(axis="y", labelsize=FONT)
    ax.set_xlabel("training step", fontsize=FONT)
    ax.set_ylabel("validation loss", fontsize=FONT)

    # each row of frames is one heatmap: the frames' columns side by side, a blank between
    width = len(src)
    cmap = plt.get_cmap("Blues").copy()
    cmap.set_bad(alpha=0)  # the blank columns show the page
    for r, ax in enumerate(bottom.subplots(rows, 1)):
        shown = film[r * cols:(r + 1) * cols]
        image = torch.full((len(tgt), len(shown) * (width + 1) - 1), float("nan"))
        ticks, labels = [], []
        for c, frame in enumerate(shown):
            x0 = c * (width + 1)
            image[:, x0:x0 + width] = frame["weights"]
            ticks += range(x0, x0 + width)
            labels += src
            marked_here = frame["step"] == marked
            outline = Rectangle((x0 - 0.5, -0.5), width, len(tgt), fill=False,
                                edgecolor=HIGHLIGHT if marked_here else "#888888",
                                linewidth=3 if marked_here else 0.8)
            outline.set_gid(f"filmstrip-frame-{frame['folder']}" + ("-marked" if marked_here else ""))
            ax.add_patch(outline)
            verdict = "right" if frame["output"] == GERMAN else "wrong"
            ax.text(x0 - 0.5, -0.7, f"step {frame['step']}\n{verdict}", fontsize=FONT,
                    ha="left", va="bottom", color=HIGHLIGHT if marked_here else "black")
        ax.imshow(image, cmap=cmap, vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(ticks, labels, rotation=90, fontsize=FONT)
        ax.set_yticks(range(len(tgt)), tgt, fontsize=FONT)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
    return fig
