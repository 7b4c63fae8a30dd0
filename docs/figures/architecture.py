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
    """A short label for an attention or feed-forward module, with its real sizes."""
    if module_name == "MultiHeadedAttention":
        return f"MultiHeadedAttention  h={module.h}, d_k={module.d_k}"
    if module_name == "PositionwiseFeedForward":
        d_ff, d_model = module.w_1.weight.shape
        return f"PositionwiseFeedForward  {d_model}->{d_ff}->{d_model}"
    return module_name


def box(ax, x, y, w, h, text, colour, *, size=8.5, weight="normal", ls="-"):
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

    fig, ax = plt.subplots(figsize=(11, 9.5))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 13.6)
    ax.axis("off")

    def column(x0, side, layer, pairs, n_layers):
        w = 4.6
        embed = getattr(model, f"{side}_embed")
        box(ax, x0, 0.2, w, 0.55, f"{side} ids  (batch, {side}_len)", COLOURS["io"])
        box(ax, x0, 1.05, w, 0.55,
            f"{side}_embed[0]: {type(embed[0]).__name__}  lut {tuple(embed[0].lut.weight.shape)}, "
            f"x sqrt({embed[0].d_model})", COLOURS["embed"])
        box(ax, x0, 1.9, w, 0.55,
            f"{side}_embed[1]: {type(embed[1]).__name__}  + pe, {type(embed[1].dropout).__name__}",
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
                fontsize=9.5, weight="bold", va="center")
        arrow(ax, (x0 + w / 2, 2.45), (x0 + w / 2, stack_y + 0.15))
        centres = {}
        for i, (sub, name, cls) in enumerate(pairs):
            y = stack_y + 0.15 + i * (sub_h + gap)
            kind = "attn" if "Attention" in cls else "ff"
            box(ax, x0 + 0.1, y, w - 0.2, sub_h, "", "#ffffff")
            ax.text(x0 + 0.2, y + sub_h - 0.2, f"sublayer[{sub}]: {sub_name}  (x + Dropout(f(norm(x))))",
                    fontsize=7.5, va="center", style="italic")
            box(ax, x0 + 0.3, y + 0.12, w - 0.6, 0.4, f"norm: {norm_name}", COLOURS["norm"], size=8)
            module = getattr(layer, name)
            box(ax, x0 + 0.3, y + 0.65, w - 0.6, 0.42, f"{name}: {describe(cls, module)}",
                COLOURS[kind], size=8)
            arrow(ax, (x0 + w / 2, y + 0.52), (x0 + w / 2, y + 0.65))
            if i:
                arrow(ax, (x0 + w / 2, y - gap), (x0 + w / 2, y))
            centres[name] = (x0 + 0.3, y + 0.86)
        top = stack_y + stack_h
        stack_name = "encoder" if side == "src" else "decoder"
        stack = getattr(model, stack_name)
        box(ax, x0, top + 0.3, w, 0.5, f"{stack_name}.norm: {type(stack.norm).__name__}",
            COLOURS["norm"])
        arrow(ax, (x0 + w / 2, top), (x0 + w / 2, top + 0.3))
        return centres, top + 0.8

    enc_centres, enc_top = column(0.3, "src", enc_layer, enc_pairs, n_enc)
    dec_centres, dec_top = column(6.1, "tgt", dec_layer, dec_pairs, n_dec)

    # memory: the encoder output feeds every decoder layer's source attention
    src_attn_x, src_attn_y = dec_centres["src_attn"]
    arrow(ax, (4.9, enc_top - 0.25), (src_attn_x, src_attn_y), colour="#b03a2e",
          connection="arc3,rad=-0.25")
    ax.text(0.3 + 2.3, enc_top + 0.25,
            "memory (batch, src_len, d_model): read by every decoder layer's src_attn",
            color="#b03a2e", fontsize=8.5, ha="center")

    gen = model.generator
    box(ax, 6.1, dec_top + 0.3, 4.6, 0.6,
        f"generator: {type(gen).__name__}  Linear({gen.proj.in_features}, {gen.proj.out_features})"
        f" + log_softmax", COLOURS["gen"])
    arrow(ax, (6.1 + 2.3, dec_top), (6.1 + 2.3, dec_top + 0.3))
    box(ax, 6.1, dec_top + 1.2, 4.6, 0.5, "log-probabilities  (batch, tgt_len, tgt_vocab)",
        COLOURS["io"])
    arrow(ax, (6.1 + 2.3, dec_top + 0.9), (6.1 + 2.3, dec_top + 1.2))

    ax.set_ylim(0, dec_top + 2.0)
    ax.set_title(
        f"{type(model).__name__} built by make_model({vocab}, {vocab}): N={n_enc}, d_model={d_model}, "
        f"positional table {tuple(pos.pe.shape)}",
        fontsize=11,
    )
    fig.tight_layout()
    return fig
