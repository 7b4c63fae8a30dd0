r"""Where the parameters of the paper's two model sizes are: stacked bars by component, for
`make_model`'s untied default (the Annotated Transformer's) and for the presets `paper-base` and
`paper-big` (tied, post-norm, no generator bias).

Every number comes from `parameter_count`, with the paper's shared vocabulary of 37000 tokens.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from vanilla_transformer import PRESETS
from vanilla_transformer.analysis import parameter_count
from vanilla_transformer.cli import PRESET_VOCAB

COLOURS = {
    "attention": "#f4a6a0",
    "feed_forward": "#9cc9ef",
    "layer_norm": "#c9c9c9",
    "src_embedding": "#b6dba3",
    "tgt_embedding": "#f9d3a8",
    "generator": "#cdb4e6",
}


def draw():
    v = PRESET_VOCAB
    bars = []
    for size in ("base", "big"):
        bars.append((f"{size}, untied\n(make_model default)", parameter_count(v, v, **PRESETS[size])))
        bars.append((f"paper-{size}: tied, post-norm,\nno generator bias",
                     parameter_count(v, v, **PRESETS[f"paper-{size}"])))
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    for row, (_, count) in enumerate(bars):
        left = 0.0
        for c in count.components:
            width = c.subtotal / 1e6
            ax.barh(row, width, left=left, color=COLOURS[c.name], edgecolor="white",
                    label=c.name if row == 0 else None)
            if width > 30:
                ax.text(left + width / 2, row, f"{width:.1f}", ha="center", va="center",
                        fontsize=10)
            left += width
        ax.text(left + 2, row, f"{count.total:,}", va="center", fontsize=10)
    ax.set_yticks(range(len(bars)), [label for label, _ in bars], fontsize=10)
    ax.invert_yaxis()
    ax.set_xlabel(f"trainable parameters (millions), vocabulary {v:,} shared")
    ax.set_xlim(0, max(c.total for _, c in bars) / 1e6 * 1.4)
    ax.legend(ncol=3, fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig
