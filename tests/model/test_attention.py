"""attention(), MultiHeadedAttention and its two paths, keep_attention, clones."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from vanilla_transformer import MultiHeadedAttention, attention, clones, keep_attention, subsequent_mask


def test_clones_are_independent_copies():
    layers = clones(nn.Linear(3, 3), 4)
    assert len(layers) == 4
    assert len({id(layer.weight) for layer in layers}) == 4
    assert all(torch.equal(layers[0].weight, layer.weight) for layer in layers)


def test_attention_shapes_and_rows_sum_to_one():
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 6)
    out, w = attention(q, k, v)
    assert out.shape == (2, 4, 5, 6) and w.shape == (2, 4, 5, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 5))


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.long, torch.uint8])
def test_masked_positions_get_exactly_zero_weight(dtype):
    torch.manual_seed(0)
    q = k = v = torch.randn(1, 2, 4, 8)
    mask = subsequent_mask(4).to(dtype).unsqueeze(1)  # (1, 1, 4, 4)
    _, w = attention(q, k, v, mask=mask)
    assert torch.all(w[..., ~subsequent_mask(4)[0]] == 0)
    assert torch.all(w[..., subsequent_mask(4)[0]] > 0)


def test_mha_weights_and_shape():
    mha = MultiHeadedAttention(4, 32, dropout=0.0, keep_attn=True)
    x = torch.randn(3, 6, 32)
    mask = torch.ones(3, 1, 6, dtype=torch.bool)
    mask[1, 0, 4:] = False
    out = mha(x, x, x, mask)
    assert out.shape == (3, 6, 32)
    assert mha.attn.shape == (3, 4, 6, 6)
    assert torch.all(mha.attn[1, :, :, 4:] == 0)


def _sdpa_reference(mha, query, key, value, mask):
    """Multi-head attention written directly with PyTorch's SDPA, from the module's weights."""
    b, h, d_k = query.size(0), mha.h, mha.d_k
    q, k, v = (lin(x).view(b, -1, h, d_k).transpose(1, 2) for lin, x in zip(mha.linears, (query, key, value)))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.unsqueeze(1))
    return mha.linears[3](out.transpose(1, 2).reshape(b, -1, h * d_k))


@pytest.mark.parametrize("fast", [True, False])
def test_mha_matches_scaled_dot_product_attention(fast):
    torch.manual_seed(1)
    mha = MultiHeadedAttention(4, 32, dropout=0.0, fast=fast).eval()
    query, memory = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    mask = torch.ones(2, 1, 7, dtype=torch.bool)
    mask[0, 0, 5:] = False
    expected = _sdpa_reference(mha, query, memory, memory, mask)
    torch.testing.assert_close(mha(query, memory, memory, mask), expected, atol=1e-5, rtol=1e-5)


def test_fast_and_reference_paths_agree_with_masks():
    torch.manual_seed(2)
    mha = MultiHeadedAttention(2, 16, dropout=0.0).eval()
    x = torch.randn(2, 5, 16)
    mask = subsequent_mask(5).expand(2, 5, 5).clone()
    mask[1, :, 3:] = False
    mask[1, :, 0] = True  # keep every row attending somewhere
    fast = mha(x, x, x, mask)
    with keep_attention(mha):
        ref = mha(x, x, x, mask)
        assert mha.attn is not None
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
    assert mha.keep_attn is False  # restored


def test_dropout_is_applied_in_training_on_both_paths():
    torch.manual_seed(3)
    x = torch.randn(2, 6, 16)
    for fast in (True, False):
        mha = MultiHeadedAttention(2, 16, dropout=0.5, fast=fast).train()
        assert not torch.equal(mha(x, x, x), mha(x, x, x))
        mha.eval()
        assert torch.equal(mha(x, x, x), mha(x, x, x))


def test_fully_masked_row_differs_between_paths_as_documented():
    torch.manual_seed(4)
    mha = MultiHeadedAttention(1, 4, dropout=0.0).eval()
    x = torch.randn(1, 3, 4)
    mask = torch.zeros(1, 1, 3, dtype=torch.bool)
    nn.init.zeros_(mha.linears[3].bias)
    assert torch.allclose(mha(x, x, x, mask), torch.zeros(1, 3, 4))  # fast path: zero vector
    with keep_attention(mha):
        mha(x, x, x, mask)
    torch.testing.assert_close(mha.attn, torch.full((1, 1, 3, 3), 1 / 3))  # reference: uniform


def test_float_masks_from_the_sources_work():
    mha = MultiHeadedAttention(2, 8, dropout=0.0).eval()
    x = torch.randn(1, 4, 8)
    as_float = mha(x, x, x, torch.ones(1, 1, 4))
    as_long = mha(x, x, x, subsequent_mask(4).type_as(torch.tensor([1])))
    assert as_float.shape == as_long.shape == (1, 4, 8)
    torch.testing.assert_close(as_long, mha(x, x, x, subsequent_mask(4)))


def test_fast_path_in_training_keeps_the_reference_dropout():
    # on the CPU the fast path trains with the explicit computation: same seed, same dropout masks
    mha = MultiHeadedAttention(2, 16, dropout=0.3).train()
    x = torch.randn(2, 5, 16)
    mask = subsequent_mask(5)
    torch.manual_seed(5)
    fast = mha(x, x, x, mask)
    torch.manual_seed(5)
    with keep_attention(mha):
        ref = mha(x, x, x, mask)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
