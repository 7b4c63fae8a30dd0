r"""Attention masks: which keys a query may look at.

The subsequent mask is the paper's (section 3.2.3: illegal connections in the decoder's
self-attention are masked out before the softmax); the padding mask is not in the paper, which
does not say how batches of unequal lengths are padded.

Every mask in this package is a **keep-mask**: `True` (or non-zero) marks a key the query
**may attend to**. `torch.nn.functional.scaled_dot_product_attention` reads a boolean
`attn_mask` the same way, so the fused path passes these masks on unchanged. The masks of
`nn.MultiheadAttention` and `nn.Transformer` (`attn_mask`, `key_padding_mask`) mean the
opposite, `True` = *blocked*; [`interop.masks`][vanilla_transformer.interop.masks] converts
between those and keep-masks.

- source mask: `(batch, 1, src_len)`, hiding padding from every query;
- target mask: `(batch or 1, tgt_len, tgt_len)`, padding and "no peeking ahead" combined.

Taught in the lesson [Masks][masks-lesson].
"""

from __future__ import annotations

import torch

from .._checks import (
    INTEGER_DTYPES,
    check_keep_mask_values,
    check_mask,
    check_non_negative_int,
    check_pad,
)

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
        ValueError: if `tokens` is not 2-D or `pad` is negative.
        TypeError: if `tokens` is not an integer tensor or `pad` is not an int.

    Examples:
        >>> padding_mask(torch.tensor([[5, 6, 0, 0]]), pad=0).int()
        tensor([[[1, 1, 0, 0]]], dtype=torch.int32)
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise ValueError(f"tokens must have shape (batch, seq_len), got {shape}")
    if tokens.dtype not in INTEGER_DTYPES:
        raise TypeError(f"tokens must be an integer tensor of token ids, got dtype {tokens.dtype}")
    check_pad(pad)
    return (tokens != pad).unsqueeze(-2)


def as_keep_mask(
    mask: torch.Tensor | None, batch: int, query_len: int, key_len: int, name: str = "mask"
) -> torch.Tensor | None:
    """Check a keep-mask's shape and return it as a bool tensor.

    Bool and integer masks are read as "non-zero = may attend", so the masks of the Annotated
    Transformer work. A float mask must hold only 0 and 1: PyTorch's additive float masks
    (0 = attend, `-inf` = blocked) would otherwise be read inverted, so any other value (`-inf`,
    NaN, 0.5) is refused; convert such a mask with
    [`attn_mask_to_keep`][vanilla_transformer.interop.masks.attn_mask_to_keep]. The values are
    read only for CPU tensors outside `torch.compile` (no device synchronisation, no graph
    break); the shape is always checked.

    Args:
        mask: `None`, or a mask of shape `(batch or 1, query_len or 1, key_len)`, or the same
            with a head axis of size 1 at position 1.
        batch: the batch size.
        query_len: the number of query positions.
        key_len: the number of key positions.
        name: what to call the mask in error messages.

    Returns:
        `None` if `mask` is `None`, else a bool tensor `(batch or 1, query_len or 1, key_len)`.

    Raises:
        ValueError: if the shape cannot broadcast to `(batch, query_len, key_len)`, the mask is
            not a dense tensor (a sparse one), or a float mask on the CPU holds a value other
            than 0 and 1.
        TypeError: if `mask` is not a tensor.

    Examples:
        >>> as_keep_mask(torch.ones(2, 1, 5), batch=2, query_len=3, key_len=5).dtype
        torch.bool
    """
    if mask is None:
        return None
    check_mask(mask, batch, query_len, key_len, name)
    check_keep_mask_values(mask, name)
    if mask.dim() == 4:  # (batch or 1, 1, query_len or 1, key_len): the head axis goes
        mask = mask.squeeze(1)
    return mask if mask.dtype == torch.bool else mask != 0


MASK_FILL = -1e9
"""The score given to masked keys before the softmax (as in the Annotated Transformer)."""


def mask_fill_value(dtype: torch.dtype) -> float:
    """`MASK_FILL`, or the dtype's most negative value where -1e9 overflows (float16: -65504)."""
    return max(MASK_FILL, torch.finfo(dtype).min)
