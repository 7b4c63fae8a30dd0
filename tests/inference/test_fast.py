"""The batched decoders of inference/fast.py give what the readable greedy_decode and
beam_search give, sentence by sentence, on seeded tiny models and on the shipped translator."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from vanilla_transformer import make_model
from vanilla_transformer.data.batching import pad_sequences
from vanilla_transformer.inference import beam_search, greedy_decode, length_penalty
from vanilla_transformer.inference.beam import sequence_log_prob
from vanilla_transformer.inference.evaluate import translate_ids, translate_nbest
from vanilla_transformer.inference.fast import batch_beam_search, batch_greedy, supports_fast

START, END, PAD = 1, 2, 0
ROOT = Path(__file__).resolve().parents[2]
TRANSLATOR = ROOT / "docs" / "assets" / "translator"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matrices: one thread is fastest, and immune to a busy machine's other work."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny(seed: int, vocab: int = 13, **kwargs) -> torch.nn.Module:
    """A random model with large weights (distributions far from uniform) and a push towards
    the end symbol, so that rows end at different steps."""
    torch.manual_seed(seed)
    model = make_model(vocab, vocab, N=2, d_model=32, d_ff=64, h=4, dropout=0.0, **kwargs)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(2.0)
        model.generator.proj.bias[END] += 1.0
    return model.eval()


def sources(seed: int, rows: int = 7, vocab: int = 13) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 7, (rows,), generator=g).tolist()
    return [torch.randint(3, vocab, (n,), generator=g).tolist() + [END] for n in lengths]


def batch(ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    src = pad_sequences(ids, PAD)
    return src, (src != PAD).unsqueeze(-2)


def alone_greedy(model, row: list[int], max_len: int) -> list[int]:
    ys = greedy_decode(model, torch.tensor([row]), None, max_len, START, end_symbol=END,
                       use_cache=True)[0, 1:].tolist()
    return ys[: ys.index(END) + 1] if END in ys else ys


@pytest.mark.parametrize("seed", [0, 2, 3])
@pytest.mark.parametrize("norm_first", [True, False])
def test_greedy_is_each_sentence_decoded_alone(seed, norm_first):
    model = tiny(seed, norm_first=norm_first)
    ids = sources(seed)
    limits = [len(row) + 3 for row in ids]  # each row its own limit
    src, mask = batch(ids)
    out = batch_greedy(model, src, mask, limits, START, END)
    assert [h.tokens for h in out] == [alone_greedy(model, r, n) for r, n in zip(ids, limits)]
    lengths = {len(h.tokens) for h in out}
    assert len(lengths) > 1  # rows ended at different steps: the batch shrank on the way
    for h, row in zip(out, ids):
        assert len(h.log_probs) == len(h.tokens)
        ys = torch.tensor([[START, *h.tokens]])
        total = sequence_log_prob(model, torch.tensor([row]), None, ys).item()
        assert sum(h.log_probs) == pytest.approx(total, abs=1e-4)
        assert h.score == pytest.approx(total / length_penalty(len(h.tokens)), abs=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("k", [1, 3, 4])
def test_beam_is_each_sentence_searched_alone(seed, k):
    model = tiny(seed)
    ids = sources(seed + 10)
    limits = [len(row) + 4 for row in ids]
    src, mask = batch(ids)
    out = batch_beam_search(model, src, mask, limits, START, END, beam_size=k, nbest=k)
    for row, limit, found in zip(ids, limits, out, strict=True):
        _, _, [ranked] = beam_search(model, torch.tensor([row]), None, limit, START, END,
                                     beam_size=k, return_all=True)
        assert [h.tokens for h in found] == [r.tokens[1:].tolist() for r in ranked]
        assert [h.score for h in found] == pytest.approx([r.score for r in ranked], abs=1e-5)
        for h in found:
            assert sum(h.log_probs) / length_penalty(len(h.tokens)) == pytest.approx(
                h.score, abs=1e-4)
    best = batch_beam_search(model, src, mask, limits, START, END, beam_size=k)
    assert [row[0].tokens for row in best] == [row[0].tokens for row in out]


def test_beam_with_the_batch_limit_is_beam_search_on_the_batch():
    model = tiny(5)
    ids = sources(5, rows=9)
    src, mask = batch(ids)
    limit = src.size(1) + 3
    tokens, scores = beam_search(model, src, mask, limit, START, END, beam_size=4)
    out = batch_beam_search(model, src, mask, [limit] * len(ids), START, END, beam_size=4)
    for row, expected, score in zip(out, tokens.tolist(), scores.tolist(), strict=True):
        n = len(row[0].tokens)
        assert row[0].tokens == expected[1 : n + 1] and row[0].score == pytest.approx(score)


def test_translate_ids_fast_and_readable_agree():
    model = tiny(7, vocab=17)
    ids = sources(7, rows=16, vocab=17)
    for beam in (1, 4):
        # one sentence a batch: the readable decoders' limit is the sentence's own
        readable = translate_ids(model, ids, beam_size=beam, max_extra=3, batch_size=1,
                                 fast=False)
        assert translate_ids(model, ids, beam_size=beam, max_extra=3) == readable
        assert translate_ids(model, ids, beam_size=beam, max_extra=3, batch_size=3,
                             max_tokens=10) == readable


@pytest.fixture(scope="module")
def translator():
    from vanilla_transformer.training.run_folder import load_translator

    return load_translator(TRANSLATOR)


def test_the_shipped_translator_decodes_the_same_both_ways(translator):
    from vanilla_transformer.data.numbers import DEFAULT_SIZES, number_pairs, split_numbers

    model, tokenizer = translator
    pairs = number_pairs(split_numbers(DEFAULT_SIZES, seed=0)["test"][:200], "de")
    ids = [tokenizer.encode(s) + [END] for s, _ in pairs]
    for beam in (1, 4):
        fast = translate_ids(model, ids, beam_size=beam)
        assert fast == translate_ids(model, ids, beam_size=beam, fast=False)
    exact = sum(tokenizer.decode(row) == t for row, (_, t) in zip(fast, pairs))
    assert exact >= 197  # the translator's test exact match is about 99.8 %


def test_nbest_comes_best_first_with_a_log_probability_a_piece(translator):
    model, tokenizer = translator
    [row] = translate_nbest(model, tokenizer, ["four hundred and one"], nbest=4)
    assert len(row) == 4 and row[0].text == "vierhunderteins"
    assert [h.score for h in row] == sorted((h.score for h in row), reverse=True)
    for h in row:
        assert len(h.pieces) == len(h.log_probs) and all(p <= 0 for p in h.log_probs)
        assert h.pieces[-1] == "</s>" and "".join(h.pieces[:-1]).replace("▁", " ").strip() == h.text
    with pytest.raises(ValueError, match="nbest"):
        translate_nbest(model, tokenizer, ["one"], nbest=5, beam_size=4)
    [[greedy]] = translate_nbest(model, tokenizer, ["one"], beam_size=1)
    assert greedy.text == "eins" and greedy.score == pytest.approx(
        sum(greedy.log_probs) / length_penalty(len(greedy.pieces)))


def test_bad_calls_are_refused():
    model = tiny(0)
    src, mask = batch(sources(0, rows=2))
    with pytest.raises(ValueError, match="nbest"):
        batch_beam_search(model, src, mask, [5, 5], START, END, beam_size=2, nbest=3)
    with pytest.raises(ValueError, match="max_lens"):
        batch_greedy(model, src, mask, [5], START, END)
    with pytest.raises(ValueError, match="at least 2"):
        batch_greedy(model, src, mask, [5, 1], START, END)
    assert not supports_fast(model.train())
    with pytest.raises(TypeError, match="eval"):
        batch_greedy(model, src, mask, [5, 5], START, END)
    model.eval()
    with torch.no_grad():
        model.generator.proj.weight[0, 0] = math.nan
    with pytest.raises(ValueError, match="not finite"):
        batch_beam_search(model, src, mask, [5, 5], START, END)
    with pytest.raises(ValueError, match="not finite"):
        batch_greedy(model, src, mask, [5, 5], START, END)


def test_a_model_the_batched_decoders_cannot_run_gets_the_readable_ones():
    class Wrapped(torch.nn.Module):  # a sublayer connection of someone else's making
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x, sublayer):
            return self.inner(x, sublayer)

    model = tiny(3)
    layer = model.decoder.layers[0]
    layer.sublayer[0] = Wrapped(layer.sublayer[0])
    assert not supports_fast(model)
    ids = sources(3, rows=4)
    assert translate_ids(model, ids, beam_size=2, max_extra=2) == translate_ids(
        model, ids, beam_size=2, max_extra=2, fast=False)
    src, mask = batch(ids)
    with pytest.raises(TypeError, match="make_model"):
        batch_beam_search(model, src, mask, [4] * len(ids), START, END)
