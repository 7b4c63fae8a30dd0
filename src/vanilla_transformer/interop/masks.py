"""Masks in PyTorch's conventions, converted to and from the package's keep-masks.

The `attn_mask` and `key_padding_mask` of `nn.MultiheadAttention` and `nn.Transformer` mean
*blocked* where they are `True` (or `-inf`); the package's keep-masks mean *may attend*, as does
a boolean `attn_mask` of `torch.nn.functional.scaled_dot_product_attention`, which needs no
conversion.
Explained on the [PyTorch's nn.Transformer][interop-guide] page.
"""

from __future__ import annotations

import torch

from .._checks import check_positive_int

__all__ = [
    "keep_to_attn_mask",
    "attn_mask_to_keep",
    "keep_to_key_padding_mask",
    "key_padding_mask_to_keep",
    "torch_masks_to_keep",
]


def _keep_bool(mask: torch.Tensor, name: str) -> torch.Tensor:
    """A bool view of a keep-mask whose values must be 0/1, so that nothing is guessed."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        return mask
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError(
            f"{name} must be a keep-mask holding only 0/1 or True/False (True = may attend); "
            f"found other values (e.g. {mask[(mask != 0) & (mask != 1)].flatten()[0].item()}). "
            "A float mask of 0 and -inf is a PyTorch attn_mask: use attn_mask_to_keep"
        )
    return mask != 0


def _blocked_bool(mask: torch.Tensor, name: str) -> torch.Tensor:
    """`True` where a PyTorch mask (bool True = blocked, or float -inf = blocked) blocks."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        return mask
    if not mask.is_floating_point():
        raise ValueError(
            f"{name} has integer dtype {mask.dtype}, which is ambiguous: PyTorch reads a byte "
            "mask as 1 = blocked, this package reads an integer mask as 1 = may attend. "
            "Pass a bool mask (True = blocked) or a float mask (0 / -inf)"
        )
    blocked = mask == float("-inf")
    if not bool((blocked | (mask == 0)).all()):
        bad = mask[~blocked & (mask != 0)].flatten()[0].item()
        raise ValueError(
            f"a float {name} must hold only 0.0 (allowed) and -inf (blocked) to be converted "
            f"without loss; found {bad}. Other additive values (biases) have no keep-mask "
            "equivalent"
        )
    return blocked


