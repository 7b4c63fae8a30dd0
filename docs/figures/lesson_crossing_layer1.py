"""The trained translator's encoder-decoder attention in its first decoder layer, head by head,
for the same sentence as docs/figures/lesson_crossing.py (which holds the code).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

CROSSING = runpy.run_path(str(Path(__file__).with_name("lesson_crossing.py")))


def draw() -> plt.Figure:
    return CROSSING["draw_layer"](0)
