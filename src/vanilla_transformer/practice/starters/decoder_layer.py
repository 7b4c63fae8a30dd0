"""Step 10, decoder_layer: masked self-attention, attention to the memory, feed-forward.

Check it:  vanilla-transformer practice check decoder_layer decoder_layer.py
"""

from torch import nn

from multi_head_attention import clones
from sublayer import SublayerConnection


class DecoderLayer(nn.Module):
    """One decoder layer.

    self.self_attn, self.src_attn, self.feed_forward: the modules given;
    self.sublayer: three SublayerConnection(size, dropout, norm_first=...,
        layer_norm=...);
    self.size: size; self.layer_norm: layer_norm.
    """

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout, *,
                 norm_first=True, layer_norm="annotated"):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, memory, src_mask, tgt_mask):
        """x (batch, tgt_len, d_model); memory (batch, src_len, d_model), the encoder's
        output.
        1. sublayer[0] around self-attention of x under tgt_mask;
        2. sublayer[1] around attention from x (queries) to memory (keys and values)
           under src_mask;
        3. sublayer[2] around the feed-forward network."""
        raise NotImplementedError
