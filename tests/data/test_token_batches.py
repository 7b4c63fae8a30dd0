"""Token-count batching: every pair once, batches within the token budget, seeded order."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vanilla_transformer.data.token_batches import epoch_order, make_token_batches, token_buckets


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 30)), min_size=1, max_size=80),
       st.integers(1, 200))
def test_buckets_cover_every_pair_within_budget(lengths, max_tokens):
    src, tgt = [s for s, _ in lengths], [t for _, t in lengths]
    buckets = token_buckets(src, tgt, max_tokens)
    assert sorted(i for b in buckets for i in b) == list(range(len(lengths)))
    for bucket in buckets:
        longest = max(max(src[i], tgt[i]) for i in bucket)
        assert len(bucket) == 1 or len(bucket) * longest <= max_tokens
    # sorted by length, so the batches fill up: two neighbours could not be merged
    for a, b in zip(buckets, buckets[1:]):
        longest = max(max(src[i], tgt[i]) for i in a + b)
        assert (len(a) + len(b)) * longest > max_tokens or len(a + b) == 1


def test_batches_by_tokens_not_sentences():
    pairs = [([5] * n, [6] * n) for n in [1] * 20 + [9] * 4]
    batches = make_token_batches(pairs, max_tokens=40, pad=0, bos=1, eos=2)
    rows = [len(b) for b in batches]
    assert sum(rows) == 24
    assert rows[0] > rows[-1]  # short sentences many to a batch, long ones few
    for b in batches:
        assert b.src.numel() <= 40 and b.tgt.numel() <= 40
        assert (b.tgt[:, 0] == 1).all()
        assert ((b.tgt_y == 2).sum(dim=1) == 1).all()  # one end symbol per target
        assert ((b.src == 2).sum(dim=1) == 1).all()


def test_epoch_order_is_a_seeded_permutation():
    a = epoch_order(50, seed=1, epoch=2)
    assert sorted(a) == list(range(50))
    torch.manual_seed(123)
    assert epoch_order(50, seed=1, epoch=2) == a  # the global random state plays no part
    assert epoch_order(50, seed=1, epoch=3) != a


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_tokens"):
        token_buckets([1], [1], 0)
    with pytest.raises(ValueError, match="lengths"):
        token_buckets([1, 2], [1], 10)
    with pytest.raises(ValueError, match="at least one"):
        make_token_batches([], 10, pad=0, bos=1, eos=2)
