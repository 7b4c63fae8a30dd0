"""The shared byte-pair tokenizer: special ids, exact round trips, saving and loading."""

from __future__ import annotations

import pytest

from vanilla_transformer.data.numbers import number_corpus
from vanilla_transformer.data.tokenizer import (
    BOS,
    EOS,
    PAD,
    SPECIAL_TOKENS,
    UNK,
    SharedTokenizer,
    train_tokenizer,
)


@pytest.fixture(scope="module")
def corpus():
    de = number_corpus("de", {"train": 300, "test": 50}, limit=10**6, seed=1, always_first=0)
    fr = number_corpus("fr", {"train": 300, "test": 50}, limit=10**6, seed=2, always_first=0)
    return de, fr


@pytest.fixture(scope="module")
def tokenizer(corpus):
    de, fr = corpus
    return train_tokenizer([s for p in de["train"] + fr["train"] for s in p], vocab_size=200)


def test_special_ids(tokenizer):
    assert [tokenizer.tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [PAD, BOS, EOS, UNK]
    assert tokenizer.vocab_size <= 200


def test_round_trip_is_exact_on_unseen_sentences(tokenizer, corpus):
    for split in corpus:
        for sentence in (s for p in split["test"] for s in p):
            ids = tokenizer.encode(sentence)
            assert UNK not in ids
            assert tokenizer.decode(ids) == sentence
            assert tokenizer.decode([BOS, *ids, EOS, PAD, 7]) == sentence


def test_one_vocabulary_for_both_languages(tokenizer):
    assert tokenizer.tokens("four")[0] == "▁four"
    assert any("hundert" in t for t in tokenizer.tokens("vierhundert"))


def test_save_and_load(tokenizer, tmp_path):
    path = tokenizer.save(tmp_path / "tokenizer.json")
    again = SharedTokenizer.load(path)
    text = "neunhundertneunundneunzigtausend"
    assert again.encode(text) == tokenizer.encode(text)
    with pytest.raises(ValueError, match="not a tokenizer"):
        SharedTokenizer.load(tmp_path / "missing.json")


def test_unknown_characters_become_unk(tokenizer):
    assert UNK in tokenizer.encode("四")


def test_bad_arguments():
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(["a"], vocab_size=4)
    with pytest.raises(ValueError, match="non-empty"):
        train_tokenizer([], vocab_size=10)
    with pytest.raises(TypeError):
        train_tokenizer(["a"], vocab_size=2.5)
