"""The model's architecture, drawn from a real `make_model` model with its default hyperparameters.

Every label comes from the built model: class names from the modules, the number of layers from
`len(model.encoder.layers)`, widths from the weight shapes, and which module each residual
sublayer connection wraps from the call order recorded by `trace_shapes` on one forward pass.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from vanilla_transformer import make_model, subsequent_mask
from vanilla_transformer.analysis import trace_shapes

X_ENC, X_DEC, COLUMN_W = 0.15, 5.85, 5.0  # left edges and width of the two columns
VOCAB = 11  # the copy task's vocabulary; only the embedding and generator sizes depend on it

COLOURS = {
    "embed": "#fde9c9",
    "attn": "#fbd3d0",
    "ff": "#cfe8fb",
    "norm": "#e4f4d4",
    "stack": "#f4f4f4",
    "gen": "#e6ddf5",
    "io": "#ffffff",
}


def wrapped_modules(records, layer_path):
    """Pair each `sublayer.i` of a layer with the module it wraps, using the recorded call order."""
    pairs, current = [], None
    for r in records:
        if r.path.startswith(layer_path + ".sublayer.") and r.depth == layer_path.count(".") + 3:
            current = r.path.rsplit(".", 1)[-1]
        elif r.path.startswith(layer_path + ".") and r.depth == layer_path.count(".") + 2:
            if not r.path.endswith(".sublayer"):
                pairs.append((current, r.name, r.module))
    return pairs


def describe(module_name, module):
    """The real sizes of an attention or feed-forward module, as a short label."""
    if module_name == "MultiHeadedAttention":
        return f"h={module.h}, d_k={module.d_k}"
    if module_name == "PositionwiseFeedForward":
        d_ff = module.w_1.weight.shape[0]
        return f"d_ff={d_ff}"
    return ""


def box(ax, x, y, w, h, text, colour, *, size=10, weight="normal", ls="-"):
    ax.add_patch(
        FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                       fc=colour, ec="#333333", lw=1.0, ls=ls)
    )
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight)


def arrow(ax, start, end, *, colour="#333333", style="-|>", connection="arc3"):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, lw=1.2,
                                 color=colour, connectionstyle=connection))


def draw():
    torch.manual_seed(0)
    model = make_model(VOCAB, VOCAB).eval()
    src = torch.arange(1, 5).unsqueeze(0)
    records = trace_shapes(model, src, src, torch.ones(1, 1, 4), subsequent_mask(4))

    n_enc, n_dec = len(model.encoder.layers), len(model.decoder.layers)
    enc_layer, dec_layer = model.encoder.layers[0], model.decoder.layers[0]
    enc_pairs = wrapped_modules(records, "encoder.layers.0")
    dec_pairs = wrapped_modules(records, "decoder.layers.0")
    norm_name = type(enc_layer.sublayer[0].norm).__name__
    sub_name = type(enc_layer.sublayer[0]).__name__
    emb, pos = model.src_embed[0], model.src_embed[1]
    vocab, d_model = emb.lut.weight.shape

    fig, ax = plt.subplots(figsize=(8.6, 8.4))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 13.6)
    ax.axis("off")

    def column(x0, side, layer, pairs, n_layers):
        w = COLUMN_W
        embed = getattr(model, f"{side}_embed")
        box(ax, x0, 0.2, w, 0.55, f"{side} ids  (batch, {side}_len)", COLOURS["io"])
        box(ax, x0, 1.05, w, 0.55,
            f"{side}_embed[0]: {type(embed[0]).__name__}  x sqrt({embed[0].d_model})", COLOURS["embed"])
        box(ax, x0, 1.9, w, 0.55,
            f"{side}_embed[1]: {type(embed[1]).__name__}",
            COLOURS["embed"])
        arrow(ax, (x0 + w / 2, 0.75), (x0 + w / 2, 1.05))
        arrow(ax, (x0 + w / 2, 1.6), (x0 + w / 2, 1.9))
        # the stack of layers
        sub_h, gap = 1.45, 0.25
        stack_y = 2.8
        stack_h = len(pairs) * (sub_h + gap) + 0.55
        box(ax, x0 - 0.1, stack_y, w + 0.2, stack_h, "", COLOURS["stack"], ls="--")
        ax.text(x0 + 0.05, stack_y + stack_h - 0.28,
                f"{side[:3] == 'src' and 'encoder' or 'decoder'}.layers: {n_layers} x "
                f"{type(layer).__name__}",
                fontsize=11, weight="bold", va="center")
        arrow(ax, (x0 + w / 2, 2.45), (x0 + w / 2, stack_y + 0.15))
        centres = {}
        for i, (sub, name, cls) in enumerate(pairs):
            y = stack_y + 0.15 + i * (sub_h + gap)
            kind = "attn" if "Attention" in cls else "ff"
            box(ax, x0 + 0.05, y, w - 0.1, sub_h, "", "#ffffff")
            ax.text(x0 + 0.2, y + sub_h - 0.2, f"sublayer[{sub}]: {sub_name}",
                    fontsize=10, va="center", style="italic")
            module = getattr(layer, name)
            ax.text(x0 + w - 0.2, y + sub_h - 0.2, describe(cls, module), fontsize=10, va="center",
                    ha="right")
            box(ax, x0 + 0.15, y + 0.12, w - 0.3, 0.4, f"norm: {norm_name}", COLOURS["norm"], size=10)
            box(ax, x0 + 0.15, y + 0.65, w - 0.3, 0.42, f"{name}: {cls}", COLOURS[kind], size=10)
            arrow(ax, (x0 + w / 2, y + 0.52), (x0 + w / 2, y + 0.65))
            if i:
                arrow(ax, (x0 + w / 2, y - gap), (x0 + w / 2, y))
            centres[name] = (x0 + 0.15, y + 0.86)
        top = stack_y + stack_h
        stack_name = "encoder" if side == "src" else "decoder"
        stack = getattr(model, stack_name)
        box(ax, x0, top + 0.3, w, 0.5, f"{stack_name}.norm: {type(stack.norm).__name__}",
            COLOURS["norm"])
        arrow(ax, (x0 + w / 2, top), (x0 + w / 2, top + 0.3))
        return centres, top + 0.8

    enc_centres, enc_top = column(X_ENC, "src", enc_layer, enc_pairs, n_enc)
    dec_centres, dec_top = column(X_DEC, "tgt", dec_layer, dec_pairs, n_dec)

    # memory: the encoder output feeds every decoder layer's source attention
    src_attn_x, src_attn_y = dec_centres["src_attn"]
    arrow(ax, (X_ENC + COLUMN_W, enc_top - 0.25), (src_attn_x, src_attn_y), colour="#b03a2e",
          connection="arc3,rad=-0.25")
    ax.text(X_ENC + COLUMN_W / 2, enc_top + 0.25,
            "memory: read by every\ndecoder layer's src_attn",
            color="#b03a2e", fontsize=10, ha="center")

    gen = model.generator
    box(ax, X_DEC, dec_top + 0.3, COLUMN_W, 0.6,
        f"generator: {type(gen).__name__}  Linear({gen.proj.in_features}, {gen.proj.out_features})"
        "", COLOURS["gen"])
    arrow(ax, (X_DEC + COLUMN_W / 2, dec_top), (X_DEC + COLUMN_W / 2, dec_top + 0.3))
    box(ax, X_DEC, dec_top + 1.2, COLUMN_W, 0.5, "log-probabilities  (batch, tgt_len, tgt_vocab)",
        COLOURS["io"])
    arrow(ax, (X_DEC + COLUMN_W / 2, dec_top + 0.9), (X_DEC + COLUMN_W / 2, dec_top + 1.2))

    ax.set_ylim(0, dec_top + 2.0)
    ax.set_title(
        f"{type(model).__name__} built by make_model({vocab}, {vocab})\nN={n_enc}, d_model={d_model}, "
        f"positional table {tuple(pos.pe.shape)}",
        fontsize=11,
    )
    fig.tight_layout()
    return fig
