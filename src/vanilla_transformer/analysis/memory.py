r"""Memory estimate: the bytes of weights, training state, activations and key/value cache.

With $P$ parameters and $Q$ positional-table elements of $p$ bytes, training with Adam holds the
weights, their gradients, two Adam states and the activations $A$ kept for the backward pass (an
estimate after Korthikanti et al., 2022); incremental decoding holds the weights and a key/value
cache over the $t$ target positions decoded so far and the $S$ source positions:

$$
M_{train} = (4P + Q)\,p + A, \qquad M_{cache} = 2NBd\,(t + S)\,p
$$

Explained on the [Parameter calculator][calculator-guide] page.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from .._checks import check_positive_int
from ..config.model import ModelConfig
from ._table import describe, format_table
from .parameters import Component, parameter_count_for

__all__ = ['dtype_bytes', 'format_bytes', 'MemoryEstimate', 'memory_estimate_for', 'memory_estimate',
           'check_fits_memory']

_DTYPES = {
    "float32": torch.float32, "fp32": torch.float32, "float": torch.float32,
    "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float64": torch.float64, "fp64": torch.float64, "double": torch.float64,
}


def _as_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str):
        name = dtype.strip().lower().removeprefix("torch.")
        if name in _DTYPES:
            return _DTYPES[name]
        raise ValueError(f"unknown dtype {dtype!r}; expected a torch.dtype or one of "
                         f"{', '.join(_DTYPES)}")
    raise TypeError(f"dtype must be a torch.dtype or a name such as 'bf16', got {dtype!r}")


def dtype_bytes(dtype: torch.dtype | str) -> int:
    """Bytes per element of a dtype given as a `torch.dtype` or a name.

    Args:
        dtype: e.g. `torch.bfloat16`, `"bf16"`, `"float32"`, `"fp16"`, `"double"`.

    Returns:
        The element size in bytes.

    Raises:
        ValueError: for an unknown name.
        TypeError: for anything that is neither a `torch.dtype` nor a string.

    Examples:
        >>> dtype_bytes("bf16"), dtype_bytes(torch.float32), dtype_bytes("torch.float64")
        (2, 4, 8)
    """
    return _as_dtype(dtype).itemsize


def format_bytes(n: int) -> str:
    """A byte count with a binary unit (KiB, MiB, GiB, TiB), one decimal.

    Args:
        n: a number of bytes.

    Returns:
        The readable size; plain bytes below 1 KiB.

    Examples:
        >>> format_bytes(1536), format_bytes(3 * 2**30), format_bytes(100)
        ('1.5 KiB', '3.0 GiB', '100 B')
    """
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory in bytes of a model's weights, training state, activations and decoding cache.

    Attributes:
        config: the model configuration.
        dtype: the dtype's name, e.g. `"float32"`.
        bytes_per_element: its size.
        parameters: the number of trainable parameters.
        weights: parameter bytes.
        buffers: positional-encoding table bytes.
        gradients: gradient bytes (one per parameter).
        optimizer_state: Adam's two states per parameter.
        batch: sentence pairs per batch.
        src_len: source length, or `None` when no lengths were given.
        tgt_len: target length (decoder positions), or `None`.
        activation_components: the activation estimate by component, in bytes (empty without
            lengths).
        kv_cache_self: self-attention key/value cache after `tgt_len` positions (0 without lengths).
        kv_cache_cross: cross-attention key/value cache over `src_len` positions.

    Examples:
        >>> m = memory_estimate(11, 11, N=2, dtype="bf16")
        >>> m.weights == 2 * m.parameters, m.optimizer_state == 2 * m.weights
        (True, True)
    """

    config: ModelConfig
    dtype: str
    bytes_per_element: int
    parameters: int
    weights: int
    buffers: int
    gradients: int
    optimizer_state: int
    batch: int
    src_len: int | None
    tgt_len: int | None
    activation_components: tuple[Component, ...]
    kv_cache_self: int
    kv_cache_cross: int

    @property
    def activations(self) -> int:
        """The activation estimate for one training step (0 without lengths)."""
        return sum(c.subtotal for c in self.activation_components)

    @property
    def kv_cache(self) -> int:
        """Both key/value caches."""
        return self.kv_cache_self + self.kv_cache_cross

    @property
    def training_total(self) -> int:
        """Weights, buffers, gradients, Adam state and activations."""
        return (self.weights + self.buffers + self.gradients + self.optimizer_state
                + self.activations)

    @property
    def inference_total(self) -> int:
        """Weights, buffers and the key/value cache of incremental decoding."""
        return self.weights + self.buffers + self.kv_cache

    def summary(self) -> dict[str, int]:
        """Every figure in bytes, by name."""
        figures = dict(weights=self.weights, buffers=self.buffers, gradients=self.gradients,
                       optimizer_state=self.optimizer_state)
        if self.src_len is not None:
            figures.update(activations=self.activations, kv_cache_self=self.kv_cache_self,
                           kv_cache_cross=self.kv_cache_cross)
        figures.update(training_total=self.training_total)
        if self.src_len is not None:
            figures.update(inference_total=self.inference_total)
        return figures

    def table(self) -> str:
        """A readable summary (and the activation breakdown when lengths were given).

        Examples:
            >>> print(memory_estimate(11, 11, N=2).table().splitlines()[4])
            weights                                   58,927,148 B    56.2 MiB
        """
        lines = [f"memory of {describe(self.config)}",
                 f"  in {self.dtype} ({self.bytes_per_element} bytes per element)"]
        if self.src_len is not None:
            lines[-1] += f", batch={self.batch}, src_len={self.src_len}, tgt_len={self.tgt_len}"
        lines.append("")
        for name, n in self.summary().items():
            lines.append(f"{_LABELS[name].ljust(34)} {n:>17,} B {format_bytes(n):>11}")
        if self.activation_components:
            lines += ["", "activations (estimate; Korthikanti et al. 2022, adapted):",
                      format_table(self.activation_components, "bytes", self.activations)]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary."""
        data: dict[str, Any] = dict(dtype=self.dtype, bytes_per_element=self.bytes_per_element,
                                    batch=self.batch, src_len=self.src_len,
                                    tgt_len=self.tgt_len, **self.summary())
        if self.activation_components:
            data["activation_components"] = {c.name: c.to_dict()
                                             for c in self.activation_components}
        return data


_LABELS = {
    "weights": "weights",
    "buffers": "buffers (positional tables)",
    "gradients": "gradients",
    "optimizer_state": "Adam state (2 per parameter)",
    "activations": "activations (estimate)",
    "kv_cache_self": "key/value cache, self-attention",
    "kv_cache_cross": "key/value cache, cross-attention",
    "training_total": "training total",
    "inference_total": "inference total (weights + cache)",
}


def _activations(
    config: ModelConfig, B: int, S: int, T: int, p: int, mask_bytes: int
) -> tuple[Component, ...]:
    d, d_ff, a, n = config.d_model, config.d_ff, config.h, config.N
    m = mask_bytes if config.dropout > 0 else 0  # no dropout, no masks
    # per row, a LayerNorm keeps d + 2 numbers: nn.LayerNorm its input, mean and 1/std; the
    # annotated one (`fast_layer_norm`) the normalised row, its std and 1 / (std + eps)
    norm = (d + 2) * p

    attn_m = mask_bytes if config.attention_dropout > 0 else 0
    attn_kept = p if config.attention_dropout > 0 else 0
    ff_m = mask_bytes if config.feed_forward_dropout > 0 else 0
    ff_kept = p if config.feed_forward_dropout > 0 else 0

    def probs(q_len: int, k_len: int) -> int:  # softmax output, dropout mask and output
        return B * a * q_len * k_len * (p + attn_m + attn_kept)

    def self_attention(L: int) -> int:  # LN, input, Q, K, V, W^O input, residual mask
        return B * L * (norm + d * (5 * p + m)) + probs(L, L)

    def feed_forward(L: int) -> int:  # LN, W_1 input, residual mask; ReLU, mask, W_2 input
        return B * L * (norm + d * (p + m)) + B * L * d_ff * (p + ff_m + ff_kept)

    return (
        Component("embedding_dropout", B * (S + T) * d * m, 1, "masks"),
        Component("encoder_self_attention", self_attention(S), n),
        Component("encoder_feed_forward", feed_forward(S), n),
        Component("encoder_output", B * S * d * p, 1, "read by every cross-attention"),
        Component("decoder_self_attention", self_attention(T), n),
        Component("cross_attention",
                  B * T * (norm + d * (3 * p + m)) + 2 * B * S * d * p + probs(T, S), n),
        Component("decoder_feed_forward", feed_forward(T), n),
        Component("final_norms", B * (S + T) * norm, 1 if config.has_final_norm else 0),
        Component("generator", B * T * (d + config.tgt_vocab) * p, 1, "input, log-probs"),
    )


def memory_estimate_for(
    config: ModelConfig,
    *,
    batch: int = 1,
    src_len: int | None = None,
    tgt_len: int | None = None,
    dtype: torch.dtype | str = torch.float32,
    mask_bytes: int = 1,
) -> MemoryEstimate:
    """Memory estimate for the model a `ModelConfig` describes.

    Args:
        config: the configuration.
        batch: sentence pairs per batch.
        src_len: source length; with `tgt_len`, enables the activation and cache estimates.
        tgt_len: target length (positions fed to the decoder).
        dtype: element type of weights, states and activations (`torch.dtype` or a name).
        mask_bytes: bytes per dropout-mask element: 1 for the fused dropout kernel used on
            GPUs (a bool mask), the dtype's size on CPU (where the mask is a float tensor).

    Returns:
        A [`MemoryEstimate`][vanilla_transformer.analysis.memory.MemoryEstimate].

    Raises:
        ValueError: for a non-positive batch, length or `mask_bytes`, only one of the two
            lengths, or an unknown dtype name.
        TypeError: if `config` is not a `ModelConfig`.

    Examples:
        >>> m = memory_estimate_for(ModelConfig(11, 11, N=2), batch=2, src_len=10, tgt_len=9)
        >>> m.kv_cache_self == 2 * 2 * 2 * 9 * 512 * 4, m.kv_cache_cross == 2 * 2 * 2 * 10 * 512 * 4
        (True, True)
    """
    params = parameter_count_for(config)
    torch_dtype = _as_dtype(dtype)
    p = torch_dtype.itemsize
    B = check_positive_int("batch", batch)
    check_positive_int("mask_bytes", mask_bytes)
    if (src_len is None) != (tgt_len is None):
        raise ValueError("give both src_len and tgt_len, or neither")
    activations: tuple[Component, ...] = ()
    kv_self = kv_cross = 0
    if src_len is not None and tgt_len is not None:
        S = check_positive_int("src_len", src_len)
        T = check_positive_int("tgt_len", tgt_len)
        activations = _activations(config, B, S, T, p, mask_bytes)
        kv_self = 2 * config.N * B * T * config.d_model * p
        kv_cross = 2 * config.N * B * S * config.d_model * p
    return MemoryEstimate(
        config=config, dtype=str(torch_dtype).removeprefix("torch."), bytes_per_element=p,
        parameters=params.total, weights=params.total * p, buffers=params.buffers * p,
        gradients=params.total * p, optimizer_state=2 * params.total * p,
        batch=B, src_len=src_len, tgt_len=tgt_len, activation_components=activations,
        kv_cache_self=kv_self, kv_cache_cross=kv_cross,
    )


def memory_estimate(
    src_vocab: int,
    tgt_vocab: int,
    *sizes: Any,
    batch: int = 1,
    src_len: int | None = None,
    tgt_len: int | None = None,
    dtype: torch.dtype | str = torch.float32,
    mask_bytes: int = 1,
    **options: Any,
) -> MemoryEstimate:
    """Memory estimate for the model `make_model` builds with the same arguments.

    Weights, gradients and Adam state are exact for the given dtype; the key/value cache is
    exact for [`Decoder.init_cache`][vanilla_transformer.model.decoder.Decoder.init_cache]; the
    activations are an estimate (the guide page lists what is counted). Heads, dropout and the
    LayerNorm flavour matter only to the activations.

    Args:
        src_vocab: source vocabulary size.
        tgt_vocab: target vocabulary size.
        *sizes: `N, d_model, d_ff, h, dropout` by position, as `make_model` takes them.
        batch: sentence pairs per batch.
        src_len: source length (activations and caches need both lengths).
        tgt_len: target length.
        dtype: a `torch.dtype` or a name (`"float32"`, `"bf16"`, `"fp16"`, ...).
        mask_bytes: bytes per dropout-mask element (1 on GPUs; the dtype's size on CPU).
        **options: any field of [`ModelConfig`][vanilla_transformer.model.config.ModelConfig]
            by name.

    Returns:
        A [`MemoryEstimate`][vanilla_transformer.analysis.memory.MemoryEstimate].

    Raises:
        ValueError: for the same bad arguments as `make_model`, a non-positive batch or length,
            or an unknown dtype name.
        TypeError: for a non-integer size, an unknown option or a dtype of the wrong type.

    Examples:
        >>> m = memory_estimate(11, 11, N=2)
        >>> m.training_total == 4 * m.weights + m.buffers  # weights, grads, two Adam states
        True
    """
    config = ModelConfig(src_vocab, tgt_vocab, *sizes, **options)
    return memory_estimate_for(config, batch=batch, src_len=src_len, tgt_len=tgt_len,
                               dtype=dtype, mask_bytes=mask_bytes)


def _device_memory(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: no bound known
        return 2**62


def check_fits_memory(config: ModelConfig, device: torch.device) -> int:
    r"""Refuse, before it is built, a model whose float32 training state, $(4P + Q) \cdot 4$
    bytes (activations not counted), cannot fit `device`'s memory; else its parameter count.

    Raises:
        ValueError: naming the sizes, the bytes needed and the bytes there are.

    Examples:
        >>> check_fits_memory(ModelConfig(10, 10, N=10**9), torch.device("cpu"))
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: a model of N=1000000000, d_model=512, d_ff=2048, ... needs at least ...
    """
    params = int(parameter_count_for(config).total)
    needed = (4 * params + config.max_len * config.d_model) * 4
    have = _device_memory(device)
    if needed > have:
        raise ValueError(
            f"a model of N={config.N}, d_model={config.d_model}, d_ff={config.d_ff}, "
            f"max_len={config.max_len} and vocabularies {config.src_vocab}/{config.tgt_vocab} "
            f"has {params:,} parameters and needs at least {needed:,} bytes to train, but "
            f"the {device.type} memory holds {have:,}: choose smaller sizes")
    return params
