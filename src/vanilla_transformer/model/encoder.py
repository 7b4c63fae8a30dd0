"""The encoder: a stack of `N` identical layers, each self-attention then a feed-forward
network, each wrapped in a residual connection and LayerNorm (paper section 3.1, Figure 1 left).

Input and output `(batch, src_len, d_model)`; source mask `(batch or 1, 1 or src_len, src_len)`.
Taught in the lesson [Layers][encoder-decoder-layers].
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadedAttention, clones
from .layers import PositionwiseFeedForward, SublayerConnection, make_layer_norm

__all__ = ['EncoderLayer', 'Encoder']


class EncoderLayer(nn.Module):
    """One encoder layer: self-attention, then the feed-forward network.

    Args:
        size: the model width `d_model`.
        self_attn: the self-attention module.
        feed_forward: the feed-forward module.
        dropout: dropout on each sublayer's output.
        norm_first: pre-norm (`True`, the Annotated Transformer) or post-norm (`False`, the paper).
        layer_norm: LayerNorm flavour, `"annotated"` or `"torch"`.

    Examples:
        >>> layer = EncoderLayer(512, MultiHeadedAttention(8, 512),
        ...                      PositionwiseFeedForward(512, 2048), dropout=0.1)
        >>> layer(torch.randn(2, 10, 512), torch.ones(2, 1, 10)).shape
        torch.Size([2, 10, 512])
    """

    def __init__(
        self,
        size: int,
        self_attn: MultiHeadedAttention,
        feed_forward: PositionwiseFeedForward,
        dropout: float,
        *,
        norm_first: bool = True,
        layer_norm: str = "annotated",
    ) -> None:
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(
            SublayerConnection(size, dropout, norm_first=norm_first, layer_norm=layer_norm), 2
        )
        self.size = size
        self.layer_norm = layer_norm

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Map `x` `(batch, src_len, d_model)` to the same shape, attending under `mask`."""
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class Encoder(nn.Module):
    """A stack of `N` deep copies of `layer`, with an optional final LayerNorm.

    Args:
        layer: the layer to copy.
        N: number of layers.
        final_norm: apply a LayerNorm after the last layer. Pre-norm stacks need it (their
            residual stream is never normalised otherwise); the paper's post-norm stack has none.

    Attributes:
        layers: the `N` layers.
        norm: the final LayerNorm, or `nn.Identity()` when `final_norm=False`.

    Examples:
        >>> layer = EncoderLayer(64, MultiHeadedAttention(4, 64),
        ...                      PositionwiseFeedForward(64, 128), dropout=0.0)
        >>> Encoder(layer, 2)(torch.randn(3, 5, 64), None).shape
        torch.Size([3, 5, 64])
    """

    def __init__(self, layer: EncoderLayer, N: int, *, final_norm: bool = True) -> None:
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = make_layer_norm(layer.size, layer.layer_norm) if final_norm else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Pass `x` `(batch, src_len, d_model)` and `mask` through every layer in turn."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)
