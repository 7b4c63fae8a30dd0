"""A corpus tokenised once into memory-mapped files, and token batches streamed from it."""

from __future__ import annotations

import functools
import itertools
import os
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vanilla_transformer.data import number_pairs, train_tokenizer, write_tsv
from vanilla_transformer.data.corpus import (
    TokenizedCorpus,
    _word_encoder,
    iter_tsv,
    sample_tsv,
    tokenize_corpus,
)
from vanilla_transformer.data.streaming import StreamingTokenBatches
from vanilla_transformer.data.token_batches import epoch_order, make_token_batches

PAD, BOS, EOS = 0, 1, 2
BATCH_FIELDS = ("src", "src_mask", "tgt", "tgt_y", "tgt_mask", "ntokens")


@functools.lru_cache(maxsize=1)
def corpus_and_pairs(tmp_root: str = "") -> tuple:
    import tempfile

    root = tmp_root or tempfile.mkdtemp()
    pairs = number_pairs(random.Random(0).sample(range(10**6), 400), "de")
    tok = train_tokenizer([s for p in pairs for s in p], vocab_size=120)
    tsv = write_tsv(os.path.join(root, "train.tsv"), pairs)
    corpus = tokenize_corpus(tsv, tok, os.path.join(root, "ids"), chunk_size=70)
    ids = list(zip(tok.encode_batch([s for s, _ in pairs]), tok.encode_batch([t for _, t in pairs])))
    return corpus, ids, tok, tsv


def assert_same_batch(a, b):
    for name in BATCH_FIELDS:
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def test_tokenised_ids_are_the_tokenizers():
    corpus, ids, _, _ = corpus_and_pairs()
    assert len(corpus) == len(ids)
    assert [corpus[i] for i in range(len(ids))] == ids
    assert corpus.src_lengths().tolist() == [len(s) for s, _ in ids]
    assert corpus.tgt_lengths().tolist() == [len(t) for _, t in ids]
    assert corpus.meta["src_tokens"] == sum(len(s) for s, _ in ids)
    with pytest.raises(IndexError, match="400"):
        corpus[400]


@settings(max_examples=8, deadline=None)
@given(st.integers(20, 400), st.integers(0, 2**40), st.integers(0, 3))
def test_batches_and_order_are_make_token_batches_and_epoch_order(max_tokens, seed, epoch):
    corpus, ids, _, _ = corpus_and_pairs()
    expected = make_token_batches(ids, max_tokens, pad=PAD, bos=BOS, eos=EOS)
    stream = StreamingTokenBatches(corpus, max_tokens, pad=PAD, bos=BOS, eos=EOS, seed=seed)
    assert stream.batches_in_epoch(epoch) == len(expected)
    order = epoch_order(len(expected), seed, epoch)
    for position in range(len(expected)):
        assert_same_batch(stream.batch(epoch, position), expected[order[position]])


def test_pools_cover_every_pair_once_within_budget_and_reshuffle_each_epoch():
    corpus, ids, _, _ = corpus_and_pairs()
    stream = StreamingTokenBatches(corpus, 120, pad=PAD, bos=BOS, eos=EOS, seed=3, pool_size=64)
    epochs = []
    for epoch in range(2):
        batches = [stream.indices(epoch, p) for p in range(stream.batches_in_epoch(epoch))]
        assert sorted(i for b in batches for i in b) == list(range(len(ids)))
        for b in batches:
            longest = max(max(len(ids[i][0]), len(ids[i][1])) + 1 for i in b)
            assert len(b) == 1 or len(b) * longest <= 120
        epochs.append(batches)
    assert epochs[0] != epochs[1]  # different pairs meet in a batch
    again = StreamingTokenBatches(corpus, 120, pad=PAD, bos=BOS, eos=EOS, seed=3, pool_size=64)
    assert [again.indices(1, p) for p in range(again.batches_in_epoch(1))] == epochs[1]
    # a pool as large as the corpus sorts it whole: batches of the same sizes and longest pair as
    # without pools (pairs of equal length may trade places)
    whole = StreamingTokenBatches(corpus, 120, pad=PAD, bos=BOS, eos=EOS, seed=3,
                                  pool_size=len(ids))
    plain = StreamingTokenBatches(corpus, 120, pad=PAD, bos=BOS, eos=EOS, seed=3)

    def shapes(stream):
        batches = (stream.indices(0, p) for p in range(stream.batches_in_epoch()))
        return sorted((len(b), max(max(len(ids[i][0]), len(ids[i][1])) for i in b))
                      for b in batches)

    assert shapes(whole) == shapes(plain)


@pytest.mark.parametrize("pool_size", [None, 100])
def test_resuming_from_epoch_and_position_continues_exactly(pool_size):
    corpus, _, _, _ = corpus_and_pairs()
    stream = StreamingTokenBatches(corpus, 300, pad=PAD, bos=BOS, eos=EOS, seed=1,
                                   pool_size=pool_size)
    n = stream.batches_in_epoch(0)
    straight = list(itertools.islice(stream.iterate(), n + 5))
    assert [(e, p) for e, p, _ in straight[n - 1:n + 1]] == [(0, n - 1), (1, 0)]
    for cut in (3, n - 1, n + 2):
        epoch, position, _ = straight[cut - 1]
        fresh = StreamingTokenBatches(corpus, 300, pad=PAD, bos=BOS, eos=EOS, seed=1,
                                      pool_size=pool_size)
        resumed = fresh.iterate(epoch, position + 1)  # the state saved after that batch
        for (e1, p1, b1), (e2, p2, b2) in zip(straight[cut:], resumed):
            assert (e1, p1) == (e2, p2)
            assert_same_batch(b1, b2)


