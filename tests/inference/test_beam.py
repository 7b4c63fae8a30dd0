"""Tests of vanilla_transformer.beam_search against exhaustive search and greedy decoding."""

from __future__ import annotations

import math
from itertools import product

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer import KVCache, greedy_decode, make_model
from vanilla_transformer.inference import (
    Hypothesis,
    beam_search,
    length_penalty,
    sequence_log_prob,
)

START, END, PAD = 1, 2, 0


def peaky_model(seed: int, vocab: int) -> torch.nn.Module:
    """A random tiny model with larger than usual weights, so that its next-token distributions
    are far from uniform and depend on the prefix."""
    torch.manual_seed(seed)
    model = make_model(vocab, vocab, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(3.0)
    return model.eval()


class TableModel(nn.Module):
    """A hand-made "model" whose next-token log-probabilities are a function
    `log_probs(source, prefix)` of the source row and the whole prefix.

    Its "embedding" passes the token ids through as floats and its "decoder" reads them back,
    so decoding runs the real code paths: the recomputing one, and the cached one, where the
    prefix is kept in the self-attention cache (as token ids) so that a beam reordered wrongly
    scores wrongly.
    """

    def __init__(self) -> None:
        super().__init__()
        self.generator = nn.Identity()
        self.tgt_embed = _TokenIdsAsFloats()
        self.decoder = _TableDecoder(self)

    def log_probs(self, source: list[int], prefix: list[int]) -> list[float]:
        raise NotImplementedError

    def encode(self, src, src_mask):
        return src.float().unsqueeze(-1)  # (batch, src_len, 1): the ids themselves

    def decode(self, memory, src_mask, ys, tgt_mask):
        return self.decoder(self.tgt_embed(ys), memory, src_mask, tgt_mask)


class _TokenIdsAsFloats(nn.Module):
    def forward(self, ys):
        return ys.float().unsqueeze(-1)  # (batch, len, 1)


class _TableDecoder(nn.Module):
    def __init__(self, table: TableModel) -> None:
        super().__init__()
        self.table = [table]  # a plain list: not a submodule

    def init_cache(self):
        return [(KVCache(static=False), KVCache(static=True))]

    def forward(self, x, memory, src_mask, tgt_mask, cache=None):
        table, sources_ = self.table[0], memory[..., 0].long().tolist()
        if cache is None:  # every position of every prefix
            rows = x[..., 0].long().tolist()
            return torch.tensor([[table.log_probs(s, r[: i + 1]) for i in range(len(r))]
                                 for s, r in zip(sources_, rows)])
        self_cache = cache[0][0]
        new = x.unsqueeze(1)  # (batch, 1, 1, 1), shaped like (batch, h, len, d_k)
        k, _ = self_cache.update(lambda: (new, new))
        prefixes = k[:, 0, :, 0].long().tolist()
        return torch.tensor([[table.log_probs(s, p)] for s, p in zip(sources_, prefixes)])


class GardenPath(TableModel):
    """A hand-made "model" whose most probable first token leads nowhere.

    Vocabulary: 0 pad, 1 start, 2 end, 3 "a", 4 "b". After the start symbol, "a" has
    probability 0.6 and "b" 0.4; after "a" every token is equally likely (0.2); after "b", "a"
    has probability 0.96. Greedy decoding picks "a" first (total 0.6 * 0.2 = 0.12); the best
    sequence is "b a" (0.4 * 0.96 = 0.384).
    """

    vocab = 5

    def log_probs(self, source: list[int], prefix: list[int]) -> list[float]:
        if prefix == [1]:
            probs = [0.0, 0.0, 0.0, 0.6, 0.4]
        elif prefix[-2:] == [1, 4]:
            probs = [0.01, 0.01, 0.01, 0.96, 0.01]
        else:
            probs = [0.2] * 5
        return [math.log(p) if p > 0 else -math.inf for p in probs]


class RandomTable(TableModel):
    """A hand-made "model" whose next-token distribution is a fixed random function of the
    source row and the whole prefix, so that the most probable sequence is often not the greedy
    one."""

    def __init__(self, seed: int, vocab: int, temperature: float = 1.5) -> None:
        super().__init__()
        self.seed, self.vocab, self.temperature = seed, vocab, temperature

    def log_probs(self, source: list[int], prefix: list[int]) -> list[float]:
        g = torch.Generator().manual_seed(hash((self.seed, tuple(source), tuple(prefix))) % 2**31)
        return (torch.randn(self.vocab, generator=g) * self.temperature).log_softmax(-1).tolist()


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


def exhaustive_scores(model, src, mask, n_generated, end, alpha, vocab):
    """Score every hypothesis with teacher forcing: {tokens: score}, best first."""
    hyps = all_hypotheses(vocab, n_generated, end)
    scored = []
    for n in range(1, n_generated + 1):
        group = [h for h in hyps if len(h) == n]
        if not group:
            continue
        ys = torch.tensor([[START, *h] for h in group])
        logp = sequence_log_prob(model, src.expand(len(group), -1), mask.expand(len(group), -1), ys)
        lp = length_penalty(n, alpha)
        scored += [(logp_h / lp, (START, *h)) for logp_h, h in zip(logp.tolist(), group)]
    scored.sort(key=lambda s: s[0], reverse=True)
    return {tokens: score for score, tokens in scored}


FULL_WIDTH_CASES = [
    # (model, seed, alpha, end, use_cache)
    ("table", 0, 0.0, END, True),
    ("table", 1, 0.6, END, True),
    ("table", 2, 0.6, END, False),
    ("table", 3, 2.0, END, True),
    ("table", 4, 0.6, None, True),
    ("table", 5, 0.0, None, False),
    ("transformer", 0, 0.6, END, True),
    ("transformer", 1, 0.6, None, False),
]


def make(kind: str, seed: int, vocab: int) -> nn.Module:
    return RandomTable(seed, vocab) if kind == "table" else peaky_model(seed, vocab)


@pytest.mark.parametrize("kind, seed, alpha, end, use_cache", FULL_WIDTH_CASES)
def test_full_width_beam_finds_the_exhaustive_optimum(kind, seed, alpha, end, use_cache):
    vocab, n_generated = 4, 3
    model = make(kind, seed, vocab)
    src, mask = sources(seed, vocab)
    tokens, scores, hyps = beam_search(model, src, mask, max_len=n_generated + 1,
                                       start_symbol=START, end_symbol=end,
                                       beam_size=vocab**n_generated, length_penalty=alpha,
                                       pad_symbol=PAD, use_cache=use_cache, return_all=True)
    for b in range(src.size(0)):
        exhaustive = exhaustive_scores(model, src[b : b + 1], mask[b : b + 1], n_generated, end,
                                       alpha, vocab)
        (best_tokens, best_score), (_, runner_up) = list(exhaustive.items())[:2]
        # every hypothesis the beam kept is scored as teacher forcing scores it
        assert len(hyps[b]) == len(exhaustive)
        for h in hyps[b]:
            assert h.score == pytest.approx(exhaustive[tuple(h.tokens.tolist())], abs=1e-5)
        assert scores[b].item() == pytest.approx(best_score, abs=1e-5)
        assert hyps[b][0].score == pytest.approx(best_score, abs=1e-5)
        if best_score - runner_up > 1e-4:  # a clear winner must be the one returned
            assert tuple(hyps[b][0].tokens.tolist()) == best_tokens
            row = tokens[b].tolist()
            assert tuple(row[: len(best_tokens)]) == best_tokens
            assert all(t == PAD for t in row[len(best_tokens):])


def test_narrow_beams_miss_what_the_full_width_beam_finds():
    # the hand-made models are ones where searching matters, so the test above has teeth
    vocab, n_generated, missed = 4, 3, 0
    for seed in range(4):
        model = RandomTable(seed, vocab)
        src, mask = sources(seed, vocab)
        greedy = greedy_decode(model, src, mask, n_generated + 1, START, use_cache=True)
        _, narrow = beam_search(model, src, mask, n_generated + 1, START, None, beam_size=2,
                                length_penalty=0.0)
        _, full = beam_search(model, src, mask, n_generated + 1, START, None, beam_size=64,
                              length_penalty=0.0)
        greedy_logp = sequence_log_prob(model, src, mask, greedy)
        assert torch.all(full >= narrow - 1e-6) and torch.all(full >= greedy_logp - 1e-6)
        missed += int((full > greedy_logp + 1e-3).sum()) + int((full > narrow + 1e-3).sum())
    assert missed > 0


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "recompute"])
def test_a_beam_of_two_escapes_the_garden_path_that_greedy_takes(use_cache):
    model = GardenPath()
    src = torch.ones(1, 3, dtype=torch.long)
    greedy = greedy_decode(model, src, None, 3, START, use_cache=use_cache)
    assert greedy.tolist() == [[START, 3, 0]]  # "a", then the first of five equal choices
    tokens, scores = beam_search(model, src, None, 3, START, None, beam_size=2,
                                 length_penalty=0.0, use_cache=use_cache)
    assert tokens.tolist() == [[START, 4, 3]]  # "b a"
    assert scores.item() == pytest.approx(math.log(0.4 * 0.96), rel=1e-5)
    assert sequence_log_prob(model, src, None, greedy).item() == pytest.approx(math.log(0.12))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("end", [END, None], ids=["with-end", "no-end"])
