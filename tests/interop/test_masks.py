"""Tests of vanilla_transformer.interop.masks: keep-masks to and from PyTorch's masks, checked
against nn.MultiheadAttention and F.scaled_dot_product_attention."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer.interop import (
    attn_mask_to_keep,
    keep_to_attn_mask,
    keep_to_key_padding_mask,
    key_padding_mask_to_keep,
    torch_masks_to_keep,
)
from vanilla_transformer.model import padding_mask, subsequent_mask

NEG_INF = float("-inf")
sizes = st.integers(min_value=1, max_value=6)
seeds = st.integers(min_value=0, max_value=2**31 - 1)


def random_bool(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) < 0.5


# --- keep-mask <-> attn_mask ----------------------------------------------------------------


def test_keep_to_attn_mask_inverts_the_meaning():
    keep = subsequent_mask(3)
    blocked = keep_to_attn_mask(keep)
    assert blocked.dtype == torch.bool and blocked.shape == (3, 3)
    assert torch.equal(blocked, torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1))
    additive = keep_to_attn_mask(keep, float_mask=True)
    assert torch.equal(additive, nn.Transformer.generate_square_subsequent_mask(3))


@settings(max_examples=60, deadline=None)
@given(t=sizes, s=sizes, seed=seeds, float_mask=st.booleans())
def test_2d_attn_mask_round_trip(t, s, seed, float_mask):
    blocked = random_bool((t, s), seed)
    attn = torch.zeros(t, s).masked_fill(blocked, NEG_INF) if float_mask else blocked
    keep = attn_mask_to_keep(attn)
    assert keep.shape == (1, t, s) and torch.equal(keep[0], ~blocked)
    back = keep_to_attn_mask(keep, float_mask=float_mask)
    assert back.dtype == attn.dtype and torch.equal(back, attn)


@settings(max_examples=60, deadline=None)
@given(b=sizes, h=st.integers(1, 4), t=sizes, s=sizes, seed=seeds, float_mask=st.booleans())
def test_3d_keep_mask_round_trip(b, h, t, s, seed, float_mask):
    keep = random_bool((b, t, s), seed)
    attn = keep_to_attn_mask(keep, num_heads=h, float_mask=float_mask, dtype=torch.float64)
    if b == 1:
        assert attn.shape == (t, s)
    else:
        assert attn.shape == (b * h, t, s)
        # PyTorch's layout: the num_heads rows of batch item i are consecutive
        per_head = attn.view(b, h, t, s)
        blocked = per_head == NEG_INF if float_mask else per_head
        assert torch.equal(~blocked, keep.unsqueeze(1).expand(b, h, t, s))
    if float_mask:
        assert attn.dtype == torch.float64
        assert bool(((attn == 0) | (attn == NEG_INF)).all())
    back = attn_mask_to_keep(attn, num_heads=h if b > 1 else None)
    assert back.shape == (b, t, s) and torch.equal(back, keep)


def test_keep_to_attn_mask_accepts_0_1_numbers_and_treats_shapes_literally():
    keep = torch.tensor([[[1.0, 0.0, 1.0]]])  # (1, 1, 3): one query
    assert keep_to_attn_mask(keep).tolist() == [[False, True, False]]


@pytest.mark.parametrize(
    "mask, match",
    [
        (torch.tensor([[0.0, NEG_INF]]), "attn_mask_to_keep"),  # a PyTorch mask passed by mistake
        (torch.tensor([[2, 1]]), "0/1"),
        (torch.ones(1, 1, 2, 2, dtype=torch.bool), "shape"),
        (torch.ones(3, dtype=torch.bool), "shape"),
        (torch.ones(2, 3, 3, dtype=torch.bool), "num_heads"),
    ],
)
def test_keep_to_attn_mask_rejects_ambiguous_input(mask, match):
    with pytest.raises(ValueError, match=match):
        keep_to_attn_mask(mask)


@pytest.mark.parametrize(
    "mask, kw, match",
    [
        (torch.tensor([[0.0, -1e9]]), {}, "only 0.0"),  # a finite fill is not -inf
        (torch.tensor([[0.0, 0.5]]), {}, "0.5"),
        (torch.tensor([[0.0, float("nan")]]), {}, "only 0.0"),
        (torch.tensor([[0, 1]], dtype=torch.uint8), {}, "ambiguous"),
        (torch.tensor([[0, 1]]), {}, "ambiguous"),
        (torch.zeros(4, dtype=torch.bool), {}, "shape"),
        (torch.zeros(4, 2, 2, dtype=torch.bool), {}, "num_heads"),
        (torch.zeros(4, 2, 2, dtype=torch.bool), {"num_heads": 3}, "does not divide"),
    ],
)
def test_attn_mask_to_keep_rejects_ambiguous_input(mask, kw, match):
    with pytest.raises(ValueError, match=match):
        attn_mask_to_keep(mask, **kw)


def test_attn_mask_to_keep_rejects_masks_that_differ_between_heads():
    per_head = torch.zeros(2, 3, 3, dtype=torch.bool)  # batch 1, 2 heads
    per_head[1, 0, 2] = True
    with pytest.raises(ValueError, match="different heads"):
        attn_mask_to_keep(per_head, num_heads=2)


def test_conversions_reject_non_tensors():
    with pytest.raises(TypeError):
        keep_to_attn_mask([[True]])
    with pytest.raises(TypeError):
        attn_mask_to_keep([[True]])


# --- keep-mask <-> key_padding_mask ----------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(b=sizes, s=sizes, seed=seeds)
def test_key_padding_mask_round_trips(b, s, seed):
    kpm = random_bool((b, s), seed)
    keep = key_padding_mask_to_keep(kpm)
    assert keep.shape == (b, 1, s) and torch.equal(keep[:, 0], ~kpm)
    assert torch.equal(keep_to_key_padding_mask(keep), kpm)
    additive = torch.zeros(b, s).masked_fill(kpm, NEG_INF)
    assert torch.equal(key_padding_mask_to_keep(additive), keep)


def test_padding_mask_becomes_pytorch_key_padding_mask():
    tokens = torch.tensor([[3, 4, 0, 0], [5, 6, 7, 0]])
    assert torch.equal(keep_to_key_padding_mask(padding_mask(tokens, 0)), tokens == 0)


@settings(max_examples=30, deadline=None)
@given(b=sizes, t=sizes, s=sizes, seed=seeds)
def test_broadcast_padding_mask_with_full_query_axis_is_accepted(b, t, s, seed):
    kpm = random_bool((b, s), seed)
    expanded = key_padding_mask_to_keep(kpm).expand(b, t, s)
    assert torch.equal(keep_to_key_padding_mask(expanded), kpm)


def test_keep_to_key_padding_mask_rejects_rows_that_differ():
    with pytest.raises(ValueError, match="keep_to_attn_mask"):
        keep_to_key_padding_mask(subsequent_mask(3))


@pytest.mark.parametrize(
    "mask, match",
    [
        (torch.ones(2, 3, dtype=torch.bool), "shape"),  # (batch, S) keep vs (T, S): ambiguous
        (torch.ones(2, 1, 1, 3, dtype=torch.bool), "shape"),
        (torch.tensor([[[0.0, NEG_INF]]]), "attn_mask_to_keep"),
    ],
)
def test_keep_to_key_padding_mask_rejects_bad_input(mask, match):
    with pytest.raises(ValueError, match=match):
        keep_to_key_padding_mask(mask)


@pytest.mark.parametrize(
    "mask, match",
    [
        (torch.zeros(1, 1, 3, dtype=torch.bool), "shape"),
        (torch.zeros(3, dtype=torch.bool), "shape"),
        (torch.tensor([[0.0, 1.0]]), "only 0.0"),
        (torch.tensor([[0, 1]]), "ambiguous"),
    ],
)
def test_key_padding_mask_to_keep_rejects_bad_input(mask, match):
    with pytest.raises(ValueError, match=match):
        key_padding_mask_to_keep(mask)


# --- merging, and agreement with nn.MultiheadAttention --------------------------------------


def test_torch_masks_to_keep_merges_like_multihead_attention():
    causal = keep_to_attn_mask(subsequent_mask(3))
    kpm = torch.tensor([[False, False, True], [False, False, False]])
    keep = torch_masks_to_keep(causal, kpm)
    assert keep.shape == (2, 3, 3)
    expected = subsequent_mask(3) & padding_mask(torch.tensor([[1, 1, 0], [1, 1, 1]]), 0)
    assert torch.equal(keep, expected)
    assert torch_masks_to_keep() is None
    assert torch.equal(torch_masks_to_keep(causal), subsequent_mask(3))
    assert torch.equal(torch_masks_to_keep(key_padding_mask=kpm), ~kpm.unsqueeze(1))


def test_torch_masks_to_keep_rejects_disagreeing_masks():
    with pytest.raises(ValueError, match="disagree"):
        torch_masks_to_keep(torch.zeros(3, 3, dtype=torch.bool),
                            torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="disagree"):
        torch_masks_to_keep(torch.zeros(6, 3, 3, dtype=torch.bool),
                            torch.zeros(2, 3, dtype=torch.bool), num_heads=2)


@settings(max_examples=25, deadline=None)
@given(b=st.integers(2, 3), h=st.sampled_from([1, 2]), t=sizes, s=sizes, seed=seeds,
       with_padding=st.booleans())
def test_converted_masks_mean_the_same_to_multihead_attention(b, h, t, s, seed, with_padding):
    """nn.MultiheadAttention given the converted masks gives zero weight exactly where the
    keep-mask is False, and torch_masks_to_keep merges its two masks as it does."""
    keep = random_bool((b, t, s), seed)
    keep[..., 0] = True  # no fully masked row: those give NaN weights in PyTorch
    kpm = random_bool((b, s), seed + 1) if with_padding else None
    if kpm is not None:
        kpm[:, 0] = False
    mha = nn.MultiheadAttention(4 * h, h, batch_first=True)
    q, kv = torch.randn(b, t, 4 * h), torch.randn(b, s, 4 * h)
    attn = keep_to_attn_mask(keep, num_heads=h)
    _, weights = mha(q, kv, kv, attn_mask=attn, key_padding_mask=kpm, average_attn_weights=False)
    merged = torch_masks_to_keep(attn, kpm, num_heads=h)
    assert torch.equal(weights > 0, merged.unsqueeze(1).expand(b, h, t, s))
    expected = keep if kpm is None else keep & ~kpm.unsqueeze(1)
    assert torch.equal(merged, expected)


@settings(max_examples=40, deadline=None)
@given(b=sizes, t=sizes, s=sizes, seed=seeds)
def test_float_attn_mask_means_what_the_keep_mask_means_to_sdpa(b, t, s, seed):
    """F.scaled_dot_product_attention reads a bool mask as True = may attend (a keep-mask) and
    adds a float mask to the scores (PyTorch's 0 / -inf attn_mask): both give one result."""
    keep = random_bool((b, t, s), seed)
    keep[..., 0] = True
    q, k, v = torch.randn(b, 2, t, 4), torch.randn(b, 2, s, 4), torch.randn(b, 2, s, 4)
    additive = keep_to_attn_mask(keep, num_heads=2, float_mask=True)  # (b * 2, t, s) or (t, s)
    additive = additive.view(b, 2, t, s) if b > 1 else additive
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=additive),
                               F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None]))
