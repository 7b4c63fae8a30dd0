"""Shared loader for the performance figures: the committed benchmark results, never rerun."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "performance.json"
LABELS = {
    "paper": "package, paper's recipe",
    "paper-ff-dropout": "paper's recipe + feed-forward dropout",
    "torch-post": "nn.Transformer post-norm",
    "torch-post-nodrop": "nn.Transformer post-norm, no dropout",
    "annotated": "package, Annotated recipe",
    "torch-pre": "nn.Transformer pre-norm",
}
COLOURS = {
    "paper": "#3b7dd8",
    "paper-ff-dropout": "#9cc9ef",
    "torch-post": "#f28e2b",
    "torch-post-nodrop": "#ffbe7d",
    "annotated": "#59a14f",
    "torch-pre": "#e15759",
}


def load() -> dict:
    return json.loads(RESULTS.read_text())
