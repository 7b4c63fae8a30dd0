"""Token batches streamed from a tokenised corpus folder, collated one at a time (section 5.1).

[`tokenize_corpus`][vanilla_transformer.data.corpus.tokenize_corpus] writes the corpus once
into memory-mapped files of ids; `StreamingTokenBatches` sorts the pairs by length and cuts
the batches from a few integers per pair, and collates each batch only when it is asked for.
Its batches and their order are those of
[`make_token_batches`][vanilla_transformer.data.token_batches.make_token_batches] and
`epoch_order` for the same pairs, `max_tokens`, seed and epoch.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from .._checks import check_non_negative_int, check_pad, check_positive_int, check_seed
from .batching import Batch
from .corpus import TokenizedCorpus
from .token_batches import epoch_order

__all__ = ["StreamingTokenBatches"]


def _cut(longest: list[int], max_tokens: int, starts: list[int]) -> list[int]:
    """Greedy batch boundaries over lengths sorted within each pool (a pool starts at each of
    `starts`): a batch ends where one more pair would exceed `max_tokens` padded tokens."""
    bounds = [0]
    pool_starts = set(starts)
    size = 0
    for k, n in enumerate(longest):
        # sorted, so this pair is the longest of the batch so far
        if size and (k in pool_starts or (size + 1) * n > max_tokens):
            bounds.append(k)
            size = 0
        size += 1
    if longest:
        bounds.append(len(longest))
    return bounds


class StreamingTokenBatches:
    """Token batches of a `TokenizedCorpus`, collated one at a time, in a seeded order.

    With `pool_size=None` every pair is sorted by length once, exactly as
    [`token_buckets`][vanilla_transformer.data.token_batches.token_buckets] does, and epoch
    `e` visits the batches in the order `epoch_order(n_batches, seed, e)`: batch for batch what
    `make_token_batches` and `epoch_order` give for the same pairs. With a `pool_size`, each
    epoch first shuffles the pairs (seeded by `(seed, epoch)`), sorts them by length within
    pools of `pool_size` consecutive pairs, and shuffles the resulting batches: batches then
    mix different pairs each epoch, at the cost of a little more padding.

    An epoch's batches are a function of `(seed, epoch)` alone, so the state of a run is two
    ints, `(epoch, position)`: `iterate(epoch, position)` resumes exactly where a run stopped.

    Args:
        corpus: the [`TokenizedCorpus`][vanilla_transformer.data.corpus.TokenizedCorpus].
        max_tokens: the most padded tokens per batch, `rows * max(src_len, tgt_len)` counted
            with the end symbol (a longer pair gets a batch of its own).
        pad: the padding id.
        bos: the start symbol.
        eos: the end symbol.
        seed: seeds each epoch's order.
        pool_size: pairs sorted together, or `None` to sort the whole corpus once.
        keep: the indices of the pairs to batch, in increasing order (default: all); the
            batches are then those of the kept pairs alone, as if the others were not there.

    Raises:
        ValueError: for an empty corpus or `keep`, or a non-positive `max_tokens` or
            `pool_size`.
        TypeError: if `corpus` is not a `TokenizedCorpus`, or an id is not an int.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.data import train_tokenizer, write_tsv
        >>> from vanilla_transformer.data.corpus import tokenize_corpus
        >>> from vanilla_transformer.data.streaming import StreamingTokenBatches
        >>> root = tempfile.mkdtemp()
        >>> pairs = [("one", "eins"), ("two", "zwei"), ("twenty-one", "einundzwanzig")]
        >>> tok = train_tokenizer([s for p in pairs for s in p], vocab_size=40)
        >>> corpus = tokenize_corpus(write_tsv(os.path.join(root, "t.tsv"), pairs), tok,
        ...                          os.path.join(root, "ids"))
        >>> stream = StreamingTokenBatches(corpus, max_tokens=8, pad=0, bos=1, eos=2, seed=0)
        >>> epoch, position, batch = next(stream.iterate())
        >>> (epoch, position), batch.tgt[:, 0].tolist() == [1] * len(batch)
        ((0, 0), True)
    """

    def __init__(
        self,
        corpus: TokenizedCorpus,
        max_tokens: int,
        *,
        pad: int,
        bos: int,
        eos: int,
        seed: int = 0,
        pool_size: int | None = None,
        keep: torch.Tensor | None = None,
    ) -> None:
        if not isinstance(corpus, TokenizedCorpus):
            raise TypeError(f"corpus must be a TokenizedCorpus, got {type(corpus).__name__}")
        if len(corpus) == 0:
            raise ValueError(f"{corpus!r} holds no pairs")
        check_positive_int("max_tokens", max_tokens)
        check_pad(pad)
        check_non_negative_int("bos", bos)
        check_non_negative_int("eos", eos)
        check_seed(seed)
        if pool_size is not None:
            check_positive_int("pool_size", pool_size)
        self.corpus, self.max_tokens = corpus, max_tokens
        self.pad, self.bos, self.eos, self.seed, self.pool_size = pad, bos, eos, seed, pool_size
        self._src_len = corpus.src_lengths() + 1  # ... </s>
        self._tgt_len = corpus.tgt_lengths() + 1  # <s> ... (or ... </s>)
        self._longest = torch.maximum(self._src_len, self._tgt_len)
        self._plan_epoch: int | None = None
        self._plan: tuple[torch.Tensor, list[int], list[int]] | None = None
        self._keep = torch.arange(len(corpus)) if keep is None else keep.long()
        if len(self._keep) == 0:
            raise ValueError("keep holds no pair index")
        if pool_size is None:
            order = self._sorted(self._keep, pool=None)
            self._fixed = (order, _cut(self._longest[order].tolist(), max_tokens, []))

    def _sorted(self, pairs: torch.Tensor, pool: torch.Tensor | None) -> torch.Tensor:
        """`pairs` sorted by (pool, longest, source length), ties kept in their given order."""
        width = int(self._longest.max()) + 1
        key = self._longest[pairs] * width + self._src_len[pairs]
        if pool is not None:
            key = key + pool * width * width
        return pairs[torch.sort(key, stable=True).indices]

    def _epoch_plan(self, epoch: int) -> tuple[torch.Tensor, list[int], list[int]]:
        """`(pairs in batch order, batch boundaries, visiting order)` of epoch `epoch`."""
        if self._plan_epoch == epoch and self._plan is not None:
            return self._plan
        if self.pool_size is None:
            order, bounds = self._fixed
            visit = epoch_order(len(bounds) - 1, self.seed, epoch)
        else:
            n = len(self._keep)
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            shuffled = self._keep[torch.randperm(n, generator=generator)]
            pool = torch.arange(n) // self.pool_size
            order = self._sorted(shuffled, pool)
            bounds = _cut(self._longest[order].tolist(), self.max_tokens,
                          list(range(0, n, self.pool_size)))
            visit = torch.randperm(len(bounds) - 1, generator=generator).tolist()
        self._plan_epoch, self._plan = epoch, (order, bounds, visit)
        return self._plan

    def batches_in_epoch(self, epoch: int = 0) -> int:
        """How many batches epoch `epoch` has (the same for every epoch without pools)."""
        check_non_negative_int("epoch", epoch)
        return len(self._epoch_plan(epoch)[1]) - 1

    def indices(self, epoch: int, position: int) -> list[int]:
        """The pair indices of the batch at `position` of epoch `epoch`, shortest first."""
        check_non_negative_int("epoch", epoch)
        check_non_negative_int("position", position)
        order, bounds, visit = self._epoch_plan(epoch)
        if position >= len(visit):
            raise IndexError(f"position {position} of an epoch of {len(visit)} batches")
        b = visit[position]
        return order[bounds[b]:bounds[b + 1]].tolist()

    def batch(self, epoch: int, position: int) -> Batch:
        """The collated batch at `position` of epoch `epoch`."""
        return self._collate(torch.tensor(self.indices(epoch, position), dtype=torch.long))

    def iterate(self, epoch: int = 0, position: int = 0) -> Iterator[tuple[int, int, Batch]]:
        """Batches from `(epoch, position)` on, epoch after epoch, without end.

        Yields `(epoch, position, batch)`; after training on it, the state to save is
        `(epoch, position + 1)`, which a later `iterate` resumes from (a position at the end
        of an epoch starts the next one).
        """
        check_non_negative_int("epoch", epoch)
        check_non_negative_int("position", position)
        while True:
            while position < self.batches_in_epoch(epoch):
                yield epoch, position, self.batch(epoch, position)
                position += 1
            epoch, position = epoch + 1, 0

    def _collate(self, rows: torch.Tensor) -> Batch:
        """`src = ids </s>` and `tgt = <s> ids </s>`, right-padded, as `collate_batch` does."""
        corpus = self.corpus
        src = self._pad(corpus.src_ids, corpus.src_offsets, rows, before=None)
        tgt = self._pad(corpus.tgt_ids, corpus.tgt_offsets, rows, before=self.bos)
        return Batch(src, tgt, pad=self.pad)

    def _pad(self, ids: torch.Tensor, offsets: torch.Tensor, rows: torch.Tensor,
             before: int | None) -> torch.Tensor:
        start, lengths = offsets[rows], offsets[rows + 1] - offsets[rows]
        lead = 0 if before is None else 1
        width = int(lengths.max())
        out = torch.full((len(rows), lead + width + 1), self.pad, dtype=torch.long)
        if before is not None:
            out[:, 0] = before
        if width:
            cols = torch.arange(width)
            inside = cols < lengths.unsqueeze(1)
            where = (start.unsqueeze(1) + cols).clamp_max(ids.numel() - 1)  # (rows, width)
            out[:, lead:lead + width] = torch.where(inside, ids[where].long(), self.pad)
        out[torch.arange(len(rows)), lead + lengths] = self.eos
        return out
