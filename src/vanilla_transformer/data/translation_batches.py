"""A translator's training batches: tokenised once, batched by token count (section 5.1), drawn
in a seeded order per epoch, and streamed from a saved position, so a resumed run sees the
batches the uninterrupted one would have.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from ..config import TranslationConfig
from .batching import Batch
from .corpus import tokenize_corpus
from .streaming import StreamingTokenBatches
from .token_batches import epoch_order, make_token_batches
from .tokenizer import BOS, EOS, PAD, SharedTokenizer

__all__ = ["Batches", "training_batches", "pairs_fingerprint", "file_fingerprint", "encode_pairs",
           "BatchStream"]

TOKENISE_CHUNK = 4096
"""Lines tokenised per call to the tokenizer library, which Python cannot interrupt: a stop
while tokenising waits for one chunk at most (a few hundredths of a second in our runs)."""

Batches = tuple[int, Callable[[int, int], Batch], int]
"""`(batches per epoch, the batch at (epoch, position), pairs left out)`."""


def _fingerprint(chunks: Iterable[bytes]) -> dict[str, Any]:
    digest, size = hashlib.sha256(), 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return {"size": size, "sha256": digest.hexdigest()}


def pairs_fingerprint(pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Size and SHA-256 of `pairs` written as TSV text (what `write_tsv` would write): the
    `file_fingerprint` of that file."""
    return _fingerprint(f"{src}\t{tgt}\n".encode() for src, tgt in pairs)


def file_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The size in bytes and the SHA-256 of a file, read in chunks.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.tsv"
        >>> _ = path.write_text("one\\teins\\n")
        >>> file_fingerprint(path) == pairs_fingerprint([("one", "eins")])
        True
    """
    with open(os.fspath(path), "rb") as f:
        return _fingerprint(iter(lambda: f.read(1 << 20), b""))


def encode_pairs(tokenizer: SharedTokenizer,
                 pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    """The token ids of each pair's source and target."""
    src = tokenizer.encode_batch([s for s, _ in pairs])
    tgt = tokenizer.encode_batch([t for _, t in pairs])
    return list(zip(src, tgt, strict=True))


def _refuse(total: int, max_len: int) -> None:
    raise ValueError(f"no training pair fits the positional table of {max_len} positions "
                     f"(max_len); all {total} are longer")


def training_batches(train: Sequence[tuple[str, str]] | Path, tokenizer: SharedTokenizer,
                     ids_folder: Path, max_len: int, config: TranslationConfig,
                     log: Callable[[str], None]) -> Batches:
    """The batches of the training data (see `Batches`).

    Pairs in memory are encoded and batched at once (`make_token_batches`); a TSV file is
    tokenised into `ids_folder` and batched lazily (`StreamingTokenBatches`): the same batches
    in the same order. Pairs that do not fit `max_len` positions (the source gets `</s>`, the
    target `<s>` or `</s>`) are left out either way, and counted.

    Raises:
        ValueError: for a bad line anywhere in the file, or when no pair fits.
    """
    if isinstance(train, Path):
        corpus = tokenize_corpus(train, tokenizer, ids_folder, chunk_size=TOKENISE_CHUNK)
        total = len(corpus)
        fits = (corpus.src_lengths() + 1 <= max_len) & (corpus.tgt_lengths() + 1 <= max_len)
        keep = fits.nonzero().flatten()
        if len(keep) == 0:
            _refuse(total, max_len)
        stream = StreamingTokenBatches(corpus, config.max_tokens, pad=PAD, bos=BOS, eos=EOS,
                                       seed=config.seed, keep=keep)
        n_batches, batch_at, skipped = stream.batches_in_epoch(), stream.batch, total - len(keep)
    else:
        encoded = encode_pairs(tokenizer, train)
        total = len(encoded)
        kept = [p for p in encoded if len(p[0]) + 1 <= max_len and len(p[1]) + 1 <= max_len]
        if not kept:
            _refuse(total, max_len)
        batches = make_token_batches(kept, config.max_tokens, pad=PAD, bos=BOS, eos=EOS)
        orders: dict[int, list[int]] = {}

        def batch_at(epoch: int, position: int) -> Batch:
            if epoch not in orders:
                orders.clear()
                orders[epoch] = epoch_order(len(batches), config.seed, epoch)
            return batches[orders[epoch][position]]

        n_batches, skipped = len(batches), total - len(kept)
    if skipped:
        log(f"skipped {skipped} of {total} training pairs: longer than the positional "
            f"table's {max_len} positions")
    return n_batches, batch_at, skipped


class BatchStream:
    """This process's batches from a saved `(epoch, position)` on, `accum_iter` per step,
    until `max_steps`. The position moves on before a step's first batch is yielded, so a
    checkpoint written after the step records where the next one starts; process `r` of `K`
    takes every K-th batch of a step's `accum_iter * K`, from the r-th on."""

    def __init__(self, batches: Batches, *, epoch: int, position: int, step: int,
                 max_steps: int, accum_iter: int, rank: int, size: int,
                 device: torch.device) -> None:
        self.n_batches, self.batch_at, _ = batches
        self.epoch, self.position, self.step, self.max_steps = epoch, position, step, max_steps
        self.accum_iter, self.rank, self.size, self.device = accum_iter, rank, size, device

    def __iter__(self) -> Iterator[Batch]:
        n, size = self.n_batches, self.size
        for _ in range(self.step, self.max_steps):
            first, first_epoch = self.position, self.epoch
            end = first + self.accum_iter * size
            self.epoch, self.position = first_epoch + end // n, end % n
            for i in range(first + self.rank, end, size):
                yield self.batch_at(first_epoch + i // n, i % n).to(self.device)
