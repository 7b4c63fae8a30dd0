"""The model of the paper, one concept per file."""

from .masks import subsequent_mask, padding_mask, as_keep_mask, MASK_FILL, mask_fill_value
from .cache import KVCache
from .fast import fast_attention
from .attention import clones, attention, MultiHeadedAttention, keep_attention
from .layers import (
    LAYER_NORMS,
    LayerNorm,
    make_layer_norm,
    SublayerConnection,
    PositionwiseFeedForward,
)
from .embeddings import Embeddings, sinusoid_table, PositionalEncoding, Generator
from .encoder import EncoderLayer, Encoder
from .decoder import DecoderLayer, Decoder
from .config import ModelConfig, PRESETS
from .encoder_decoder import EncoderDecoder, make_model, make_model_from_config

__all__ = [
    "subsequent_mask",
    "padding_mask",
    "as_keep_mask",
    "MASK_FILL",
    "mask_fill_value",
    "KVCache",
    "fast_attention",
    "clones",
    "attention",
    "MultiHeadedAttention",
    "keep_attention",
    "LAYER_NORMS",
    "LayerNorm",
    "make_layer_norm",
    "SublayerConnection",
    "PositionwiseFeedForward",
    "Embeddings",
    "sinusoid_table",
    "PositionalEncoding",
    "Generator",
    "EncoderLayer",
    "Encoder",
    "DecoderLayer",
    "Decoder",
    "ModelConfig",
    "PRESETS",
    "EncoderDecoder",
    "make_model",
    "make_model_from_config",
]
