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
