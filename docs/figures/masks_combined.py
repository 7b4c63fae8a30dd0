"""How the target mask of a real batch is made: for the shorter sentence ("fünf", decoder input
`<s> fünf </s> <pad>`), the padding mask repeated for every query, AND the subsequent mask, gives
`tgt_mask[1]`. Rows are queries, columns keys; 1 = may attend. Explained on docs/learn/masks.md.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from vanilla_transformer import padding_mask, subsequent_mask
from vanilla_transformer.data.tokenizer import PAD

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))

def draw() -> plt.Figure:
    name, batch = COMMON["translator_batch"]()
    tokens = [name(t) for t in batch.tgt[1].tolist()]
    n = len(tokens)
    pad = padding_mask(batch.tgt, PAD)[1].expand(n, n)  # (1, n) repeated for every query
    panels = [(pad, "padding"), (subsequent_mask(n)[0], "AND subsequent"),
              (batch.tgt_mask[1], "= tgt_mask[1]")]
    fig, axes = plt.subplots(1, 3, figsize=(4.7, 2.5), layout="constrained")
    for ax, (mask, title) in zip(axes, panels, strict=True):
        COMMON["draw_mask"](ax, mask, tokens, tokens, title)
    for ax in axes[1:]:  # the rows line up with the first panel's: positions 1 to n
        ax.set_yticks(range(n), [str(i + 1) for i in range(n)], fontsize=COMMON["FONT"])
    return fig
