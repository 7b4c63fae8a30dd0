"""Shared by the figure scripts of the Learn the Transformer lessons (docs/figures/lesson_*.py).

Loaded with `runpy` (figure scripts are run by path, not imported): the trained translator's
folder, the batch of two pairs whose masks the Masks lesson draws, and a mask drawn
as a grid of allowed (1) and blocked (0) cells with tokens as ticks.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap

TRANSLATOR = Path(__file__).resolve().parents[1] / "assets" / "translator"
ALLOWED, BLOCKED = "#3060a8", "#e6e6e6"  # the dark scheme inverts both: light blue, dark grey
FONT = 11
PAIRS = [("four hundred and forty-one", "vierhunderteinundvierzig"), ("five", "fünf")]


def translator_batch():
    """The translator's piece names (id -> piece) and a `Batch` of `PAIRS` with its masks."""
    from vanilla_transformer.data import SharedTokenizer, collate_batch
    from vanilla_transformer.data.tokenizer import BOS, EOS, PAD

    tok = SharedTokenizer.load(TRANSLATOR / "tokenizer.json")
    batch = collate_batch([(tok.encode(e) + [EOS], tok.encode(g)) for e, g in PAIRS], PAD,
                          bos=BOS, eos=EOS)
    return tok.tokenizer.id_to_token, batch


def draw_mask(ax: plt.Axes, mask, xlabels, ylabels, title: str) -> None:
    """Draw a 2-D keep-mask (True = may attend) with its 1s and 0s written in the cells."""
    values = [[int(bool(v)) for v in row] for row in mask.tolist()]
    ax.imshow(values, cmap=ListedColormap([BLOCKED, ALLOWED]), vmin=0, vmax=1)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center", fontsize=FONT,
                    color="white" if v else "#555555")
    ax.set_xticks(range(len(xlabels)), xlabels, rotation=45, ha="right",
                  rotation_mode="anchor", fontsize=FONT)
    ax.set_yticks(range(len(ylabels)), ylabels, fontsize=FONT)
    ax.set_xticks([x - 0.5 for x in range(1, len(xlabels))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(ylabels))], minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.tick_params(which="minor", length=0)
    ax.set_title(title, fontsize=FONT)
