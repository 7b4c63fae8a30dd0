"""Step 11, encoder_decoder: the stacks, the generator and make_model.

Check it:  vanilla-transformer practice check encoder_decoder encoder_decoder.py
"""

import copy

import torch
from torch import nn

from decoder_layer import DecoderLayer
from embeddings import Embeddings
from encoder_layer import EncoderLayer
from feed_forward import PositionwiseFeedForward
from layer_norm import LayerNorm
from multi_head_attention import MultiHeadedAttention, clones
from positional_encoding import PositionalEncoding


def make_norm(size, layer_norm):
    """Your LayerNorm for "annotated", nn.LayerNorm(size, eps=1e-5) for "torch"."""
    if layer_norm == "annotated":
        return LayerNorm(size)
    return nn.LayerNorm(size, eps=1e-5)


class Encoder(nn.Module):
    """N deep copies of `layer` (self.layers = clones(layer, N)); a pre-norm stack
    (final_norm=True) ends with self.norm = make_norm(layer.size, layer.layer_norm),
    a post-norm stack has no self.norm at all."""

    def __init__(self, layer, N, final_norm):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, mask):
        """Each layer in turn, then the final norm if there is one."""
        raise NotImplementedError


class Decoder(nn.Module):
    """Like Encoder, for DecoderLayer; forward(x, memory, src_mask, tgt_mask)."""

    def __init__(self, layer, N, final_norm):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, memory, src_mask, tgt_mask):
        raise NotImplementedError


class Generator(nn.Module):
    """self.proj = nn.Linear(d_model, vocab, bias=bias); forward returns the
    log-probabilities: log_softmax(self.proj(x), dim=-1)."""

    def __init__(self, d_model, vocab, bias=True):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        raise NotImplementedError


class EncoderDecoder(nn.Module):
    """self.encoder, self.decoder, self.src_embed, self.tgt_embed, self.generator."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        raise NotImplementedError

    def encode(self, src, src_mask):
        """memory = encoder(src_embed(src), src_mask)."""
        raise NotImplementedError

    def decode(self, memory, src_mask, tgt, tgt_mask):
        """decoder(tgt_embed(tgt), memory, src_mask, tgt_mask)."""
        raise NotImplementedError

    def forward(self, src, tgt, src_mask, tgt_mask):
        """decode(encode(src, src_mask), src_mask, tgt, tgt_mask): the decoder's states,
        not yet through the generator."""
        raise NotImplementedError


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1, *,
               norm_first=True, layer_norm="annotated", tie_weights=False,
               generator_bias=True, max_len=5000):
    """Build the whole model; the names below are the ones the trained weights use.

    EncoderDecoder(
        Encoder(EncoderLayer(d_model, attn, ff, dropout, ...), N,
                final_norm=norm_first),
        Decoder(DecoderLayer(d_model, attn, attn, ff, dropout, ...), N, final_norm=...),
        nn.Sequential(Embeddings(d_model, src_vocab), PositionalEncoding(...)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), PositionalEncoding(...)),
        Generator(d_model, tgt_vocab, bias=generator_bias))
    with attn = MultiHeadedAttention(h, d_model, dropout) and
    ff = PositionwiseFeedForward(d_model, d_ff, dropout), deep-copied into each place.
    tie_weights=True: one matrix for both embeddings and the generator:
        model.tgt_embed[0].lut.weight = model.src_embed[0].lut.weight, and the same for
        model.generator.proj.weight.
    Initialise every parameter with more than one axis with nn.init.xavier_uniform_.
    """
    raise NotImplementedError
