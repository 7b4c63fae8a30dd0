"""The state of a batched beam search, kept on the device: the alive beams of the rows still
decoding and the best finished hypotheses of each row. Used by
[`batch_beam_search`][vanilla_transformer.inference.fast.batch_beam_search].
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .beam import length_penalty as _penalty

__all__ = ["FinishedHypotheses", "AliveBeams"]


class FinishedHypotheses:
    """Each row's best `nbest` finished hypotheses so far, best first; a score of -inf marks
    an empty slot. Tokens and log-probabilities `(rows, nbest, t + 1)`, the start first."""

    def __init__(self, like: torch.Tensor, nbest: int, end_symbol: int) -> None:
        batch, device, self.end_symbol = like.size(0), like.device, end_symbol
        self.score = torch.full((batch, nbest), -math.inf, dtype=torch.float64, device=device)
        self.tokens = torch.full((batch, nbest, 1), end_symbol, dtype=like.dtype, device=device)
        self.logp = torch.zeros(batch, nbest, 1, device=device)
        self.length = torch.zeros(batch, nbest, dtype=torch.long, device=device)

    def merge(self, score: torch.Tensor, tokens: torch.Tensor, logp: torch.Tensor,
              t: int) -> None:
        """Add the candidates finishing at step `t`, `score` `(rows, m)` (-inf where one does
        not finish), and keep the best `nbest`."""
        # a stable sort keeps the earlier of two equal scores first, as beam_search's lists do
        merged = torch.cat([self.score, score], dim=1)
        order = merged.sort(dim=1, descending=True, stable=True).indices[:, : self.score.size(1)]
        self.score = merged.gather(1, order)
        spread = order.unsqueeze(2).expand(-1, -1, t + 1)
        self.tokens = torch.cat([F.pad(self.tokens, (0, 1), value=self.end_symbol), tokens],
                                dim=1).gather(1, spread)
        self.logp = torch.cat([F.pad(self.logp, (0, 1)), logp], dim=1).gather(1, spread)
        self.length = torch.cat([self.length, torch.full_like(score, t, dtype=torch.long)],
                                dim=1).gather(1, order)

    def take(self, index: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The rows `index`: scores, tokens, log-probabilities and lengths."""
        return self.score[index], self.tokens[index], self.logp[index], self.length[index]

    def keep(self, index: torch.Tensor) -> None:
        """Keep the rows `index` only."""
        self.score, self.tokens, self.logp, self.length = self.take(index)


class AliveBeams:
    """The alive beams of the rows still decoding: `(n * beams, t)` prefixes, their tokens'
    log-probabilities, and `(n, beams)` cumulative scores; and each row's limits."""

    def __init__(self, src: torch.Tensor, lens: list[int], start_symbol: int,
                 alpha: float) -> None:
        batch, device = src.size(0), src.device
        # the first step has one row per source: its k beams would all be the start symbol
        self.ys = torch.full((batch, 1), start_symbol, dtype=src.dtype, device=device)
        self.token_logp = torch.zeros(batch, 1, device=device)
        self.scores = torch.zeros(batch, 1, device=device)
        self.limit = torch.tensor([n - 1 for n in lens], device=device)
        # the largest length penalty each row can reach bounds what an alive beam can score
        self.best_penalty = torch.tensor([_penalty(n - 1, alpha) for n in lens],
                                         dtype=torch.float64, device=device)
        self.rows = list(range(batch))  # the original row of each row still decoding

    def candidates(self, logp: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every one-token extension's log-probability alone and added to its beam's score,
        both `(n, k * vocab)`; on the first step, the missing beams' are -inf."""
        n, beams, vocab = self.scores.size(0), self.scores.size(1), logp.size(-1)
        step_logp = logp.view(n, beams * vocab)
        if beams < k:  # the first step: beam 0's score is 0, the others are -inf
            step_logp = torch.cat([step_logp, step_logp.new_full((n, (k - beams) * vocab),
                                                                 -math.inf)], dim=1)
            return step_logp, step_logp
        return step_logp, (self.scores.unsqueeze(2) + logp.view(n, k, vocab)).view(n, k * vocab)

    def extended(self, beam: torch.Tensor, token: torch.Tensor,
                 logp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each row's beams `beam` `(n, m)` extended by `token` with its log-probability
        `logp`: tokens and log-probabilities `(n, m, t + 1)`."""
        n, m, t = beam.size(0), beam.size(1), self.ys.size(1)
        source = (torch.arange(n, device=beam.device).unsqueeze(1) * self.scores.size(1)
                  + beam).view(-1)
        return (torch.cat([self.ys[source].view(n, m, t), token.unsqueeze(2)], dim=2),
                torch.cat([self.token_logp[source].view(n, m, t), logp.unsqueeze(2)], dim=2))

    def advance(self, follow: torch.Tensor, token: torch.Tensor, logp: torch.Tensor,
                scores: torch.Tensor, keep: list[int] | None) -> None:
        """Beam `j` of each row continues the row `follow[j]` of `ys` with `token`; `keep`:
        the rows that stay, where some are done (`follow` and the rest are theirs already)."""
        if keep is not None:
            index = torch.tensor(keep, device=follow.device)
            self.limit, self.best_penalty = self.limit[index], self.best_penalty[index]
            self.rows = [self.rows[i] for i in keep]
        rows = follow.view(-1)
        self.ys = torch.cat([self.ys[rows], token.view(-1, 1)], dim=1)
        self.token_logp = torch.cat([self.token_logp[rows], logp.view(-1, 1)], dim=1)
        self.scores = scores
