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
        output. Returns (batch, tgt_len, d_model): three sublayers in the paper's
        order, masked self-attention, attention to the memory and the feed-forward
        network. Which mask keeps the decoder from seeing ahead, and which hides the
        source's padding?

        Lesson: Layers (learn/layers/ on the site).
        Stuck? vanilla-transformer practice hint decoder_layer"""
        raise NotImplementedError
