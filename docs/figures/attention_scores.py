"""Step 1 of the Attention lesson's worked example: the query of "one" against each key.

Each row is one key of the example (attention_projection.py); the text after it multiplies the
query and the key component by component and adds the products, and the bar is that dot
product, the score.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

EXAMPLE = runpy.run_path(str(Path(__file__).with_name("attention_projection.py")))
FONT, CELL = EXAMPLE["FONT"], EXAMPLE["CELL"]


def scores() -> list[float]:
    ex = EXAMPLE["example"]()
    return (ex["K"] @ ex["Q"][ex["query"]]).tolist()


def draw() -> Figure:
    ex = EXAMPLE["example"]()
    tokens, q, K = ex["tokens"], ex["Q"][ex["query"]], ex["K"]
    number, grid = EXAMPLE["number"], EXAMPLE["grid"]
    fig, ax = EXAMPLE["canvas"](4.75, 2.05)
    x0, top = 0.8, 1.85
    grid(ax, [q.tolist()], x0, top, fill=EXAMPLE["QUERY_FILL"])
    ax.text(x0 - 0.08, top - CELL / 2, "query\nof one", ha="right", va="center", fontsize=FONT,
            linespacing=0.9)
    keys_top = top - CELL - 0.25
    grid(ax, K.tolist(), x0, keys_top, fill=EXAMPLE["KEY_FILL"], rows=tokens)
    ax.text(x0 + 2 * CELL, keys_top + 0.02, "keys", ha="center", va="bottom", fontsize=FONT)
    s = scores()
    scale = 0.2  # inches per unit of score
    for i, key in enumerate(K.tolist()):
        y = keys_top - (i + 0.5) * CELL
        terms = " + ".join(number(a * b) for a, b in zip(q.tolist(), key, strict=True))
        ax.text(x0 + 4 * CELL + 0.12, y, f"{terms} =", ha="left", va="center", fontsize=FONT)
        bar_x = x0 + 4 * CELL + 1.6
        ax.add_patch(Rectangle((bar_x, y - 0.09), scale * s[i], 0.18, facecolor="#5b8fd1"))
        ax.text(bar_x + scale * s[i] + 0.06, y, number(s[i]), ha="left", va="center",
                fontsize=FONT, fontweight="bold")
    ax.text(x0 + 4 * CELL + 1.6, keys_top + 0.02, "score q·k", ha="left", va="bottom",
            fontsize=FONT)
    return fig
