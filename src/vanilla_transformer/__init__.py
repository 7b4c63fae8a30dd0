"""vanilla_transformer: the encoder-decoder Transformer of "Attention Is All You Need".

The package is layered, and each layer imports only from the ones listed before it:

- `model/`: the paper's building blocks, from the bottom up: masks, attention, layers, embeddings, encoder,
  decoder and the encoder-decoder that `make_model` assembles;
- `data/`: batches, padding, the copy task's data, the number-words corpus, the shared
  byte-pair tokenizer and batches by token count;
- `inference/`: greedy decoding, beam search, and translating and scoring sentences;
- `training/`: the learning-rate schedule, label smoothing, the training loop, checkpoints,
  distributed training, the copy task and the translator;
- `interop/`: weights and masks shared with `torch.nn.Transformer`, and ONNX export;
- `analysis/`: parameter, FLOP and memory counts, and shape tracing;
- `cli/`: the `vanilla-transformer` command.

The most used names are importable from the top level, every public name from its
sub-package. Importing the package builds nothing.
See the Code map page of the documentation.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each public name and the module that defines it: `__getattr__` (PEP 562) imports the module
# on first use, so `import vanilla_transformer` (and the command line's `--help`) imports no
# PyTorch. Code written for the Annotated Transformer uses `copy`, `math`, `torch` and `nn`
# without importing them; they stay reachable here too, but a star-import gives only the
# package's own names.
_LAZY: dict[str, str] = {
    "FlopCount": "analysis.flops",
    "forward_flops": "analysis.flops",
    "forward_flops_for": "analysis.flops",
    "MemoryEstimate": "analysis.memory",
    "dtype_bytes": "analysis.memory",
    "memory_estimate": "analysis.memory",
    "memory_estimate_for": "analysis.memory",
    "Component": "analysis.parameters",
    "ModuleCount": "analysis.parameters",
    "ParameterCount": "analysis.parameters",
    "count_parameters": "analysis.parameters",
    "parameter_count": "analysis.parameters",
    "parameter_count_for": "analysis.parameters",
    "source_closed_form": "analysis.parameters",
    "source_terms": "analysis.parameters",
    "ShapeRecord": "analysis.tracing",
    "format_shape_table": "analysis.tracing",
    "trace_shapes": "analysis.tracing",
    "Batch": "data.batching",
    "collate_batch": "data.batching",
    "pad_sequences": "data.batching",
    "data_gen": "data.copy_task",
    "Hypothesis": "inference.beam",
    "beam_search": "inference.beam",
    "length_penalty": "inference.beam",
    "embed_last_position": "inference.greedy",
    "greedy_decode": "inference.greedy",
    "TorchMasks": "interop.forward",
    "batch_masks_to_torch": "interop.forward",
    "forward_with_torch_masks": "interop.forward",
    "attn_mask_to_keep": "interop.masks",
    "keep_to_attn_mask": "interop.masks",
    "keep_to_key_padding_mask": "interop.masks",
    "key_padding_mask_to_keep": "interop.masks",
    "torch_masks_to_keep": "interop.masks",
    "load_from_torch": "interop.weights",
    "to_torch": "interop.weights",
    "MultiHeadedAttention": "model.attention",
    "attention": "model.attention",
    "clones": "model.attention",
    "keep_attention": "model.attention",
    "KVCache": "model.cache",
    "PRESETS": "model.config",
    "ModelConfig": "model.config",
    "Decoder": "model.decoder",
    "DecoderLayer": "model.decoder",
    "Embeddings": "model.embeddings",
    "Generator": "model.embeddings",
    "PositionalEncoding": "model.embeddings",
    "sinusoid_table": "model.embeddings",
    "Encoder": "model.encoder",
    "EncoderLayer": "model.encoder",
    "EncoderDecoder": "model.encoder_decoder",
    "make_model": "model.encoder_decoder",
    "make_model_from_config": "model.encoder_decoder",
    "LayerNorm": "model.layers",
    "PositionwiseFeedForward": "model.layers",
    "SublayerConnection": "model.layers",
    "make_layer_norm": "model.layers",
    "padding_mask": "model.masks",
    "subsequent_mask": "model.masks",
    "load_checkpoint": "training.checkpoints",
    "save_checkpoint": "training.checkpoints",
    "TrainState": "training.loop",
    "run_epoch": "training.loop",
    "LabelSmoothing": "training.loss",
    "SimpleLossCompute": "training.loss",
    "make_optimizer": "training.schedule",
    "rate": "training.schedule",
}
_MODULES = {"copy": "copy", "math": "math", "torch": "torch"}


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


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562) and cache the name here."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name == "nn":
        value = importlib.import_module("torch").nn
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