def test_beam_size_one_is_greedy_decoding(seed, end):
    vocab = 7
    src, mask = sources(seed, vocab)
    for model in (peaky_model(seed, vocab), RandomTable(seed, vocab)):
        for use_cache in (True, False):
            greedy = greedy_decode(model, src, mask, 8, START, end_symbol=end, pad_symbol=PAD,
                                   use_cache=use_cache)
            tokens, _ = beam_search(model, src, mask, 8, START, end, beam_size=1,
                                    length_penalty=0.0, pad_symbol=PAD, use_cache=use_cache)
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
    _, scores, hyps = beam_search(model, src, mask, 6, START, END, beam_size=4,
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


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 200), a=st.floats(0, 3), b=st.floats(0, 3))
def test_length_penalty_properties(n, a, b):
    assert length_penalty(1, a) == pytest.approx(1.0)  # one token: no penalty, whatever alpha
    assert length_penalty(n, 0.0) == 1.0  # alpha = 0 switches the penalty off
    # a power of (5 + |Y|) / 6: exponents add, and alpha = 1 grows by 1/6 per token
    assert length_penalty(n, a + b) == pytest.approx(length_penalty(n, a) * length_penalty(n, b))
    assert length_penalty(n + 1, 1.0) - length_penalty(n, 1.0) == pytest.approx(1 / 6)
    if a >= 0.01:
        assert length_penalty(n + 1, a) > length_penalty(n, a)


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        (dict(max_len=0), ValueError, "max_len"),
        (dict(beam_size=0), ValueError, "beam_size"),
        (dict(beam_size=2.0), TypeError, "beam_size"),
        (dict(beam_size=10**6), ValueError, "beam_size must be at most 1024, got 1000000"),
        (dict(max_len=10**9), ValueError, "max_len 1000000000"),
        (dict(start_symbol=1.7), TypeError, r"start_symbol must be an int, got 1\.7"),
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


