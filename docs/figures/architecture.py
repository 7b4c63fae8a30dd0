"""The Transformer's architecture in the layout of the paper's Figure 1, drawn from a real model.

The model is `make_model` with the `paper-base` preset (post-norm, tied embeddings). What the
drawing shows is read from that model: the number of layers from `len(model.encoder.layers)`,
the sizes from the modules, which sublayers each layer has and whether its LayerNorm runs after
the residual addition (post-norm) or before the sublayer (pre-norm) from the order in which one
forward pass, recorded by `trace_shapes`, calls them. Explained on the lesson
docs/learn/task-and-architecture.md.
"""

from __future__ import annotations

from itertools import pairwise

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from vanilla_transformer import PRESETS, make_model, subsequent_mask
from vanilla_transformer.analysis import trace_shapes

VOCAB = 16  # any vocabulary: the drawing does not depend on it
WIDTH, BOX_W = 4.7, 1.35  # inches: the figure and a box
X_ENC, X_DEC = 1.35, 3.35  # centres of the two columns
FONT = 11

COLOURS = {
    "attn": "#fcdcc0",
    "ff": "#c9e7fb",
    "norm": "#f4f4c4",
    "embed": "#fbd3e0",
    "linear": "#dcd3f5",
    "softmax": "#cfeccf",
    "stack": "#ececec",
}
LABELS = {
    "self_attn": "Multi-Head\nAttention",
    "masked_self_attn": "Masked\nMulti-Head\nAttention",
    "src_attn": "Multi-Head\nAttention",
    "feed_forward": "Feed\nForward",
}


def layer_plan(records, layer_path: str) -> list[tuple[str, bool]]:
    """`(sublayer name, norm after it)` for each sublayer of one layer, in call order.

    The recorded forward pass calls, inside each `sublayer.i`, the wrapped module and the norm;
    post-norm calls the module first.
    """
    depth = layer_path.count(".") + 1
    plan, module = [], None
    for r in records:
        if not r.path.startswith(layer_path + "."):
            continue
        rest = r.path[len(layer_path) + 1:]
        if r.depth == depth + 1 and not rest.startswith("sublayer"):
            module = rest
        elif rest.startswith("sublayer.") and rest.endswith(".norm"):
            # the norm was called after the module (post-norm) iff the module came first
            plan.append((module, module is not None))
            module = None
        elif rest.startswith("sublayer.") and rest.count(".") == 1:
            module = None
    return plan


def box(ax, x, y, h, text, colour, *, w=BOX_W):
    ax.add_patch(FancyBboxPatch((x - w / 2, y), w, h, boxstyle="round,pad=0,rounding_size=0.06",
                                fc=colour, ec="#333333", lw=1.0))
    ax.text(x, y + h / 2, text, ha="center", va="center", fontsize=FONT, linespacing=1.05)


def arrow(ax, points, *, colour="#333333", head=True):
    """A polyline through `points`, with an arrow head at the end."""
    for a, b in pairwise(points[:-1]):
        ax.plot([a[0], b[0]], [a[1], b[1]], color=colour, lw=1.2, solid_capstyle="butt")
    ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>" if head else "-",
                                 mutation_scale=10, lw=1.2, color=colour, shrinkA=0, shrinkB=0))


def column(ax, x, y0, plan, side):
    """Draw one stack's layer upward from `y0`.

    Returns the stack's rectangle, the point its output leaves from, and the bottom and height of
    each sublayer's box by name.
    """
    heights = {"sub": 0.46, "ff": 0.42, "norm": 0.27}
    gap, pad = 0.2, 0.16
    blocks = []  # (kind, label, height, residual start?)
    for name, norm_after in plan:
        kind = "ff" if name == "feed_forward" else "attn"
        key = "masked_self_attn" if side == "dec" and name == "self_attn" else name
        if norm_after:
            h = heights["ff" if kind == "ff" else "sub"] + 0.16 * (LABELS[key].count("\n") - 1)
            blocks += [(kind, LABELS[key], h, name),
                       ("norm", "Add & Norm", heights["norm"], None)]
        else:
            blocks += [("norm", "Layer Norm", heights["norm"], name),
                       (kind, LABELS[key], heights["ff" if kind == "ff" else "sub"], None),
                       ("norm", "Add", heights["norm"], None)]
    total = pad * 2 + sum(b[2] for b in blocks) + gap * len(blocks)
    stack_w = BOX_W + 0.36
    ax.add_patch(FancyBboxPatch((x - stack_w / 2, y0), stack_w, total,
                                boxstyle="round,pad=0,rounding_size=0.12",
                                fc=COLOURS["stack"], ec="#555555", lw=1.0))
    y = y0 + pad + gap
    # the input enters at the bottom of the stack; each residual leaves from just below its block
    bottom = y0
    cursor = (x, bottom)
    branch = None
    positions = {}
    side_x = x - BOX_W / 2 - 0.13 if side == "enc" else x + BOX_W / 2 + 0.13
    for kind, label, h, starts in blocks:
        if starts is not None:
            branch = y - gap / 2
            arrow(ax, [cursor, (x, y)])
            ax.plot([x, side_x], [branch, branch], color="#333333", lw=1.2)
            positions[starts] = (y, h)
        else:
            arrow(ax, [cursor, (x, y)])
        box(ax, x, y, h, label, COLOURS[kind])
        if kind == "norm" and label != "Layer Norm":
            # the residual connection: around the sublayer into the addition
            edge = x - BOX_W / 2 if side == "enc" else x + BOX_W / 2
            arrow(ax, [(side_x, branch), (side_x, y + h / 2), (edge, y + h / 2)])
        cursor = (x, y + h)
        y += h + gap
    return (x - stack_w / 2, y0, stack_w, total), cursor, positions


