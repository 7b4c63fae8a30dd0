"""Greedy decoding, step by step: the trained translator's three most probable next pieces at
each step while it translates "four hundred and forty-one", with their probabilities. The
chosen piece (the most probable) is appended to the target and fed back in.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import padding_mask, subsequent_mask
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.training.translation import load_translator

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
ENGLISH = "four hundred and forty-one"


def steps(k: int = 3) -> list[tuple[str, list[tuple[str, float]]]]:
    """(target so far, [(piece, probability)] of the k best next pieces) for each step."""
    model, tok = load_translator(COMMON["TRANSLATOR"])
    name = tok.tokenizer.id_to_token
    src = torch.tensor([tok.encode(ENGLISH) + [EOS]])
    mask = padding_mask(src, PAD)
    ys, out = torch.tensor([[BOS]]), []
    with torch.no_grad():
        memory = model.encode(src, mask)
        while ys[0, -1] != EOS:
            states = model.decode(memory, mask, ys, subsequent_mask(ys.size(1)))
            top = model.generator(states[:, -1]).exp()[0].topk(k)
            prefix = " ".join(name(i) for i in ys[0].tolist())
            out.append((prefix, [(name(i), p) for p, i in
                                 zip(top.values.tolist(), top.indices.tolist())]))
            ys = torch.cat([ys, top.indices[:1].view(1, 1)], dim=1)
    return out


def draw() -> plt.Figure:
    data = steps()
    fig, axes = plt.subplots(len(data), 1, figsize=(6.4, 1.45 * len(data)),
                             layout="constrained", sharex=True)
    for t, (ax, (prefix, best)) in enumerate(zip(axes, data), start=1):
        pieces = [piece for piece, _ in best][::-1]
        probs = [p for _, p in best][::-1]
        colours = ["#bbbbbb"] * (len(best) - 1) + ["#3060a8"]
        ax.barh(range(len(best)), probs, color=colours)
        ax.set_yticks(range(len(best)), pieces, fontsize=11)
        for y, p in enumerate(probs):
            ax.text(p + 0.01, y, f"{p:.3f}", va="center", fontsize=11)
        ax.set_title(f"step {t}: after  {prefix}", fontsize=11, loc="left")
        ax.set_xlim(0, 1.12)
        ax.tick_params(labelsize=11)
    axes[-1].set_xlabel("probability of the next piece", fontsize=11)
    return fig
