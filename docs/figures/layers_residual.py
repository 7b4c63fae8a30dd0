"""The scale of the residual stream through a six-layer encoder of the base model's size, in the
paper's post-norm arrangement and in the pre-norm arrangement (freshly initialised, eval mode,
one batch of random tokens): the standard deviation of the encoder's activations after the
embedding and after each layer, before the pre-norm stack's final LayerNorm.
Explained on docs/learn/layers.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import PRESETS, make_model


def stream_scale(preset: str) -> list[float]:
    """Std of the embedding sum, then of the output of each encoder layer."""
    torch.manual_seed(0)
    model = make_model(1000, 1000, **PRESETS[preset]).eval()
    scales: list[float] = []
    for layer in model.encoder.layers:
        layer.register_forward_hook(lambda m, i, out: scales.append(out.std().item()))
    src = torch.randint(3, 1000, (2, 20))
    with torch.no_grad():
        x = model.src_embed(src)
        scales.insert(0, x.std().item())
        for layer in model.encoder.layers:
            x = layer(x, None)
    return scales


def draw() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(4.6, 2.9), layout="constrained")
    for preset, label, style, colour in (("base", "pre-norm", "o-", "#c8553d"),
                                         ("paper-base", "post-norm (the paper)", "s--",
                                          "#3060a8")):
        ax.plot(range(7), stream_scale(preset), style, label=label, color=colour)
    ax.set_xticks(range(7), ["embed", "1", "2", "3", "4", "5", "6"])
    ax.set_xlabel("encoder layer (output)", fontsize=11)
    ax.set_ylabel("std of the activations", fontsize=11)
    ax.set_ylim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=11, loc="upper left")
    ax.tick_params(labelsize=11)
    return fig
