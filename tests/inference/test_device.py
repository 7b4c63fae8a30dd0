"""Decoding makes every tensor on the device of the model's parameters (the device of `src`).

No GPU is needed: the `meta` device stands in for "not the CPU". A tensor made without a device
while `torch.device("meta")` is the default lands on `meta`, and mixing it with the CPU model's
tensors fails, so decoding a CPU model under that default proves that no tensor was left to the
default device; decoding a `meta` model proves that none was put on the CPU.
"""

from __future__ import annotations

import pytest
import torch

from vanilla_transformer import beam_search, greedy_decode, make_model
from vanilla_transformer.data.tokenizer import EOS, train_tokenizer
from vanilla_transformer.inference.beam import sequence_log_prob
from vanilla_transformer.inference.evaluate import translate_ids, translate_sentences

SRC = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 0]])


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()


@pytest.mark.parametrize("use_cache", [False, True])
def test_greedy_and_beam_ignore_the_default_device(model, use_cache):
    mask = (SRC != 0).unsqueeze(-2)
    greedy = greedy_decode(model, SRC, mask, 7, 1, end_symbol=2, use_cache=use_cache)
    beam, scores = beam_search(model, SRC, mask, 7, 1, 2, 3, use_cache=use_cache)
    log_prob = sequence_log_prob(model, SRC, mask, beam)
    with torch.device("meta"):
        assert torch.equal(greedy_decode(model, SRC, mask, 7, 1, end_symbol=2,
                                         use_cache=use_cache), greedy)
        again, again_scores = beam_search(model, SRC, mask, 7, 1, 2, 3, use_cache=use_cache)
        assert torch.equal(again, beam) and torch.equal(again_scores, scores)
        assert torch.equal(sequence_log_prob(model, SRC, mask, beam), log_prob)
    assert greedy.device.type == beam.device.type == scores.device.type == "cpu"


@pytest.mark.parametrize("use_cache", [False, True])
def test_greedy_decodes_on_the_meta_device(model, use_cache):
    meta = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval().to("meta")
    src = SRC.to("meta")
    ys = greedy_decode(meta, src, (src != 0).unsqueeze(-2), 6, 1, use_cache=use_cache)
    assert ys.device.type == "meta" and ys.shape == (2, 6)


def test_translate_moves_the_sources_to_the_models_device(model):
    tok = train_tokenizer(["one two three", "eins zwei drei"] * 3, vocab_size=40)
    torch.manual_seed(0)
    small = make_model(tok.vocab_size, tok.vocab_size, N=1, d_model=16, d_ff=32, h=2).eval()
    sentences = ["one", "two three", "three one two"]
    for beam in (1, 3):
        expected = translate_sentences(small, tok, sentences, beam_size=beam, max_extra=4)
        with torch.device("meta"):  # the padded batch is built, then moved to the model's
            assert translate_sentences(small, tok, sentences, beam_size=beam,
                                       max_extra=4) == expected
    ids = [tok.encode(s) + [EOS] for s in sentences]
    expected_ids = translate_ids(small, ids, beam_size=3, max_extra=4)
    with torch.device("meta"):
        assert translate_ids(small, ids, beam_size=3, max_extra=4) == expected_ids


def test_a_source_on_another_device_is_refused(model):
    meta = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval().to("meta")
    with pytest.raises(ValueError, match=r"src is on cpu but the model's parameters are on "
                                         r"meta: move it with src.to\('meta'\)"):
        greedy_decode(meta, SRC, None, 5, 1)
    with pytest.raises(ValueError, match="src is on cpu but the model's parameters are on meta"):
        beam_search(meta, SRC, None, 5, 1, 2, 2)
    with pytest.raises(ValueError, match="src_mask is on meta but src is on cpu"):
        greedy_decode(model, SRC, (SRC != 0).to("meta"), 5, 1)
