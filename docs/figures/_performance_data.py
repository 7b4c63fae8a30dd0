"""Shared loader for the performance figures: the committed benchmark results, never rerun."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "performance.json"
LABELS = {"fast": "package, fast path", "reference": "package, reference path", "torch": "nn.Transformer"}
COLOURS = {"fast": "#3b7dd8", "reference": "#9cc9ef", "torch": "#f28e2b"}


def load() -> dict:
    return json.loads(RESULTS.read_text())
