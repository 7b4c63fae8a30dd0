"""The source padding mask of a real batch: two English numbers, right-padded to one length.

Each row is one sentence's mask, `(batch, 1, src_len)` with the size-1 axis dropped: 1 where the
key is a real token (may attend), 0 where it is padding. Tokens from the trained translator's
shared vocabulary (docs/assets/translator/tokenizer.json). Explained on docs/learn/masks.md.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))


def draw() -> plt.Figure:
    name, batch = COMMON["translator_batch"]()
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 2.9), layout="constrained")
    for i, ax in enumerate(axes):
        tokens = [name(t) for t in batch.src[i].tolist()]
        COMMON["draw_mask"](ax, batch.src_mask[i], tokens, ["any query"],
                            f"sentence {i + 1}: src_mask[{i}], shape (1, {len(tokens)})")
    return fig