def test_tokenising_again_is_skipped_unless_the_file_or_tokenizer_changed(tmp_path):
    pairs = [("one", "eins"), ("two", "zwei"), ("three", "drei")]
    tok = train_tokenizer([s for p in pairs for s in p], vocab_size=40)
    tsv = write_tsv(tmp_path / "t.tsv", pairs)
    first = tokenize_corpus(tsv, tok, tmp_path / "ids")
    stamp = os.stat(tmp_path / "ids" / "src.bin").st_mtime_ns
    assert len(tokenize_corpus(tsv, tok, tmp_path / "ids")) == 3
    assert os.stat(tmp_path / "ids" / "src.bin").st_mtime_ns == stamp  # reused
    write_tsv(tsv, pairs[:2])
    assert len(tokenize_corpus(tsv, tok, tmp_path / "ids")) == 2
    other = train_tokenizer(["x y z"], vocab_size=30)
    assert tokenize_corpus(tsv, other, tmp_path / "ids").meta["vocab_size"] == other.vocab_size
    assert len(first) == 3  # an open corpus keeps its own mapping
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids", "t.tsv"]  # no temporary left


def test_a_bad_line_is_named_and_leaves_no_folder(tmp_path):
    tsv = tmp_path / "bad.tsv"
    tsv.write_text("one\teins\ntwo zwei\n")
    tok = train_tokenizer(["one eins two zwei"], vocab_size=40)
    with pytest.raises(ValueError, match=r"bad.tsv line 2: expected exactly one tab"):
        tokenize_corpus(tsv, tok, tmp_path / "ids")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tsv"]
    tsv.write_text("one\t \n")
    with pytest.raises(ValueError, match="line 1: empty target"):
        list(iter_tsv(tsv))
    tsv.write_bytes(b"one\t\xff\n")
    with pytest.raises(ValueError, match="line 1: not UTF-8"):
        list(iter_tsv(tsv))
    tsv.write_text("\n\n")
    with pytest.raises(ValueError, match="empty file"):
        list(iter_tsv(tsv))
    with pytest.raises(ValueError, match="no such file"):
        list(iter_tsv(tmp_path / "missing.tsv"))
    with pytest.raises(ValueError, match="no such file"):
        tokenize_corpus(tmp_path / "missing.tsv", tok, tmp_path / "ids")
    with pytest.raises(TypeError, match="SharedTokenizer"):
        tokenize_corpus(tsv, "tokenizer.json", tmp_path / "ids")


def test_a_damaged_folder_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a tokenised corpus"):
        TokenizedCorpus(tmp_path)
    _, _, tok, tsv = corpus_and_pairs()
    folder = tokenize_corpus(tsv, tok, tmp_path / "ids").folder
    with open(folder / "tgt.bin", "r+b") as f:
        f.truncate(8)
    with pytest.raises(ValueError, match="tgt.bin: missing or not"):
        TokenizedCorpus(folder)


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        (dict(max_tokens=0), ValueError, "max_tokens"),
        (dict(max_tokens=1.5), TypeError, "max_tokens"),
        (dict(pool_size=0), ValueError, "pool_size"),
        (dict(pad=-1), ValueError, "pad"),
        (dict(seed=-1), ValueError, "seed"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, word):
    corpus, _, _, _ = corpus_and_pairs()
    options = dict(max_tokens=100, pad=PAD, bos=BOS, eos=EOS) | kwargs
    with pytest.raises(error, match=word):
        StreamingTokenBatches(corpus, **options)
    with pytest.raises(TypeError, match="TokenizedCorpus"):
        StreamingTokenBatches([([5], [6])], 100, pad=PAD, bos=BOS, eos=EOS)
    with pytest.raises(IndexError, match="position"):
        StreamingTokenBatches(corpus, 100, pad=PAD, bos=BOS, eos=EOS).indices(0, 10**6)


def test_sample_tsv_draws_k_pairs_in_file_order(tmp_path):
    pairs = [(f"s{i}", f"t{i}") for i in range(500)]
    tsv = write_tsv(tmp_path / "a.tsv", pairs)
    sample = sample_tsv(tsv, 50, seed=1)
    assert len(sample) == 50 and len(set(sample)) == 50
    positions = [pairs.index(p) for p in sample]
    assert positions == sorted(positions)
    assert sample == sample_tsv(tsv, 50, seed=1) != sample_tsv(tsv, 50, seed=2)
    assert sample_tsv(tsv, 1000) == pairs
    # every pair is equally likely: over many draws, the late half is kept about as often
    late = sum(int(s[0][1:]) >= 250 for seed in range(40) for s in sample_tsv(tsv, 50, seed=seed))
    assert 0.4 < late / (40 * 50) < 0.6
    with pytest.raises(ValueError, match="k must be a positive int"):
        sample_tsv(tsv, 0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab einszwö▁-,\u00e9\u4e2d") + [" "]),
                        min_size=1, max_size=30).map(str.strip).filter(bool),
                min_size=1, max_size=8))
def test_the_word_cache_gives_the_tokenizers_ids(texts):
    _, _, tok, _ = corpus_and_pairs()
    encode = _word_encoder(tok)
    assert encode is not tok.encode_batch  # the package's tokenizer takes the cached path
    assert encode(texts) == tok.encode_batch(texts)
    assert encode(texts) == tok.encode_batch(texts)  # with the cache filled
