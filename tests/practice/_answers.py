"""Loading the full set of correct answers in `solutions/`, as a learner's folder holds them."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from vanilla_transformer.practice import load_file

SOLUTIONS = Path(__file__).resolve().parent / "solutions"


def answer(step: str) -> ModuleType:
    """The module of `solutions/<step>.py`, loaded afresh (with fresh sibling modules)."""
    return load_file(SOLUTIONS / f"{step}.py")
