"""Numbers of the Getting started page: the small model's parameter count."""

from __future__ import annotations

from typing import Any


def values() -> dict[str, Any]:
    from vanilla_transformer import PRESETS
    from vanilla_transformer.analysis import parameter_count

    small = {**PRESETS["paper-base"], "N": 2, "d_model": 32, "d_ff": 64, "h": 4}
    parts = {part.name: part.subtotal for part in parameter_count(11, 11, **small).components}
    assert parts["tgt_embedding"] == parts["generator"] == 0  # tied: counted once
    return {"shared_embedding": parts["src_embedding"]}