def keep_to_attn_mask(
    mask: torch.Tensor,
    *,
    num_heads: int | None = None,
    float_mask: bool = False,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Convert a keep-mask into PyTorch's `attn_mask` (for `nn.MultiheadAttention` and the
    `src_mask` / `tgt_mask` / `memory_mask` arguments of `nn.Transformer`).

    The shape is taken literally: a mask `(b, q, k)` becomes a mask for `q` queries. A keep-mask
    whose query axis has size 1 (a padding mask `(batch, 1, src_len)`) therefore becomes a mask
    for a single query; for padding use
    [`keep_to_key_padding_mask`][vanilla_transformer.interop.masks.keep_to_key_padding_mask] instead.

    Args:
        mask: keep-mask `(query_len, key_len)`, `(1, query_len, key_len)` or
            `(batch, query_len, key_len)`; bool or 0/1 values, `True` = may attend.
        num_heads: the number of heads of the attention that will use the mask. Needed only for
            a mask with a batch axis larger than 1: PyTorch wants such masks repeated per head.
        float_mask: return an additive float mask (`0.0` allowed, `-inf` blocked) instead of a
            bool one (`True` blocked).
        dtype: the float dtype when `float_mask=True`.

    Returns:
        `(query_len, key_len)` for a 2-D mask or a batch axis of 1, else
        `(batch * num_heads, query_len, key_len)` with the rows of batch item `i` at
        `i * num_heads ... (i + 1) * num_heads - 1`.

    Raises:
        ValueError: if the mask is not 2-D or 3-D, holds values other than 0/1, or has a batch
            axis larger than 1 and `num_heads` is missing.
        TypeError: if `mask` is not a tensor.

    Examples:
        >>> keep_to_attn_mask(subsequent_mask(3))
        tensor([[False,  True,  True],
                [False, False,  True],
                [False, False, False]])
        >>> keep_to_attn_mask(subsequent_mask(2), float_mask=True)
        tensor([[0., -inf],
                [0., 0.]])
    """
    keep = _keep_bool(mask, "mask")
    if keep.dim() == 2:
        keep = keep.unsqueeze(0)
    if keep.dim() != 3:
        raise ValueError(
            f"mask must have shape (query_len, key_len) or (batch or 1, query_len, key_len), "
            f"got {keep.dim()}-D shape {tuple(keep.shape)}"
        )
    blocked = ~keep
    if blocked.size(0) == 1:
        blocked = blocked[0]
    else:
        if num_heads is None:
            raise ValueError(
                f"mask of shape {tuple(keep.shape)} has a batch axis; PyTorch's 3-D attn_mask "
                "has shape (batch * num_heads, query_len, key_len), so pass num_heads"
            )
        check_positive_int("num_heads", num_heads)
        # (batch, q, k) -> (batch * num_heads, q, k), each batch item repeated per head
        blocked = blocked.repeat_interleave(num_heads, dim=0)
    if not float_mask:
        return blocked
    out = torch.zeros(blocked.shape, dtype=dtype, device=blocked.device)
    return out.masked_fill_(blocked, float("-inf"))


def attn_mask_to_keep(attn_mask: torch.Tensor, *, num_heads: int | None = None) -> torch.Tensor:
    """Convert PyTorch's `attn_mask` (bool `True` = blocked, or float `0` / `-inf`) into a
    keep-mask.

    Args:
        attn_mask: `(query_len, key_len)` or `(batch * num_heads, query_len, key_len)`.
        num_heads: the number of heads; needed for a 3-D mask whose first axis is larger than 1,
            to split it into batch and heads.

    Returns:
        A bool keep-mask `(1, query_len, key_len)` for a 2-D mask (it applies to every batch
        item) or `(batch, query_len, key_len)` for a 3-D one. `True` = may attend.

    Raises:
        ValueError: for an integer dtype (ambiguous: PyTorch's byte mask means 1 = blocked,
            an integer keep-mask 1 = may attend), a float mask with
            values other than `0` and `-inf`, a shape that is not 2-D or 3-D, a missing or
            non-dividing `num_heads`, or a 3-D mask whose heads differ (a keep-mask is shared by
            every head).
        TypeError: if `attn_mask` is not a tensor.

    Examples:
        >>> m = torch.tensor([[0.0, float("-inf")], [0.0, 0.0]])
        >>> attn_mask_to_keep(m)
        tensor([[[ True, False],
                 [ True,  True]]])
    """
    blocked = _blocked_bool(attn_mask, "attn_mask")
    if blocked.dim() == 2:
        return ~blocked.unsqueeze(0)
    if blocked.dim() != 3:
        raise ValueError(
            "attn_mask must have shape (query_len, key_len) or (batch * num_heads, query_len, "
            f"key_len), got {blocked.dim()}-D shape {tuple(blocked.shape)}"
        )
    n = blocked.size(0)
    if num_heads is None:
        if n != 1:
            raise ValueError(
                f"a 3-D attn_mask of shape {tuple(blocked.shape)} stacks batch * num_heads "
                "masks; pass num_heads to split them"
            )
        num_heads = 1
    check_positive_int("num_heads", num_heads)
    if n % num_heads != 0:
        raise ValueError(
            f"the first axis of attn_mask ({n}) must be batch * num_heads, but num_heads="
            f"{num_heads} does not divide it"
        )
    # (batch * num_heads, q, k) -> (batch, num_heads, q, k)
    per_head = blocked.view(n // num_heads, num_heads, *blocked.shape[1:])
    if not bool((per_head == per_head[:, :1]).all()):
        raise ValueError(
            "attn_mask gives different heads of the same batch item different masks; a "
            "keep-mask is shared by every head, so this mask has no keep-mask equivalent"
        )
    return ~per_head[:, 0]


def keep_to_key_padding_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert a padding keep-mask `(batch, 1, src_len)` into PyTorch's `key_padding_mask`.

    A keep-mask with a full query axis, `(batch, query_len, key_len)`, is accepted when every
    query row of an item is the same (a padding mask broadcast over the queries). A mask whose
    rows differ, such as a causal target mask, blocks different keys for different queries,
    which a key-padding mask cannot say: convert it with
    [`keep_to_attn_mask`][vanilla_transformer.interop.masks.keep_to_attn_mask] instead.

    Args:
        mask: keep-mask `(batch, 1, key_len)` or `(batch, query_len, key_len)`, bool or 0/1,
            `True` = may attend (a real token).

    Returns:
        A bool tensor `(batch, key_len)`, `True` = ignore this key (padding).

    Raises:
        ValueError: if the mask is not 3-D, holds values other than 0/1, or its query rows
            differ.
        TypeError: if `mask` is not a tensor.

    Examples:
        >>> keep_to_key_padding_mask(padding_mask(torch.tensor([[5, 6, 0]]), pad=0))
        tensor([[False, False,  True]])
    """
    keep = _keep_bool(mask, "mask")
    if keep.dim() != 3:
        raise ValueError(
            "mask must have shape (batch, 1, key_len) or (batch, query_len, key_len), got "
            f"{keep.dim()}-D shape {tuple(keep.shape)}"
        )
    if not bool((keep == keep[:, :1]).all()):
        raise ValueError(
            f"mask of shape {tuple(keep.shape)} lets different queries see different keys (a "
            "causal or custom mask), which a key_padding_mask cannot express; use "
            "keep_to_attn_mask"
        )
    return ~keep[:, 0]


