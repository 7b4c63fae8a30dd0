"""Rebuild it yourself: check your own implementation of each part of the Transformer against
the package's, step by step, up to a translator of your own.

[`check`][vanilla_transformer.practice.check] runs your function or class on many seeded inputs
(random shapes and batch sizes, masks with padding, fully masked rows, float64 where the dtype
matters) and compares it with the package's reference. On a failure the message gives the
smallest input that shows the difference, the first value that differs (expected and got), the
first stage that differs for a step with stages, and, when your output is a classic mistake's,
the mistake's name and its fix. The last step, `translator`, loads the site's trained weights
into your own model and translates numbers with your own greedy decoding.

[`write_starters`][vanilla_transformer.practice.write_starters] writes one starter file per
step (`vanilla-transformer practice start DIR` on the command line). The walk-through is the
*Rebuild it yourself* page of the Learn path.

This sub-package sits above `model/`, `training/` and `inference/`; nothing in the package
imports it.
"""

from __future__ import annotations

import os
from typing import Any

from ._blocks import Attention, EmbeddingsStep, LayerNormStep, SubsequentMask
from ._core import CheckResult, Mistake, Step, run_step, tensor_difference
from ._decoding import GreedyDecode
from ._feed_forward import FeedForward, PositionalEncodingStep
from ._heads import MultiHeadAttention
from ._layers import DecoderLayerStep, EncoderLayerStep, Sublayer
from ._loss import LabelSmoothingStep
from ._model import EncoderDecoderStep
from ._starters import STARTERS, load_file, write_starters
from ._translator import check_translator

__all__ = ["STEPS", "OBJECTS", "check", "catalogue", "CheckResult", "Mistake", "Step",
           "tensor_difference", "write_starters", "load_file", "STARTERS"]

_STEPS: list[Step] = [SubsequentMask(), Attention(), MultiHeadAttention(), FeedForward(),
                      PositionalEncodingStep(), EmbeddingsStep(), LayerNormStep(), Sublayer(),
                      EncoderLayerStep(), DecoderLayerStep(), EncoderDecoderStep(),
                      LabelSmoothingStep(), GreedyDecode()]

STEPS: tuple[str, ...] = (*(s.name for s in _STEPS), "translator")
"""The steps, in the order of the lessons; the last one is the payoff."""

OBJECTS: dict[str, str] = {**{s.name: s.obj for s in _STEPS}, "translator": "make_model, greedy_decode"}
"""The function or class each step checks, by step (what `practice check` looks up in a file)."""


def _step(name: object) -> Step | None:
    if not isinstance(name, str):
        raise TypeError(f"step must be a str, one of {', '.join(STEPS)}; got {type(name).__name__}")
    if name not in STEPS:
        raise ValueError(f"unknown step {name!r}; the steps are {', '.join(STEPS)}")
    return next((s for s in _STEPS if s.name == name), None)


def check(step: str, implementation: Any, *, seed: int = 0, quiet: bool = False,
          folder: str | os.PathLike[str] | None = None) -> CheckResult:
    """Check your implementation of one step against the package's, and print what was found.

    Args:
        step: one of [`STEPS`][vanilla_transformer.practice.STEPS], e.g. `"attention"`.
        implementation: your function (`subsequent_mask`, `attention`, `make_model`,
            `greedy_decode`), your class (`MultiHeadedAttention`, `LayerNorm`, ...: the class
            itself, not an instance), or, for `"translator"`, your module or any object with
            `make_model` and `greedy_decode`.
        seed: makes the inputs and the reference's weights; every seed gives other shapes.
        quiet: do not print the message.
        folder: for `"translator"`, the trained translator's folder or packaged name
            (default: `"numbers-de"`, the German translator that ships with the package).

    Returns:
        A [`CheckResult`][vanilla_transformer.practice._core.CheckResult] with `passed` and
        `message` (and, on a failure, the stage, the mistake and the smallest failing input).

    Raises:
        ValueError: for an unknown step, or no trained translator for `"translator"`.
        TypeError: if `step` is not a str.

    Example:
        >>> import torch
        >>> def subsequent_mask(size):  # a position cannot see itself: a classic mistake
        ...     return torch.ones(1, size, size, dtype=torch.bool).tril(-1)
        >>> result = check("subsequent_mask", subsequent_mask, quiet=True)
        >>> result.passed, result.mistake
        (False, 'the diagonal is off by one: a position cannot see itself')
    """
    found = _step(step)
    if found is None:
        result = check_translator(implementation, folder, seed)
    else:
        result = run_step(found, implementation, seed)
    if not quiet:
        print(result.message)
    return result


def catalogue() -> list[tuple[str, str, str]]:
    """Every classic mistake the steps recognise: `(step, name, fix)`, in the steps' order, each
    name once.

    Example:
        >>> next(name for step, name, _ in catalogue() if step == "embeddings")
        'no √d_model scale'
    """
    named = [(s.name, m.name, m.fix) for s in _STEPS for m in s.mistakes]
    return [m for i, m in enumerate(named) if m[:2] not in {n[:2] for n in named[:i]}]
