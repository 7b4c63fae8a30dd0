"""Tests of vanilla_transformer.model.masks: the keep-masks."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from vanilla_transformer.model import as_keep_mask, make_model, padding_mask, subsequent_mask

# --- subsequent_mask, padding_mask, as_keep_mask --------------------------------------------


@given(size=st.integers(min_value=0, max_value=12))
def test_subsequent_mask_is_lower_triangular(size):
    m = subsequent_mask(size)
    assert m.shape == (1, size, size) and m.dtype == torch.bool
    i, j = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    assert torch.equal(m[0], j <= i)


def test_subsequent_mask_rejects_bad_sizes():
    with pytest.raises(ValueError, match="size"):
        subsequent_mask(-1)
    with pytest.raises(TypeError, match="size"):
        subsequent_mask(2.0)


def test_padding_mask_marks_real_tokens():
    tokens = torch.tensor([[4, 5, 0], [0, 7, 0]])
    m = padding_mask(tokens, pad=0)
    assert m.shape == (2, 1, 3)
    assert m.tolist() == [[[True, True, False]], [[False, True, False]]]


@pytest.mark.parametrize("bad", [torch.tensor([1, 2, 0]), torch.zeros(1, 1, 3), [[1, 2]]])
def test_padding_mask_rejects_non_2d(bad):
    with pytest.raises(ValueError, match=r"\(batch, seq_len\)"):
        padding_mask(bad, pad=0)


def test_as_keep_mask_converts_to_bool_and_keeps_the_shape():
    assert as_keep_mask(None, 2, 3, 4) is None
    m = as_keep_mask(torch.tensor([[[1, 0, 2, 0]]]), 2, 3, 4)
    assert m.dtype == torch.bool and m.shape == (1, 1, 4)
    assert m.flatten().tolist() == [True, False, True, False]
    full = torch.ones(2, 3, 4, dtype=torch.bool)
    assert as_keep_mask(full, 2, 3, 4) is full


@pytest.mark.parametrize(
    "shape", [(3, 3, 4), (2, 2, 4), (2, 3, 5), (2, 4), (2, 2, 3, 4), (1, 1, 1, 1, 4)]
)
def test_as_keep_mask_rejects_shapes_that_do_not_broadcast(shape):
    with pytest.raises(ValueError, match="mask"):
        as_keep_mask(torch.ones(shape), 2, 3, 4)


def test_as_keep_mask_rejects_non_tensors():
    with pytest.raises(TypeError, match="torch.Tensor"):
        as_keep_mask([[1, 1]], 1, 1, 2)


# --- float keep-masks hold 0 and 1 only ------------------------------------------------------


@pytest.mark.parametrize("value", [float("-inf"), float("nan"), 0.5, -1.0, 2.0])
def test_as_keep_mask_refuses_float_values_other_than_0_and_1(value):
    mask = torch.ones(1, 1, 4)
    mask[0, 0, 1] = value
    with pytest.raises(ValueError, match=rf"src_mask .* holds the value {value}.*attn_mask_to_keep"):
        as_keep_mask(mask, 1, 3, 4, "src_mask")


def test_an_additive_mask_is_not_read_inverted():
    additive = torch.tensor([[[0.0, float("-inf"), 0.0]]])  # PyTorch: 0 = attend, -inf = block
    with pytest.raises(ValueError, match="-inf"):
        as_keep_mask(additive, 1, 1, 3)
    from vanilla_transformer.interop import attn_mask_to_keep

    assert attn_mask_to_keep(additive[0]).tolist() == [[[True, False, True]]]


def test_an_additive_mask_that_blocks_nothing_is_not_read_as_blocking_everything():
    additive = torch.zeros(1, 3, 3)  # PyTorch: attend everywhere; as a keep-mask: nowhere
    with pytest.raises(ValueError, match="holding only 0, so no query may attend"):
        as_keep_mask(additive, 1, 3, 3, "tgt_mask")
    model = make_model(5, 5, N=1, d_model=8, d_ff=16, h=2).eval()
    src = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match="src_mask .* holding only 0"):
        model.encode(src, torch.zeros(1, 1, 3))
    # a float keep-mask with a 1 in it is still read as one
    assert as_keep_mask(torch.tensor([[[0.0, 1.0]]]), 1, 1, 2).tolist() == [[[False, True]]]


def test_float_and_integer_keep_masks_of_0_and_1_still_work():
    assert as_keep_mask(torch.tensor([[[1.0, 0.0]]]), 1, 1, 2).tolist() == [[[True, False]]]
    assert as_keep_mask(torch.tensor([[[3, 0]]]), 1, 1, 2).tolist() == [[[True, False]]]
    assert as_keep_mask(torch.empty(1, 1, 0), 1, 1, 0).shape == (1, 1, 0)


def test_padding_mask_refuses_float_tokens_and_bad_pads():
    with pytest.raises(TypeError, match="got dtype torch.float32"):
        padding_mask(torch.tensor([[1.0, 0.0]]), 0)
    with pytest.raises(TypeError, match=r"pad .* got 1\.5"):
        padding_mask(torch.tensor([[1, 0]]), 1.5)
    with pytest.raises(TypeError, match="pad .* got None"):
        padding_mask(torch.tensor([[1, 0]]), None)