def key_padding_mask_to_keep(key_padding_mask: torch.Tensor) -> torch.Tensor:
    """Convert PyTorch's `key_padding_mask` into a padding keep-mask.

    Args:
        key_padding_mask: `(batch, key_len)`, bool (`True` = padding, ignore) or float (`-inf` =
            ignore, `0` = keep).

    Returns:
        A bool keep-mask `(batch, 1, key_len)`, `True` = may attend.

    Raises:
        ValueError: if the mask is not 2-D, has an integer dtype, or is a float mask with values
            other than `0` and `-inf`.
        TypeError: if it is not a tensor.

    Examples:
        >>> key_padding_mask_to_keep(torch.tensor([[False, False, True]]))
        tensor([[[ True,  True, False]]])
    """
    blocked = _blocked_bool(key_padding_mask, "key_padding_mask")
    if blocked.dim() != 2:
        raise ValueError(
            "key_padding_mask must have shape (batch, key_len), got "
            f"{blocked.dim()}-D shape {tuple(blocked.shape)}"
        )
    return ~blocked.unsqueeze(1)


def torch_masks_to_keep(
    attn_mask: torch.Tensor | None = None,
    key_padding_mask: torch.Tensor | None = None,
    *,
    num_heads: int | None = None,
) -> torch.Tensor | None:
    """Merge PyTorch's `attn_mask` and `key_padding_mask` into one keep-mask.

    A key is allowed when neither mask blocks it, which is how `nn.MultiheadAttention` combines
    them.

    Args:
        attn_mask: `None`, or `(query_len, key_len)` / `(batch * num_heads, query_len, key_len)`,
            bool or float; see [`attn_mask_to_keep`][vanilla_transformer.interop.masks.attn_mask_to_keep].
        key_padding_mask: `None`, or `(batch, key_len)`.
        num_heads: needed for a 3-D `attn_mask` with a batch.

    Returns:
        `None` when both are `None`; else a bool keep-mask of shape
        `(batch or 1, query_len or 1, key_len)`, ready for the package's modules.

    Raises:
        ValueError: as the two conversions do, or if the masks disagree on `key_len` or the
            batch size.

    Examples:
        >>> causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
        >>> kpm = torch.tensor([[False, False, True]])
        >>> torch_masks_to_keep(causal, kpm).int()
        tensor([[[1, 0, 0],
                 [1, 1, 0],
                 [1, 1, 0]]], dtype=torch.int32)
    """
    keep = None if attn_mask is None else attn_mask_to_keep(attn_mask, num_heads=num_heads)
    if key_padding_mask is None:
        return keep
    pad_keep = key_padding_mask_to_keep(key_padding_mask)
    if keep is None:
        return pad_keep
    if keep.size(-1) != pad_keep.size(-1) or keep.size(0) not in (1, pad_keep.size(0)):
        raise ValueError(
            f"attn_mask (as keep-mask {tuple(keep.shape)}) and key_padding_mask "
            f"{tuple(key_padding_mask.shape)} disagree on the batch size or key_len"
        )
    return keep & pad_keep
