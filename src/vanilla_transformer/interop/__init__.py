"""PyTorch interop: masks and weights shared with `torch.nn.Transformer`."""

from .masks import (
    forward_with_torch_masks,
    TorchMasks,
    batch_masks_to_torch,
    keep_to_attn_mask,
    attn_mask_to_keep,
    keep_to_key_padding_mask,
    key_padding_mask_to_keep,
    torch_masks_to_keep,
)
from .weights import load_from_torch, to_torch

__all__ = [
    "forward_with_torch_masks",
    "TorchMasks",
    "batch_masks_to_torch",
    "keep_to_attn_mask",
    "attn_mask_to_keep",
    "keep_to_key_padding_mask",
    "key_padding_mask_to_keep",
    "torch_masks_to_keep",
    "load_from_torch",
    "to_torch",
]
