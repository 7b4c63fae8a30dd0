"""Greedy decoding, step by step: the trained translator's three most probable next pieces at
each step while it translates "one thousand, three hundred and eight" (a number of the test
split), with their probabilities. The most probable piece is appended to the target and fed
back in. At step 3 two pieces compete: "tausend" (the German "eintausend...") and "s" (the
start of "eins..."). `steps` is also what docs/numbers/decoding.py reads.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import padding_mask, subsequent_mask
from vanilla_transformer.data import number_words
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.training.translation import load_translator

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
NUMBER = 1308
CHOSEN, OTHER, CLOSE = "#3060a8", "#bbbbbb", "#b35806"


def steps(number: int = NUMBER, k: int = 3) -> list[tuple[str, list[tuple[str, float]]]]:
    """(target so far, [(piece, probability)] of the k best next pieces) for each step."""
    model, tok = load_translator(COMMON["TRANSLATOR"])
    name = tok.tokenizer.id_to_token
    src = torch.tensor([tok.encode(number_words(number)) + [EOS]])
    mask = padding_mask(src, PAD)
    ys, out = torch.tensor([[BOS]]), []
    with torch.no_grad():
        memory = model.encode(src, mask)
        while ys[0, -1] != EOS:
            states = model.decode(memory, mask, ys, subsequent_mask(ys.size(1)))
            top = model.generator(states[:, -1]).exp()[0].topk(k)
            prefix = " ".join(name(i) for i in ys[0].tolist())
            out.append((prefix, [(name(i), p) for p, i in
                                 zip(top.values.tolist(), top.indices.tolist(), strict=True)]))
            ys = torch.cat([ys, top.indices[:1].view(1, 1)], dim=1)
    return out


def draw() -> plt.Figure:
    data = steps()
    fig, axes = plt.subplots(len(data), 1, figsize=(4.65, 1.0 * len(data)),
                             layout="constrained", sharex=True)
    for t, (ax, (prefix, best)) in enumerate(zip(axes, data, strict=True), start=1):
        pieces = [piece for piece, _ in best][::-1]
        probs = [p for _, p in best][::-1]
        close = best[1][1] > 0.1  # a runner-up worth a look
        colours = [OTHER] * (len(best) - 1) + [CHOSEN]
        if close:
            colours[-2] = CLOSE
        ax.barh(range(len(best)), probs, color=colours)
        ax.set_yticks(range(len(best)), pieces, fontsize=11)
        for y, p in enumerate(probs):
            ax.text(p + 0.02, y, f"{p:.3f}", va="center", fontsize=11)
        after = prefix if len(prefix) <= 28 else "... " + prefix[-24:]
        ax.set_title(f"step {t}, after: {after}", fontsize=11, loc="left",
                     color=CLOSE if close else "black")
        ax.set_xlim(0, 1.25)
        ax.set_xticks([0, 0.5, 1])
        ax.tick_params(labelsize=11)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlabel("probability of the next piece", fontsize=11)
    return fig