class JunkEndsFirst(TableModel):
    """The right answer "3 3 3 </s>" is near-certain, but every prefix of it also offers an
    early end with probability 0.005, so short, improbable hypotheses finish first."""

    def log_probs(self, source: list[int], prefix: list[int]) -> list[float]:
        said = prefix[1:]
        if said == [3, 3, 3]:
            probs = [0.0, 0.0, 0.99, 0.005, 0.005]
        elif all(t == 3 for t in said):
            probs = [0.0, 0.0, 0.005, 0.99, 0.005]
        else:
            probs = [0.0, 0.0, 1 / 3, 1 / 3, 1 / 3]
        return [math.log(p) if p > 0 else -math.inf for p in probs]


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "recompute"])
def test_a_row_stops_only_when_no_alive_prefix_can_beat_its_finished_ones(use_cache):
    model = JunkEndsFirst()
    src = torch.ones(1, 3, dtype=torch.long)
    tokens, scores = beam_search(model, src, None, 8, START, END, beam_size=2,
                                 use_cache=use_cache)
    # two early ends fill the beam's finished list by step 2, while the alive "3 3" can still
    # score far better: stopping there would return "3 </s>"
    assert tokens.tolist() == [[START, 3, 3, 3, END]]
    assert scores.item() == pytest.approx(math.log(0.99**4) / length_penalty(4), rel=1e-5)
