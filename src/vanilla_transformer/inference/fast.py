r"""Batched decoding for translating many sentences: greedy and beam search with the key/value
cache, each sentence with its own length limit, finished sentences dropped from the batch.

[`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode] and
[`beam_search`][vanilla_transformer.inference.beam.beam_search] are the paper's algorithm
written to be read: beam search keeps its finished hypotheses in Python lists, one host
round trip per hypothesis. The two functions here run the same algorithm with every decision
kept on the device:

- the finished hypotheses of each sentence are a tensor of the `nbest` best so far, merged
  with each step's candidates by a stable sort, so ties go to the earlier hypothesis as in
  the lists of `beam_search`;
- a sentence is done once no alive beam can beat its `nbest`-th finished hypothesis:
  `beam_search` waits for the `beam_size`-th, which changes nothing in the best `nbest`
  but costs steps;
- each step copies one small tensor to the host (which rows are done, which scores are not
  finite): the step's only synchronisation;
- a sentence that is done leaves the batch, its caches with it, so the steps that remain
  work on the sentences still decoding;
- the source attention's keys and values are projected once and shared by a sentence's
  beams, and the first step runs one row a sentence, not `beam_size` copies of it.

Each sentence may generate `max_lens[i] - 1` tokens, as if it were decoded alone with
`max_len=max_lens[i]`: its output is that of `greedy_decode` or `beam_search` on that one
sentence (the tests check this token for token, and on the batches
[`translate_ids`][vanilla_transformer.inference.evaluate.translate_ids] makes).
`benchmarks/decode_ct2.py` measures both against CTranslate2. Taught in the lesson
[Decoding][decoding-lesson].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int
from ..model.attention import MultiHeadedAttention
from ..model.decoder import DecoderLayer
from ..model.encoder_decoder import EncoderDecoder
from ..model.layers import SublayerConnection
from ..model.masks import mask_fill_value
from .beam import MAX_BEAM_SIZE, _check_alpha
from .beam import length_penalty as _penalty  # batch_beam_search's argument has its name
from .greedy import _check_inputs, embed_last_position

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


def _stacked(linears: list[nn.Linear]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The weights and biases of `linears` stacked, for one product in place of three."""
    biases = [m.bias for m in linears]
    bias = None if any(b is None for b in biases) else torch.cat([b for b in biases if b is not None])
    return torch.cat([m.weight for m in linears]), bias


