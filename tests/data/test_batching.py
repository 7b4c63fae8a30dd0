"""Batch, its masks, data_gen and collation."""

import pytest
import torch

from vanilla_transformer import Batch, collate_batch, data_gen, pad_sequences


def test_batch_on_the_sources_two_by_four_example():
    # The source's example batch [[2, 1, 3, 4], [2, 3, 1, 4]] with Batch's default pad id 2:
    # the leading 2s are padding, so they are masked out (the source's comment shows all ones).
    src = torch.tensor([[2, 1, 3, 4], [2, 3, 1, 4]])
    b = Batch(src, src)
    assert b.src_mask.shape == (2, 1, 4)
    assert b.src_mask.int().tolist() == [[[0, 1, 1, 1]], [[0, 1, 1, 1]]]
    assert b.tgt.tolist() == [[2, 1, 3], [2, 3, 1]]
    assert b.tgt_y.tolist() == [[1, 3, 4], [3, 1, 4]]
    assert b.tgt_mask.shape == (2, 3, 3)
    assert b.tgt_mask[0].int().tolist() == [[0, 0, 0], [0, 1, 0], [0, 1, 1]]
    assert int(b.ntokens) == 6
    # with pad=0 (no zeros present) every position is kept, as the source's comment says
    b0 = Batch(src, src, pad=0)
    assert b0.src_mask.all()
    assert b0.tgt_mask[1].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


def test_make_std_mask_combines_padding_and_future():
    mask = Batch.make_std_mask(torch.tensor([[5, 6, 0, 0]]), pad=0)
    assert mask.dtype == torch.bool
    assert mask[0].int().tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]


def test_source_only_batch():
    b = Batch(torch.tensor([[1, 2, 0]]), pad=0)
    assert not hasattr(b, "tgt") and b.src_mask.int().tolist() == [[[1, 1, 0]]]


def test_data_gen_copy_task_layout_and_reproducibility():
    batches = list(data_gen(11, 4, 3, seed=7))
    again = list(data_gen(11, 4, 3, generator=torch.Generator().manual_seed(7)))
    assert all(torch.equal(a.src, b.src) for a, b in zip(batches, again))
    b = batches[0]
    assert torch.equal(b.src, torch.cat([b.tgt, b.tgt_y[:, -1:]], dim=1))
    assert (b.src[:, 0] == 1).all()  # the start symbol is 1 ...
    assert (b.src != 0).all()  # ... and 0, the padding id, never occurs
    assert int(b.ntokens) == 4 * 9
    assert not torch.equal(batches[0].src, list(data_gen(11, 4, 1, seed=8))[0].src)


def test_pad_sequences_and_collate():
    assert pad_sequences([torch.tensor([1, 2]), [3]], pad=9).tolist() == [[1, 2], [3, 9]]
    b = collate_batch([([5, 6], [7]), ([5], [8, 9, 10])], pad=0, bos=1, eos=2)
    assert b.src.tolist() == [[5, 6], [5, 0]]
    assert b.tgt.tolist() == [[1, 7, 2, 0], [1, 8, 9, 10]]
    assert b.tgt_y.tolist() == [[7, 2, 0, 0], [8, 9, 10, 2]]
    assert int(b.ntokens) == 6
    loader = torch.utils.data.DataLoader([([3, 4], [5, 6])] * 4, batch_size=2,
                                         collate_fn=lambda pairs: collate_batch(pairs, pad=0, bos=1))
    assert [len(batch) for batch in loader] == [2, 2]


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((torch.tensor([[1.0, 2.0]]),), TypeError, "integer tensor"),
        ((torch.tensor([1, 2]),), ValueError, r"shape \(batch, seq_len\)"),
        ((torch.tensor([[1, 2]]), torch.tensor([[1, 2], [3, 4]])), ValueError, "batches differ"),
        ((torch.tensor([[1, 2]]), torch.tensor([[1]])), ValueError, "at least 2 positions"),
    ],
)
def test_bad_batches(args, error, match):
    with pytest.raises(error, match=match):
        Batch(*args)


@pytest.mark.parametrize("call, error, match", [
    (lambda: collate_batch([([1.7, 2.9], [3.5, 4.2])], pad=0), TypeError, r"1\.7 \(float\)"),
    (lambda: collate_batch([([1, 2], [3, 4.0])], pad=0), TypeError, r"target .* 4\.0"),
    (lambda: collate_batch([([1], [2])], pad=0, bos=1.0), TypeError, "bos must be an int"),
    (lambda: collate_batch([([1, 2],)], pad=0), ValueError, r"pairs\[0\] must be a \(src, tgt\)"),
    (lambda: collate_batch([("hello", [2])], pad=0), TypeError, "string 'hello'"),
    (lambda: pad_sequences([torch.tensor([1.0, 2.0])], pad=0), TypeError, "torch.float32"),
    (lambda: pad_sequences([[[1, 2]]], pad=0), ValueError, r"sequence 0 must be 1-D"),
    (lambda: pad_sequences([[1]], pad="0"), TypeError, r"pad .* got '0'"),
    (lambda: Batch(torch.tensor([[1, 2]]), pad=None), TypeError, "pad .* got None"),
    (lambda: Batch(torch.zeros(0, 3, dtype=torch.long)), ValueError, r"\(0, 3\) is empty"),
    (lambda: Batch(torch.zeros(2, 0, dtype=torch.long)), ValueError, r"\(2, 0\) is empty"),
    (lambda: Batch(torch.tensor([[1, 2]], dtype=torch.uint8)), TypeError, r"src\.long\(\)"),
])
def test_bad_ids_and_pads_are_refused_not_truncated(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_integer_tensors_of_any_width_are_collated_as_long():
    b = collate_batch([(torch.tensor([4, 5], dtype=torch.uint8), torch.tensor([6], dtype=torch.int16))],
                      pad=0, bos=1, eos=2)
    assert b.src.dtype == b.tgt.dtype == torch.long
    assert b.src.tolist() == [[4, 5]] and b.tgt.tolist() == [[1, 6]] and b.tgt_y.tolist() == [[6, 2]]
    assert pad_sequences([[], [3]], pad=0).tolist() == [[0], [3]]
