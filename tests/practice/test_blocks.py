"""The building blocks' steps: the reference and the correct answers pass; each classic
mistake, written as real code, is named; other mistakes get a message saying what differs."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer.model.attention import MultiHeadedAttention, attention
from vanilla_transformer.model.embeddings import Embeddings, PositionalEncoding
from vanilla_transformer.model.layers import LayerNorm, PositionwiseFeedForward
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.practice import OBJECTS, check

from ._answers import answer

REFERENCES = {"subsequent_mask": subsequent_mask, "attention": attention,
              "multi_head_attention": MultiHeadedAttention,
              "feed_forward": PositionwiseFeedForward,
              "positional_encoding": PositionalEncoding, "embeddings": Embeddings,
              "layer_norm": LayerNorm}


@pytest.mark.parametrize("step", list(REFERENCES))
def test_the_reference_passes(step: str) -> None:
    result = check(step, REFERENCES[step], quiet=True)
    assert result.passed, result.message
    assert result.inputs >= 12 and result.failed == 0


@pytest.mark.parametrize("step", list(REFERENCES))
def test_the_correct_answer_passes(step: str) -> None:
    result = check(step, getattr(answer(step), OBJECTS[step]), quiet=True)
    assert result.passed, result.message


# ---------------------------------------------------------------- subsequent_mask
def mask_cannot_see_itself(size: int) -> torch.Tensor:
    return torch.tril(torch.ones(1, size, size), diagonal=-1).bool()


def mask_sees_next(size: int) -> torch.Tensor:
    return torch.tril(torch.ones(1, size, size), diagonal=1).bool()


def mask_inverted(size: int) -> torch.Tensor:  # the Annotated Transformer's triu without == 0
    return torch.triu(torch.ones(1, size, size), diagonal=1) == 1


def mask_transposed(size: int) -> torch.Tensor:
    return torch.ones(1, size, size, dtype=torch.bool).triu()


def mask_no_batch_axis(size: int) -> torch.Tensor:
    return torch.ones(size, size, dtype=torch.bool).tril()


# ---------------------------------------------------------------- attention
def _scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))


def attention_no_scale(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = query @ key.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p = scores.softmax(-1)
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_wrong_axis(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = _scores(query, key)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p = torch.softmax(scores, dim=-2)
    if dropout is not None:
        p = dropout(p)
    return torch.matmul(p, value), p


def attention_mask_inverted(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = _scores(query, key)
    if mask is not None:
        scores = scores.masked_fill(mask.bool(), -1e9)
    p = scores.softmax(-1)
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_mask_after_softmax(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    p = _scores(query, key).softmax(-1)
    if mask is not None:
        p = p * mask
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_minus_inf(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = _scores(query, key)
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), float("-inf"))
    p = scores.softmax(-1)
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_dropout_on_output(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = _scores(query, key)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p = scores.softmax(-1)
    out = p @ value
    return (dropout(out) if dropout is not None else out), p


def attention_weights_before_dropout(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = _scores(query, key)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p = scores.softmax(-1)
    kept = dropout(p) if dropout is not None else p
    return kept @ value, p


def attention_divided_by_d_k(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = query @ key.transpose(-2, -1) / query.size(-1)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p = scores.softmax(-1)
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_scaled_after_softmax(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = query @ key.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p = scores.softmax(-1) / math.sqrt(query.size(-1))
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_filled_with_zero(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, 0.0)
    p = scores.softmax(-1)
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_temperature_two(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = 2 * query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # not catalogued
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p = scores.softmax(-1)
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


def attention_float_mask_minus_inf(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:  # an additive float mask: 0 where allowed, -inf where masked
        scores = scores + torch.zeros(mask.shape, dtype=query.dtype).masked_fill(mask == 0, -math.inf)
    p = scores.softmax(-1)
    if dropout is not None:
        p = dropout(p)
    return p @ value, p


# ---------------------------------------------------------------- multi-head attention
def _mha(merge: Callable[[torch.Tensor, int, int, int], torch.Tensor] | None = None,
         split_transpose: bool = True, scale_d_model: bool = False,
         unsqueeze: bool = True, order: tuple[int, int, int] = (0, 1, 2),
         w_o: bool = True) -> type[nn.Module]:
    base = answer("multi_head_attention").MultiHeadedAttention

    class Buggy(base):  # type: ignore[misc, valid-type]
        def forward(self, query, key, value, mask=None):  # type: ignore[no-untyped-def]
            if mask is not None and unsqueeze:
                mask = mask.unsqueeze(1)
            b = query.size(0)
            projections = [self.linears[i] for i in order]
            if split_transpose:
                q, k, v = (lin(x).view(b, -1, self.h, self.d_k).transpose(1, 2)
                           for lin, x in zip(projections, (query, key, value), strict=True))
            else:
                q, k, v = (lin(x).view(b, self.h, -1, self.d_k)
                           for lin, x in zip(projections, (query, key, value), strict=True))
            d = self.h * self.d_k if scale_d_model else self.d_k
            scores = q @ k.transpose(-2, -1) / math.sqrt(d)
            if mask is not None:
                scores = scores.masked_fill(mask == 0, -1e9)
            x = self.dropout(scores.softmax(-1)) @ v
            if merge is None:
                x = x.transpose(1, 2).contiguous().view(b, -1, self.h * self.d_k)
            else:
                x = merge(x, b, self.h, self.d_k)
            return self.linears[3](x) if w_o else x

    return Buggy


def merge_no_transpose(x: torch.Tensor, b: int, h: int, d_k: int) -> torch.Tensor:
    return x.contiguous().view(b, -1, h * d_k)


def merge_interleaved(x: torch.Tensor, b: int, h: int, d_k: int) -> torch.Tensor:
    return x.permute(0, 2, 3, 1).reshape(b, -1, h * d_k)


# ---------------------------------------------------------------- feed-forward
def _ff(forward: Callable[[Any, torch.Tensor], torch.Tensor]) -> type[nn.Module]:
    base = answer("feed_forward").PositionwiseFeedForward
    return type("Buggy", (base,), {"forward": forward})


# ---------------------------------------------------------------- positional encoding
def _pe(table: Callable[[int, int], torch.Tensor]) -> type[nn.Module]:
    class Buggy(nn.Module):
        def __init__(self, d_model: int, dropout: float, max_len: int = 5000) -> None:
            super().__init__()
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("pe", table(max_len, d_model).unsqueeze(0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.dropout(x + self.pe[:, : x.size(1)])

    return Buggy


def _angles(max_len: int, d_model: int, exponent: torch.Tensor, start: int = 0) -> torch.Tensor:
    position = torch.arange(start, start + max_len).unsqueeze(1).float()
    return position * torch.exp(exponent * -math.log(10000.0))


def table_swapped(max_len: int, d_model: int) -> torch.Tensor:
    pe = torch.zeros(max_len, d_model)
    angle = _angles(max_len, d_model, torch.arange(0, d_model, 2) / d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.cos(angle), torch.sin(angle)
    return pe


def table_i_over_d(max_len: int, d_model: int) -> torch.Tensor:
    pe = torch.zeros(max_len, d_model)
    angle = _angles(max_len, d_model, torch.arange(0, d_model // 2) / d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


def table_own_index(max_len: int, d_model: int) -> torch.Tensor:
    pe = torch.zeros(max_len, d_model)
    for j in range(d_model):
        angle = _angles(max_len, d_model, torch.tensor(j / d_model))
        pe[:, j] = (torch.sin if j % 2 == 0 else torch.cos)(angle[:, 0])
    return pe


def table_from_one(max_len: int, d_model: int) -> torch.Tensor:
    pe = torch.zeros(max_len, d_model)
    angle = _angles(max_len, d_model, torch.arange(0, d_model, 2) / d_model, start=1)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


def table_concatenated(max_len: int, d_model: int) -> torch.Tensor:
    angle = _angles(max_len, d_model, torch.arange(0, d_model, 2) / d_model)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)


def table_base_1000(max_len: int, d_model: int) -> torch.Tensor:  # not in the catalogue
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len).unsqueeze(1).float()
    angle = position / 1000.0 ** (torch.arange(0, d_model, 2) / d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


# ---------------------------------------------------------------- embeddings
def _emb(factor: Callable[[Any], float]) -> type[nn.Module]:
    base = answer("embeddings").Embeddings

    def forward(self: Any, x: torch.Tensor) -> torch.Tensor:
        return self.lut(x) * factor(self)

    return type("Buggy", (base,), {"forward": forward})


# ---------------------------------------------------------------- layer norm
def _ln(normalise: Callable[[Any, torch.Tensor], torch.Tensor]) -> type[nn.Module]:
    base = answer("layer_norm").LayerNorm
    return type("Buggy", (base,), {"forward": normalise})


def ln_biased_outside(self: Any, x: torch.Tensor) -> torch.Tensor:
    std = x.std(-1, keepdim=True, unbiased=False)
    return self.a_2 * (x - x.mean(-1, keepdim=True)) / (std + self.eps) + self.b_2


def ln_unbiased_inside(self: Any, x: torch.Tensor) -> torch.Tensor:
    var = x.var(-1, keepdim=True)
    return self.a_2 * (x - x.mean(-1, keepdim=True)) / torch.sqrt(var + self.eps) + self.b_2


def ln_biased_inside(self: Any, x: torch.Tensor) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return self.a_2 * (x - mean) / torch.sqrt(var + self.eps) + self.b_2


def ln_no_eps(self: Any, x: torch.Tensor) -> torch.Tensor:
    return self.a_2 * (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True) + self.b_2


def ln_wrong_axis(self: Any, x: torch.Tensor) -> torch.Tensor:
    mean, std = x.mean(-2, keepdim=True), x.std(-2, keepdim=True)
    return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


def ln_gain_and_bias_swapped(self: Any, x: torch.Tensor) -> torch.Tensor:  # not catalogued
    mean, std = x.mean(-1, keepdim=True), x.std(-1, keepdim=True)
    return self.b_2 * (x - mean) / (std + self.eps) + self.a_2


CATALOGUED: list[tuple[str, Callable[[], Any], str]] = [
    ("subsequent_mask", lambda: mask_cannot_see_itself,
     "the diagonal is off by one: a position cannot see itself"),
    ("subsequent_mask", lambda: mask_sees_next,
     "the diagonal is off by one: a position sees the next one"),
    ("subsequent_mask", lambda: mask_inverted, "mask inverted (True marks a blocked position)"),
    ("subsequent_mask", lambda: mask_transposed, "mask transposed (upper triangle)"),
    ("subsequent_mask", lambda: mask_no_batch_axis, "no leading batch axis"),
    ("attention", lambda: attention_no_scale, "no √d_k scale"),
    ("attention", lambda: attention_divided_by_d_k, "scores scaled by d_k instead of √d_k"),
    ("attention", lambda: attention_scaled_after_softmax, "the scale applied after the softmax"),
    ("attention", lambda: attention_filled_with_zero, "masked scores filled with 0 instead of -1e9"),
    ("attention", lambda: attention_wrong_axis, "softmax over the wrong axis"),
    ("attention", lambda: attention_mask_inverted, "mask inverted"),
    ("attention", lambda: attention_mask_after_softmax, "mask applied after the softmax"),
    ("attention", lambda: attention_minus_inf, "masked scores filled with -inf"),
    ("attention", lambda: attention_dropout_on_output,
     "dropout applied to the output instead of the weights"),
    ("attention", lambda: attention_weights_before_dropout, "weights returned before dropout"),
    ("multi_head_attention", lambda: _mha(split_transpose=False),
     "heads split with view but no transpose, so heads mix positions"),
    ("multi_head_attention", lambda: _mha(merge=merge_no_transpose),
     "heads concatenated in the wrong order: no transpose back before merging"),
    ("multi_head_attention", lambda: _mha(merge=merge_interleaved),
     "heads concatenated in the wrong order: features interleaved"),
    ("multi_head_attention", lambda: _mha(scale_d_model=True),
     "scores scaled by √d_model instead of √d_k"),
    ("multi_head_attention", lambda: _mha(unsqueeze=False), "mask not given a head axis"),
    ("multi_head_attention", lambda: _mha(order=(2, 1, 0)), "the Q, K and V projections swapped"),
    ("multi_head_attention", lambda: _mha(order=(1, 0, 2)), "the Q, K and V projections swapped"),
    ("multi_head_attention", lambda: _mha(order=(0, 0, 0)),
     "one projection, linears[0], used for query, key and value"),
    ("multi_head_attention", lambda: _mha(w_o=False),
     "W^O left out: the merged heads are returned without the output projection"),
    ("feed_forward", lambda: _ff(lambda self, x: self.w_2(self.dropout(self.w_1(x)))),
     "no ReLU between the two linear maps"),
    ("feed_forward",
     lambda: _ff(lambda self, x: torch.relu(self.w_2(self.dropout(torch.relu(self.w_1(x)))))),
     "ReLU applied after the second linear map too"),
    ("feed_forward",
     lambda: _ff(lambda self, x: self.w_2(self.dropout(nn.functional.gelu(self.w_1(x))))),
     "GELU instead of ReLU"),
    ("positional_encoding", lambda: _pe(table_swapped), "sin and cos swapped"),
    ("positional_encoding", lambda: _pe(table_i_over_d),
     "the exponent 2i/d_model written as i/d_model"),
    ("positional_encoding", lambda: _pe(table_own_index),
     "each feature uses its own index in the exponent"),
    ("positional_encoding", lambda: _pe(table_from_one), "positions counted from 1"),
    ("positional_encoding", lambda: _pe(table_concatenated),
     "sines and cosines concatenated instead of interleaved"),
    ("embeddings", lambda: _emb(lambda self: 1.0), "no √d_model scale"),
    ("embeddings", lambda: _emb(lambda self: 1 / math.sqrt(self.d_model)),
     "divided by √d_model instead of multiplied"),
    ("embeddings", lambda: _emb(lambda self: self.d_model), "scaled by d_model instead of √d_model"),
    ("embeddings", lambda: _emb(lambda self: math.sqrt(self.lut.num_embeddings)),
     "scaled by √vocab instead of √d_model"),
    ("layer_norm", lambda: _ln(ln_biased_outside),
     "biased variance (divided by n), eps added to the standard deviation"),
    ("layer_norm", lambda: _ln(ln_unbiased_inside), "unbiased variance, eps inside the square root"),
    ("layer_norm", lambda: _ln(ln_biased_inside),
     "biased variance, eps inside the square root (torch.nn.LayerNorm's formula)"),
    ("layer_norm", lambda: _ln(ln_no_eps), "no eps"),
    ("layer_norm", lambda: _ln(ln_wrong_axis), "statistics over the wrong axis"),
]


@pytest.mark.parametrize(("step", "make", "mistake"), CATALOGUED,
                         ids=[f"{s}: {m}" for s, _, m in CATALOGUED])
def test_each_classic_mistake_is_named(step: str, make: Callable[[], Any], mistake: str) -> None:
    result = check(step, make(), quiet=True)
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert f"Classic mistake: {mistake}" in " ".join(result.message.split())
    assert "Smallest input that shows it:" in result.message


def test_nn_layernorm_is_named_as_the_other_flavour() -> None:
    class TorchFlavour(nn.LayerNorm):
        def __init__(self, features: int, eps: float = 1e-6) -> None:
            super().__init__(features, eps=eps)
            self.a_2, self.b_2 = self.weight, self.bias  # the reference's names

    class Renamed(nn.Module):  # nn.LayerNorm's formula under the reference's parameter names
        def __init__(self, features: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.a_2 = nn.Parameter(torch.ones(features))
            self.b_2 = nn.Parameter(torch.zeros(features))
            self.eps = eps

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.layer_norm(x, x.shape[-1:], self.a_2, self.b_2, self.eps)

    result = check("layer_norm", Renamed, quiet=True)
    assert result.mistake == "biased variance, eps inside the square root (torch.nn.LayerNorm's formula)"
    message = " ".join(check("layer_norm", TorchFlavour, quiet=True).message.split())
    assert "it has weight, bias which the reference does not" in message


UNCATALOGUED = [
    ("attention", attention_temperature_two, "weights", "weights["),
    ("positional_encoding", _pe(table_base_1000), None, "output["),
    ("layer_norm", _ln(ln_gain_and_bias_swapped), None, "output["),
]


@pytest.mark.parametrize(("step", "implementation", "stage", "where"), UNCATALOGUED,
                         ids=[u[0] for u in UNCATALOGUED])
def test_other_mistakes_get_what_differs_and_where(step: str, implementation: Any,
                                                   stage: str | None, where: str) -> None:
    result = check(step, implementation, quiet=True)
    assert not result.passed and result.mistake is None
    assert "First value that differs: " + where in result.message
    assert "expected" in result.message and ", got " in result.message
    if stage is not None:
        assert result.stage == stage
        assert f"First stage that differs: {stage}" in result.message


def test_a_fully_masked_row_is_named_when_it_shows_the_failure() -> None:
    result = check("attention", attention_float_mask_minus_inf, quiet=True)
    assert result.mistake == "masked scores filled with -inf"
    assert "fully masked: no key may be attended" in " ".join(result.message.split())


def test_a_shape_mistake_says_both_shapes() -> None:
    def returns_only_output(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
        out, p = attention(query, key, value, mask, dropout)
        return p, out  # the pair in the wrong order

    result = check("attention", returns_only_output, quiet=True)
    assert not result.passed
    assert "expected shape (" in result.message and "got shape (" in result.message


def test_an_exception_is_reported_in_one_line_with_its_input() -> None:
    def broken(query, key, value, mask=None, dropout=None):  # type: ignore[no-untyped-def]
        return attention(query, key.transpose(-2, -1), value, mask, dropout)

    result = check("attention", broken, quiet=True)
    message = " ".join(result.message.split())
    assert not result.passed and "Your broken (test_blocks.py, line " in message
    assert "raised RuntimeError" in message
    assert "Traceback" not in result.message


def test_the_multi_head_stage_names_the_first_difference() -> None:
    base = answer("multi_head_attention").MultiHeadedAttention

    class KeyDoubled(base):  # type: ignore[misc, valid-type]
        def forward(self, query, key, value, mask=None):  # type: ignore[no-untyped-def]
            return super().forward(query, 2 * key, value, mask)

    result = check("multi_head_attention", KeyDoubled, quiet=True)
    assert result.stage == "key projection", result.message


def test_projections_cloned_by_reference_are_said() -> None:
    base = answer("multi_head_attention").MultiHeadedAttention

    class OneLinear(base):  # type: ignore[misc, valid-type]
        def __init__(self, h: int, d_model: int, dropout: float = 0.1) -> None:
            super().__init__(h, d_model, dropout)
            self.linears = nn.ModuleList([nn.Linear(d_model, d_model)] * 4)  # four references

    result = check("multi_head_attention", OneLinear, quiet=True)
    message = " ".join(result.message.split())
    assert not result.passed
    assert "linears.0 and linears.1 and linears.2 are one and the same module" in message
    assert "copy.deepcopy" in message


def test_wrong_parameter_names_are_said() -> None:
    class Renamed(nn.Module):
        def __init__(self, d_model: int, vocab: int) -> None:
            super().__init__()
            self.table = nn.Embedding(vocab, d_model)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.table(x)

    message = check("embeddings", Renamed, quiet=True).message
    assert "it lacks lut.weight" in message and "it has table.weight" in message


def test_an_instance_instead_of_the_class_is_refused() -> None:
    result = check("layer_norm", LayerNorm(4), quiet=True)
    assert not result.passed and "the class LayerNorm itself" in result.message


def test_unknown_steps_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown step 'atention'"):
        check("atention", attention)
    with pytest.raises(TypeError, match="step must be a str"):
        check(3, attention)  # type: ignore[arg-type]


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_any_seed_passes_the_reference_and_names_the_mistake(seed: int) -> None:
    assert check("attention", attention, seed=seed, quiet=True).passed
    assert check("layer_norm", LayerNorm, seed=seed, quiet=True).passed
    assert check("attention", attention_no_scale, seed=seed, quiet=True).mistake == "no √d_k scale"
    named = check("positional_encoding", _pe(table_swapped), seed=seed, quiet=True).mistake
    assert named == "sin and cos swapped"


def test_check_prints_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    result = check("subsequent_mask", mask_sees_next)
    assert capsys.readouterr().out.strip() == result.message
