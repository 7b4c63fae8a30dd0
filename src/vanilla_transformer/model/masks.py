r"""Attention masks: which keys a query may look at (paper section 3.2.3).

Every mask in this package is a **keep-mask**: `True` (or non-zero) marks a key the query
**may attend to**. This is the opposite of PyTorch's `attn_mask` and `key_padding_mask`, where
`True` means *blocked*; [`interop.masks`][vanilla_transformer.interop.masks] converts between them.

- source mask: `(batch, 1, src_len)`, hiding padding from every query;
- target mask: `(batch or 1, tgt_len, tgt_len)`, padding and "no peeking ahead" combined.

Explained on the [Masks][masks-guide] page.
"""

from __future__ import annotations

import torch

from .._checks import check_mask, check_non_negative_int

__all__ = ["subsequent_mask", "padding_mask", "as_keep_mask", "MASK_FILL", "mask_fill_value"]


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

    Examples:
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

    Examples:
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
    """Check a keep-mask's shape and return it as a bool tensor.

    Any dtype is accepted and read as "non-zero = may attend", so the float and integer masks of
    the Annotated Transformer work. Only the shape is checked: the values are never read on the
    host, so the check costs no device synchronisation.

    Args:
        mask: `None`, or a mask of shape `(batch or 1, query_len or 1, key_len)`.
        batch: the batch size.
        query_len: the number of query positions.
        key_len: the number of key positions.
        name: what to call the mask in error messages.

    Returns:
        `None` if `mask` is `None`, else a bool tensor of the same shape.

    Raises:
        ValueError: if the shape cannot broadcast to `(batch, query_len, key_len)`.
        TypeError: if `mask` is not a tensor.

    Examples:
        >>> as_keep_mask(torch.ones(2, 1, 5), batch=2, query_len=3, key_len=5).dtype
        torch.bool
    """
    if mask is None:
        return None
    check_mask(mask, batch, query_len, key_len, name)
    return mask if mask.dtype == torch.bool else mask != 0


MASK_FILL = -1e9
"""The score given to masked keys before the softmax (as in the Annotated Transformer)."""


def mask_fill_value(dtype: torch.dtype) -> float:
    """`MASK_FILL`, or the dtype's most negative value where -1e9 overflows (float16: -65504)."""
    return max(MASK_FILL, torch.finfo(dtype).min)