def draw():
    torch.manual_seed(0)
    config = PRESETS["paper-base"]
    model = make_model(VOCAB, VOCAB, **config).eval()
    src = torch.arange(1, 5).unsqueeze(0)
    with torch.no_grad():
        records = trace_shapes(model, src, src, torch.ones(1, 1, 4, dtype=torch.bool),
                               subsequent_mask(4))
    enc_plan = layer_plan(records, "encoder.layers.0")
    dec_plan = layer_plan(records, "decoder.layers.0")
    n_enc, n_dec = len(model.encoder.layers), len(model.decoder.layers)
    attn = model.encoder.layers[0].self_attn
    d_model, d_ff = attn.h * attn.d_k, model.encoder.layers[0].feed_forward.w_1.out_features
    tied = model.generator.proj.weight is model.src_embed[0].lut.weight

    fig = plt.figure(figsize=(WIDTH, 7.9))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, 7.9)
    ax.axis("off")

    def inputs(x, label, pe_side):
        ax.text(x, 0.12, label, ha="center", va="center", fontsize=FONT)
        arrow(ax, [(x, 0.26), (x, 0.45)])
        box(ax, x, 0.45, 0.42, "Input\nEmbedding" if pe_side < 0 else "Output\nEmbedding",
            COLOURS["embed"])
        arrow(ax, [(x, 0.87), (x, 1.05)])
        ax.add_patch(Circle((x, 1.15), 0.1, fc="white", ec="#333333", lw=1.0))
        ax.text(x, 1.15, "+", ha="center", va="center", fontsize=FONT)
        # the positional encoding: a small sine beside the sum
        px = x + pe_side * 0.8
        ax.add_patch(Circle((px, 1.15), 0.14, fc="white", ec="#333333", lw=1.0))
        t = torch.linspace(-1, 1, 40)
        ax.plot(px + 0.1 * t, 1.15 + 0.07 * torch.sin(3.2 * t), color="#333333", lw=1.0)
        arrow(ax, [(px - pe_side * 0.14, 1.15), (x + pe_side * 0.1, 1.15)])
        ax.text(px, 1.33, "Positional\nEncoding", fontsize=FONT, va="bottom", ha="center",
                linespacing=1.05)
        return (x, 1.25)

    enc_in = inputs(X_ENC, "Inputs", -1)
    dec_in = inputs(X_DEC, "Outputs\n(shifted right)", +1)

    stack_y = 1.95
    dec_rect, dec_top, dec_pos = column(ax, X_DEC, stack_y, dec_plan, "dec")
    arrow(ax, [dec_in, (X_DEC, stack_y + 0.16 + 0.2)])
    # both stacks start at the same height, as in the paper's figure
    enc_rect, enc_top, _ = column(ax, X_ENC, stack_y, enc_plan, "enc")
    enc_y, enc_h = enc_rect[1], enc_rect[3]
    arrow(ax, [enc_in, (X_ENC, stack_y + 0.16 + 0.2)])
    ax.text(enc_rect[0] - 0.08, enc_y + enc_h / 2, f"{n_enc}×", ha="right", va="center",
            fontsize=FONT + 1, weight="bold")
    ax.text(dec_rect[0] + dec_rect[2] + 0.08, dec_rect[1] + dec_rect[3] / 2, f"{n_dec}×",
            ha="left", va="center", fontsize=FONT + 1, weight="bold")

    # memory: the encoder's output is the keys and values of every decoder layer's src_attn
    y_src, _ = dec_pos["src_attn"]
    top = enc_rect[1] + enc_rect[3]
    mid_x = (enc_rect[0] + enc_rect[2] + dec_rect[0]) / 2
    arrow(ax, [enc_top, (X_ENC, top + 0.18), (mid_x, top + 0.18), (mid_x, y_src - 0.1),
               (X_DEC - 0.3, y_src - 0.1), (X_DEC - 0.3, y_src)], colour="#b03a2e")
    arrow(ax, [(mid_x, y_src - 0.1), (X_DEC - 0.6, y_src - 0.1), (X_DEC - 0.6, y_src)],
          colour="#b03a2e")

    # the output side: Linear and Softmax
    y = dec_rect[1] + dec_rect[3] + 0.18
    arrow(ax, [dec_top, (X_DEC, y)])
    box(ax, X_DEC, y, 0.3, "Linear" + ("  (tied)" if tied else ""), COLOURS["linear"])
    arrow(ax, [(X_DEC, y + 0.3), (X_DEC, y + 0.48)])
    box(ax, X_DEC, y + 0.48, 0.3, "Softmax", COLOURS["softmax"])
    arrow(ax, [(X_DEC, y + 0.78), (X_DEC, y + 0.96)])
    ax.text(X_DEC, y + 1.06, "Output\nProbabilities", ha="center", va="bottom", fontsize=FONT)
    ax.text(X_ENC, top + 1.5, "paper-base", ha="center", va="bottom", fontsize=FONT,
            weight="bold")
    sizes = f"d_model = {d_model}\nh = {attn.h}, d_k = {attn.d_k}\nd_ff = {d_ff}"
    ax.text(X_ENC, top + 1.45, sizes,
            ha="center", va="top", fontsize=FONT)
    ax.set_ylim(0, y + 1.55)
    fig.set_size_inches(WIDTH, y + 1.55)
    return fig
