"""Translating sentences with a model and scoring them with sacrebleu."""

from __future__ import annotations

import pytest
import sacrebleu
import torch

from vanilla_transformer import make_model
from vanilla_transformer.data.tokenizer import train_tokenizer
from vanilla_transformer.inference.evaluate import score_translations, translate_ids, translate_sentences


@pytest.fixture(scope="module")
def setup():
    tok = train_tokenizer(["one two three", "eins zwei drei"] * 3, vocab_size=40)
    torch.manual_seed(0)
    model = make_model(tok.vocab_size, tok.vocab_size, N=1, d_model=16, d_ff=32, h=2).eval()
    return model, tok


def test_batched_translation_keeps_the_input_order(setup):
    model, tok = setup
    sentences = ["one", "one two three three", "two", "three one"]
    together = translate_sentences(model, tok, sentences, beam_size=1, max_extra=5, batch_size=3)
    alone = [translate_sentences(model, tok, [s], beam_size=1, max_extra=5)[0] for s in sentences]
    assert together == alone


@pytest.mark.parametrize("beam", [1, 4])
def test_output_length_is_each_sentences_own(setup, beam):
    model, _ = setup
    sources = [[5, 2], [5, 6, 7, 8, 9, 2]]  # an untrained model rarely stops by itself
    for extra in (0, 3):
        out = translate_ids(model, sources, beam_size=beam, max_extra=extra)
        assert [len(row) <= len(src) + extra for row, src in zip(out, sources)] == [True, True]
        assert all(2 not in row for row in out)  # cut at the end symbol


def test_beam_of_one_is_greedy(setup):
    model, tok = setup
    sentences = ["one", "two three"]
    greedy = translate_sentences(model, tok, sentences, beam_size=1, max_extra=4)
    assert translate_sentences(model, tok, sentences, beam_size=1, max_extra=4) == greedy


def test_bad_arguments(setup):
    model, tok = setup
    with pytest.raises(TypeError, match="one string"):
        translate_sentences(model, tok, "one")
    with pytest.raises(ValueError, match="beam_size"):
        translate_sentences(model, tok, ["one"], beam_size=0)


def test_scores_match_sacrebleu():
    hyps = ["the cat sat on the mat", "a b c d e", "x"]
    refs = ["the cat sat on a mat", "a b c d e", "y"]
    s = score_translations(hyps, refs)
    assert s.bleu == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert s.chrf == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
    assert s.exact_match == pytest.approx(100 / 3)
    assert s.lines()[2] == "exact match 33.33 % (1/3)"


def test_one_word_sentences_need_character_bleu():
    words = ["vierhunderteins", "zweitausend"]
    assert score_translations(words, words).bleu == 0.0  # no word 4-grams at all
    assert score_translations(words, words, bleu_tokenize="char").bleu == pytest.approx(100.0)
    assert score_translations(words, words).chrf == pytest.approx(100.0)


def test_scoring_errors():
    with pytest.raises(ValueError, match="references"):
        score_translations(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="no hypotheses"):
        score_translations([], [])
    with pytest.raises(ValueError, match="bleu_tokenize"):
        score_translations(["a"], ["a"], bleu_tokenize="nope")
