"""Numbers of the Layers lesson: the worked example of one post-norm sublayer, the scale of the
residual stream in a pre-norm encoder, the trained translator's feed-forward network, and the
big model's feed-forward parameters. The same computations as the lesson's figures
(docs/figures/layers_*.py) and code.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

FIGURES = Path("docs/figures")


def _listed(values: list[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def values() -> dict[str, Any]:
    from vanilla_transformer import PositionwiseFeedForward

    example = runpy.run_path(str(FIGURES / "layers_layernorm.py"))["worked_example"]()
    scales = runpy.run_path(str(FIGURES / "layers_residual.py"))["stream_scale"]("base")
    _, hidden = runpy.run_path(str(FIGURES / "layers_ffn.py"))["hidden"]()
    active = (hidden > 0).sum(dim=-1).tolist()
    model = json.loads(Path("docs/assets/translator/manifest.json").read_text())["model"]
    big = sum(p.numel() for p in PositionwiseFeedForward(1024, 4096).parameters())
    out = {f"out_{i + 1}": v for i, v in enumerate(example["out"])}
    return {
        **out,
        "sublayer_text": _listed(example["sublayer"]),
        "sum_text": _listed(example["sum"]),
        "sum_mean": example["sum_mean"],
        "sum_std": example["sum_std"],
        "pre_last": scales[-1],
        "tr_d_model": model["d_model"],
        "tr_d_ff": model["d_ff"],
        "ffn_min_on": min(active),
        "ffn_max_on": max(active),
        "big_ffn": big,
        "big_ffn_twelve_millions": 12 * big / 1e6,
    }
