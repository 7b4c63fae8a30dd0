"""A parallel corpus tokenised once into a folder, and token batches streamed from it (section 5.1).

[`make_token_batches`][vanilla_transformer.data.token_batches.make_token_batches] holds every
sentence, and every collated batch, in memory at once: fine for twenty thousand pairs, not for
millions. Here the corpus is tokenised once, chunk by chunk, into flat files of token ids that
are memory-mapped, never read whole:

| file | holds |
| --- | --- |
| `src.bin`, `tgt.bin` | every pair's ids, one after the other (int32, no special tokens) |
| `src_offsets.bin`, `tgt_offsets.bin` | pair `i` runs from `offsets[i]` to `offsets[i + 1]` (int64) |
| `corpus.json` | the number of pairs and tokens, and what the ids were made from |

[`StreamingTokenBatches`][vanilla_transformer.data.streaming.StreamingTokenBatches] then collates
each batch only when it is asked for. Its batches and their order are those of
`make_token_batches` and `epoch_order` for the same pairs, `max_tokens`, seed and epoch; memory
holds a few integers per pair (lengths and the sorted order), not the pairs.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from .._checks import check_non_negative_int, check_positive_int
from .numbers import _parse_tsv_line
from .tokenizer import SharedTokenizer

__all__ = [
    "CORPUS_FORMAT",
    "iter_tsv",
    "sample_tsv",
    "tokenize_corpus",
    "TokenizedCorpus",
]

CORPUS_FORMAT = 1
"""Version of the folder layout written by `tokenize_corpus`."""

_META = "corpus.json"
_FILES = ("src.bin", "tgt.bin", "src_offsets.bin", "tgt_offsets.bin")


def iter_tsv(path: str | os.PathLike[str]) -> Iterator[tuple[str, str]]:
    """The `(source, target)` pairs of a UTF-8 `source<TAB>target` file, one line at a time.

    The same checks as [`read_tsv`][vanilla_transformer.data.numbers.read_tsv], without reading
    the file whole.

    Raises:
        ValueError: if the file is missing, a line is not UTF-8, does not hold exactly one tab or
            has an empty side (the message names the file and line), or no line holds a pair.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.data.corpus import iter_tsv
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tsv")
        >>> _ = open(path, "w").write("one\\teins\\n\\ntwo\\tzwei\\n")
        >>> list(iter_tsv(path))
        [('one', 'eins'), ('two', 'zwei')]
    """
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise ValueError(f"{name}: no such file" if not os.path.exists(name)
                         else f"{name}: is a folder, not a file")
    found = False
    with open(name, "rb") as f:
        for i, raw in enumerate(f, 1):
            pair = _parse_tsv_line(name, i, raw)  # read_tsv's parser: the same pairs, same errors
            if pair is not None:
                found = True
                yield pair
    if not found:
        raise ValueError(f"{name}: empty file, no source<TAB>target lines")


def sample_tsv(
    path: str | os.PathLike[str], k: int, *, seed: int = 0
) -> list[tuple[str, str]]:
    """`k` pairs drawn uniformly from a `source<TAB>target` file in one pass (reservoir sampling),
    in file order; every pair if the file holds at most `k`.

    A byte-pair vocabulary learned from a sample of a large corpus is nearly the one learned
    from all of it, in a fraction of the time: train the tokenizer on
    `[s for pair in sample_tsv(path, 100_000) for s in pair]`.

    Args:
        path: the corpus (see `iter_tsv`).
        k: how many pairs to keep.
        seed: seeds the draw.

    Returns:
        The sampled pairs.

    Raises:
        ValueError: for a bad file (see `iter_tsv`) or a non-positive `k`.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.data import write_tsv
        >>> from vanilla_transformer.data.corpus import sample_tsv
        >>> path = write_tsv(os.path.join(tempfile.mkdtemp(), "a.tsv"),
        ...                  [(str(i), str(-i)) for i in range(100)])
        >>> len(sample_tsv(path, 10)), sample_tsv(path, 10) == sample_tsv(path, 10)
        (10, True)
    """
    check_positive_int("k", k)
    rng = random.Random(seed)
    kept: list[tuple[int, tuple[str, str]]] = []
    for i, pair in enumerate(iter_tsv(path)):
        if i < k:
            kept.append((i, pair))
        else:
            j = rng.randrange(i + 1)
            if j < k:
                kept[j] = (i, pair)
    return [pair for _, pair in sorted(kept)]


def _fingerprint(path: Path, tokenizer: SharedTokenizer) -> dict[str, Any]:
    """What the ids were made from: the file's size and time, and the tokenizer's hash."""
    stat = path.stat()
    vocab = hashlib.sha256(tokenizer.tokenizer.to_str().encode("utf-8")).hexdigest()
    return {"format": CORPUS_FORMAT, "tsv": str(path.resolve()), "tsv_bytes": stat.st_size,
            "tsv_mtime_ns": stat.st_mtime_ns, "tokenizer_sha256": vocab}


def tokenize_corpus(
    tsv: str | os.PathLike[str],
    tokenizer: SharedTokenizer,
    folder: str | os.PathLike[str],
    *,
    chunk_size: int = 50_000,
    reuse: bool = True,
) -> TokenizedCorpus:
    """Tokenise a `source<TAB>target` file once into `folder`, `chunk_size` lines at a time.

    Memory holds one chunk of sentences, never the corpus. The folder is written beside its
    final place and moved there whole, so a run killed halfway leaves no half-written corpus.
    With `reuse`, a folder made from the same file (same path, size and modification time) with
    the same tokenizer is opened instead of tokenised again.

    Args:
        tsv: the corpus, UTF-8, one `source<TAB>target` pair a line (see `iter_tsv`).
        tokenizer: the trained [`SharedTokenizer`][vanilla_transformer.data.tokenizer.SharedTokenizer].
        folder: where the token ids go (created; replaced if it exists and is not reused).
        chunk_size: lines encoded per call to the tokenizer.
        reuse: open an up-to-date folder instead of tokenising again.

    Returns:
        The [`TokenizedCorpus`][vanilla_transformer.data.corpus.TokenizedCorpus] in `folder`.

    Raises:
        ValueError: for a bad file (see `iter_tsv`), a non-positive `chunk_size`, or a tokenizer
            whose ids do not fit in int32.
        TypeError: if `tokenizer` is not a `SharedTokenizer`.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.data import train_tokenizer, write_tsv
        >>> from vanilla_transformer.data.corpus import tokenize_corpus
        >>> root = tempfile.mkdtemp()
        >>> pairs = [("one", "eins"), ("two", "zwei"), ("twenty-one", "einundzwanzig")]
        >>> tsv = write_tsv(os.path.join(root, "train.tsv"), pairs)
        >>> tok = train_tokenizer([s for p in pairs for s in p], vocab_size=40)
        >>> corpus = tokenize_corpus(tsv, tok, os.path.join(root, "ids"))
        >>> len(corpus), corpus[2] == (tok.encode("twenty-one"), tok.encode("einundzwanzig"))
        (3, True)
    """
    if not isinstance(tokenizer, SharedTokenizer):
        raise TypeError(f"tokenizer must be a SharedTokenizer, got {type(tokenizer).__name__}")
    check_positive_int("chunk_size", chunk_size)
    if tokenizer.vocab_size > 2**31 - 1:
        raise ValueError(f"token ids must fit in int32; the tokenizer has {tokenizer.vocab_size}")
    path, folder = Path(os.fspath(tsv)), Path(os.fspath(folder))
    if not path.is_file():
        list(iter_tsv(path))  # raises the file's error
    fingerprint = _fingerprint(path, tokenizer)
    if reuse and (folder / _META).is_file():
        try:
            meta = json.loads((folder / _META).read_text())
        except ValueError:
            meta = {}
        if {k: meta.get(k) for k in fingerprint} == fingerprint:
            return TokenizedCorpus(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        counts = _write_ids(path, tokenizer, tmp, chunk_size)
        meta = {**fingerprint, **counts, "vocab_size": tokenizer.vocab_size}
        (tmp / _META).write_text(json.dumps(meta, indent=2) + "\n")
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return TokenizedCorpus(folder)


_WORD_CACHE_LIMIT = 1_000_000


def _word_encoder(tokenizer: SharedTokenizer) -> Callable[[list[str]], list[list[int]]]:
    """`tokenizer.encode_batch`, or a faster equivalent that encodes each distinct word once.

    The package's tokenizer replaces every space with `▁` and splits before it (Metaspace), with
    no normaliser, so byte-pair merges never cross a space: a sentence's ids are its
    space-separated words' ids, each word encoded alone (an empty word, between two spaces,
    is a lone `▁`). Sentences that hold `▁` themselves are encoded whole. Any other tokenizer
    gets `encode_batch`. In our runs on number words the cache took about a quarter of the
    CPU time of `encode_batch`.
    """
    t = tokenizer.tokenizer
    pre = t.pre_tokenizer
    model = t.model
    if (t.normalizer is not None or type(pre).__name__ != "Metaspace"
            or getattr(pre, "replacement", None) != "\u2581" or not getattr(pre, "split", False)
            or getattr(pre, "prepend_scheme", None) != "always"
            or type(model).__name__ != "BPE" or getattr(model, "dropout", None)):
        return tokenizer.encode_batch
    cache: dict[str, list[int]] = {}

    def encode(texts: list[str]) -> list[list[int]]:
        if len(cache) > _WORD_CACHE_LIMIT:
            cache.clear()
        out = []
        for text in texts:
            if "\u2581" in text:
                out.append(tokenizer.encode(text))
                continue
            ids: list[int] = []
            for word in text.split(" "):
                piece = cache.get(word)
                if piece is None:
                    piece = cache[word] = tokenizer.encode(word or " ")
                ids += piece
            out.append(ids)
        return out

    return encode


def _write_ids(path: Path, tokenizer: SharedTokenizer, out: Path, chunk_size: int) -> dict[str, Any]:
    files = [open(out / name, "wb") for name in _FILES]  # noqa: SIM115 - closed in `finally`
    src_f, tgt_f, src_off_f, tgt_off_f = files
    ends = [0, 0]
    pairs = 0
    encode_batch = _word_encoder(tokenizer)
    try:
        array.array("q", [0]).tofile(src_off_f)
        array.array("q", [0]).tofile(tgt_off_f)
        chunk: list[tuple[str, str]] = []

        def flush() -> None:
            for side, (ids_f, off_f) in enumerate(((src_f, src_off_f), (tgt_f, tgt_off_f))):
                encoded = encode_batch([pair[side] for pair in chunk])
                flat = array.array("i", [t for ids in encoded for t in ids])
                flat.tofile(ids_f)
                offsets = array.array("q")
                end = ends[side]
                for ids in encoded:
                    end += len(ids)
                    offsets.append(end)
                offsets.tofile(off_f)
                ends[side] = end

        for pair in iter_tsv(path):
            chunk.append(pair)
            if len(chunk) == chunk_size:
                flush()
                pairs += len(chunk)
                chunk = []
        if chunk:
            flush()
            pairs += len(chunk)
        for f in files:
            f.flush()
            os.fsync(f.fileno())
    finally:
        for f in files:
            f.close()
    return {"pairs": pairs, "src_tokens": ends[0], "tgt_tokens": ends[1]}


class TokenizedCorpus:
    """The token ids of a corpus written by `tokenize_corpus`, memory-mapped.

    Opening reads `corpus.json` and maps the files; the ids are paged in by the operating system
    as batches touch them, so a corpus larger than memory can be read.

    Args:
        folder: a folder written by [`tokenize_corpus`][vanilla_transformer.data.corpus.tokenize_corpus].

    Attributes:
        folder: the folder.
        meta: the contents of `corpus.json`.
        src_ids, tgt_ids: every pair's ids, concatenated (int32, memory-mapped).
        src_offsets, tgt_offsets: `(pairs + 1,)` int64: pair `i` is
            `src_ids[src_offsets[i]:src_offsets[i + 1]]`.

    Raises:
        ValueError: if the folder lacks a file, was written in another format, or its files
            do not match `corpus.json`.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(os.fspath(folder))
        meta_path = self.folder / _META
        try:
            self.meta: dict[str, Any] = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            raise ValueError(f"{self.folder}: not a tokenised corpus (no readable {_META}); "
                             "make one with tokenize_corpus") from None
        if self.meta.get("format") != CORPUS_FORMAT:
            raise ValueError(f"{meta_path}: format {self.meta.get('format')!r}, expected "
                             f"{CORPUS_FORMAT}; tokenise the corpus again")
        n = self.meta["pairs"]
        sizes = (self.meta["src_tokens"], self.meta["tgt_tokens"], n + 1, n + 1)
        dtypes = (torch.int32, torch.int32, torch.int64, torch.int64)
        tensors = []
        for name, size, dtype in zip(_FILES, sizes, dtypes):
            file = self.folder / name
            expected = size * dtype.itemsize
            if not file.is_file() or file.stat().st_size != expected:
                raise ValueError(f"{file}: missing or not {expected} bytes; tokenise again")
            # shared=False maps the file privately and lazily: nothing is read until touched
            tensors.append(torch.from_file(str(file), shared=False, size=size, dtype=dtype)
                           if size else torch.zeros(0, dtype=dtype))
        self.src_ids, self.tgt_ids, self.src_offsets, self.tgt_offsets = tensors

    def __len__(self) -> int:
        return int(self.meta["pairs"])

    def __getitem__(self, i: int) -> tuple[list[int], list[int]]:
        """Pair `i`'s `(source ids, target ids)`, without special tokens."""
        check_non_negative_int("i", i)
        if i >= len(self):
            raise IndexError(f"pair {i} of a corpus of {len(self)} pairs")
        src = self.src_ids[self.src_offsets[i]:self.src_offsets[i + 1]]
        tgt = self.tgt_ids[self.tgt_offsets[i]:self.tgt_offsets[i + 1]]
        return src.tolist(), tgt.tolist()

    def src_lengths(self) -> torch.Tensor:
        """Tokens in each source, `(pairs,)` int64, special tokens not counted."""
        return self.src_offsets[1:] - self.src_offsets[:-1]

    def tgt_lengths(self) -> torch.Tensor:
        """Tokens in each target, `(pairs,)` int64, special tokens not counted."""
        return self.tgt_offsets[1:] - self.tgt_offsets[:-1]

    def __repr__(self) -> str:
        return f"TokenizedCorpus({str(self.folder)!r}, pairs={len(self)})"
