"""Numbers of the Rebuild page: how many steps, inputs and mistakes the practice checks have."""

from __future__ import annotations

import inspect


def values() -> dict[str, int]:
    from vanilla_transformer.cli.practice import DEFAULT_TIMEOUT
    from vanilla_transformer.practice import STARTERS, STEPS, catalogue
    from vanilla_transformer.practice._blocks import Attention
    from vanilla_transformer.practice._translator import check_translator

    numbers = inspect.signature(check_translator).parameters["count"].default
    return {
        "steps": len(STEPS),
        "files": len(STARTERS),
        "mistakes": len(catalogue()),
        "attention_inputs": len(Attention().cases(0)),
        "numbers": numbers,
        "timeout": round(DEFAULT_TIMEOUT),
    }
