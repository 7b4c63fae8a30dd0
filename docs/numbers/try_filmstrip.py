"""Numbers of Try it's filmstrip (docs/figures/try_filmstrip.py, which defines them): the
first checkpoint whose cross-attention reads the unit before the tens, and what the
checkpoints around it write."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

FIGURE = Path("docs/figures/try_filmstrip.py")


def values() -> dict[str, Any]:
    figure = runpy.run_path(str(FIGURE))
    film = figure["frames"]()["frames"]
    marked = figure["marked_step"]()
    i = [f["step"] for f in film].index(marked)
    assert i > 0, "the untrained model cannot read the unit first"
    right_from = next(j for j, f in enumerate(film) if f["output"] == figure["GERMAN"])
    assert all(f["output"] == figure["GERMAN"] for f in film[right_from:])  # "from then on"
    return {
        "marked": marked,
        "before": film[i - 1]["step"],
        "before_output": film[i - 1]["output"],
        "marked_output": film[i]["output"],
        "marked_loss": film[i]["loss"],
        "before_loss": film[i - 1]["loss"],
        "frames": len(film),
        "right_from": film[right_from]["step"],
    }
