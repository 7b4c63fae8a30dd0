"""Batches of source and target ids with their masks; padding is on the **right**.

A [`Batch`][vanilla_transformer.data.batching.Batch] splits the target into the decoder input
`tgt` (every token but the last) and the tokens to predict `tgt_y` (every token but the first).

Explained in the *Masks, batches and copy-task data* section of the
[Source code exploration][transformer-source-code-exploration] page; the masks are taught in the
lesson [Masks][masks-lesson].
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import torch

from .._checks import INTEGER_DTYPES, check_non_negative_int, check_pad, check_token_ids
from ..model.masks import padding_mask, subsequent_mask

__all__ = ['Batch', 'pad_sequences', 'collate_batch']


def _check_ids(name: str, x: torch.Tensor) -> None:
    check_token_ids(x, None, name)
    if x.size(0) == 0 or x.size(1) == 0:
        raise ValueError(f"{name} of shape {tuple(x.shape)} is empty: a batch needs at least one "
                         "sequence of at least one token")


def _as_ids(sequence: object, name: str) -> torch.Tensor:
    """`sequence` (a list of ints or an integer tensor) as a 1-D `torch.long` tensor.

    Floats are refused rather than truncated: `[1.7, 2.9]` is not `[1, 2]`.
    """
    if isinstance(sequence, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of int token ids, got the string "
                        f"{sequence!r}; tokenise it first")
    try:
        ids = torch.as_tensor(sequence)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"{name} must be a sequence of int token ids, got {sequence!r} "
                        f"({error})") from None
    if ids.numel() == 0:
        ids = ids.long()
    if ids.dtype not in INTEGER_DTYPES:
        if ids.dim() == 1 and not isinstance(sequence, torch.Tensor):
            values = cast("Iterable[object]", sequence)  # torch.as_tensor read it as a sequence
            bad = next((v for v in values if isinstance(v, bool) or not isinstance(v, int)), None)
            detail = f"the value {bad!r} ({type(bad).__name__})"
        else:
            detail = f"dtype {ids.dtype}"
        raise TypeError(f"{name} must hold int token ids, got {detail}; "
                        "ids are never rounded or truncated")
    if ids.dim() != 1:
        raise ValueError(f"{name} must be 1-D token ids, got shape {tuple(ids.shape)}")
    return ids.long()


class Batch:
    """A batch of source and target ids with their masks, for training.

    Args:
        src: source ids `(batch, src_len)`, right-padded with `pad`.
        tgt: full target ids `(batch, tgt_len + 1)`, starting with the start symbol and
            right-padded with `pad`; or `None` for a source-only batch.
        pad: the padding id (the Annotated Transformer's default, 2, is `<blank>` in its vocabulary).

    Attributes:
        src: `(batch, src_len)`.
        src_mask: `(batch, 1, src_len)`, `True` where `src` is not padding.
        tgt: decoder input `(batch, tgt_len)`: the target without its last token.
        tgt_y: tokens to predict `(batch, tgt_len)`: the target without its first token.
        tgt_mask: `(batch, tgt_len, tgt_len)`, `True` where a position may attend: not padding
            and not in the future.
        ntokens: number of non-padding tokens in `tgt_y` (a 0-d tensor), the loss normaliser.

    Raises:
        TypeError: if `src` or `tgt` is not a `torch.long` (or `torch.int32`) tensor, or `pad`
            is not an int.
        ValueError: if they are not 2-D or are empty, their batch sizes differ, `tgt` has fewer
            than two positions, or `pad` is negative.

    Examples:
        >>> b = Batch(torch.tensor([[1, 5, 6, 0]]), torch.tensor([[1, 5, 6, 0]]), pad=0)
        >>> b.tgt.tolist(), b.tgt_y.tolist(), int(b.ntokens)
        ([[1, 5, 6]], [[5, 6, 0]], 2)
    """

    def __init__(self, src: torch.Tensor, tgt: torch.Tensor | None = None, pad: int = 2) -> None:
        _check_ids("src", src)
        check_pad(pad)
        self.src = src
        self.src_mask = padding_mask(src, pad)
        self.pad = pad
        if tgt is not None:
            _check_ids("tgt", tgt)
            if tgt.size(0) != src.size(0):
                raise ValueError(
                    f"source and target batches differ in size: src has {src.size(0)} rows, "
                    f"tgt has {tgt.size(0)}"
                )
            if tgt.size(1) < 2:
                raise ValueError(
                    f"tgt needs at least 2 positions (a start symbol and one token to predict), "
                    f"got shape {tuple(tgt.shape)}"
                )
            self.tgt = tgt[:, :-1]
            self.tgt_y = tgt[:, 1:]
            self.tgt_mask = self.make_std_mask(self.tgt, pad)
            self.ntokens = (self.tgt_y != pad).sum()

    @staticmethod
    def make_std_mask(tgt: torch.Tensor, pad: int) -> torch.Tensor:
        """Combine the target padding mask with the subsequent mask.

        Args:
            tgt: decoder input ids `(batch, tgt_len)`.
            pad: the padding id.

        Returns:
            A bool mask `(batch, tgt_len, tgt_len)`: query `i` may attend to key `j` when
            `j <= i` and `tgt[:, j]` is not padding.

        Examples:
            >>> Batch.make_std_mask(torch.tensor([[1, 7, 0]]), pad=0).int()
            tensor([[[1, 0, 0],
                     [1, 1, 0],
                     [1, 1, 0]]], dtype=torch.int32)
        """
        return padding_mask(tgt, pad) & subsequent_mask(tgt.size(-1)).to(tgt.device)

    def __len__(self) -> int:
        return self.src.size(0)

    def to(self, device: torch.device | str) -> Batch:
        """Move every tensor of the batch to `device` (in place) and return the batch."""
        for name, value in vars(self).items():
            if isinstance(value, torch.Tensor):
                setattr(self, name, value.to(device))
        return self

    def __repr__(self) -> str:
        tgt = f", tgt={tuple(self.tgt.shape)}" if hasattr(self, "tgt") else ""
        return f"Batch(src={tuple(self.src.shape)}{tgt}, pad={self.pad})"


def pad_sequences(sequences: Sequence[Sequence[int] | torch.Tensor], pad: int) -> torch.Tensor:
    """Right-pad sequences of different lengths into one `(batch, max_len)` tensor of ids.

    Args:
        sequences: lists or 1-D tensors of token ids.
        pad: the padding id.

    Returns:
        A `torch.long` tensor of shape `(len(sequences), longest length)`.

    Raises:
        ValueError: if `sequences` is empty, an item is not 1-D, or `pad` is negative.
        TypeError: if an item holds something other than int ids (a float is never truncated)
            or `pad` is not an int.

    Examples:
        >>> pad_sequences([[5, 6, 7], [8]], pad=0).tolist()
        [[5, 6, 7], [8, 0, 0]]
    """
    check_pad(pad)
    if len(sequences) == 0:
        raise ValueError("sequences must contain at least one sequence")
    rows = [_as_ids(s, f"sequence {i}") for i, s in enumerate(sequences)]
    out = torch.full((len(rows), max(r.numel() for r in rows)), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : r.numel()] = r
    return out


def collate_batch(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    pad: int,
    *,
    bos: int | None = None,
    eos: int | None = None,
) -> Batch:
    """Collate `(source ids, target ids)` pairs of any lengths into a padded `Batch`.

    Usable as a `torch.utils.data.DataLoader` `collate_fn` (with `functools.partial`).

    Args:
        pairs: `(src, tgt)` pairs of token-id sequences.
        pad: the padding id.
        bos: if given, prepended to every target (the decoder's start symbol).
        eos: if given, appended to every target.

    Returns:
        A [`Batch`][vanilla_transformer.data.batching.Batch]; each target must then hold at least two
        tokens, the start symbol included.

    Raises:
        ValueError: if `pairs` is empty or an item is not a pair, a sequence is not 1-D, or
            `pad`, `bos` or `eos` is negative.
        TypeError: if a sequence holds something other than int ids (`[1.7]` is refused, not
            truncated to `[1]`), or `pad`, `bos` or `eos` is not an int.

    Examples:
        >>> b = collate_batch([([4, 5, 6], [7, 8]), ([4], [9])], pad=0, bos=1, eos=2)
        >>> b.src.tolist(), b.tgt.tolist(), b.tgt_y.tolist()
        ([[4, 5, 6], [4, 0, 0]], [[1, 7, 8], [1, 9, 2]], [[7, 8, 2], [9, 2, 0]])
    """
    check_pad(pad)
    for name, symbol in (("bos", bos), ("eos", eos)):
        if symbol is not None:
            check_non_negative_int(name, symbol)
    if len(pairs) == 0:
        raise ValueError("pairs must contain at least one (src, tgt) pair")
    srcs, tgts = [], []
    for i, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or len(pair) != 2:
            raise ValueError(f"pairs[{i}] must be a (src, tgt) pair of token-id sequences, "
                             f"got {pair!r}")
        srcs.append(_as_ids(pair[0], f"pairs[{i}] source"))
        tgt = _as_ids(pair[1], f"pairs[{i}] target")
        tgts.append(torch.cat([torch.tensor([] if bos is None else [bos], dtype=torch.long), tgt,
                               torch.tensor([] if eos is None else [eos], dtype=torch.long)]))
    return Batch(pad_sequences(srcs, pad), pad_sequences(tgts, pad), pad=pad)
