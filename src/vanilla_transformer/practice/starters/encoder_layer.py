"""Step 9, encoder_layer: self-attention, then the feed-forward network.

Check it:  vanilla-transformer practice check encoder_layer encoder_layer.py
"""

from torch import nn

from multi_head_attention import clones
from sublayer import SublayerConnection


class EncoderLayer(nn.Module):
    """One encoder layer.

    self.self_attn, self.feed_forward: the modules given;
    self.sublayer: two SublayerConnection(size, dropout, norm_first=...,
        layer_norm=...), made with clones(...);
    self.size: size; self.layer_norm: layer_norm (the stacks read them).
    """

    def __init__(self, size, self_attn, feed_forward, dropout, *, norm_first=True,
                 layer_norm="annotated"):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, mask):
        """x (batch, src_len, d_model): sublayer[0] around self-attention of x under
        mask, then sublayer[1] around the feed-forward network."""
        raise NotImplementedError