class _Steps:
    """The decoder of `model`, run one position at a time for `n` sources.

    The source attention's keys and values are projected once, `(n, h, src_len, d_k)`, and
    shared by the beams of a source (its queries are the beams); the self-attention keeps its
    keys and values time first, `(positions, rows, d_model)`, and fills one position a step.
    """

    def __init__(self, model: EncoderDecoder, memory: torch.Tensor,
                 src_mask: torch.Tensor | None, width: int) -> None:
        self.model = model
        self.layers = [layer for layer in model.decoder.layers if isinstance(layer, DecoderLayer)]
        self.source = [(a.split_heads(a.linears[1](memory)), a.split_heads(a.linears[2](memory)))
                       for a in (layer.src_attn for layer in self.layers)]
        # where a source position is padding, (n or 1, 1, 1, src_len), broadcast over heads
        # and beams
        self.mask = None if src_mask is None else ~src_mask.unsqueeze(1)
        self.fill = mask_fill_value(memory.dtype)
        self.qkv = [_stacked([m for m in layer.self_attn.linears[:3] if isinstance(m, nn.Linear)])
                    for layer in self.layers]
        self.length = 0
        # time first, so that a view with more positions keeps the ones written: two flat
        # pools per cache, one read and one the reordered rows are written to
        self.pools = [[memory.new_empty(0), memory.new_empty(0)] for _ in range(2 * len(self.layers))]
        self.caches = [memory.new_empty(0, memory.size(0), memory.size(2))
                       for _ in range(2 * len(self.layers))]
        self.room = min(width, 16)  # positions a pool holds for the most rows, doubled as needed

    def _view(self, j: int, pool: int, rows: int, t: int) -> torch.Tensor:
        """The cache `j` as `(positions, rows, d_model)` over its pool, with room for `t`."""
        d_model = self.caches[j].size(2)
        while self.room < t:
            self.room *= 2
        if self.pools[j][pool].numel() < t * rows * d_model:
            self.pools[j][pool] = self.caches[j].new_empty(self.room * rows * d_model)
        flat = self.pools[j][pool]
        return flat[: flat.numel() // (rows * d_model) * rows * d_model].view(-1, rows, d_model)

    def _self_attention(self, i: int, a: MultiHeadedAttention, x: torch.Tensor) -> torch.Tensor:
        rows, h, d_k = x.size(0), a.h, a.d_k
        t = self.length + 1
        n_layers = len(self.layers)
        for j in (i, n_layers + i):
            if self.caches[j].size(0) < t:  # no room for the new position: a larger pool
                grown = self._view(j, 1, rows, t)
                grown[: t - 1] = self.caches[j][: t - 1]
                self.pools[j].reverse()
                self.caches[j] = grown
        keys, values = self.caches[i], self.caches[n_layers + i]  # (room, rows, d_model)
        # W^Q, W^K and W^V in one product (their rows stacked once, in __init__)
        q, keys[t - 1], values[t - 1] = F.linear(
            x.view(rows, h * d_k), *self.qkv[i]).view(rows, 3, h * d_k).unbind(1)
        # one query per row: the scores are a product summed over d_k, (t, rows, h)
        scores = (q.view(1, rows, h, d_k) * keys[:t].view(t, rows, h, d_k)).sum(-1)
        weights = (scores / math.sqrt(d_k)).softmax(dim=0).unsqueeze(-1)  # (t, rows, h, 1)
        out = (weights * values[:t].view(t, rows, h, d_k)).sum(0)  # (rows, h, d_k)
        return a.linears[3](out.view(rows, 1, h * d_k))

    def _source_attention(self, i: int, a: MultiHeadedAttention, x: torch.Tensor) -> torch.Tensor:
        keys, values = self.source[i]  # (n, h, src_len, d_k)
        n, h, d_k = keys.size(0), a.h, a.d_k
        beams = x.size(0) // n
        q = a.linears[0](x).view(n, beams, h, d_k).transpose(1, 2)  # (n, h, beams, d_k)
        if beams == 1:  # one query a source: a product summed over d_k beats n * h matmuls
            scores = (q * keys).sum(-1, keepdim=True).transpose(-2, -1) / math.sqrt(d_k)
        else:
            scores = torch.matmul(q, keys.transpose(-2, -1)) / math.sqrt(d_k)
        if self.mask is not None:  # scores: (n, h, beams, src_len)
            scores = scores.masked_fill(self.mask, self.fill)
        weights = scores.softmax(dim=-1)
        if beams == 1:
            out = (weights.transpose(-2, -1) * values).sum(2)  # (n, h, d_k)
            return a.linears[3](out.view(n, 1, h * d_k))
        out = torch.matmul(weights, values)  # (n, h, beams, d_k)
        return a.linears[3](out.transpose(1, 2).reshape(n * beams, 1, h * d_k))

    def __call__(self, ys: torch.Tensor) -> torch.Tensor:
        """Log-probabilities `(rows, vocab)` of the next token after the prefixes `ys`
        `(rows, t)`; `rows` is `n` times the beams of each source."""
        x = embed_last_position(self.model, ys)  # (rows, 1, d_model)
        for i, layer in enumerate(self.layers):
            x = layer.sublayer[0](x, partial(self._self_attention, i, layer.self_attn))
            x = layer.sublayer[1](x, partial(self._source_attention, i, layer.src_attn))
            x = layer.sublayer[2](x, layer.feed_forward)
        self.length += 1
        return self.model.generator(self.model.decoder.norm(x)[:, -1]).float()

    def reorder(self, follow: torch.Tensor, sources: torch.Tensor | None = None) -> None:
        """Row `j` continues row `follow[j]`; `sources` keeps those sources only."""
        t, rows = self.length, follow.size(0)
        for j, cache in enumerate(self.caches):
            new = self._view(j, 1, rows, t + 1)
            torch.index_select(cache[:t], 1, follow, out=new[:t])
            self.pools[j].reverse()
            self.caches[j] = new
        if sources is not None:
            self.source = [(k[sources], v[sources]) for k, v in self.source]
            if self.mask is not None and self.mask.size(0) != 1:
                self.mask = self.mask[sources]


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
    steps = _Steps(model, model.encode(src, keep_mask), keep_mask, width)
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
    batch, k, device, width = src.size(0), beam_size, src.device, max(lens)

    steps = _Steps(model, model.encode(src, keep_mask), keep_mask, width)
    # the first step has one row per source: its k beams would all be the start symbol
    ys = torch.full((batch, 1), start_symbol, dtype=src.dtype, device=device)
    token_logp = torch.zeros(batch, 1, device=device)
    scores = torch.zeros(batch, 1, device=device)  # cumulative log-probability of each beam
    # each row's best nbest finished hypotheses so far, best first; -inf marks an empty slot
    fin_score = torch.full((batch, nbest), -math.inf, dtype=torch.float64, device=device)
    fin_tokens = torch.full((batch, nbest, 1), end_symbol, dtype=src.dtype, device=device)
    fin_logp = torch.zeros(batch, nbest, 1, device=device)
    fin_len = torch.zeros(batch, nbest, dtype=torch.long, device=device)
    limit = torch.tensor([n - 1 for n in lens], device=device)
    # the largest length penalty each row can reach bounds what an alive beam can still score
    best_penalty = torch.tensor([_penalty(n - 1, alpha) for n in lens], dtype=torch.float64,
                                device=device)
    rows = list(range(batch))
    # (original rows, their finished scores, tokens, log-probabilities, lengths) as rows end
    exits: list[tuple[list[int], torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
    for t in range(1, width):
        n, beams = len(rows), scores.size(1)
        logp = steps(ys)  # (n * beams, vocab)
        vocab = logp.size(-1)
        step_logp = logp.view(n, beams * vocab)
        if beams < k:  # the missing beams are copies of beam 0 with score -inf
            step_logp = torch.cat([step_logp, step_logp.new_full((n, (k - beams) * vocab),
                                                                 -math.inf)], dim=1)
        candidates = (step_logp if beams < k  # the first step: beam 0's scores are 0
                      else (scores.unsqueeze(2) + logp.view(n, k, vocab)).view(n, k * vocab))
        top, index = candidates.topk(min(2 * k, k * vocab), dim=1)  # best first
        beam, token = index // vocab, index % vocab  # (n, 2k)
        ends = token == end_symbol
        last = limit == t  # (n,)
        alive, pick = top.masked_fill(ends, -math.inf).topk(k, dim=1)

        # the first m candidates that end (all of them at a row's last step) are finished
        m = min(k, top.size(1))
        finishing = (ends[:, :m] | last.unsqueeze(1)) & torch.isfinite(top[:, :m])
        new_score = (top[:, :m].double() / _penalty(t, alpha)).masked_fill(~finishing, -math.inf)
        source = (torch.arange(n, device=device).unsqueeze(1) * beams + beam[:, :m]).view(-1)
        new_tokens = torch.cat([ys[source].view(n, m, t), token[:, :m, None]], dim=2)
        new_logp = torch.cat([token_logp[source].view(n, m, t),
                              step_logp.gather(1, index[:, :m]).unsqueeze(2)], dim=2)
        # a stable sort keeps the earlier of two equal scores first, as beam_search's lists do
        merged = torch.cat([fin_score, new_score], dim=1)
        order = merged.sort(dim=1, descending=True, stable=True).indices[:, :nbest]
        fin_score = merged.gather(1, order)
        spread = order.unsqueeze(2).expand(-1, -1, t + 1)
        fin_tokens = torch.cat([F.pad(fin_tokens, (0, 1), value=end_symbol), new_tokens],
                               dim=1).gather(1, spread)
        fin_logp = torch.cat([F.pad(fin_logp, (0, 1)), new_logp], dim=1).gather(1, spread)
        fin_len = torch.cat([fin_len, torch.full_like(new_score, t, dtype=torch.long)],
                            dim=1).gather(1, order)

        # a row is done at its limit, or when no alive beam can beat its nbest-th finished
        # hypothesis: its best nbest can no longer change. (beam_search waits for the k-th,
        # which returns the same best nbest, later.)
        kth = fin_score[:, nbest - 1]
        done = last | ((kth > -math.inf) & (alive[:, 0].double() / best_penalty <= kth))
        broken = (~torch.isfinite(logp.amax(dim=-1))).view(n, beams).any(dim=1)
        flags = torch.stack([done, broken]).tolist()  # the step's one sync
        if any(flags[1]):
            raise _not_finite([rows[i] for i, b in enumerate(flags[1]) if b], t)
        if any(flags[0]):
            gone = torch.tensor([i for i, d in enumerate(flags[0]) if d], device=device)
            exits.append(([rows[i] for i, d in enumerate(flags[0]) if d], fin_score[gone],
                          fin_tokens[gone], fin_logp[gone], fin_len[gone]))
        keep = [i for i, d in enumerate(flags[0]) if not d]
        if not keep:
            break
        follow = torch.arange(n, device=device).unsqueeze(1) * beams + beam.gather(1, pick)
        new = token.gather(1, pick)
        chosen_logp = step_logp.gather(1, index.gather(1, pick))
        sources = None
        if len(keep) < n:
            sources = torch.tensor(keep, device=device)
            follow, new, chosen_logp = follow[sources], new[sources], chosen_logp[sources]
            alive = alive[sources]
            fin_score, fin_tokens = fin_score[sources], fin_tokens[sources]
            fin_logp, fin_len = fin_logp[sources], fin_len[sources]
            limit, best_penalty = limit[sources], best_penalty[sources]
            rows = [rows[i] for i in keep]
        steps.reorder(follow.view(-1), sources)
        ys = torch.cat([ys[follow.view(-1)], new.view(-1, 1)], dim=1)
        token_logp = torch.cat([token_logp[follow.view(-1)], chosen_logp.view(-1, 1)], dim=1)
        scores = alive

    result: list[list[Decoded]] = [[] for _ in range(batch)]
    for original, score, tokens, logps, length in exits:
        for j, row in enumerate(original):
            for s, toks, lps, n_tok in zip(score[j].tolist(), tokens[j].tolist(),
                                           logps[j].tolist(), length[j].tolist(), strict=True):
                if s > -math.inf:
                    result[row].append(Decoded(toks[1 : n_tok + 1], s, lps[1 : n_tok + 1]))
    return result
