r"""Batched decoding for translating many sentences: greedy and beam search with the key/value
cache, each sentence with its own length limit, finished sentences dropped from the batch.

[`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode] and
[`beam_search`][vanilla_transformer.inference.beam.beam_search] are the paper's algorithm
written to be read: beam search keeps its finished hypotheses in Python lists, one host
round trip per hypothesis. The two functions here run the same algorithm through the same
modules of the model ([`DecoderSteps`][vanilla_transformer.inference.incremental.DecoderSteps]),
with every decision kept on the device:

- the finished hypotheses of each sentence are a tensor of the `nbest` best so far, merged
  with each step's candidates by a stable sort, so ties go to the earlier hypothesis as in
  the lists of `beam_search`;
- a sentence is done once no alive beam can beat its `nbest`-th finished hypothesis
  (`beam_search` waits for the `beam_size`-th, which changes nothing in the best `nbest`);
- each step copies one small tensor to the host (which rows are done, which scores are not
  finite): the step's only synchronisation;
- a sentence that is done leaves the batch, its caches with it;
- the first step runs one row a sentence, not `beam_size` copies of it.

Each sentence may generate `max_lens[i] - 1` tokens, as if it were decoded alone with
`max_len=max_lens[i]`: its output is that of `greedy_decode` or `beam_search` on that one
sentence (the tests check this token for token). `benchmarks/decode_ct2.py` measures both
against CTranslate2. Taught in the lesson [Decoding][decoding-lesson].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from .._checks import check_positive_int
from ..model.attention import MultiHeadedAttention
from ..model.decoder import DecoderLayer
from ..model.encoder_decoder import EncoderDecoder
from ..model.layers import SublayerConnection
from .beam import MAX_BEAM_SIZE, _check_alpha
from .beam import length_penalty as _penalty  # batch_beam_search's argument has its name
from .beam_state import AliveBeams, FinishedHypotheses
from .greedy import _check_inputs
from .incremental import DecoderSteps

__all__ = ["Decoded", "supports_fast", "batch_greedy", "batch_beam_search"]


class Decoded(NamedTuple):
    """One decoded hypothesis.

    Attributes:
        tokens: the generated ids, without the start symbol; the end symbol last if it was
            generated.
        score: the length-normalised log-probability $\\log P / lp$ (GNMT's penalty, as in
            [`beam_search`][vanilla_transformer.inference.beam.beam_search]).
        log_probs: the log-probability of each generated token, one per entry of `tokens`.
    """

    tokens: list[int]
    score: float
    log_probs: list[float]


def _check_limits(max_lens: Sequence[int], batch: int) -> list[int]:
    lens = [check_positive_int("max_lens[i]", int(n)) for n in max_lens]
    if len(lens) != batch:
        raise ValueError(f"max_lens must hold one length per source row ({batch}), got {len(lens)}")
    if min(lens) < 2:
        raise ValueError(f"every max_len must be at least 2 (the start symbol and one token), "
                         f"got {min(lens)}")
    return lens


def supports_fast(model: nn.Module) -> bool:
    """Whether the batched decoders can run `model`: an
    [`EncoderDecoder`][vanilla_transformer.model.encoder_decoder.EncoderDecoder] whose
    decoder layers are the package's (what `make_model` builds), in eval mode.

    Examples:
        >>> from vanilla_transformer.inference.fast import supports_fast
        >>> supports_fast(make_model(11, 11, N=1).eval()), supports_fast(make_model(11, 11, N=1))
        (True, False)
    """
    decoder = getattr(model, "decoder", None)
    layers = getattr(decoder, "layers", None)
    if model.training or not isinstance(model, EncoderDecoder) or layers is None:
        return False
    return all(isinstance(layer, DecoderLayer)
               and isinstance(layer.self_attn, MultiHeadedAttention)
               and isinstance(layer.src_attn, MultiHeadedAttention)
               and all(isinstance(sub, SublayerConnection) for sub in layer.sublayer)
               for layer in layers)


def _not_finite(rows: list[int], t: int) -> ValueError:
    return ValueError(f"the model's scores for batch row(s) {rows} are not finite (NaN or inf) at "
                      f"step {t}: its weights or its inputs hold NaN or inf")


def _prepare(model: EncoderDecoder, src: torch.Tensor, src_mask: torch.Tensor | None,
             max_lens: Sequence[int], start_symbol: int, end_symbol: int
             ) -> tuple[list[int], torch.Tensor | None]:
    """The checks shared by both decoders; returns the limits and the keep-mask."""
    if not supports_fast(model):
        raise TypeError("the batched decoders need a model made by make_model, in eval mode "
                        "(call model.eval()); use greedy_decode or beam_search for others")
    lens = _check_limits(max_lens, src.size(0))
    keep_mask = _check_inputs(model, src, src_mask, max(lens), start_symbol, end_symbol, None)
    if keep_mask is not None and keep_mask.dtype != torch.bool:
        keep_mask = keep_mask != 0
    return lens, keep_mask


@torch.no_grad()
def batch_greedy(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    max_lens: Sequence[int],
    start_symbol: int,
    end_symbol: int,
    *,
    alpha: float = 0.6,
) -> list[Decoded]:
    """Greedy decoding of a batch, each row stopping at its end symbol or its own limit.

    Args:
        model: the encoder-decoder, in eval mode.
        src: source ids `(batch, src_len)`.
        src_mask: keep-mask `(batch or 1, 1, src_len)` or `(batch, src_len)`, or `None`.
        max_lens: for each row, the longest output, the start symbol included (as `max_len`
            of `greedy_decode`); at least 2.
        start_symbol: the first decoder input.
        end_symbol: the token that ends a row.
        alpha: the length penalty's exponent, used only for the score.

    Returns:
        One [`Decoded`][vanilla_transformer.inference.fast.Decoded] per row.

    Raises:
        ValueError: for the inputs `greedy_decode` refuses, a `max_lens` of the wrong length or
            below 2, or scores that are not finite.

    Examples:
        >>> from vanilla_transformer.inference.fast import batch_greedy
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
        >>> src = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 0]])
        >>> out = batch_greedy(model, src, src != 0, [6, 6], start_symbol=1, end_symbol=2)
        >>> ys = greedy_decode(model, src, src != 0, 6, 1, end_symbol=2)
        >>> out[0].tokens == ys[0, 1 : len(out[0].tokens) + 1].tolist()
        True
    """
    lens, keep_mask = _prepare(model, src, src_mask, max_lens, start_symbol, end_symbol)
    _check_alpha(alpha)
    batch, device, width = src.size(0), src.device, max(lens)
    steps = DecoderSteps(model, model.encode(src, keep_mask), keep_mask)
    ys = torch.full((batch, width), start_symbol, dtype=src.dtype, device=device)
    token_logp = torch.zeros(batch, width, device=device)
    limit = torch.tensor(lens, device=device) - 1  # tokens each row may generate
    rows = list(range(batch))  # the original row of each row still decoding
    exits: list[tuple[list[int], int, torch.Tensor, torch.Tensor]] = []
    for t in range(1, width):
        logp = steps(ys[:, :t])  # (rows, vocab)
        word = logp.argmax(dim=-1)
        ys[:, t] = word
        token_logp[:, t] = logp.gather(1, word.unsqueeze(1)).squeeze(1)
        done = (word == end_symbol) | (limit <= t)
        broken = ~torch.isfinite(logp.amax(dim=-1))
        flags = torch.stack([done, broken]).tolist()  # the step's one sync
        if any(flags[1]):
            raise _not_finite([rows[i] for i, b in enumerate(flags[1]) if b], t)
        if not any(flags[0]):
            continue
        finished = torch.tensor([i for i, d in enumerate(flags[0]) if d], device=device)
        exits.append(([rows[i] for i, d in enumerate(flags[0]) if d], t,
                      ys[finished, 1 : t + 1], token_logp[finished, 1 : t + 1]))
        keep = [i for i, d in enumerate(flags[0]) if not d]
        if not keep:
            break
        index = torch.tensor(keep, device=device)
        rows = [rows[i] for i in keep]
        ys, token_logp, limit = ys[index], token_logp[index], limit[index]
        steps.reorder(index, index)

    result: list[Decoded] = [Decoded([], 0.0, [])] * batch
    for original, t, tokens, logps in exits:
        for row, row_tokens, row_logps in zip(original, tokens.tolist(), logps.tolist(),
                                              strict=True):
            result[row] = Decoded(row_tokens, sum(row_logps) / _penalty(t, alpha), row_logps)
    return result


@torch.no_grad()
def batch_beam_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    max_lens: Sequence[int],
    start_symbol: int,
    end_symbol: int,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    *,
    nbest: int = 1,
) -> list[list[Decoded]]:
    """Beam search over a batch, each row with its own limit: `beam_search`'s algorithm and
    result, kept on the device.

    Args:
        model: the encoder-decoder, in eval mode.
        src: source ids `(batch, src_len)`.
        src_mask: keep-mask `(batch or 1, 1, src_len)` or `(batch, src_len)`, or `None`.
        max_lens: for each row, the longest output, the start symbol included; at least 2.
        start_symbol: the first decoder input.
        end_symbol: the token that finishes a hypothesis.
        beam_size: hypotheses kept per row (the paper: 4).
        length_penalty: the exponent $\\alpha$ of the length penalty (the paper: 0.6).
        nbest: how many finished hypotheses to return per row, at most `beam_size`.

    Returns:
        For each row, its best `nbest` hypotheses, best first (fewer only where fewer than
        `nbest` finished with a finite score).

    Raises:
        ValueError: for the inputs `beam_search` refuses, an `nbest` outside
            `[1, beam_size]`, a `max_lens` of the wrong length or below 2, or scores that are
            not finite.

    Examples:
        >>> from vanilla_transformer.inference.fast import batch_beam_search
        >>> model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4).eval()
        >>> src = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 0]])
        >>> out = batch_beam_search(model, src, src != 0, [6, 6], 1, 2, beam_size=4, nbest=2)
        >>> tokens, scores = beam_search(model, src, src != 0, 6, 1, 2, beam_size=4)
        >>> best = out[0][0].tokens
        >>> [len(row) for row in out], best == tokens[0, 1 : len(best) + 1].tolist()
        ([2, 2], True)
    """
    lens, keep_mask = _prepare(model, src, src_mask, max_lens, start_symbol, end_symbol)
    check_positive_int("beam_size", beam_size)
    if beam_size > MAX_BEAM_SIZE:
        raise ValueError(f"beam_size must be at most {MAX_BEAM_SIZE}, got {beam_size}")
    check_positive_int("nbest", nbest)
    if nbest > beam_size:
        raise ValueError(f"nbest must be at most beam_size ({beam_size}), got {nbest}")
    alpha = _check_alpha(length_penalty)
    steps = DecoderSteps(model, model.encode(src, keep_mask), keep_mask)
    beams, finished = AliveBeams(src, lens, start_symbol, alpha), FinishedHypotheses(src, nbest, end_symbol)
    exits: list[tuple[list[int], tuple[torch.Tensor, ...]]] = []  # rows as they end
    for t in range(1, max(lens)):
        if not _beam_step(steps, beams, finished, exits, t, beam_size, end_symbol, alpha):
            break
    return _collect(exits, src.size(0))


def _beam_step(steps: DecoderSteps, beams: AliveBeams, finished: FinishedHypotheses,
               exits: list[tuple[list[int], tuple[torch.Tensor, ...]]], t: int, k: int,
               end_symbol: int, alpha: float) -> bool:
    """One step of `batch_beam_search`: rank the extensions, finish and keep the best, drop
    the rows that are done. Returns whether any row is still decoding."""
    n, now = beams.scores.shape
    logp = steps(beams.ys)  # (n * beams, vocab)
    vocab = logp.size(-1)
    step_logp, candidates = beams.candidates(logp, k)
    top, index = candidates.topk(min(2 * k, k * vocab), dim=1)  # best first
    beam, token = index // vocab, index % vocab  # (n, 2k)
    ends = token == end_symbol
    last = beams.limit == t  # (n,)
    alive, pick = top.masked_fill(ends, -math.inf).topk(k, dim=1)

    # the first m candidates that end (all of them at a row's last step) are finished
    m = min(k, top.size(1))
    finishing = (ends[:, :m] | last.unsqueeze(1)) & torch.isfinite(top[:, :m])
    new_score = (top[:, :m].double() / _penalty(t, alpha)).masked_fill(~finishing, -math.inf)
    finished.merge(new_score, *beams.extended(beam[:, :m], token[:, :m],
                                              step_logp.gather(1, index[:, :m])), t)

    # a row is done at its limit, or when no alive beam can beat its nbest-th finished
    # hypothesis: its best nbest can no longer change. (beam_search waits for the k-th,
    # which returns the same best nbest, later.)
    kth = finished.score[:, -1]
    done = last | ((kth > -math.inf) & (alive[:, 0].double() / beams.best_penalty <= kth))
    broken = (~torch.isfinite(logp.amax(dim=-1))).view(n, now).any(dim=1)
    flags = torch.stack([done, broken]).tolist()  # the step's one sync
    if any(flags[1]):
        raise _not_finite([beams.rows[i] for i, b in enumerate(flags[1]) if b], t)
    keep = None
    if any(flags[0]):
        gone = torch.tensor([i for i, d in enumerate(flags[0]) if d], device=done.device)
        exits.append(([beams.rows[i] for i, d in enumerate(flags[0]) if d],
                      finished.take(gone)))
        keep = [i for i, d in enumerate(flags[0]) if not d]
        if not keep:
            return False
    follow = torch.arange(n, device=done.device).unsqueeze(1) * now + beam.gather(1, pick)
    new, chosen = token.gather(1, pick), step_logp.gather(1, index.gather(1, pick))
    sources = None
    if keep is not None:
        sources = torch.tensor(keep, device=done.device)
        follow, new, chosen = follow[sources], new[sources], chosen[sources]
        alive = alive[sources]
        finished.keep(sources)
    beams.advance(follow, new, chosen, alive, keep)
    steps.reorder(follow.view(-1), sources)
    return True


def _collect(exits: list[tuple[list[int], tuple[torch.Tensor, ...]]],
             batch: int) -> list[list[Decoded]]:
    """The finished hypotheses of every row, in the rows' original order."""
    result: list[list[Decoded]] = [[] for _ in range(batch)]
    for original, (score, tokens, logps, length) in exits:
        for j, row in enumerate(original):
            for s, toks, lps, n_tok in zip(score[j].tolist(), tokens[j].tolist(),
                                           logps[j].tolist(), length[j].tolist(), strict=True):
                if s > -math.inf:
                    result[row].append(Decoded(toks[1 : n_tok + 1], s, lps[1 : n_tok + 1]))
    return result
