"""Numbers of the parameter calculator guide, from the calculator itself."""

from __future__ import annotations

from typing import Any


def values() -> dict[str, Any]:
    from vanilla_transformer import PRESETS
    from vanilla_transformer.analysis import parameter_count

    paper = parameter_count(37000, 37000, **PRESETS["paper-base"]).total
    annotated = parameter_count(37000, 37000, **PRESETS["base"]).total
    return {"annotated_extra_millions": (annotated - paper) / 1e6}
