"""The number corpus: disjoint splits, the words of num2words, and TSV reading and writing."""

from __future__ import annotations

import pytest
from num2words import num2words

from vanilla_transformer.data.numbers import (
    number_corpus,
    number_pairs,
    read_tsv,
    split_numbers,
    write_tsv,
)


def test_splits_are_disjoint_and_seeded():
    sizes = {"train": 500, "valid": 50, "test": 50}
    a = split_numbers(sizes, limit=1000, seed=3, always_first=0)
    assert {k: len(v) for k, v in a.items()} == sizes
    assert not set(a["train"]) & set(a["test"])
    assert not set(a["train"]) & set(a["valid"])
    assert not set(a["valid"]) & set(a["test"])
    assert a == split_numbers(sizes, limit=1000, seed=3, always_first=0)
    assert a != split_numbers(sizes, limit=1000, seed=4, always_first=0)


def test_small_numbers_are_all_in_training():
    s = split_numbers({"train": 1500, "valid": 100, "test": 100}, limit=10**6, seed=0)
    assert set(range(1000)) <= set(s["train"]) and len(set(s["train"])) == 1500
    assert min(s["test"]) >= 1000 and not set(s["test"]) & set(s["train"])
    with pytest.raises(ValueError, match="at least the 1000"):
        split_numbers({"train": 10, "test": 5}, limit=10**6)


def test_splits_need_enough_numbers():
    with pytest.raises(ValueError, match="distinct numbers"):
        split_numbers({"train": 8, "test": 3}, limit=10, always_first=0)


@pytest.mark.parametrize("lang", ["de", "fr"])
def test_pairs_are_num2words(lang):
    numbers = [0, 7, 21, 421, 1001, 123456, 999999]
    pairs = number_pairs(numbers, lang)
    assert pairs == [(num2words(n, lang="en"), num2words(n, lang=lang)) for n in numbers]
    assert pairs[3][1] == {"de": "vierhunderteinundzwanzig", "fr": "quatre cent vingt et un"}[lang]


def test_unknown_language():
    with pytest.raises(ValueError, match="lang"):
        number_corpus("xx", {"train": 1})


def test_tsv_round_trip(tmp_path):
    corpus = number_corpus("de", {"train": 20}, limit=10**6, seed=0, always_first=0)
    path = write_tsv(tmp_path / "train.tsv", corpus["train"])
    assert read_tsv(path) == corpus["train"]
    assert path.read_text(encoding="utf-8").count("\n") == 20


@pytest.mark.parametrize(
    "content, message",
    [
        ("one\teins\ntwo zwei\n", "line 2: expected exactly one tab"),
        ("one\teins\tx\n", "line 1: expected exactly one tab .* found 2"),
        ("", "empty file"),
        ("\n\n", "empty file"),
        ("one\t\n", "line 1: empty target"),
    ],
)
def test_bad_tsv_is_named(tmp_path, content, message):
    path = tmp_path / "bad.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_tsv(path)


def test_missing_and_undecodable_files(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        read_tsv(tmp_path / "missing.tsv")
    (tmp_path / "latin1.tsv").write_bytes("f\xfcnf\tf\xfcnf\n".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8"):
        read_tsv(tmp_path / "latin1.tsv")
    with pytest.raises(ValueError, match="folder"):
        read_tsv(tmp_path)
