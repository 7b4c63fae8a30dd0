"""Running the model with PyTorch's masks, and a batch's masks in PyTorch's conventions.

Explained on the [PyTorch's nn.Transformer][interop-guide] page.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..data.batching import Batch
from ..model.encoder import EncoderLayer
from ..model.encoder_decoder import EncoderDecoder
from ..model.masks import as_keep_mask, subsequent_mask
from .masks import keep_to_attn_mask, keep_to_key_padding_mask, torch_masks_to_keep

__all__ = ["forward_with_torch_masks", "TorchMasks", "batch_masks_to_torch"]



def forward_with_torch_masks(
    model: EncoderDecoder,
    src: torch.Tensor,
    tgt: torch.Tensor,
    src_mask: torch.Tensor | None = None,
    tgt_mask: torch.Tensor | None = None,
    memory_mask: torch.Tensor | None = None,
    src_key_padding_mask: torch.Tensor | None = None,
    tgt_key_padding_mask: torch.Tensor | None = None,
    memory_key_padding_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Run a package model's encoder and decoder stacks as `nn.Transformer.forward` runs its own.

    Takes the same arguments as `nn.Transformer(batch_first=True).forward`, with PyTorch's mask
    conventions, converts the masks to keep-masks and calls `model.encoder` and `model.decoder`.
    Unlike `model.forward`, which uses one `src_mask` for both, the encoder's self-attention and
    the decoder's source attention get separate masks, as in PyTorch.

    Args:
        model: the package model.
        src: embedded source `(batch, src_len, d_model)` (not token ids: `nn.Transformer` starts
            after the embeddings).
        tgt: embedded target `(batch, tgt_len, d_model)`.
        src_mask: `attn_mask` for the encoder, `(src_len, src_len)` or
            `(batch * h, src_len, src_len)`, bool (True = blocked) or float (0 / -inf).
        tgt_mask: `attn_mask` for the decoder's self-attention, `(tgt_len, tgt_len)` or 3-D.
        memory_mask: `attn_mask` for the decoder's source attention, `(tgt_len, src_len)` or 3-D.
        src_key_padding_mask: `(batch, src_len)`, True = padding.
        tgt_key_padding_mask: `(batch, tgt_len)`.
        memory_key_padding_mask: `(batch, src_len)`, usually `src_key_padding_mask`.

    Returns:
        Decoder states `(batch, tgt_len, d_model)`.

    Raises:
        ValueError: if `src` and `tgt` are not `(batch, seq_len, d_model)` with the model's
            `d_model` and one batch size, or for masks the conversions reject (see
            [`torch_masks_to_keep`][vanilla_transformer.interop.masks.torch_masks_to_keep]) or
            whose shapes do not fit `src` and `tgt`.
        TypeError: if `src` or `tgt` is not a floating-point tensor.

    Examples:
        >>> model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, dropout=0.0)
        >>> src, tgt = torch.randn(2, 5, 32), torch.randn(2, 3, 32)
        >>> causal = nn.Transformer.generate_square_subsequent_mask(3)
        >>> forward_with_torch_masks(model, src, tgt, tgt_mask=causal).shape
        torch.Size([2, 3, 32])
    """
    first = model.encoder.layers[0]
    if not isinstance(first, EncoderLayer):
        raise TypeError(f"model.encoder.layers[0] must be an EncoderLayer, got "
                        f"{type(first).__name__}")
    h, d_model = first.self_attn.h, first.self_attn.h * first.self_attn.d_k
    for name, x in (("src", src), ("tgt", tgt)):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor (batch, seq_len, d_model) "
                            f"of embeddings, got {getattr(x, 'dtype', type(x).__name__)}")
        if x.dim() != 3 or x.size(0) != src.size(0) or x.size(-1) != d_model:
            raise ValueError(f"{name} must have shape (batch={src.size(0)}, seq_len, "
                             f"d_model={d_model}), got {tuple(x.shape)}")
    (batch, S, _), T = src.shape, tgt.size(1)

    def keep(
        attn_mask: torch.Tensor | None,
        key_padding_mask: torch.Tensor | None,
        query_len: int,
        key_len: int,
        name: str,
    ) -> torch.Tensor | None:
        merged = torch_masks_to_keep(attn_mask, key_padding_mask, num_heads=h)
        return as_keep_mask(merged, batch, query_len, key_len, name)

    enc_keep = keep(src_mask, src_key_padding_mask, S, S, "src_mask")
    self_keep = keep(tgt_mask, tgt_key_padding_mask, T, T, "tgt_mask")
    cross_keep = keep(memory_mask, memory_key_padding_mask, T, S, "memory_mask")
    memory = model.encoder(src, enc_keep)
    out: torch.Tensor = model.decoder(tgt, memory, cross_keep, self_keep)
    return out


