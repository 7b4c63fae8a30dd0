"""Numbers of the Attention lesson (docs/learn/attention.md).

The worked example comes from docs/figures/attention_projection.py, the file its figures draw
from; the spread of q·k and the softmax's gradient repeat the lesson's own code, seeded the same.
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import torch

from vanilla_transformer import attention

EXAMPLE = runpy.run_path(str(Path("docs/figures/attention_projection.py")))["example"]()


def worked_example() -> dict[str, float | str]:
    Q, K, V, tokens = EXAMPLE["Q"], EXAMPLE["K"], EXAMPLE["V"], EXAMPLE["tokens"]
    output, weights = attention(Q, K, V)
    one = EXAMPLE["query"]
    scaled = K @ Q[one] / math.sqrt(K.size(-1))
    values: dict[str, float | str] = {}
    for token, w, s in zip(tokens, weights[one].tolist(), scaled.tolist(), strict=True):
        values[f"w_{token}"] = w
        values[f"e_{token}"] = math.exp(s)
    values["e_sum"] = float(scaled.exp().sum())
    values["w_forty_unscaled"] = float((K @ Q[one]).softmax(dim=-1)[tokens.index("forty")])
    values["out_one"] = "(" + ", ".join(f"{v:.3f}" for v in output[one].tolist()) + ")"
    return values


def spread() -> dict[str, float]:
    torch.manual_seed(0)
    values = {}
    for d_k in (4, 64, 512):
        q, k = torch.randn(10_000, d_k), torch.randn(10_000, d_k)
        values[f"std_{d_k}"] = float((q * k).sum(dim=-1).std())
    return values


def gradient() -> dict[str, float]:
    torch.manual_seed(0)
    d_k = 512
    q, K = torch.randn(d_k), torch.randn(10, d_k)
    values = {}
    for name, divisor in (("scaled", math.sqrt(d_k)), ("unscaled", 1.0)):
        scores = K @ q / divisor
        jacobian = torch.autograd.functional.jacobian(  # type: ignore[no-untyped-call]
            lambda s: s.softmax(dim=-1), scores)
        values[f"top_{name}"] = float(scores.softmax(dim=-1).max())
        values[f"grad_{name}"] = float(jacobian.norm())
    return values


def values() -> dict[str, float | str]:
    return {**worked_example(), **spread(), **gradient()}
