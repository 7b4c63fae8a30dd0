"""Numbers of the Masks lesson: one query's softmax with and without the padding mask, and the
trained translator's decoder self-attention with and without the target mask. The same
computations as the lesson's figures (docs/figures/masks_*.py) and code.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

FIGURES = Path("docs/figures")


def values() -> dict[str, Any]:
    softmax = runpy.run_path(str(FIGURES / "masks_softmax.py"))
    _, scores, keep = softmax["query_scores"]()
    w = softmax["weights"]()
    pad = ~keep
    translator = runpy.run_path(str(FIGURES / "masks_translator.py"))
    free = translator["translator_weights"](unmasked=True)
    first = free["dec"][0][0, 0]  # layer 1, head 1, sentence 1: (query, key)
    return {
        "n_pad": int(pad.sum()),
        "top_pad_score": float(scores[pad].max()),
        "real_score_five": float(scores[0]),
        "real_score_eos": float(scores[1]),
        "free_on_pad": float(w["free"][pad].sum()),
        "masked_five": float(w["masked"][0]),
        "masked_eos": float(w["masked"][1]),
        "future_first": float(first[0, 1:].sum()),
        "future_first_token": free["tgt"][0][2].lstrip("▁"),
        "future_first_on_token": float(first[0, 2]),
    }
