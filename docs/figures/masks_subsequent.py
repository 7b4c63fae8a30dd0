"""The subsequent mask on the decoder input of a real target: "vierhunderteinundvierzig" cut into
the trained translator's pieces, behind the start symbol. Row i is the query at position i, the
columns are the keys; 1 = may attend. On the right, the piece each row must predict (the input
shifted one place left), which its own row cannot see. Explained on docs/learn/masks.md.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from vanilla_transformer import subsequent_mask

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
FONT = COMMON["FONT"]


def draw() -> plt.Figure:
    name, batch = COMMON["translator_batch"]()
    tokens = [name(t) for t in batch.tgt[0].tolist()]
    predicts = [name(t) for t in batch.tgt_y[0].tolist()]
    n = len(tokens)
    fig, ax = plt.subplots(figsize=(4.4, 3.3), layout="constrained")
    COMMON["draw_mask"](ax, subsequent_mask(n)[0], tokens, tokens, f"subsequent_mask({n})[0]")
    ax.set_xlabel("key (decoder input)", fontsize=FONT)
    ax.set_ylabel("query", fontsize=FONT)
    right = ax.secondary_yaxis("right")
    right.set_yticks(range(n), [f"→ {p}" for p in predicts], fontsize=FONT)
    right.tick_params(length=0)
    return fig
