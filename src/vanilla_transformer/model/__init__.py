"""The model of "Attention Is All You Need", one concept per file.

Read from the building blocks up: `masks` (which keys a query may see), `attention` (scaled dot-product and
multi-head attention, section 3.2), `layers` (LayerNorm, the residual sublayer and the
feed-forward network, sections 3.1 and 3.3), `embeddings` (token embeddings, positional
encoding and the generator, sections 3.4 and 3.5), `encoder`, `decoder`, and `encoder_decoder`,
where `make_model` assembles them (Figure 1). `config` holds the hyperparameters. Two files
serve speed and decoding rather than the equations: `fast` (the fused attention kernel) and
`cache` (keys and values kept between decoding steps).
"""

from .attention import MultiHeadedAttention, clones, keep_attention
from .cache import KVCache
from .config import PRESETS, ModelConfig
from .decoder import Decoder, DecoderLayer
from .embeddings import Embeddings, Generator, PositionalEncoding, sinusoid_table
from .encoder import Encoder, EncoderLayer
from .encoder_decoder import EncoderDecoder, make_model, make_model_from_config
from .fast import fast_attention
from .layers import (
    LAYER_NORMS,
    LayerNorm,
    PositionwiseFeedForward,
    SublayerConnection,
    make_layer_norm,
)
from .masks import (
    MASK_FILL,
    as_keep_mask,
    mask_fill_value,
    padding_mask,
    subsequent_mask,
)

__all__ = [
    "subsequent_mask",
    "padding_mask",
    "as_keep_mask",
    "MASK_FILL",
    "mask_fill_value",
    "KVCache",
    "fast_attention",
    "clones",
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
