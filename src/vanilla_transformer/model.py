"""The full encoder-decoder model and its constructor (paper section 3, Figure 1).

[`make_model`][vanilla_transformer.model.make_model] builds an
[`EncoderDecoder`][vanilla_transformer.model.EncoderDecoder] from hyperparameters exactly as the
Annotated Transformer does: one attention module, one feed-forward module and one positional
encoding are made, then deep-copied into every place that needs one, and every weight matrix is
given Xavier-uniform initial values.

Explained on the *Source code exploration* and *Tracing the data flow* pages.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from .attention import MultiHeadedAttention
from .config import ModelConfig
from .decoder import Decoder, DecoderLayer
from .embeddings import Embeddings, Generator, PositionalEncoding
from .encoder import Encoder, EncoderLayer
from .layers import PositionwiseFeedForward

__all__ = ["EncoderDecoder", "make_model", "make_model_from_config"]


class EncoderDecoder(nn.Module):
    """A standard encoder-decoder: embed and encode the source, embed and decode the target.

    `forward` returns the decoder's states, not probabilities: apply `generator` to them to get
    log-probabilities over the target vocabulary.

    Args:
        encoder: the encoder stack.
        decoder: the decoder stack.
        src_embed: source token ids `(batch, src_len)` to `(batch, src_len, d_model)`,
            usually `nn.Sequential(Embeddings, PositionalEncoding)`.
        tgt_embed: the same for the target.
        generator: decoder states to log-probabilities.

    Attributes:
        config: the [`ModelConfig`][vanilla_transformer.config.ModelConfig] used by `make_model`,
            or `None` for a hand-assembled model.

    Example:
        >>> model = make_model(11, 11, N=2)
        >>> src = torch.tensor([[1, 2, 3, 4, 5]])
        >>> out = model(src, src, torch.ones(1, 1, 5), subsequent_mask(5))
        >>> out.shape, model.generator(out).shape
        (torch.Size([1, 5, 512]), torch.Size([1, 5, 11]))
    """

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        src_embed: nn.Module,
        tgt_embed: nn.Module,
        generator: Generator,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator
        self.config: ModelConfig | None = None

    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Encode `src` and decode `tgt` against it.

        Args:
            src: source ids `(batch, src_len)`.
            tgt: target ids `(batch, tgt_len)`, shifted right (starting with the start symbol).
            src_mask: keep-mask `(batch or 1, 1, src_len)`.
            tgt_mask: keep-mask `(batch or 1, tgt_len, tgt_len)`.

        Returns:
            Decoder states `(batch, tgt_len, d_model)`.

        Raises:
            ValueError: if the batch sizes differ, an id is out of range, a sequence is longer
                than the positional table, or a mask has the wrong shape.
            TypeError: if `src` or `tgt` is not an integer tensor.
        """
        if src.dim() != 2 or tgt.dim() != 2:
            raise ValueError(
                f"src and tgt must have shape (batch, seq_len); got {tuple(src.shape)} and "
                f"{tuple(tgt.shape)}"
            )
        if src.size(0) != tgt.size(0):
            raise ValueError(
                f"source and target batches differ in size: src has {src.size(0)} rows, "
                f"tgt has {tgt.size(0)}"
            )
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        """Embed and encode `src` `(batch, src_len)` into `memory` `(batch, src_len, d_model)`."""
        return self.encoder(self.src_embed(src), src_mask)

    def decode(
        self,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt: torch.Tensor,
        tgt_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Embed `tgt` `(batch, tgt_len)` and decode it against `memory`.

        Returns:
            Decoder states `(batch, tgt_len, d_model)`.
        """
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


def _build(config: ModelConfig) -> EncoderDecoder:
    c = copy.deepcopy
    d_model, dropout = config.d_model, config.dropout
    arrangement = dict(norm_first=config.norm_first, layer_norm=config.layer_norm)
    attn = MultiHeadedAttention(config.h, d_model, dropout)
    ff = PositionwiseFeedForward(d_model, config.d_ff, dropout)
    position = PositionalEncoding(d_model, dropout, config.max_len)
    final_norm = config.has_final_norm
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout, **arrangement), config.N,
                final_norm=final_norm),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout, **arrangement), config.N,
                final_norm=final_norm),
        nn.Sequential(Embeddings(d_model, config.src_vocab), c(position)),
        nn.Sequential(Embeddings(d_model, config.tgt_vocab), c(position)),
        Generator(d_model, config.tgt_vocab, bias=config.generator_bias),
    )
    if config.tie_weights:
        shared = model.src_embed[0].lut.weight
        model.tgt_embed[0].lut.weight = shared
        model.generator.proj.weight = shared
    return model


def make_model(
    src_vocab: int,
    tgt_vocab: int,
    N: int = 6,
    d_model: int = 512,
    d_ff: int = 2048,
    h: int = 8,
    dropout: float = 0.1,
    *,
    tie_weights: bool = False,
    norm_first: bool = True,
    layer_norm: str = "annotated",
    final_norm: bool | None = None,
    generator_bias: bool = True,
    max_len: int = 5000,
) -> EncoderDecoder:
    """Build a Transformer from hyperparameters, with Xavier-uniform initial weights.

    The defaults reproduce the sources' `make_model` exactly: untied embeddings, pre-norm
    residual blocks, the annotated LayerNorm, a final LayerNorm on each stack and a generator
    with a bias. Every option is checked before anything is built.

    Args:
        src_vocab: source vocabulary size.
        tgt_vocab: target vocabulary size.
        N: number of encoder layers and of decoder layers.
        d_model: model width.
        d_ff: feed-forward hidden width.
        h: number of heads; must divide `d_model`.
        dropout: dropout probability in [0, 1).
        tie_weights: one matrix for source embedding, target embedding and generator (paper
            section 3.4); needs equal vocabularies. Counted once by `count_parameters`.
        norm_first: `True` for pre-norm `x + Dropout(Sublayer(LN(x)))` (the sources), `False`
            for the paper's post-norm `LN(x + Dropout(Sublayer(x)))`.
        layer_norm: `"annotated"` or `"torch"`; see [`layers`][vanilla_transformer.layers].
        final_norm: LayerNorm after each stack; `None` = only for pre-norm.
        generator_bias: whether the generator's projection has a bias.
        max_len: positional-encoding table length.

    Returns:
        The model, in training mode, with `model.config` set.

    Raises:
        ValueError: see [`ModelConfig`][vanilla_transformer.config.ModelConfig].

    Example:
        >>> model = make_model(11, 11, N=2)
        >>> sum(p.numel() for p in model.parameters())
        14731787
    """
    config = ModelConfig(
        src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout,
        tie_weights=tie_weights, norm_first=norm_first, layer_norm=layer_norm,
        final_norm=final_norm, generator_bias=generator_bias, max_len=max_len,
    )
    return make_model_from_config(config)


def make_model_from_config(config: ModelConfig) -> EncoderDecoder:
    """Build the model a [`ModelConfig`][vanilla_transformer.config.ModelConfig] describes.

    Example:
        >>> make_model_from_config(ModelConfig(11, 11, N=1, d_model=32, d_ff=64, h=4)).config.N
        1
    """
    model = _build(config)
    # Glorot / fan_avg initialisation of every weight matrix, as in the sources
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    model.config = config
    return model

