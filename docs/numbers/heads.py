"""Numbers of the Several heads lesson (docs/learn/heads.md), computed as its code computes them."""

from __future__ import annotations

import runpy

import torch
from torch.utils.flop_counter import FlopCounterMode

from vanilla_transformer import MultiHeadedAttention


def values() -> dict[str, object]:
    mha = MultiHeadedAttention(h=8, d_model=512)
    params = sum(p.numel() for p in mha.parameters())
    x = torch.randn(1, 10, 512)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        MultiHeadedAttention(h=8, d_model=512, fast=False)(x, x, x)

    cost = runpy.run_path("docs/figures/heads_cost.py")
    heads, counted = cost["HEADS"], cost["costs"]()
    _, predicted, weights = runpy.run_path("docs/figures/heads_translator.py")["source_attention"]()
    undvierzig = predicted.index("undvierzig")
    return {
        "params": params,
        "flops": counter.get_total_flops(),
        "cost_tokens": cost["TOKENS"],
        "cost_flops": counted["projections"][0] + counted["products"][0],
        "cost_h_min": heads[0],
        "cost_h_max": heads[-1],
        "scores_min": counted["scores"][0],
        "scores_max": counted["scores"][-1],
        # weight of head 3 (index 2) on "forty-" while predicting "undvierzig"
        "forty_weight": float(weights[2, undvierzig].max()),
    }
