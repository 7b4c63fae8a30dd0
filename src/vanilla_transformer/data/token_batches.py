"""Batches that hold about the same number of tokens, not the same number of sentences (section 5.1).

Sentence pairs are sorted by length and cut into batches whose padded size
`rows * max(src_len, tgt_len)` stays within `max_tokens`: short sentences come many to a
batch, long ones few, and sentences of similar length share a batch. The order of the batches is
shuffled each epoch with a seeded generator, so an epoch's batches are a function of
`(seed, epoch)` alone and a resumed run sees the same batches as an uninterrupted one.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._checks import check_non_negative_int, check_positive_int
from .batching import Batch, collate_batch

__all__ = ["token_buckets", "make_token_batches", "epoch_order"]


def token_buckets(
    src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_tokens: int
) -> list[list[int]]:
    """Group sentence indices, sorted by length, into batches of at most `max_tokens` padded tokens.

    A batch of `rows` pairs costs `rows * longest`, where `longest` is its longest source or
    target; a pair longer than `max_tokens` alone gets a batch of its own.

    Args:
        src_lengths: source length of each pair (in tokens, as fed to the encoder).
        tgt_lengths: target length of each pair (as fed to the decoder).
        max_tokens: the most padded tokens per batch.

    Returns:
        Lists of indices into the pairs; every index is in exactly one batch.

    Raises:
        ValueError: if the lengths differ in number or `max_tokens` is not positive.

    Examples:
        >>> from vanilla_transformer.data.token_batches import token_buckets
        >>> token_buckets([2, 9, 3, 2, 8], [2, 9, 3, 2, 8], max_tokens=18)
        [[0, 3, 2], [4, 1]]
    """
    check_positive_int("max_tokens", max_tokens)
    if len(src_lengths) != len(tgt_lengths):
        raise ValueError(f"{len(src_lengths)} source lengths but {len(tgt_lengths)} target lengths")
    longest = [max(s, t) for s, t in zip(src_lengths, tgt_lengths)]
    order = sorted(range(len(longest)), key=lambda i: (longest[i], src_lengths[i], i))
    buckets: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # sorted, so this pair is the longest of the batch so far
        if current and (len(current) + 1) * longest[i] > max_tokens:
            buckets.append(current)
            current = []
        current.append(i)
    if current:
        buckets.append(current)
    return buckets


def make_token_batches(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    max_tokens: int,
    *,
    pad: int,
    bos: int,
    eos: int,
) -> list[Batch]:
    """Token-id pairs collated into [`Batch`][vanilla_transformer.data.batching.Batch]es of about
    `max_tokens` padded tokens each, sorted by length.

    Each target becomes `<s> ... </s>` and each source `... </s>`.

    Args:
        pairs: `(source ids, target ids)` pairs, without special tokens.
        max_tokens: the most padded tokens per batch (see `token_buckets`).
        pad: the padding id. bos: the start symbol. eos: the end symbol.

    Returns:
        The batches, shortest first.

    Raises:
        ValueError: for no pairs or a non-positive `max_tokens`.

    Examples:
        >>> from vanilla_transformer.data.token_batches import make_token_batches
        >>> pairs = [([5], [6]), ([5, 7, 8], [6, 9]), ([7], [9])]
        >>> batches = make_token_batches(pairs, max_tokens=8, pad=0, bos=1, eos=2)
        >>> [b.src.tolist() for b in batches]
        [[[5, 2], [7, 2]], [[5, 7, 8, 2]]]
        >>> batches[1].tgt.tolist(), batches[1].tgt_y.tolist()
        ([[1, 6, 9]], [[6, 9, 2]])
    """
    check_positive_int("max_tokens", max_tokens)
    if len(pairs) == 0:
        raise ValueError("pairs must hold at least one (source ids, target ids) pair")
    src = [list(s) + [eos] for s, _ in pairs]
    buckets = token_buckets([len(s) for s in src], [len(t) + 1 for _, t in pairs], max_tokens)
    return [collate_batch([(src[i], pairs[i][1]) for i in bucket], pad, bos=bos, eos=eos)
            for bucket in buckets]


def epoch_order(n_batches: int, seed: int, epoch: int) -> list[int]:
    """The order in which epoch `epoch` visits `n_batches` batches: a permutation drawn from a
    generator seeded with `(seed, epoch)`, independent of the global random state.

    Examples:
        >>> from vanilla_transformer.data.token_batches import epoch_order
        >>> epoch_order(5, seed=0, epoch=0) == epoch_order(5, seed=0, epoch=0)
        True
        >>> sorted(epoch_order(5, seed=0, epoch=1))
        [0, 1, 2, 3, 4]
    """
    check_positive_int("n_batches", n_batches)
    check_non_negative_int("epoch", epoch)
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n_batches, generator=generator).tolist()
