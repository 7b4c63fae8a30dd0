"""Greedy decoding: the sources' untrained loop, batches, end symbols, the start/pad trap."""

import pytest
import torch

from vanilla_transformer import data_gen, greedy_decode, make_model, subsequent_mask


def _sources_loop(model, src, src_mask, steps, start):
    memory = model.encode(src, src_mask)
    ys = torch.zeros(1, 1).fill_(start).type_as(src)
    for _ in range(steps):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)).type_as(src.data))
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        ys = torch.cat([ys, torch.empty(1, 1).type_as(src.data).fill_(next_word.data[0])], dim=1)
    return ys


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return make_model(11, 11, N=1, d_model=32, d_ff=64, h=4).eval()


def test_greedy_decode_matches_the_sources_loop(model):
    src = torch.LongTensor([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]])
    src_mask = torch.ones(1, 1, 10)
    expected = _sources_loop(model, src, src_mask, 9, start=0)
    got = greedy_decode(model, src, src_mask, max_len=10, start_symbol=0)
    assert torch.equal(got, expected)


@pytest.mark.parametrize("use_cache", [False, True])
def test_batched_decoding_equals_one_row_at_a_time(model, use_cache):
    src = torch.tensor([[1, 2, 3, 4, 5], [1, 6, 7, 0, 0], [1, 9, 0, 0, 0]])
    mask = (src != 0).unsqueeze(-2)
    batched = greedy_decode(model, src, mask, max_len=7, start_symbol=1, use_cache=use_cache)
    for i in range(3):
        n = int(mask[i].sum())
        row = greedy_decode(model, src[i : i + 1, :n], mask[i : i + 1, :, :n], 7, 1)
        assert torch.equal(batched[i : i + 1], row)


def test_end_symbol_stops_and_fills(model):
    src = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 7]])
    free = greedy_decode(model, src, None, max_len=8, start_symbol=1)
    end = int(free[0, 2])  # pretend the token produced at step 2 of row 0 is the end symbol
    stopped = greedy_decode(model, src, None, max_len=8, start_symbol=1, end_symbol=end, pad_symbol=0)
    assert stopped.size(1) <= 8
    row = stopped[0].tolist()
    first = row.index(end, 1)
    assert all(t == 0 for t in row[first + 1 :])
    assert stopped[:, :3].tolist()[0] == free[0, :3].tolist()


def test_copy_task_start_symbol_is_one_not_the_padding_id():
    batch = next(data_gen(11, 3, 1, seed=0))
    assert (batch.tgt[:, 0] == 1).all() and batch.pad == 0


def test_max_len_must_be_positive(model):
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        greedy_decode(model, torch.tensor([[1, 2]]), None, max_len=0, start_symbol=1)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((torch.tensor([[1.0, 2.0]]), None, 4, 1), {}, TypeError, "integer"),
        ((torch.tensor([1, 2]), None, 4, 1), {}, ValueError, r"\(batch, seq_len\)"),
        ((torch.tensor([[1, 2]]), None, 4, 1.0), {}, TypeError, "start_symbol"),
        ((torch.tensor([[1, 2]]), None, 4, 11), {}, ValueError, "start_symbol"),
        ((torch.tensor([[1, 2]]), None, 4, 1), dict(end_symbol=-1), ValueError, "end_symbol"),
        ((torch.tensor([[1, 2]]), None, 4, 1), dict(pad_symbol=12), ValueError, "pad_symbol"),
        ((torch.tensor([[1, 2]]), torch.ones(1, 1, 3), 4, 1), {}, ValueError, "src_mask"),
        ((torch.tensor([[1, 2]]), torch.ones(1, 2, 2), 4, 1), {}, ValueError, "src_mask"),
        ((torch.tensor([[1, 2]]), torch.ones(1, 1, 1, 2), 4, 1), {}, ValueError, "src_mask"),
        ((torch.tensor([[1, 2]]), None, 5002, 1), {}, ValueError, "positional"),
    ],
)
@pytest.mark.parametrize("use_cache", [False, True])
def test_bad_inputs_are_refused_before_any_work(model, args, kwargs, error, match, use_cache):
    calls = []
    hook = model.encoder.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(error, match=match):
            greedy_decode(model, *args, use_cache=use_cache, **kwargs)
    finally:
        hook.remove()
    assert not calls  # nothing was encoded


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.int64])
def test_masks_of_any_dtype_and_2d_masks_decode_alike(model, dtype):
    src = torch.tensor([[1, 2, 3, 4], [1, 5, 0, 0]])
    keep = (src != 0).unsqueeze(-2)
    expected = greedy_decode(model, src, keep, 6, 1)
    for use_cache in (False, True):
        assert torch.equal(greedy_decode(model, src, keep.to(dtype), 6, 1, use_cache=use_cache),
                           expected)
        assert torch.equal(greedy_decode(model, src, keep[:, 0].to(dtype), 6, 1,
                                         use_cache=use_cache), expected)


@pytest.mark.parametrize("src, kwargs, error, match", [
    (torch.zeros(1, 0, dtype=torch.long), {}, ValueError, r"src of shape \(1, 0\) is empty"),
    (torch.zeros(0, 4, dtype=torch.long), {}, ValueError, r"src of shape \(0, 4\) is empty"),
    (torch.ones(1, 4, dtype=torch.uint8), {}, TypeError, r"torch\.uint8.*src\.long\(\)"),
    ([[1, 2, 3]], {}, TypeError, "src must be a torch.Tensor .* got list"),
    (torch.ones(1, 4, dtype=torch.long), dict(start_symbol=1.7), TypeError, r"got 1\.7"),
    (torch.ones(1, 4, dtype=torch.long), dict(max_len=10**9), ValueError,
     "max_len 1000000000 feeds the decoder"),
    (torch.ones(1, 4, dtype=torch.long), dict(src_mask=torch.full((1, 1, 4), float("-inf"))),
     ValueError, "holds the value -inf"),
])
def test_bad_decoding_inputs_fail_before_encoding(monkeypatch, src, kwargs, error, match):
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
    monkeypatch.setattr(model, "encode", lambda *a: pytest.fail("encoded before the check"))
    args = dict(src_mask=None, max_len=5, start_symbol=1) | kwargs
    with pytest.raises(error, match=match):
        greedy_decode(model, src, **args)
