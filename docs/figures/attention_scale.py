r"""Step 2 of the Attention lesson's worked example: the scores of the query of "one" divided by
$\sqrt{d_k} = 2$, as bars beside the scores they come from (attention_projection.py).
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

EXAMPLE = runpy.run_path(str(Path(__file__).with_name("attention_projection.py")))
FONT = EXAMPLE["FONT"]


def draw() -> Figure:
    ex = EXAMPLE["example"]()
    tokens, d_k = ex["tokens"], ex["K"].size(-1)
    scores = (ex["K"] @ ex["Q"][ex["query"]]).tolist()
    scaled = [s / math.sqrt(d_k) for s in scores]
    fig, ax = plt.subplots(figsize=(4.6, 2.0))
    xs = range(len(tokens))
    width = 0.38
    ax.bar([x - width / 2 for x in xs], scores, width, color="#a9cbee", edgecolor="#5b8fd1",
           label="score q·k")
    ax.bar([x + width / 2 for x in xs], scaled, width, color="#2f6db5",
           label=f"score ÷ √d_k = score ÷ {math.sqrt(d_k):g}")
    for x, a, b in zip(xs, scores, scaled, strict=True):
        ax.text(x - width / 2, a + 0.08, EXAMPLE["number"](a), ha="center", va="bottom",
                fontsize=FONT)
        ax.text(x + width / 2, b + 0.08, EXAMPLE["number"](b), ha="center", va="bottom",
                fontsize=FONT)
    ax.set_xticks(list(xs), tokens, fontsize=FONT)
    ax.set_ylim(0, max(scores) * 1.25)
    ax.set_yticks([])
    ax.set_xlabel("key", fontsize=FONT)
    ax.legend(fontsize=FONT, frameon=False, loc="lower left", bbox_to_anchor=(0, 1), ncol=1)
    ax.spines[["top", "right", "left"]].set_visible(False)
    fig.tight_layout()
    return fig