class TorchMasks(NamedTuple):
    """The masks `nn.Transformer.forward` takes for one batch, in PyTorch's convention.

    Pass them by name: `transformer(src, tgt, **masks._asdict())`.

    Attributes:
        src_key_padding_mask: `(batch, src_len)`, True = source padding.
        tgt_mask: `(tgt_len, tgt_len)` bool causal mask, True = a future position (blocked).
        tgt_key_padding_mask: `(batch, tgt_len)`, True = target padding.
        memory_key_padding_mask: `(batch, src_len)`, the same tensor as `src_key_padding_mask`.
    """

    src_key_padding_mask: torch.Tensor
    tgt_mask: torch.Tensor
    tgt_key_padding_mask: torch.Tensor
    memory_key_padding_mask: torch.Tensor


def batch_masks_to_torch(batch: Batch) -> TorchMasks:
    """Translate a [`Batch`][vanilla_transformer.data.batching.Batch]'s masks for `nn.Transformer`.

    `batch.src_mask` becomes the source (and memory) key-padding mask. `batch.tgt_mask`, which
    combines target padding with the causal mask, is split back into its two parts: a causal
    `tgt_mask` and a `tgt_key_padding_mask` read from `batch.tgt` and `batch.pad`. Together they
    block exactly the positions `batch.tgt_mask` blocks (checked), so `nn.Transformer` and the
    package agree at every position, padded ones included. The `create_mask` of PyTorch's
    translation tutorial returns masks of the same meaning (its causal mask is a float one,
    0 / `-inf`, and it adds an all-False `src_mask`, which blocks nothing).

    Args:
        batch: a batch with a target (`Batch(src, tgt, pad)`).

    Returns:
        A [`TorchMasks`][vanilla_transformer.interop.forward.TorchMasks].

    Raises:
        ValueError: if the batch has no target, or its `tgt_mask` is not "padding and causal".

    Examples:
        >>> b = Batch(torch.tensor([[1, 5, 0]]), torch.tensor([[1, 5, 6, 0]]), pad=0)
        >>> m = batch_masks_to_torch(b)
        >>> m.src_key_padding_mask, m.tgt_key_padding_mask
        (tensor([[False, False,  True]]), tensor([[False, False, False]]))
        >>> m.tgt_mask
        tensor([[False,  True,  True],
                [False, False,  True],
                [False, False, False]])
    """
    if not hasattr(batch, "tgt"):
        raise ValueError("batch has no target: build it as Batch(src, tgt, pad)")
    src_kpm = keep_to_key_padding_mask(batch.src_mask)
    tgt_kpm = batch.tgt == batch.pad
    causal = keep_to_attn_mask(subsequent_mask(batch.tgt.size(1)).to(batch.tgt.device))
    if not torch.equal(~(causal | tgt_kpm.unsqueeze(1)), batch.tgt_mask.bool()):
        raise ValueError("batch.tgt_mask is not the padding mask combined with the causal mask")
    return TorchMasks(src_kpm, causal, tgt_kpm, src_kpm)
