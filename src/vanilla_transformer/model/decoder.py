"""The decoder: a stack of `N` identical layers of masked self-attention, attention over the
encoder output and a feed-forward network (paper section 3.1, Figure 1 right).

Decoder input and output `(batch, tgt_len, d_model)`; `memory`, the encoder output,
`(batch, src_len, d_model)`. Taught in the lesson [Layers][encoder-decoder-layers].
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadedAttention, clones
from .cache import KVCache
from .layers import PositionwiseFeedForward, SublayerConnection, make_layer_norm

__all__ = ['DecoderLayer', 'Decoder']


class DecoderLayer(nn.Module):
    """One decoder layer: masked self-attention, source attention, feed-forward.

    Args:
        size: the model width `d_model`.
        self_attn: attention over the decoder's own (earlier) positions.
        src_attn: attention from decoder positions to the encoder output `memory`.
        feed_forward: the feed-forward module.
        dropout: dropout on each sublayer's output.
        norm_first: pre-norm (`True`, the Annotated Transformer) or post-norm (`False`, the paper).
        layer_norm: LayerNorm flavour, `"annotated"` or `"torch"`.

    Examples:
        >>> layer = DecoderLayer(512, MultiHeadedAttention(8, 512), MultiHeadedAttention(8, 512),
        ...                      PositionwiseFeedForward(512, 2048), dropout=0.1)
        >>> x, memory = torch.randn(2, 7, 512), torch.randn(2, 10, 512)
        >>> layer(x, memory, torch.ones(2, 1, 10), subsequent_mask(7)).shape
        torch.Size([2, 7, 512])
    """

    def __init__(
        self,
        size: int,
        self_attn: MultiHeadedAttention,
        src_attn: MultiHeadedAttention,
        feed_forward: PositionwiseFeedForward,
        dropout: float,
        *,
        norm_first: bool = True,
        layer_norm: str = "annotated",
    ) -> None:
        super().__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(
            SublayerConnection(size, dropout, norm_first=norm_first, layer_norm=layer_norm), 3
        )
        self.layer_norm = layer_norm

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt_mask: torch.Tensor | None,
        cache: tuple[KVCache, KVCache] | None = None,
    ) -> torch.Tensor:
        """Map `x` `(batch, tgt_len, d_model)` to the same shape.

        Args:
            x: decoder states.
            memory: encoder output `(batch, src_len, d_model)`.
            src_mask: keep-mask over source positions.
            tgt_mask: keep-mask over target positions.
            cache: `(self-attention cache, source-attention cache)` for incremental decoding.
        """
        self_cache, src_cache = cache if cache is not None else (None, None)
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask, self_cache))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask, src_cache))
        return self.sublayer[2](x, self.feed_forward)


class Decoder(nn.Module):
    """A stack of `N` deep copies of `layer`, with an optional final LayerNorm.

    Args:
        layer: the layer to copy.
        N: number of layers.
        final_norm: apply a LayerNorm after the last layer (needed by pre-norm stacks).

    Examples:
        >>> layer = DecoderLayer(64, MultiHeadedAttention(4, 64), MultiHeadedAttention(4, 64),
        ...                      PositionwiseFeedForward(64, 128), dropout=0.0)
        >>> Decoder(layer, 2)(torch.randn(3, 5, 64), torch.randn(3, 6, 64), None,
        ...                   subsequent_mask(5)).shape
        torch.Size([3, 5, 64])
    """

    def __init__(self, layer: DecoderLayer, N: int, *, final_norm: bool = True) -> None:
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = make_layer_norm(layer.size, layer.layer_norm) if final_norm else nn.Identity()

    def init_cache(self) -> list[tuple[KVCache, KVCache]]:
        """Empty key/value caches for incremental decoding, one pair per layer."""
        return [(KVCache(static=False), KVCache(static=True)) for _ in self.layers]

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt_mask: torch.Tensor | None,
        cache: list[tuple[KVCache, KVCache]] | None = None,
    ) -> torch.Tensor:
        """Run `x` `(batch, tgt_len, d_model)` through every layer, attending to `memory`.

        With `cache` (from [`init_cache`][vanilla_transformer.model.decoder.Decoder.init_cache]),
        `x` holds only the new positions and `tgt_mask` covers the cached and the new key
        positions, `(batch or 1, new_len, cached_len + new_len)`.
        """
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, src_mask, tgt_mask, None if cache is None else cache[i])
        return self.norm(x)
