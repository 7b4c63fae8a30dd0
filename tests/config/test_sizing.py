"""The sizing rules: the number corpus keeps the sizes it was tuned with, real text gets more
pieces, and every choice stays within its bounds."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vanilla_transformer.config import TRANSLATION_PRESETS, TranslationConfig
from vanilla_transformer.config.sizing import (
    MAX_VOCAB,
    MIN_EVAL,
    MIN_VOCAB,
    PRESET_LIMITS,
    SAMPLE,
    WORDS_PER_PIECE,
    CorpusStats,
    corpus_stats,
    describe,
    size_run,
)


def test_the_number_corpus_keeps_its_tuned_defaults():
    from vanilla_transformer.data.numbers import DEFAULT_SIZES, number_corpus

    # a tenth of the default training set: the same words repeat, and enough of them
    corpus = number_corpus("de", {**DEFAULT_SIZES, "train": 2000, "test": 1})
    stats = corpus_stats(corpus["train"], corpus["valid"])
    chosen = {name: choice.value for name, choice in size_run(stats).items()}
    defaults = TranslationConfig()
    assert chosen == {"vocab_size": defaults.vocab_size, "preset": "paper-small",
                      "eval_size": defaults.eval_size}
    # German number words are compounds, nearly all seen once: the English words repeat
    assert stats.repeated < 150 < stats.words // WORDS_PER_PIECE


def test_program_messages_get_a_piece_per_64_words():
    stats = CorpusStats(pairs=32_402, sampled=32_402, words=320_101, repeated=20_088,
                        characters=182, valid_pairs=1000, valid_chars=38.5)
    chosen = size_run(stats)
    assert chosen["vocab_size"].value == 320_101 // WORDS_PER_PIECE // 250 * 250 == 5000
    assert "64" in chosen["vocab_size"].why
    assert chosen["eval_size"].value == 250 and chosen["preset"].value == "paper-small"


def test_counts_of_a_corpus():
    train = [("Open file", "Datei öffnen"), ("Close file", "Datei schließen"),
             ("Open", "Öffnen")]
    stats = corpus_stats(train, [("Save", "Sichern"), ("Quit", "Beenden")])
    assert (stats.pairs, stats.sampled, stats.words) == (3, 3, 10)
    assert stats.repeated == 3  # "Open", "file", "Datei"
    assert stats.characters == len(set("Open fileDatei öffnenClose fileDatei schließen"
                                       "OpenÖffnen") - {" "})
    assert stats.valid_chars == (len("Sichern") + len("Beenden")) / 2


def test_a_large_file_is_counted_from_its_first_pairs():
    stats = corpus_stats(iter([("a b", "c d")] * 50), [], pairs=5000, sample=10)
    assert (stats.sampled, stats.words, stats.all_words) == (10, 40, 20_000)
    with pytest.raises(ValueError, match="pairs must be at least the 10 pairs read"):
        corpus_stats(iter([("a", "b")] * 50), [], pairs=5, sample=10)
    with pytest.raises(ValueError, match="no training pairs"):
        corpus_stats([], [])


@pytest.mark.parametrize("field, value", [("pairs", -1), ("words", 1.5), ("sampled", 0),
                                          ("valid_chars", float("nan")), ("repeated", True)])
def test_bad_stats_are_refused(field, value):
    good = dict(pairs=10, sampled=10, words=20, repeated=2, characters=5, valid_pairs=3,
                valid_chars=4.0)
    with pytest.raises(ValueError, match=field):
        CorpusStats(**{**good, field: value})


def test_a_script_without_spaces_gets_pieces_beyond_its_characters():
    stats = CorpusStats(pairs=1000, sampled=1000, words=2000, repeated=10, characters=3000,
                        valid_pairs=100, valid_chars=20.0)
    chosen = size_run(stats)["vocab_size"]
    assert chosen.value >= 6000 and chosen.value % 250 == 0 and "3,000 characters" in chosen.why


stats_strategy = st.builds(
    lambda pairs, frac, words, repeated, chars, valid, vchars: CorpusStats(
        pairs=pairs, sampled=max(1, round(pairs * frac)), words=words, repeated=repeated,
        characters=chars, valid_pairs=valid, valid_chars=vchars),
    st.integers(1, 50_000_000), st.floats(0, 1), st.integers(0, 10**9), st.integers(0, 10**6),
    st.integers(0, 5000), st.integers(0, 100_000), st.floats(0, 1000))


@given(stats_strategy)
def test_every_choice_is_within_its_bounds(stats):
    chosen = size_run(stats)
    vocab, preset, eval_size = (chosen[k].value for k in ("vocab_size", "preset", "eval_size"))
    assert isinstance(vocab, int) and vocab % 250 == 0
    assert MIN_VOCAB <= vocab <= max(MAX_VOCAB, 2 * stats.characters + 250)
    assert vocab >= 2 * stats.characters
    # no more pieces than repeated words, or than words / WORDS_PER_PIECE (bar the floors)
    floor = max(MIN_VOCAB, 2 * stats.characters + 250)
    assert vocab <= max(floor, min(stats.repeated, stats.all_words // WORDS_PER_PIECE))
    assert preset in TRANSLATION_PRESETS
    assert eval_size == stats.valid_pairs or MIN_EVAL <= eval_size < stats.valid_pairs
    assert all(choice.why for choice in chosen.values())


@given(st.integers(1, 10**8), st.integers(1, 10**8))
def test_a_larger_corpus_never_gets_a_smaller_preset(a, b):
    order = [name for _, name in PRESET_LIMITS] + ["paper-big"]

    def preset(pairs):
        stats = CorpusStats(pairs=pairs, sampled=1, words=10, repeated=1, characters=1,
                            valid_pairs=1, valid_chars=1.0)
        return order.index(str(size_run(stats)["preset"].value))

    low, high = sorted((a, b))
    assert preset(low) <= preset(high)


def test_describe_names_each_choice_and_why():
    stats = CorpusStats(pairs=20_000, sampled=20_000, words=184_706, repeated=103,
                        characters=27, valid_pairs=500, valid_chars=51.0)
    line = describe(size_run(stats))
    assert line == ("sized from the data: vocabulary 250 (103 words seen twice, at least 250), "
                    "preset paper-small (20,000 pairs, under 500,000), validation sample 200 "
                    "(about 10,000 characters of references)")


def test_the_sizing_module_imports_without_torch():
    code = ("import sys; import vanilla_transformer.config.sizing; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    assert SAMPLE >= 10_000
