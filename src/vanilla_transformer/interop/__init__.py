"""PyTorch interop: masks and weights shared with `torch.nn.Transformer`, and ONNX and CTranslate2
export."""

from .forward import TorchMasks, batch_masks_to_torch, forward_with_torch_masks
from .masks import (
    attn_mask_to_keep,
    keep_to_attn_mask,
    keep_to_key_padding_mask,
    key_padding_mask_to_keep,
    torch_masks_to_keep,
)
from .weights import load_from_torch, to_torch

__all__ = [
    "keep_to_attn_mask",
    "attn_mask_to_keep",
    "keep_to_key_padding_mask",
    "key_padding_mask_to_keep",
    "torch_masks_to_keep",
    "forward_with_torch_masks",
    "TorchMasks",
    "batch_masks_to_torch",
    "load_from_torch",
    "to_torch",
]

from .onnx import export_onnx, greedy_decode_onnx

__all__ += ["export_onnx", "greedy_decode_onnx"]

from .ctranslate2 import ctranslate2_spec, export_ctranslate2, translate_ctranslate2  # noqa: E402

__all__ += ["export_ctranslate2", "ctranslate2_spec", "translate_ctranslate2"]
