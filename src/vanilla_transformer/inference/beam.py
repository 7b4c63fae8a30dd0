r"""Beam search with the GNMT length penalty (paper section 6.1).

$$
s(Y) = \frac{\log P(Y \mid X)}{lp(Y)}, \qquad lp(Y) = \frac{(5 + |Y|)^{\alpha}}{(5 + 1)^{\alpha}}
$$

Taught in the lesson [Decoding][decoding-lesson].
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple, overload

import torch

from .._checks import check_positive_int, check_token_ids
from ..model.cache import KVCache
from ..model.encoder_decoder import EncoderDecoder
from .greedy import _check_inputs, _src_keep_mask, _target_mask, embed_last_position

__all__ = ['MAX_BEAM_SIZE', 'Hypothesis', 'length_penalty', 'sequence_log_prob', 'beam_search']

MAX_BEAM_SIZE = 1024
"""The widest beam `beam_search` accepts (the paper uses 4): a wider one costs `beam_size`
decoder rows per source sentence and a top-k over `beam_size * vocab` scores at every step."""


class Hypothesis(NamedTuple):
    """A finished beam-search hypothesis.

    Attributes:
        tokens: token ids `(length,)`, the start symbol first.
        score: the length-normalised score $\\log P / lp$.
        log_prob: the total log-probability $\\log P$ of the generated tokens.

    Examples:
        >>> from vanilla_transformer.inference import Hypothesis
        >>> Hypothesis(torch.tensor([1, 5, 2]), score=-0.5, log_prob=-0.6).tokens.tolist()
        [1, 5, 2]
    """

    tokens: torch.Tensor
    score: float
    log_prob: float


def length_penalty(length: int, alpha: float = 0.6) -> float:
    r"""The GNMT length penalty $lp = (5 + length)^{\alpha} / (5 + 1)^{\alpha}$.

    Dividing a (negative) log-probability by it keeps the search from preferring short outputs
    merely because they multiply fewer probabilities; `length` counts the generated tokens, the
    end symbol included and the start symbol not.

    Args:
        length: number of generated tokens, an int >= 0.
        alpha: the exponent; `0` gives `1` for every length.

    Returns:
        The penalty, a float >= 1 for `length >= 1`.

    Raises:
        ValueError: if `length` or `alpha` is negative.

    Examples:
        >>> from vanilla_transformer.inference import length_penalty
        >>> length_penalty(1), round(length_penalty(7, alpha=0.6), 4), length_penalty(9, alpha=0.0)
        (1.0, 1.5157, 1.0)
    """
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise ValueError(f"length must be an int >= 0, got {length!r}")
    _check_alpha(alpha)
    return float(((5.0 + length) / 6.0) ** alpha)


def _check_alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"length_penalty must be a number >= 0, got {alpha!r}")
    if not (math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"length_penalty must be a finite number >= 0, got {alpha}")
    return float(alpha)


@torch.no_grad()
def sequence_log_prob(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    ys: torch.Tensor,
) -> torch.Tensor:
    """The log-probability the model gives to whole target sequences (teacher forcing).

    Args:
        model: the encoder-decoder, in eval mode.
        src: source ids `(batch, src_len)`.
        src_mask: keep-mask `(batch or 1, 1, src_len)` or `(batch, src_len)`.
        ys: target ids `(batch, length)`, the start symbol first; every token after it is
            scored (no padding is skipped).

    Returns:
        `(batch,)`: the sum over positions `1..length-1` of `log P(ys[:, i] | ys[:, :i], src)`.

    Raises:
        ValueError: if `ys` is not `(batch, length)` with `length >= 2` and the batch of `src`,
            or `src_mask` has the wrong shape.
        TypeError: if `src` or `ys` is not an integer tensor.

    Examples:
        >>> from vanilla_transformer.inference import sequence_log_prob
        >>> model = make_model(6, 6, N=1, d_model=16, d_ff=32, h=2).eval()
        >>> src = torch.tensor([[1, 3, 4]])
        >>> ys = greedy_decode(model, src, None, max_len=4, start_symbol=1)
        >>> sequence_log_prob(model, src, None, ys).shape
        torch.Size([1])
    """
    check_token_ids(src, None, "src")
    check_token_ids(ys, None, "ys")
    if ys.size(1) < 2 or ys.size(0) != src.size(0):
        raise ValueError(f"ys must have shape (batch={src.size(0)}, length >= 2), "
                         f"got {tuple(ys.shape)}")
    src_mask = _src_keep_mask(src, src_mask)
    out = model.decode(model.encode(src, src_mask), src_mask, ys[:, :-1],
                       _target_mask(ys.size(1) - 1, ys.device))
    logp: torch.Tensor = model.generator(out)  # (batch, length - 1, vocab)
    return logp.gather(-1, ys[:, 1:].unsqueeze(-1).long()).squeeze(-1).sum(-1)


@overload
def beam_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    max_len: int,
    start_symbol: int,
    end_symbol: int | None = ...,
    beam_size: int = ...,
    length_penalty: float = ...,
    *,
    pad_symbol: int | None = ...,
    use_cache: bool = ...,
    return_all: Literal[False] = ...,
) -> tuple[torch.Tensor, torch.Tensor]: ...


@overload
def beam_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    max_len: int,
    start_symbol: int,
    end_symbol: int | None = ...,
    beam_size: int = ...,
    length_penalty: float = ...,
    *,
    pad_symbol: int | None = ...,
    use_cache: bool = ...,
    return_all: Literal[True],
) -> tuple[torch.Tensor, torch.Tensor, list[list[Hypothesis]]]: ...


@torch.no_grad()
def beam_search(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    max_len: int,
    start_symbol: int,
    end_symbol: int | None = None,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    *,
    pad_symbol: int | None = None,
    use_cache: bool = True,
    return_all: bool = False,
) -> tuple[torch.Tensor, torch.Tensor] | tuple[torch.Tensor, torch.Tensor, list[list[Hypothesis]]]:
    """Decode a batch with beam search and the GNMT length penalty.

    Every batch row keeps its own `beam_size` most probable unfinished prefixes. Each step
    ranks the `2 * beam_size` best one-token extensions: one that ends with the end symbol and
    ranks among the first `beam_size` is finished; the best `beam_size` others stay alive. A row
    stops once it has `beam_size` finished hypotheses and no alive prefix can still beat the
    `beam_size`-th best of them (a prefix only loses log-probability as it grows, so its best
    possible score is bounded); at `max_len` the best extensions are finished as they are. The
    result is the finished hypothesis with the best score $\\log P / lp$. With
    `length_penalty=0`, `beam_size=1` is greedy decoding. With the cache, the self-attention
    caches are reordered with the beams. The inputs are checked once, as in `greedy_decode`.
    Call `model.eval()` first.

    Args:
        model: the encoder-decoder.
        src: source ids `(batch, src_len)`.
        src_mask: keep-mask `(batch or 1, 1, src_len)` or `(batch, src_len)`.
        max_len: the longest output, the start symbol included (as in
            [`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode]).
        start_symbol: the first decoder input.
        end_symbol: the token that finishes a hypothesis, or `None` to always generate
            `max_len - 1` tokens.
        beam_size: hypotheses kept per row (the paper: 4).
        length_penalty: the exponent $\\alpha$ of the length penalty (the paper: 0.6).
        pad_symbol: what to write after a shorter hypothesis' end symbol; defaults to
            `end_symbol`.
        use_cache: run the decoder incrementally with the key/value cache (same result).
        return_all: also return every row's best `beam_size` finished hypotheses.

    Returns:
        `(tokens, scores)`: the best hypothesis of each row, `(batch, out_len)` with
        `out_len <= max_len`, starting with `start_symbol` and padded after the end symbol,
        and its score `(batch,)`, the log-probability divided by the length penalty. With
        `return_all=True`, a third item: for each row, a list of
        [`Hypothesis`][vanilla_transformer.inference.beam.Hypothesis] tuples, best first.

    Raises:
        ValueError: if `max_len` or `beam_size` is not a positive int, `beam_size` is above
            `MAX_BEAM_SIZE` (1024), `length_penalty` is negative, `src`, `src_mask` or a
            symbol is invalid (see
            [`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode]), or the
            model's scores for a row are not finite (NaN weights, say).
        TypeError: for an argument of the wrong type.

    Examples:
        >>> from vanilla_transformer.inference import beam_search
        >>> model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4).eval()
        >>> src = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 0]])
        >>> tokens, scores = beam_search(model, src, src != 0, max_len=6, start_symbol=1,
        ...                              end_symbol=2, beam_size=4)
        >>> tokens[:, 0].tolist(), scores.shape
        ([1, 1], torch.Size([2]))
        >>> greedy = greedy_decode(model, src, src != 0, 6, 1, end_symbol=2)
        >>> torch.equal(beam_search(model, src, src != 0, 6, 1, 2, beam_size=1,
        ...                         length_penalty=0.0)[0], greedy)
        True
    """
    src_mask = _check_inputs(model, src, src_mask, max_len, start_symbol, end_symbol, pad_symbol)
    alpha = _check_beam(beam_size, length_penalty)
    batch, k, device = src.size(0), beam_size, src.device
    # each row's memory copied for its k beams: (batch * k, src_len, d_model)
    memory = model.encode(src, src_mask).repeat_interleave(k, dim=0)
    if src_mask is not None and src_mask.size(0) != 1:
        src_mask = src_mask.repeat_interleave(k, dim=0)
    ys = torch.full((batch * k, 1), start_symbol, dtype=src.dtype, device=device)
    if max_len == 1:  # nothing to generate: the start symbol, with log-probability 0
        start, zeros = ys[::k], torch.zeros(batch, device=device)
        if return_all:
            return start, zeros, [[Hypothesis(row, 0.0, 0.0)] for row in start]
        return start, zeros
    # cumulative log-probability of each alive beam; at the start only beam 0 is real, so the
    # copies of it cannot all be chosen
    scores = torch.full((batch, k), -math.inf, device=device)
    scores[:, 0] = 0.0
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    done = [False] * batch
    cache = model.decoder.init_cache() if use_cache else None
    offsets = (torch.arange(batch, device=device) * k).unsqueeze(1)  # (batch, 1)
    best_penalty = ((5.0 + max_len - 1) / 6.0) ** alpha  # the largest: lp grows with length
    for t in range(1, max_len):  # t = number of generated tokens after this step
        logp = _next_log_probs(model, ys, memory, src_mask, cache)  # (batch * k, vocab)
        vocab = logp.size(-1)
        candidates = (scores.view(-1, 1) + logp).view(batch, k * vocab)
        top, index = candidates.topk(min(2 * k, k * vocab), dim=1)  # best first
        beam, token = index // vocab, index % vocab  # (batch, 2k)
        ends = torch.zeros_like(token, dtype=torch.bool) if end_symbol is None else token == end_symbol
        last, penalty = t == max_len - 1, ((5.0 + t) / 6.0) ** alpha
        # the best k extensions that did not end stay alive
        alive, pick = top.masked_fill(ends, -math.inf).topk(k, dim=1)
        # what the bookkeeping below reads, copied to the host at once: the step's only sync
        broken = (~torch.isfinite(logp.amax(dim=-1))).view(batch, k).any(dim=1, keepdim=True)
        m = min(k, top.size(1))  # only the first k candidates may finish
        host = torch.cat([x.double() for x in (top[:, :m], ends[:, :m], beam[:, :m],
                                                token[:, :m], alive[:, :1], broken)],
                         dim=1).tolist()
        for b in range(batch):
            if not done[b]:
                done[b] = _finish_row(finished[b], host[b], ys[b * k : (b + 1) * k],
                                      (t, last, penalty, best_penalty), b)
        if all(done):
            break
        alive[torch.tensor(done, device=device)] = -math.inf  # rows that are done keep -inf
        rows = (offsets + beam.gather(1, pick)).view(-1)  # (batch * k,) indices into ys
        new_tokens = token.gather(1, pick).view(-1, 1).to(ys.dtype)  # (batch * k, 1)
        ys = torch.cat([ys.index_select(0, rows), new_tokens], dim=1)
        scores = alive
        # the source-attention caches need no reordering: a row's k memories are equal
        for self_cache, _ in cache or []:
            self_cache.reorder(rows)

    ranked = [sorted(h, key=lambda hyp: hyp.score, reverse=True)[:k] for h in finished]
    fill = pad_symbol if pad_symbol is not None else end_symbol
    tokens, result_scores = _best(ranked, start_symbol if fill is None else fill, src)
    if return_all:
        return tokens, result_scores, ranked
    return tokens, result_scores


def _check_beam(beam_size: int, length_penalty: float) -> float:
    """Check the beam and the length penalty's exponent; return the exponent as a float."""
    check_positive_int("beam_size", beam_size)
    if beam_size > MAX_BEAM_SIZE:
        raise ValueError(f"beam_size must be at most {MAX_BEAM_SIZE}, got {beam_size} "
                         "(the paper uses 4)")
    return _check_alpha(length_penalty)


