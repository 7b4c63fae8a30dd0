"""Batches of source and target ids with their masks; padding is on the **right**.

A [`Batch`][vanilla_transformer.data.batching.Batch] splits the target into the decoder input
`tgt` (every token but the last) and the tokens to predict `tgt_y` (every token but the first).

Explained on the *Source code exploration* page.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._checks import INTEGER_DTYPES
from ..model.masks import padding_mask, subsequent_mask

__all__ = ['Batch', 'pad_sequences', 'collate_batch']

def _check_ids(name: str, x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(x).__name__}")
    if x.dtype not in INTEGER_DTYPES:
        raise TypeError(f"{name} must be an integer tensor of token ids, got dtype {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, seq_len), got {tuple(x.shape)}")


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
        TypeError: if `src` or `tgt` is not an integer tensor.
        ValueError: if they are not 2-D, their batch sizes differ, or `tgt` has fewer than two
            positions.

    Examples:
        >>> b = Batch(torch.tensor([[1, 5, 6, 0]]), torch.tensor([[1, 5, 6, 0]]), pad=0)
        >>> b.tgt.tolist(), b.tgt_y.tolist(), int(b.ntokens)
        ([[1, 5, 6]], [[5, 6, 0]], 2)
    """

    def __init__(self, src: torch.Tensor, tgt: torch.Tensor | None = None, pad: int = 2) -> None:
        _check_ids("src", src)
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
        return padding_mask(tgt, pad) & subsequent_mask(tgt.size(-1))

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
        ValueError: if `sequences` is empty or an item is not 1-D.

    Examples:
        >>> pad_sequences([[5, 6, 7], [8]], pad=0).tolist()
        [[5, 6, 7], [8, 0, 0]]
    """
    if len(sequences) == 0:
        raise ValueError("sequences must contain at least one sequence")
    rows = [torch.as_tensor(s, dtype=torch.long) for s in sequences]
    for i, r in enumerate(rows):
        if r.dim() != 1:
            raise ValueError(f"sequence {i} must be 1-D token ids, got shape {tuple(r.shape)}")
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

    Examples:
        >>> b = collate_batch([([4, 5, 6], [7, 8]), ([4], [9])], pad=0, bos=1, eos=2)
        >>> b.src.tolist(), b.tgt.tolist(), b.tgt_y.tolist()
        ([[4, 5, 6], [4, 0, 0]], [[1, 7, 8], [1, 9, 2]], [[7, 8, 2], [9, 2, 0]])
    """
    if len(pairs) == 0:
        raise ValueError("pairs must contain at least one (src, tgt) pair")
    srcs = [list(map(int, s)) for s, _ in pairs]
    tgts = [([bos] if bos is not None else []) + list(map(int, t)) + ([eos] if eos is not None else [])
            for _, t in pairs]
    return Batch(pad_sequences(srcs, pad), pad_sequences(tgts, pad), pad=pad)
