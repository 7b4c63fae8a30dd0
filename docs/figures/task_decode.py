"""One pass through the trained translator, step by step: at each step the decoder reads the
German so far (the start token and the pieces already written, "shifted right") and the
generator picks the most probable next piece, which is appended, until the end token. Drawn
for "four hundred and forty-one" from docs/assets/translator/; the same loop as the task
lesson's code (docs/learn/task-and-architecture.md), with each chosen piece's probability.

`greedy_steps` is also used by task_translate.py and docs/numbers/task.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from vanilla_transformer import subsequent_mask
from vanilla_transformer.data.tokenizer import BOS, EOS
from vanilla_transformer.training.translation import load_translator

TRANSLATOR = Path(__file__).resolve().parents[1] / "assets" / "translator"
ENGLISH = "four hundred and forty-one"
FONT = 11
READ, WRITTEN = "#f2f2f2", "#f6c48f"  # inverted in the dark scheme: dark grey, dark orange
EDGE = "#7a7a7a"


def greedy_steps(english: str = ENGLISH) -> dict[str, Any]:
    """The English pieces, and for each step the German so far, the chosen piece and its
    probability."""
    model, tok = load_translator(TRANSLATOR)
    def name(i: int) -> str:
        return str(tok.tokenizer.id_to_token(i))

    src = torch.tensor([tok.encode(english) + [EOS]])
    steps = []
    with torch.no_grad():
        memory = model.encode(src, None)
        ys = torch.tensor([[BOS]])
        while ys[0, -1] != EOS:
            out = model.decode(memory, None, ys, subsequent_mask(ys.size(1)))
            probs = model.generator(out[:, -1]).exp()[0]  # the generator gives log-probabilities
            next_id = int(probs.argmax())
            steps.append(([name(i) for i in ys[0].tolist()], name(next_id), float(probs[next_id])))
            ys = torch.cat([ys, torch.tensor([[next_id]])], dim=1)
    return {"english": [name(i) for i in src[0].tolist()], "steps": steps,
            "german": tok.decode(ys[0, 1:-1].tolist())}


def piece(ax: Axes, x: float, y: float, text: str, fill: str, width: float) -> None:
    ax.add_patch(FancyBboxPatch((x, y - 0.15), width, 0.3, boxstyle="round,pad=0.02",
                                facecolor=fill, edgecolor=EDGE, linewidth=0.8))
    ax.text(x + width / 2, y, text, ha="center", va="center", fontsize=FONT)


def piece_width(text: str) -> float:
    return 0.16 + 0.08 * len(text)


def draw() -> Figure:
    result = greedy_steps()
    steps = result["steps"]
    assert isinstance(steps, list)
    width, row = 4.6, 0.44
    height = row * len(steps) + 0.3
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    ax.text(0.05, height - 0.15, "decoder reads", fontsize=FONT, va="center")
    ax.text(3.2, height - 0.15, "writes, probability", fontsize=FONT, va="center")
    for i, (so_far, chosen, p) in enumerate(steps):
        y = height - 0.5 - i * row
        x = 0.05
        for text in so_far:
            w = piece_width(text)
            piece(ax, x, y, text, READ, w)
            x += w + 0.06
        ax.add_patch(FancyArrowPatch((x + 0.02, y), (3.15, y), arrowstyle="-|>", mutation_scale=10,
                                     color="#555555", linewidth=1))
        piece(ax, 3.2, y, chosen, WRITTEN, piece_width(chosen))
        ax.text(3.26 + piece_width(chosen), y, f"{p:.2f}", fontsize=FONT, va="center")
    return fig
