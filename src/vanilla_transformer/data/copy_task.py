"""The copy task's data: random sequences that start with the symbol `1`, padding `0`, the
target equal to the source.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from .._checks import check_non_negative_int, check_positive_int, check_seed
from .batching import Batch

__all__ = ['START_SYMBOL', 'PAD', 'heldout_sequences', 'data_gen', 'shard_batches']

START_SYMBOL = 1
"""The first token of every copy-task sequence, and so the first decoder input."""
PAD = 0
"""The padding id of the copy task (no generated sequence contains it)."""


def heldout_sequences(
    n: int = 100, *, vocab: int = 11, seq_len: int = 10, seed: int = 1
) -> torch.Tensor:
    """Copy-task sequences for evaluation, drawn with their own seed.

    Pick a `seed` different from the training seed (the command line uses the training seed
    plus one) so the held-out sequences come from a different random stream.

    Args:
        n: number of sequences.
        vocab: vocabulary size.
        seq_len: sequence length, start symbol included.
        seed: seed of the private random generator.

    Returns:
        Token ids `(n, seq_len)`, each row starting with the start symbol `1`.

    Raises:
        ValueError: if `n`, `vocab` or `seq_len` is out of range.

    Examples:
        >>> from vanilla_transformer.data import heldout_sequences
        >>> heldout_sequences(3, seq_len=5).shape
        torch.Size([3, 5])
    """
    check_positive_int("n", n)
    return next(data_gen(vocab, n, 1, seq_len=seq_len, seed=seed)).src


def data_gen(
    V: int,
    batch_size: int,
    nbatches: int,
    *,
    seq_len: int = 10,
    seed: int | None = None,
    generator: torch.Generator | None = None,
) -> Iterator[Batch]:
    """Random batches for the copy task: the target is the source.

    Every sequence starts with the start symbol `1`; the other `seq_len - 1` tokens are drawn
    uniformly from `1..V-1`, so no token is padding (`pad=0`).

    Args:
        V: vocabulary size, at least 2.
        batch_size: sequences per batch.
        nbatches: number of batches.
        seq_len: length of every sequence, start symbol included.
        seed: seed for a private random generator, for reproducible data. Ignored when
            `generator` is given.
        generator: a `torch.Generator` to draw from. With neither, the global generator is used,
            as in the Annotated Transformer.

    Yields:
        [`Batch`][vanilla_transformer.data.batching.Batch]es with `pad=0` and `src == tgt`.

    Raises:
        ValueError: if `V < 2`, a size is not positive, or `seed` is negative or above
            `2**63 - 1`.

    Examples:
        >>> batches = list(data_gen(11, batch_size=2, nbatches=3, seed=0))
        >>> len(batches), batches[0].src.shape, batches[0].src[:, 0].tolist()
        (3, torch.Size([2, 10]), [1, 1])
    """
    check_positive_int("V", V)
    if V < 2:
        raise ValueError(f"V must be at least 2 (the start symbol 1 and padding 0), got {V}")
    check_positive_int("batch_size", batch_size)
    check_positive_int("nbatches", nbatches)
    check_positive_int("seq_len", seq_len)
    if generator is None and seed is not None:
        check_seed(seed)
        generator = torch.Generator().manual_seed(seed)
    for _ in range(nbatches):
        data = torch.randint(1, V, size=(batch_size, seq_len), generator=generator)
        data[:, 0] = 1
        yield Batch(data, data.clone(), pad=0)


def shard_batches(vocab: int, batch_size: int, nbatches: int, *, rank: int, world_size: int,
                  seq_len: int = 10, seed: int = 0) -> Iterator[Batch]:
    """This process's rows of the global batches of `batch_size * world_size` sequences that
    `data_gen` draws with `seed`: disjoint slices that together are one process's batches.

    Raises:
        ValueError: if `rank` is not in `[0, world_size)` or a size is not positive.

    Examples:
        >>> a = next(shard_batches(11, 2, 1, rank=0, world_size=2, seed=5)).src
        >>> b = next(shard_batches(11, 2, 1, rank=1, world_size=2, seed=5)).src
        >>> torch.equal(torch.cat([a, b]), next(data_gen(11, 4, 1, seed=5)).src)
        True
    """
    check_positive_int("world_size", world_size)
    check_non_negative_int("rank", rank)
    if rank >= world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    check_positive_int("batch_size", batch_size)
    lo, hi = rank * batch_size, (rank + 1) * batch_size
    for batch in data_gen(vocab, batch_size * world_size, nbatches, seq_len=seq_len, seed=seed):
        src = batch.src[lo:hi]
        yield Batch(src, src.clone(), pad=PAD)
