r"""Memory estimates in bytes: weights, training state, activations and the key/value cache.

With $P$ parameters and $p$ bytes per element (4 for `float32`, 2 for `bfloat16`):

- **weights** $Pp$, plus the two positional-encoding tables, $2\,\mathrm{max\_len}\,d\,p$
  (buffers follow the model's dtype);
- **gradients** $Pp$, one per parameter;
- **Adam state** $2Pp$: `torch.optim.Adam` keeps `exp_avg` and `exp_avg_sq` for every
  parameter, in the parameter's dtype;
- **key/value cache** of incremental decoding (see
  [`Decoder.init_cache`][vanilla_transformer.model.decoder.Decoder.init_cache]): after $t$ decoder
  positions, the self-attention caches hold $2NBtd$ elements (keys and values, growing by one
  position per generated token) and the cross-attention caches $2NBSd$ (computed once from the
  $S$ source positions);
- **activations** kept for the backward pass: an estimate, described below.

The activation estimate adapts section 4.1 of Korthikanti et al. (2022), "Reducing Activation
Recomputation in Large Transformer Models" (arXiv:2205.05198), to this encoder-decoder. That
paper counts, for one layer of a decoder-only model without recomputation, the tensors that the
backward pass keeps: $sbh(34 + 5as/h)$ bytes for 16-bit activations and 1-byte dropout masks.
Counted the same way here, for a sublayer with $L$ query positions, $L'$ key positions and $a$
heads, in elements of $p$ bytes:

| kept for the backward pass | elements |
| --- | --- |
| LayerNorm: its input (torch flavour) or its normalised input (annotated flavour) | $BLd$ |
| attention: projection input, $Q$, $K$, $V$, output-projection input | $5BLd$ (self); $3BLd + 2BL'd$ (cross: its key/value input is the encoder output, counted once) |
| attention weights: softmax output; with dropout also the mask and the dropped weights | $BaLL'$ each |
| feed-forward: $W_1$ input; ReLU output; with dropout also the mask and the dropped output | $BLd$; $BLd_{ff}$ each |
| residual dropout mask | $BLd$ |
| fused projections (only for inputs of at least $d$ rows, $BL \ge d$): the concatenated copy $[W^Q; W^K; W^V]$ of each self-attention, $[W^K; W^V]$ of each cross-attention | $3d^2$, $2d^2$ |

plus the dropout masks after the positional encoding, the final LayerNorm inputs, the encoder
output (the cross-attention key/value input, one tensor shared by every decoder layer) and the
generator's input and log-probabilities, $BT(d + V_{tgt})$. A dropout mask takes `mask_bytes`
per element: 1 with the fused kernel used on GPUs (as in the paper), $p$ on CPU. With
`dropout == 0` there are no masks and no dropped copies. Left out: token ids, attention masks and
LayerNorm statistics, all $O(BL)$. The estimate assumes that the attention weights are
materialised, as on the reference path and in PyTorch's math kernel; fused attention kernels
keep only $O(BaL)$ of them. On CPU, for tiny models, the estimate is within about 1% of the bytes
that autograd actually keeps on the reference path (a test measures them).

Explained on the *Parameter calculator* guide page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .._checks import check_positive_int
from ..model.config import ModelConfig
from .parameters import Component, _describe, _format_table, parameter_count_for

__all__ = ['dtype_bytes', 'format_bytes', 'MemoryEstimate', 'memory_estimate_for', 'memory_estimate']

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
        ValueError: for an unknown name. TypeError: for anything else.

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
        lines = [f"memory of {_describe(self.config)}",
                 f"  in {self.dtype} ({self.bytes_per_element} bytes per element)"]
        if self.src_len is not None:
            lines[-1] += f", batch={self.batch}, src_len={self.src_len}, tgt_len={self.tgt_len}"
        lines.append("")
        for name, n in self.summary().items():
            lines.append(f"{_LABELS[name].ljust(34)} {n:>17,} B {format_bytes(n):>11}")
        if self.activation_components:
            lines += ["", "activations (estimate; Korthikanti et al. 2022, adapted):",
                      _format_table(self.activation_components, "bytes", self.activations)]
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
    kept = p if config.dropout > 0 else 0  # dropout's output is a new tensor
    ln = p  # per LayerNorm input element: x (torch) or the normalised x (annotated)

    def probs(q_len: int, k_len: int) -> int:  # softmax output, dropout mask and output
        return B * a * q_len * k_len * (p + m + kept)

    def self_attention(L: int) -> int:  # LN, input, Q, K, V, W^O input, residual mask
        return B * L * d * (ln + 5 * p + m) + probs(L, L)

    def feed_forward(L: int) -> int:  # LN, W_1 input, residual mask; ReLU, mask, W_2 input
        return B * L * d * (ln + p + m) + B * L * d_ff * (p + m + kept)

    return (
        Component("embedding_dropout", B * (S + T) * d * m, 1, "masks"),
        Component("encoder_self_attention", self_attention(S), n),
        Component("encoder_feed_forward", feed_forward(S), n),
        Component("encoder_output", B * S * d * p, 1, "read by every cross-attention"),
        Component("decoder_self_attention", self_attention(T), n),
        Component("cross_attention",
                  B * T * d * (ln + 3 * p + m) + 2 * B * S * d * p + probs(T, S), n),
        Component("decoder_feed_forward", feed_forward(T), n),
        Component("final_norms", B * (S + T) * d * ln, 1 if config.has_final_norm else 0),
        Component("generator", B * T * (d + config.tgt_vocab) * p, 1, "input, log-probs"),
        # attention fuses its projections only for inputs of at least d_model rows
        Component("fused_qkv_weights", 3 * d * d * p, n * ((B * S >= d) + (B * T >= d)),
                  "self-attention [W^Q; W^K; W^V]"),
        Component("fused_kv_weights", 2 * d * d * p, n * (B * S >= d), "cross-attention [W^K; W^V]"),
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
    N: int = 6,
    d_model: int = 512,
    d_ff: int = 2048,
    h: int = 8,
    dropout: float = 0.1,
    *,
    batch: int = 1,
    src_len: int | None = None,
    tgt_len: int | None = None,
    dtype: torch.dtype | str = torch.float32,
    mask_bytes: int = 1,
    tie_weights: bool = False,
    norm_first: bool = True,
    layer_norm: str = "annotated",
    final_norm: bool | None = None,
    generator_bias: bool = True,
    max_len: int = 5000,
) -> MemoryEstimate:
    """Memory estimate for the model `make_model` builds with the same arguments.

    Weights, gradients and Adam state are exact for the given dtype; the key/value cache is
    exact for [`Decoder.init_cache`][vanilla_transformer.model.decoder.Decoder.init_cache]; the
    activations are an estimate (see the module notes for what is counted and the source of the
    formula). Heads and dropout matter only to the activations.

    Args:
        src_vocab: source vocabulary size.
        tgt_vocab: target vocabulary size.
        N: layers per stack.
        d_model: model width.
        d_ff: feed-forward hidden width.
        h: heads (the attention weights are stored per head).
        dropout: with `dropout > 0` the dropout masks and outputs are counted.
        batch: sentence pairs per batch.
        src_len: source length (activations and caches need both lengths).
        tgt_len: target length.
        dtype: a `torch.dtype` or a name (`"float32"`, `"bf16"`, `"fp16"`, ...).
        mask_bytes: bytes per dropout-mask element (1 on GPUs; the dtype's size on CPU).
        tie_weights: see `make_model`.
        norm_first: see `make_model`.
        layer_norm: see `make_model`.
        final_norm: see `make_model`.
        generator_bias: see `make_model`.
        max_len: see `make_model` (sets the buffer size).

    Returns:
        A [`MemoryEstimate`][vanilla_transformer.analysis.memory.MemoryEstimate].

    Raises:
        ValueError: for the same bad arguments as `make_model`, a non-positive batch or length,
            or an unknown dtype name.
        TypeError: for a non-integer size or a dtype of the wrong type.

    Examples:
        >>> m = memory_estimate(11, 11, N=2)
        >>> m.training_total == 4 * m.weights + m.buffers  # weights, grads, two Adam states
        True
    """
    config = ModelConfig(
        src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout,
        tie_weights=tie_weights, norm_first=norm_first, layer_norm=layer_norm,
        final_norm=final_norm, generator_bias=generator_bias, max_len=max_len,
    )
    return memory_estimate_for(config, batch=batch, src_len=src_len, tgt_len=tgt_len,
                               dtype=dtype, mask_bytes=mask_bytes)
