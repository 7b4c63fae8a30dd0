"""Every bad input raises a clear error that names the bad value and what was expected."""

import pytest
import torch

from vanilla_transformer import (
    Embeddings,
    MultiHeadedAttention,
    PositionalEncoding,
    PositionwiseFeedForward,
    make_model,
    subsequent_mask,
)

TINY = dict(N=1, d_model=16, d_ff=32, h=2)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(d_model=30, h=8), ValueError, r"d_model must be divisible by h.*d_model=30, h=8"),
        (dict(N=0), ValueError, "N must be a positive int, got 0"),
        (dict(d_model=-4), ValueError, "d_model must be a positive int, got -4"),
        (dict(d_ff=0), ValueError, "d_ff must be a positive int, got 0"),
        (dict(h=0), ValueError, "h must be a positive int, got 0"),
        (dict(dropout=1.0), ValueError, r"dropout must be in \[0, 1\), got 1.0"),
        (dict(dropout=-0.1), ValueError, r"dropout must be in \[0, 1\), got -0.1"),
        (dict(src_vocab=-1), ValueError, "src_vocab must be an int >= 0, got -1"),
        (dict(N=2.5), TypeError, "N must be an int, got 2.5"),
        (dict(layer_norm="rms"), ValueError, "layer_norm must be one of"),
        (dict(tie_weights=True, tgt_vocab=12), ValueError,
         "vocabularies must be equal; got src_vocab=11, tgt_vocab=12"),
        (dict(max_len=0), ValueError, "max_len must be a positive int, got 0"),
        (dict(d_model=1, h=1), ValueError, "needs d_model >= 2"),
    ],
)
def test_make_model_rejects_bad_options(kwargs, error, match):
    args = dict(src_vocab=11, tgt_vocab=11)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        make_model(**args)


def test_building_blocks_reject_bad_sizes():
    with pytest.raises(ValueError, match="d_model must be divisible by h"):
        MultiHeadedAttention(3, 16)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        MultiHeadedAttention(2, 16, dropout=1.5)
    with pytest.raises(ValueError, match="d_ff must be a positive int"):
        PositionwiseFeedForward(16, 0)
    with pytest.raises(ValueError, match="vocab must be an int >= 0"):
        Embeddings(16, -3)
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        PositionalEncoding(16, 0.1, max_len=0)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return make_model(11, 11, max_len=8, **TINY).eval()


def test_token_ids_out_of_range(model):
    with pytest.raises(ValueError, match=r"must lie in \[0, 11\).*found id 11"):
        model.encode(torch.tensor([[1, 11]]), None)
    with pytest.raises(ValueError, match=r"found id -1"):
        model.decode(torch.zeros(1, 2, 16), None, torch.tensor([[-1, 2]]), None)


def test_float_tensor_where_ids_are_expected(model):
    with pytest.raises(TypeError, match="must be an integer tensor .* got dtype torch.float32"):
        model.encode(torch.tensor([[1.0, 2.0]]), None)


def test_sequence_longer_than_the_table(model):
    with pytest.raises(ValueError, match="sequence length 9 exceeds .* max_len 8"):
        model.encode(torch.ones(1, 9, dtype=torch.long), None)


def test_masks_that_cannot_broadcast(model):
    src = torch.ones(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"src_mask of shape \(2, 1, 4\) cannot broadcast to .*\(2, 5, 5\)"):
        model.encode(src, torch.ones(2, 1, 4))
    with pytest.raises(ValueError, match=r"src_mask of shape \(3, 1, 5\) cannot broadcast"):
        model.encode(src, torch.ones(3, 1, 5))
    with pytest.raises(ValueError, match="src_mask must have shape"):
        model.encode(src, torch.ones(5))
    tgt = torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"tgt_mask of shape \(1, 4, 4\) cannot broadcast"):
        model(src, tgt, None, subsequent_mask(4))


def test_source_and_target_batch_sizes_differ(model):
    with pytest.raises(ValueError, match="src has 2 rows, tgt has 3"):
        model(torch.ones(2, 4, dtype=torch.long), torch.ones(3, 4, dtype=torch.long), None, None)
    memory = model.encode(torch.ones(2, 4, dtype=torch.long), None)
    with pytest.raises(ValueError, match="memory batch size 2 differs from the target batch size 3"):
        model.decode(memory, None, torch.ones(3, 4, dtype=torch.long), None)


def test_checks_run_before_expensive_work(monkeypatch, model):
    calls = []
    monkeypatch.setattr(model.encoder.layers[0].self_attn.linears[0], "forward",
                        lambda x: calls.append(1) or x)
    with pytest.raises(ValueError):
        model.encode(torch.tensor([[1, 99]]), None)
    with pytest.raises(ValueError):
        model.encode(torch.ones(2, 5, dtype=torch.long), torch.ones(2, 1, 4))
    assert calls == []


def test_narrow_integer_ids_are_refused_with_the_fix(model):
    for dtype in (torch.uint8, torch.int8, torch.int16):
        with pytest.raises(TypeError, match=rf"src .* got dtype {dtype}.*src\.long\(\)"):
            model.encode(torch.ones(1, 3, dtype=dtype), None)
    assert model.encode(torch.ones(1, 3, dtype=torch.int32), None).shape == (1, 3, 16)


def test_empty_batches_and_sequences(model):
    with pytest.raises(ValueError, match=r"src of shape \(0, 3\) is empty"):
        model.encode(torch.ones(0, 3, dtype=torch.long), None)
    with pytest.raises(ValueError, match=r"tgt of shape \(1, 0\) is empty"):
        model.decode(torch.zeros(1, 2, 16), None, torch.ones(1, 0, dtype=torch.long), None)


def test_tensors_on_another_device(model):
    with pytest.raises(ValueError, match="src is on device meta but the model's embedding is on cpu"):
        model.encode(torch.ones(1, 3, dtype=torch.long, device="meta"), None)
    with pytest.raises(ValueError, match="memory is on device meta but the model is on cpu"):
        model.decode(torch.zeros(1, 2, 16, device="meta"), None, torch.ones(1, 2, dtype=torch.long),
                     None)


def test_memory_of_the_wrong_kind(model):
    tgt = torch.ones(1, 2, dtype=torch.long)
    with pytest.raises(TypeError, match=r"memory has dtype torch\.float64 .* torch\.float32"):
        model.decode(torch.zeros(1, 2, 16, dtype=torch.float64), None, tgt, None)
    with pytest.raises(TypeError, match=r"memory must be a float tensor .* got torch\.int64"):
        model.decode(torch.zeros(1, 2, 16, dtype=torch.long), None, tgt, None)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # mixed precision: bf16 memory is fine
        assert model.decode(torch.zeros(1, 2, 16, dtype=torch.bfloat16), None, tgt, None).shape \
            == (1, 2, 16)


def test_float_masks_must_be_keep_masks_of_0_and_1(model):
    src = torch.ones(1, 4, dtype=torch.long)
    additive = torch.zeros(1, 1, 4)
    additive[..., 0] = float("-inf")
    with pytest.raises(ValueError, match=r"src_mask .* -inf.*interop\.attn_mask_to_keep"):
        model.encode(src, additive)
    with pytest.raises(ValueError, match=r"tgt_mask .* nan"):
        model(src, src, None, torch.full((1, 4, 4), float("nan")))
