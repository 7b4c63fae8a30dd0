"""vanilla_transformer: the encoder-decoder Transformer of "Attention Is All You Need".

The package is layered, and each layer imports only from the ones listed before it:

- `model/`: the paper, read top to bottom: masks, attention, layers, embeddings, encoder,
  decoder and the encoder-decoder that `make_model` assembles;
- `data/`: batches, padding, the copy task's data, the number-words corpus, the shared
  byte-pair tokenizer and batches by token count;
- `inference/`: greedy decoding, beam search, and translating and scoring sentences;
- `training/`: the learning-rate schedule, label smoothing, the training loop, checkpoints,
  distributed training, the copy task and the translator;
- `interop/`: weights and masks shared with `torch.nn.Transformer`, and ONNX export;
- `analysis/`: parameter, FLOP and memory counts, and shape tracing;
- `cli/`: the `vanilla-transformer` command.

Every public name is importable from the top level. Importing the package builds nothing.
See the Code map page of the documentation.
"""

from __future__ import annotations

# Code written for the Annotated Transformer uses these without importing them; they stay
# importable from here, but a star-import gives only the package's own names.
import copy  # noqa: F401
import math  # noqa: F401

import torch  # noqa: F401
from torch import nn  # noqa: F401

from .analysis.flops import FlopCount, forward_flops, forward_flops_for
from .analysis.memory import MemoryEstimate, dtype_bytes, memory_estimate, memory_estimate_for
from .analysis.parameters import (
    Component,
    ModuleCount,
    ParameterCount,
    count_parameters,
    parameter_count,
    parameter_count_for,
    source_closed_form,
    source_terms,
)
from .analysis.tracing import ShapeRecord, format_shape_table, trace_shapes
from .data.batching import Batch, collate_batch, pad_sequences
from .data.copy_task import data_gen
from .inference.beam import Hypothesis, beam_search, length_penalty
from .inference.greedy import embed_last_position, greedy_decode
from .interop.forward import TorchMasks, batch_masks_to_torch, forward_with_torch_masks
from .interop.masks import (
    attn_mask_to_keep,
    keep_to_attn_mask,
    keep_to_key_padding_mask,
    key_padding_mask_to_keep,
    torch_masks_to_keep,
)
from .interop.weights import load_from_torch, to_torch
from .model.attention import MultiHeadedAttention, attention, clones, keep_attention
from .model.cache import KVCache
from .model.config import PRESETS, ModelConfig
from .model.decoder import Decoder, DecoderLayer
from .model.embeddings import Embeddings, Generator, PositionalEncoding, sinusoid_table
from .model.encoder import Encoder, EncoderLayer
from .model.encoder_decoder import EncoderDecoder, make_model, make_model_from_config
from .model.layers import LayerNorm, PositionwiseFeedForward, SublayerConnection, make_layer_norm
from .model.masks import padding_mask, subsequent_mask
from .training.checkpoints import load_checkpoint, save_checkpoint
from .training.loop import TrainState, run_epoch
from .training.loss import LabelSmoothing, SimpleLossCompute
from .training.schedule import make_optimizer, rate

__version__ = "0.1.0"

__all__ = [
    # the model, in the paper's order
    "subsequent_mask",
    "padding_mask",
    "clones",
    "attention",
    "MultiHeadedAttention",
    "KVCache",
    "keep_attention",
    "LayerNorm",
    "make_layer_norm",
    "SublayerConnection",
    "PositionwiseFeedForward",
    "Embeddings",
    "PositionalEncoding",
    "sinusoid_table",
    "Generator",
    "EncoderLayer",
    "Encoder",
    "DecoderLayer",
    "Decoder",
    "EncoderDecoder",
    "ModelConfig",
    "PRESETS",
    "make_model",
    "make_model_from_config",
    # data
    "Batch",
    "pad_sequences",
    "collate_batch",
    "data_gen",
    # inference
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
    # PyTorch interop
    "keep_to_attn_mask",
    "attn_mask_to_keep",
    "keep_to_key_padding_mask",
    "key_padding_mask_to_keep",
    "torch_masks_to_keep",
    "forward_with_torch_masks",
    "batch_masks_to_torch",
    "TorchMasks",
    "load_from_torch",
    "to_torch",
    # analysis
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
    "trace_shapes",
    "format_shape_table",
    "ShapeRecord",
]
