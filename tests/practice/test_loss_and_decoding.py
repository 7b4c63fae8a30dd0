"""The label-smoothing and greedy-decoding steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer.inference.greedy import greedy_decode
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.practice import check
from vanilla_transformer.training.loss import LabelSmoothing

from ._answers import answer


def test_the_references_pass() -> None:
    assert check("label_smoothing", LabelSmoothing, quiet=True).passed
    assert check("greedy_decode", greedy_decode, quiet=True).passed


def test_the_correct_answers_pass() -> None:
    assert check("label_smoothing", answer("label_smoothing").LabelSmoothing, quiet=True).passed
    assert check("greedy_decode", answer("greedy_decode").greedy_decode, quiet=True).passed


# ---------------------------------------------------------------- label smoothing
class Smoothing(nn.Module):
    """A label smoothing whose details are set by the subclasses below."""

    over = 2  # smoothing / (size - over)
    zero_column = True
    zero_rows = True
    label_gets = "confidence"
    reduction = "sum"

    def __init__(self, size: int, padding_idx: int, smoothing: float = 0.0) -> None:
        super().__init__()
        self.size, self.padding_idx, self.smoothing = size, padding_idx, smoothing
        self.criterion = nn.KLDivLoss(reduction=self.reduction)
        self.true_dist: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        dist = x.new_full(x.shape, self.smoothing / (self.size - self.over))
        label = 1.0 - self.smoothing if self.label_gets == "confidence" else 1.0
        if self.label_gets == "added":
            dist.scatter_add_(1, target.unsqueeze(1), torch.full((x.size(0), 1), label))
        else:
            dist.scatter_(1, target.unsqueeze(1), label)
        if self.zero_column:
            dist[:, self.padding_idx] = 0
        if self.zero_rows:
            rows = torch.nonzero(target == self.padding_idx)
            if rows.numel():
                dist.index_fill_(0, rows.squeeze(1), 0.0)
        self.true_dist = dist
        return self.criterion(x, dist)


class OverV(Smoothing):
    over = 0


class OverVMinusOne(Smoothing):
    over = 1


class PaddingRowsKept(Smoothing):
    zero_rows = False


class PaddingColumnKept(Smoothing):
    zero_column = False


class LabelGetsOne(Smoothing):
    label_gets = "one"


class Averaged(Smoothing):
    reduction = "batchmean"


class LabelGetsItsShareToo(Smoothing):  # not catalogued
    label_gets = "added"


# ---------------------------------------------------------------- greedy decoding
def _greedy(*, stop: bool = True, pad_after: bool = True, break_early: bool = True,
            position: int = -1, first_row: bool = False, target_mask: bool = True,
            keep_start: bool = True) -> Callable[..., torch.Tensor]:
    @torch.no_grad()
    def decode(model: Any, src: torch.Tensor, src_mask: torch.Tensor, max_len: int,
               start_symbol: int, *, end_symbol: int | None = None,
               pad_symbol: int | None = None) -> torch.Tensor:
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), start_symbol, dtype=src.dtype)
        done = torch.zeros(src.size(0), dtype=torch.bool)
        fill = pad_symbol if pad_symbol is not None else end_symbol
        for _ in range(max_len - 1):
            mask = subsequent_mask(ys.size(1)) if target_mask else None
            out = model.decode(memory, src_mask, ys, mask)
            next_word = model.generator(out[:, position]).argmax(dim=-1)
            if first_row:  # the Annotated Transformer's batch-of-one habit
                next_word = torch.full_like(next_word, int(next_word[0]))
            if stop and end_symbol is not None:
                if pad_after:
                    next_word = next_word.masked_fill(done, fill)
                done |= next_word == end_symbol
            ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
            if stop and break_early and end_symbol is not None and done.all():
                break
        return ys if keep_start else ys[:, 1:]

    return decode


CATALOGUED: list[tuple[str, Any, str]] = [
    ("label_smoothing", OverV, "ε spread over V classes instead of V − 2"),
    ("label_smoothing", OverVMinusOne, "ε spread over V − 1 classes instead of V − 2"),
    ("label_smoothing", PaddingRowsKept, "padding rows not excluded"),
    ("label_smoothing", PaddingColumnKept, "the padding class not zeroed"),
    ("label_smoothing", LabelGetsOne, "the correct class gets 1 instead of 1 − ε"),
    ("label_smoothing", Averaged, "the loss averaged over rows instead of summed"),
    ("greedy_decode", _greedy(stop=False), "not stopping at </s>"),
    ("greedy_decode", _greedy(pad_after=False),
     "tokens after </s> not replaced by the padding symbol"),
    ("greedy_decode", _greedy(break_early=False),
     "decoding does not stop when every sentence has ended"),
    ("greedy_decode", _greedy(position=0),
     "feeding the wrong token back: the prediction read at the first position"),
    ("greedy_decode", _greedy(first_row=True),
     "feeding the wrong token back: the first sentence's token given to every sentence"),
    ("greedy_decode", _greedy(target_mask=False), "the decoder run without the target mask"),
]


@pytest.mark.parametrize(("step", "implementation", "mistake"), CATALOGUED,
                         ids=[f"{s}: {m}" for s, _, m in CATALOGUED])
def test_each_classic_mistake_is_named(step: str, implementation: Any, mistake: str) -> None:
    result = check(step, implementation, quiet=True)
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert f"Classic mistake: {mistake}" in " ".join(result.message.split())


def test_another_smoothing_mistake_names_the_target_and_the_value() -> None:
    result = check("label_smoothing", LabelGetsItsShareToo, quiet=True)
    assert not result.passed and result.mistake is None
    assert result.stage == "true_dist"
    assert "First value that differs: true_dist[" in result.message


def test_dropping_the_start_symbol_is_a_shape_difference() -> None:
    result = check("greedy_decode", _greedy(keep_start=False), quiet=True)
    assert not result.passed and result.mistake is None
    assert "expected shape (" in result.message


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_any_seed_passes_the_reference_and_names_the_mistake(seed: int) -> None:
    assert check("label_smoothing", LabelSmoothing, seed=seed, quiet=True).passed
    assert check("label_smoothing", OverV, seed=seed, quiet=True).mistake == CATALOGUED[0][2]
    assert check("greedy_decode", greedy_decode, seed=seed, quiet=True).passed
