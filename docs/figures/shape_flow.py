"""Tensor shapes through the encoder and the decoder, measured by `trace_shapes` on one forward
pass of `make_model(11, 11, N=2)` over a copy-task batch from `data_gen`.

The batch has 2 sequences, the source 10 tokens and the decoder input 9 (the target without its
last token), so every axis in the figure has a different size. Each box is as wide as the last
axis of the tensor it produces, to scale, so the feed-forward hidden width stands out.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from vanilla_transformer import data_gen, make_model
from vanilla_transformer.analysis import trace_shapes

COLOURS = {
    "Embeddings": "#fde9c9",
    "PositionalEncoding": "#fde9c9",
    "MultiHeadedAttention": "#fbd3d0",
    "Linear": "#cfe8fb",
    "EncoderLayer": "#eeeeee",
    "DecoderLayer": "#eeeeee",
    "LayerNorm": "#e4f4d4",
    "Generator": "#e6ddf5",
    "input": "#ffffff",
}


def shape_text(shape):
    return "(" + ", ".join(map(str, shape)) + ")"


def wanted(path):
    """The records to draw: embeddings, layer 0 in detail, every layer's output, final norms."""
    parts = path.split(".")
    if path in ("src_embed.0", "src_embed.1", "tgt_embed.0", "tgt_embed.1",
                "encoder.norm", "decoder.norm", "generator"):
        return True
    if len(parts) == 3 and parts[1] == "layers":
        return True
    if len(parts) >= 4 and parts[1] == "layers" and parts[2] == "0":
        rest = ".".join(parts[3:])
        return rest in ("self_attn", "src_attn", "feed_forward.w_1", "feed_forward.w_2")
    return False


def draw():
    torch.manual_seed(0)
    model = make_model(11, 11, N=2).eval()
    batch = next(data_gen(11, batch_size=2, nbatches=1, seed=0))
    records = trace_shapes(model, batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
    memory = model.encode(batch.src, batch.src_mask)
    records += trace_shapes(model, model.decode(memory, batch.src_mask, batch.tgt, batch.tgt_mask),
                            fn=model.generator, max_depth=1)
    d_ff = model.encoder.layers[0].feed_forward.w_1.out_features

    columns = {
        "encoder": [("src ids", "input", tuple(batch.src.shape))],
        "decoder": [("tgt ids (decoder input)", "input", tuple(batch.tgt.shape))],
    }
    pending = {"encoder": None, "decoder": None}
    for r in records:
        if not wanted(r.path):
            continue
        side = "encoder" if r.path.startswith(("src_embed", "encoder")) else "decoder"
        # a layer's record opens before its children's; draw its output after them
        layer = pending[side]
        if layer is not None and not r.path.startswith(layer[0] + "."):
            columns[side].append(layer)
            pending[side] = None
        if r.module in ("EncoderLayer", "DecoderLayer"):
            pending[side] = (r.path, r.module, r.output)
        else:
            columns[side].append((r.path, r.module, r.output))

    rows = max(len(v) for v in columns.values())
    fig, ax = plt.subplots(figsize=(8.6, 0.75 * rows + 1.9))
    ax.set_xlim(0, 11)
    ax.set_ylim(-1.3, rows + 0.2)
    ax.axis("off")
    scale = 4.2 / d_ff
    where = {}
    for x_centre, (side, items) in zip((2.75, 8.25), columns.items()):
        ax.text(x_centre, rows - 0.05, side, ha="center", fontsize=12, weight="bold")
        for i, (path, module, shape) in enumerate(items):
            y = rows - 1 - i
            width = max(shape[-1] * scale, 0.25)
            colour = COLOURS.get(module, "#ffffff")
            ax.add_patch(FancyBboxPatch((x_centre - width / 2, y - 0.2), width, 0.4,
                                        boxstyle="round,pad=0.01,rounding_size=0.05",
                                        fc=colour, ec="#333333", lw=0.8))
            label = path if module == "input" else f"{path}: {module}"
            ax.text(x_centre, y + 0.32, label, ha="center", va="center", fontsize=10)
            narrow = width < 1.6  # too narrow for its shape: write it on the right
            ax.text(x_centre + width / 2 + 0.08 if narrow else x_centre, y, shape_text(shape),
                    ha="left" if narrow else "center", va="center", fontsize=10, weight="bold")
            where[path] = (x_centre, y, width)
            if i:
                ax.add_patch(FancyArrowPatch((x_centre, y + 0.78), (x_centre, y + 0.45),
                                             arrowstyle="-|>", mutation_scale=8, lw=0.8,
                                             color="#555555"))
    # memory: the encoder output is the key and value of every decoder layer's source attention;
    # the arrow runs up the gap between the columns, clear of every box and label
    ex, ey, ew = where["encoder.norm"]
    dx, dy, dw = where["decoder.layers.0.src_attn"]
    gap = 5.5
    start = ex + ew / 2 + 1.3  # after the shape written to the right of the box
    ax.plot([start, gap, gap], [ey, ey, dy], color="#b03a2e", lw=1.2)
    ax.add_patch(FancyArrowPatch((gap, dy), (dx - dw / 2, dy), arrowstyle="-|>",
                                 mutation_scale=10, lw=1.2, color="#b03a2e"))
    ax.text(gap - 0.1, (ey + dy) / 2, "memory", color="#b03a2e", fontsize=10,
            ha="right", va="center", rotation=90)
    b, s = batch.src.shape
    t = batch.tgt.shape[1]
    ax.text(5.5, -0.75,
            f"batch = {b}, src_len = {s}, tgt_len = {t}, d_model = {memory.shape[-1]}, "
            f"d_ff = {d_ff}, vocab = {model.generator.proj.out_features}; "
            "\nlayers.1 repeats layer 0's inner shapes",
            ha="center", va="center", fontsize=10, style="italic")
    fig.tight_layout()
    return fig
