"""Tests of vanilla_transformer.beam_search against exhaustive search and greedy decoding."""

from __future__ import annotations

from itertools import product

import pytest
import torch

from vanilla_transformer import greedy_decode, make_model
from vanilla_transformer.beam_search import (
    Hypothesis,
    beam_search,
    length_penalty,
    sequence_log_prob,
)

START, END, PAD = 1, 2, 0


def peaky_model(seed: int, vocab: int) -> torch.nn.Module:
    """A random tiny model whose next-token distributions are far from uniform, so the greedy
    path is often not the most probable sequence."""
    torch.manual_seed(seed)
    model = make_model(vocab, vocab, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    with torch.no_grad():
        model.generator.proj.weight.mul_(4.0)
    return model.eval()


def sources(seed: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab, (3, 5), generator=g)
    src[:, 0] = START
    src[1, 3:] = PAD  # right padding in the source
    src[2, 4:] = PAD
    return src, src != PAD


def all_hypotheses(vocab: int, n_generated: int, end: int | None) -> list[tuple[int, ...]]:
    """Every output beam search can return: ended by `end` at any length, or cut at the limit."""
    others = [v for v in range(vocab) if v != end]
    out: list[tuple[int, ...]] = []
    if end is not None:
        for n in range(1, n_generated + 1):
            out += [p + (end,) for p in product(others, repeat=n - 1)]
    out += list(product(others, repeat=n_generated))
    return out


def exhaustive_best(model, src, mask, n_generated, end, alpha):
    """Score every hypothesis with teacher forcing; return (best score, best tokens, runner-up)."""
    hyps = all_hypotheses(model.generator.proj.out_features, n_generated, end)
    scored = []
    for h in hyps:
        ys = torch.tensor([[START, *h]])
        logp = sequence_log_prob(model, src, mask, ys).item()
        scored.append((logp / length_penalty(len(h), alpha), (START, *h)))
    scored.sort(key=lambda s: s[0], reverse=True)
    return scored[0][0], scored[0][1], scored[1][0]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
@pytest.mark.parametrize("end", [END, None], ids=["with-end", "no-end"])
def test_full_width_beam_finds_the_exhaustive_optimum(seed, alpha, end):
    vocab, n_generated = 4, 3
    model = peaky_model(seed, vocab)
    src, mask = sources(seed, vocab)
    tokens, scores, hyps = beam_search(model, src, mask, max_len=n_generated + 1,
                                       start_symbol=START, end_symbol=end,
                                       beam_size=vocab**n_generated, length_penalty=alpha,
                                       pad_symbol=PAD, return_all=True)
    for b in range(src.size(0)):
        best_score, best_tokens, runner_up = exhaustive_best(
            model, src[b : b + 1], mask[b : b + 1], n_generated, end, alpha)
        assert scores[b].item() == pytest.approx(best_score, abs=1e-5)
        assert hyps[b][0].score == pytest.approx(best_score, abs=1e-5)
        if best_score - runner_up > 1e-4:  # a clear winner must be the one returned
            assert tuple(hyps[b][0].tokens.tolist()) == best_tokens
            row = tokens[b].tolist()
            assert tuple(row[: len(best_tokens)]) == best_tokens
            assert all(t == PAD for t in row[len(best_tokens):])


def test_wider_beams_find_better_sequences_than_greedy():
    vocab, n_generated = 5, 4
    gains = 0
    for seed in range(4):
        model = peaky_model(seed, vocab)
        src, mask = sources(seed, vocab)
        greedy = greedy_decode(model, src, mask, n_generated + 1, START)
        _, wide = beam_search(model, src, mask, n_generated + 1, START, None, beam_size=8,
                              length_penalty=0.0)
        greedy_logp = sequence_log_prob(model, src, mask, greedy)
        assert torch.all(wide >= greedy_logp - 1e-5)  # a beam never does worse than greedy here
        gains += int((wide > greedy_logp + 1e-4).sum())
    assert gains > 0  # and the test models are ones where searching matters


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("end", [END, None], ids=["with-end", "no-end"])
def test_beam_size_one_is_greedy_decoding(seed, end):
    vocab = 7
    model = peaky_model(seed, vocab)
    src, mask = sources(seed, vocab)
    for use_cache in (True, False):
        greedy = greedy_decode(model, src, mask, 8, START, end_symbol=end, pad_symbol=PAD,
                               use_cache=use_cache)
        tokens, _ = beam_search(model, src, mask, 8, START, end, beam_size=1, pad_symbol=PAD,
                                use_cache=use_cache)
        assert torch.equal(tokens, greedy)


@pytest.mark.parametrize("seed", [0, 1])
def test_rows_are_independent_and_cache_changes_nothing(seed):
    vocab = 9
    model = peaky_model(seed, vocab)
    src, mask = sources(seed, vocab)
    tokens, scores = beam_search(model, src, mask, 7, START, END, beam_size=3, pad_symbol=PAD)
    again, again_scores = beam_search(model, src, mask, 7, START, END, beam_size=3,
                                      pad_symbol=PAD, use_cache=False)
    assert torch.equal(tokens, again)
    torch.testing.assert_close(scores, again_scores, rtol=1e-5, atol=1e-5)
    for b in range(src.size(0)):
        alone, alone_score = beam_search(model, src[b : b + 1], mask[b : b + 1], 7, START, END,
                                         beam_size=3, pad_symbol=PAD)
        n = alone.size(1)
        assert alone[0].tolist() == tokens[b, :n].tolist()
        assert torch.all(tokens[b, n:] == PAD)
        assert alone_score.item() == pytest.approx(scores[b].item(), abs=1e-5)


def test_scores_and_hypotheses_are_consistent():
    vocab = 9
    model = peaky_model(5, vocab)
    src, mask = sources(5, vocab)
    tokens, scores, hyps = beam_search(model, src, mask, 6, START, END, beam_size=4,
                                       return_all=True)
    for b, row in enumerate(hyps):
        assert 1 <= len(row) <= 4 and all(isinstance(h, Hypothesis) for h in row)
        assert [h.score for h in row] == sorted((h.score for h in row), reverse=True)
        assert row[0].score == pytest.approx(scores[b].item())
        for h in row:
            n = h.tokens.numel() - 1
            assert h.tokens[0] == START and n <= 5
            assert END not in h.tokens[1:-1].tolist()  # an end symbol only ever comes last
            logp = sequence_log_prob(model, src[b : b + 1], mask[b : b + 1], h.tokens[None])
            assert h.log_prob == pytest.approx(logp.item(), abs=1e-4)
            assert h.score == pytest.approx(h.log_prob / length_penalty(n, 0.6), abs=1e-6)


def test_max_len_one_returns_the_start_symbol():
    model = peaky_model(0, 5)
    src, mask = sources(0, 5)
    tokens, scores = beam_search(model, src, mask, 1, START, END)
    assert tokens.tolist() == [[START]] * 3 and scores.tolist() == [0.0] * 3


def test_length_penalty_values():
    assert length_penalty(1, 0.6) == 1.0
    assert length_penalty(10, 0.6) == pytest.approx((15 / 6) ** 0.6)
    assert length_penalty(10, 0.0) == 1.0
    lps = [length_penalty(n) for n in range(1, 50)]
    assert all(a < b for a, b in zip(lps, lps[1:]))


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        (dict(max_len=0), ValueError, "max_len"),
        (dict(beam_size=0), ValueError, "beam_size"),
        (dict(beam_size=2.0), TypeError, "beam_size"),
        (dict(length_penalty=-0.1), ValueError, "length_penalty"),
        (dict(length_penalty="0.6"), TypeError, "length_penalty"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, word):
    model = peaky_model(0, 5)
    src, mask = sources(0, 5)
    args = dict(max_len=4, start_symbol=START, end_symbol=END) | kwargs
    with pytest.raises(error, match=word):
        beam_search(model, src, mask, **args)
    with pytest.raises(ValueError, match="length"):
        length_penalty(-1)
