r"""Why the top candidate stops short of 1: label smoothing with eps = 0.1 trains the model
towards 1 - eps = 0.9 on the right piece, never towards 1.

Top: the probability of the most probable next piece at every greedy decoding step of the
translator this site ships (docs/assets/translator, dropout off, as the Try it page runs it),
for the first 200 numbers of its test split. Bottom: the copy task of the Training lesson
(`CopyTaskConfig(steps=300, batch_size=32, warmup=50)`, seed 0, one thread) trained twice,
with eps = 0.1 and with eps = 0, and the probability each gives the most probable piece at every
position of 100 held-out sequences. `top_probabilities` is also read by
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
from vanilla_transformer.data import heldout_sequences, number_words, split_numbers
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.training.translation import load_translator

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
RUNS = runpy.run_path(str(Path(__file__).with_name("_training_runs.py")))
NUMBERS, SEQUENCES = 200, 100
SMOOTHED, SHARP, LINE = "#3060a8", "#b35806", "#555555"


def translator_top() -> list[float]:
    """The top candidate's probability at each greedy step, over the test numbers (decoded
    as one batch; a row's steps after its end symbol are not counted)."""
    model, tok = load_translator(COMMON["TRANSLATOR"])
    numbers = sorted(split_numbers(seed=0)["test"])[:NUMBERS]
    rows = [tok.encode(number_words(n)) + [EOS] for n in numbers]
    width = max(len(row) for row in rows)
    src = torch.tensor([row + [PAD] * (width - len(row)) for row in rows])
    mask = padding_mask(src, PAD)
    ys = torch.full((len(rows), 1), BOS)
    running = torch.ones(len(rows), dtype=torch.bool)
    tops: list[float] = []
    with torch.no_grad():
        memory = model.encode(src, mask)
        while running.any() and ys.size(1) < 40:
            out = model.decode(memory, mask, ys, subsequent_mask(ys.size(1)))
            best = model.generator(out[:, -1]).exp().max(-1)
            tops += best.values[running].tolist()
            ys = torch.cat([ys, best.indices.unsqueeze(1)], dim=1)
            running &= best.indices != EOS
    return tops


def copy_top(smoothing: float) -> list[float]:
    """The top probability at every position of held-out sequences, after the copy task."""
    model = RUNS["copy_run"](smoothing).model.eval()
    src = heldout_sequences(SEQUENCES)
    with torch.no_grad():
        out = model(src, src[:, :-1], (src != 0).unsqueeze(-2),
                    subsequent_mask(src.size(1) - 1))
        return model.generator(out).exp().amax(-1).flatten().tolist()


def top_probabilities() -> dict[str, list[float]]:
    """The three sets of top probabilities the figure draws (computed once per build)."""
    return RUNS["once"]("top_probabilities", lambda: {
        "translator": translator_top(), "copy, eps 0.1": copy_top(0.1),
        "copy, eps 0": copy_top(0.0)})


def draw() -> plt.Figure:
    tops = top_probabilities()
    fig, axes = plt.subplots(2, 1, figsize=(4.7, 3.5), layout="constrained", sharex=True)
    bins = [0.8 + 0.005 * i for i in range(41)]
    clip = [min(max(p, 0.8), 1.0) for p in tops["translator"]]
    axes[0].hist(clip, bins=bins, color=SMOOTHED)
    axes[0].set_title("the shipped translator, every greedy step", fontsize=11, loc="left")
    for label, colour in (("copy, eps 0.1", SMOOTHED), ("copy, eps 0", SHARP)):
        values = [min(max(p, 0.8), 1.0) for p in tops[label]]
        axes[1].hist(values, bins=bins, color=colour, alpha=0.85,
                     label=label.replace("copy, eps", "trained with ε ="))
    axes[1].set_title("the copy task, held-out sequences", fontsize=11, loc="left")
    axes[1].legend(fontsize=11, frameon=False, loc="center left")
    axes[1].set_xlabel("probability of the top candidate", fontsize=11)
    for ax in axes:
        ax.axvline(0.9, color=LINE, lw=1, ls="--")
        ax.text(0.897, 0.97, "1 − ε", ha="right", va="top", fontsize=11, color=LINE,
                transform=ax.get_xaxis_transform())
        ax.set_xticks([0.8, 0.85, 0.9, 0.95, 1.0])
        ax.set_ylabel("count", fontsize=11)
        ax.set_xlim(0.8, 1.0)
        ax.tick_params(labelsize=11)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig
