"""vanilla_transformer: the original encoder-decoder Transformer of "Attention Is All You Need".

The public names are the ones readers know from the Annotated Transformer, so code written for it
runs after `from vanilla_transformer import *`. For that reason the star-import also provides
`torch`, `nn`, `math` and `copy`, which such code uses without importing.

Layers, bottom to top: masks, attention, layers, embeddings; encoder, decoder, model; batching,
decoding, training, the cost calculator, shape tracing and PyTorch interop; the command line.
Importing the package builds, downloads and trains nothing.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from .attention import KVCache, MultiHeadedAttention, attention, clones, keep_attention
from .batching import Batch, collate_batch, data_gen, pad_sequences
from .calculator import (
    Component,
    ModuleCount,
    ParameterCount,
    count_parameters,
    parameter_count,
    parameter_count_for,
    source_closed_form,
    source_terms,
)
from .config import PRESETS, ModelConfig
from .decoder import Decoder, DecoderLayer
from .beam_search import Hypothesis, beam_search, length_penalty
from .decoding import embed_last_position, greedy_decode
from .embeddings import Embeddings, Generator, PositionalEncoding, sinusoid_table
from .encoder import Encoder, EncoderLayer
from .layers import LayerNorm, PositionwiseFeedForward, SublayerConnection, make_layer_norm
from .interop import (
    TorchMasks,
    batch_masks_to_torch,
    forward_with_torch_masks,
    load_from_torch,
    to_torch,
)
from .memory import MemoryEstimate, dtype_bytes, memory_estimate, memory_estimate_for
from .flops import FlopCount, forward_flops, forward_flops_for
from .masks import (
    attn_mask_to_keep,
    keep_to_attn_mask,
    keep_to_key_padding_mask,
    key_padding_mask_to_keep,
    padding_mask,
    subsequent_mask,
    torch_masks_to_keep,
)
from .model import EncoderDecoder, make_model, make_model_from_config
from .tracing import ShapeRecord, format_shape_table, trace_shapes
from .training import (
    LabelSmoothing,
    SimpleLossCompute,
    TrainState,
    load_checkpoint,
    make_optimizer,
    rate,
    run_epoch,
    save_checkpoint,
)

__version__ = "0.1.0"

__all__ = [
    # building blocks
    "clones",
    "attention",
    "MultiHeadedAttention",
    "KVCache",
    "keep_attention",
    "PositionwiseFeedForward",
    "LayerNorm",
    "make_layer_norm",
    "SublayerConnection",
    "Embeddings",
    "PositionalEncoding",
    "sinusoid_table",
    "Generator",
    # the model
    "EncoderLayer",
    "Encoder",
    "DecoderLayer",
    "Decoder",
    "EncoderDecoder",
    "ModelConfig",
    "PRESETS",
    "make_model",
    "make_model_from_config",
    # masks and batching
    "subsequent_mask",
    "padding_mask",
    "keep_to_attn_mask",
    "attn_mask_to_keep",
    "keep_to_key_padding_mask",
    "key_padding_mask_to_keep",
    "torch_masks_to_keep",
    "Batch",
    "data_gen",
    "pad_sequences",
    "collate_batch",
    # decoding
    "greedy_decode",
    "embed_last_position",
    "beam_search",
    "length_penalty",
    "Hypothesis",
    # training
    "rate",
    "make_optimizer",
    "LabelSmoothing",
    "SimpleLossCompute",
    "TrainState",
    "run_epoch",
    "save_checkpoint",
    "load_checkpoint",
    # the cost calculator
    "parameter_count",
    "parameter_count_for",
    "count_parameters",
    "ParameterCount",
    "ModuleCount",
    "Component",
    "source_closed_form",
    "source_terms",
    "forward_flops",
    "forward_flops_for",
    "FlopCount",
    "memory_estimate",
    "memory_estimate_for",
    "MemoryEstimate",
    "dtype_bytes",
    # inspecting a model
    "trace_shapes",
    "format_shape_table",
    "ShapeRecord",
    # PyTorch interop
    "load_from_torch",
    "to_torch",
    "forward_with_torch_masks",
    "batch_masks_to_torch",
    "TorchMasks",
    # what pasted source code expects to find
    "torch",
    "nn",
    "math",
    "copy",
]
