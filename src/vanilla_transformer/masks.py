"""Attention masks: which positions a query may look at.

!!! warning "True means *may attend*"
    Every mask in this package is a **keep-mask**: `True` (or a non-zero number) marks a position
    that a query **may attend to**, and `False` (or `0`) marks a position it must ignore. This is
    the convention of the Annotated Transformer and of the paper's figures. It is the **opposite**
    of PyTorch's `key_padding_mask` and boolean `attn_mask` in `nn.MultiheadAttention` and
    `nn.Transformer`, where `True` means *blocked*. [`vanilla_transformer.interop`][] converts
    between the two.

Shapes used throughout:

- source (padding) mask: `(batch, 1, src_len)`, the same for every query position;
- target mask: `(batch or 1, tgt_len, tgt_len)`, padding and "no peeking ahead" combined.

Masks of any dtype are accepted where a mask is expected: the float `0/1` masks and the
`.type_as(src)` integer masks found in the source articles work, and are read as "non-zero = may
attend".

Paper section 3.2.3 ("masking out ... all values in the input of the softmax which correspond to
illegal connections"). Explained on the *Annotated walkthrough* and *Masks* pages.
"""

from __future__ import annotations

import torch

from ._checks import check_mask, check_non_negative_int

__all__ = ["subsequent_mask", "padding_mask", "as_keep_mask"]


def subsequent_mask(size: int) -> torch.Tensor:
    """Mask out the positions after each query: the decoder's "no peeking ahead" mask.

    Position `i` may attend to positions `0..i`. Combined with shifting the decoder input one
    position to the right, this makes the prediction for position `i` depend only on the tokens
    before it.

    Args:
        size: the target sequence length `tgt_len`.

    Returns:
        A bool tensor of shape `(1, size, size)`, lower triangular, `True` = may attend.

    Raises:
        ValueError: if `size` is negative. TypeError: if it is not an int.

    Example:
        >>> subsequent_mask(3)[0].int()
        tensor([[1, 0, 0],
                [1, 1, 0],
                [1, 1, 1]], dtype=torch.int32)
    """
    check_non_negative_int("size", size)
    return torch.ones(1, size, size, dtype=torch.bool).tril_()


def padding_mask(tokens: torch.Tensor, pad: int) -> torch.Tensor:
    """Mask out padding tokens as keys.

    Args:
        tokens: token ids of shape `(batch, seq_len)`.
        pad: the id of the padding token.

    Returns:
        A bool tensor of shape `(batch, 1, seq_len)`, `True` where the token is not `pad`
        (may attend). The size-1 middle axis broadcasts over every query position.

    Raises:
        ValueError: if `tokens` is not 2-D.

    Example:
        >>> padding_mask(torch.tensor([[5, 6, 0, 0]]), pad=0).int()
        tensor([[[1, 1, 0, 0]]], dtype=torch.int32)
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise ValueError(f"tokens must have shape (batch, seq_len), got {shape}")
    return (tokens != pad).unsqueeze(-2)


def as_keep_mask(
    mask: torch.Tensor | None, batch: int, query_len: int, key_len: int, name: str = "mask"
) -> torch.Tensor | None:
    """Check a keep-mask and bring it to the form the attention modules use.

    Any dtype is accepted and read as "non-zero = may attend". The shape must broadcast to
    `(batch, query_len, key_len)`.

    Args:
        mask: `None`, or a mask of shape `(batch or 1, query_len or 1, key_len)`, or one already
            returned by this function.
        batch: the batch size.
        query_len: the number of query positions.
        key_len: the number of key positions.
        name: what to call the mask in error messages.

    Returns:
        `None` if `mask` is `None`, else a bool tensor of shape
        `(batch or 1, 1, query_len or 1, key_len)`; the size-1 axis is the head axis.

    Raises:
        ValueError: if the shape cannot broadcast to `(batch, query_len, key_len)`.
    """
    if mask is None:
        return None
    check_mask(mask, batch, query_len, key_len, name)
    if mask.dtype != torch.bool:
        mask = mask != 0
    if mask.dim() == 3:
        mask = mask.unsqueeze(1)
    return mask
