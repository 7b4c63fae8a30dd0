"""Numbers of the task and architecture lesson (docs/learn/task-and-architecture.md): the shipped
translator's sizes, and what the lesson's figures draw from it (docs/figures/task_*.py)."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from vanilla_transformer.training.translation import load_translator

FIGURES = Path("docs/figures")


def values() -> dict[str, Any]:
    model, tokenizer = load_translator("docs/assets/translator")
    c = model.config
    assert c is not None
    decode = runpy.run_path(str(FIGURES / "task_decode.py"))["greedy_steps"]()
    probs = [p for _, _, p in decode["steps"]]
    weights, written, read = runpy.run_path(str(FIGURES / "task_alignment.py"))["cross_weights"]()
    return {
        "N": c.N, "d_model": c.d_model, "h": c.h, "d_ff": c.d_ff,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab": tokenizer.vocab_size,
        "english_pieces": len(decode["english"]) - 1,  # without the end token
        "german_pieces": len(decode["steps"]) - 1,
        "lowest_step_prob": min(probs), "highest_step_prob": max(probs),
        "ein_to_one": float(weights[written.index("ein"), read.index("one")]),
        "tens_to_forty": float(weights[written.index("undvierzig"), read.index("▁forty-")]),
    }