def _next_log_probs(model: EncoderDecoder, ys: torch.Tensor, memory: torch.Tensor,
                    src_mask: torch.Tensor | None,
                    cache: list[tuple[KVCache, KVCache]] | None) -> torch.Tensor:
    """The log-probabilities `(rows, vocab)` of the token after each prefix `ys`: the decoder
    over the whole prefix, or over its newest position with the cache."""
    if cache is None:
        tgt_mask = _target_mask(ys.size(1), ys.device)
        out = model.decoder(model.tgt_embed(ys), memory, src_mask, tgt_mask)
    else:
        out = model.decoder(embed_last_position(model, ys), memory, src_mask, None, cache)
    logp: torch.Tensor = model.generator(out[:, -1]).float()
    return logp


def _finish_row(finished: list[Hypothesis], host: list[float], beams: torch.Tensor,
                step: tuple[int, bool, float, float], b: int) -> bool:
    """Add row `b`'s finishing candidates to `finished`; return whether the row is done.

    `host` holds the row's first `m` candidates' scores, whether each ends, its beam and its
    token, then the best alive score and whether the row's scores are not finite; `beams`
    the row's `k` prefixes; `step` is `(t, last, penalty, best_penalty)`.
    """
    t, last, penalty, best_penalty = step
    m, k = (len(host) - 2) // 4, beams.size(0)
    if host[-1]:
        raise ValueError(f"the model's scores for batch row {b} are not finite (NaN or inf) at "
                         f"step {t}: its weights or its inputs hold NaN or inf")
    row_top, row_ends = host[:m], host[m : 2 * m]
    row_beam, row_token = host[2 * m : 3 * m], host[3 * m : 4 * m]
    for j in range(m):
        # only the first k candidates may finish
        if (last or row_ends[j]) and math.isfinite(row_top[j]):
            row = beams[int(row_beam[j])]
            tokens = torch.cat([row, row.new_tensor([int(row_token[j])])])
            finished.append(Hypothesis(tokens, row_top[j] / penalty, row_top[j]))
    if last:
        return True
    if len(finished) < k:
        return False
    # an alive prefix only loses log-probability as it grows, so its best possible score is
    # its log-probability over the largest length penalty still reachable; stop when that
    # cannot beat the k-th best finished hypothesis
    kth = sorted((h.score for h in finished), reverse=True)[k - 1]
    return host[4 * m] / best_penalty <= kth


def _best(ranked: list[list[Hypothesis]], fill: int, src: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's best hypothesis, padded with `fill` to one width, and its score."""
    best = [r[0] for r in ranked]
    width = max(h.tokens.numel() for h in best)
    tokens = torch.full((len(best), width), fill, dtype=src.dtype, device=src.device)
    for b, h in enumerate(best):
        tokens[b, : h.tokens.numel()] = h.tokens
    return tokens, torch.tensor([h.score for h in best], device=src.device)
