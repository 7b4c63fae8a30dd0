"""ONNX export: the model as an encoder graph and a one-step decoder graph, and greedy decoding
with ONNX Runtime.

`encoder.onnx` maps source ids and the source keep-mask to `memory`; `decoder.onnx` takes
`memory`, the source mask and the target prefix `ys` and returns the log-probabilities of the
next token (and, optionally, where the last decoder layer attended in the source, or every
attention map of every layer and head). The decoder
graph recomputes the whole prefix at every step, as `greedy_decode` does by default, so it has
no cache to pass around; every batch size and length is a dynamic axis. Explained on the
[PyTorch's nn.Transformer][interop-guide] page.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .._checks import check_existing_folder, check_non_negative_int, check_positive_int
from .._io import atomic_path
from ..model.embeddings import PositionalEncoding
from ..model.encoder_decoder import EncoderDecoder
from .onnx_graphs import DecoderGraph, EncoderGraph, export_mode

if TYPE_CHECKING:
    import numpy as np

__all__ = ["export_onnx", "greedy_decode_onnx", "trim_positions"]

ENCODER_INPUTS = ("src", "src_mask")
ENCODER_OUTPUTS = ("memory",)
DECODER_INPUTS = ("memory", "src_mask", "ys")
DECODER_OUTPUTS = ("log_probs", "cross_attention")
ALL_ATTENTION_OUTPUTS = {
    "encoder": ("encoder_self_attention",),
    "decoder": ("decoder_self_attention", "decoder_cross_attention"),
}
"""The extra outputs of `export_onnx(..., attention_weights="all")`."""
ATTENTION_MODES = (False, True, "all")


def _check_export_args(model: object, out_dir: object, opset: object, dynamo: bool) -> Path:
    if not isinstance(model, EncoderDecoder):
        raise TypeError(f"model must be an EncoderDecoder (from make_model), got "
                        f"{type(model).__name__}")
    path = check_existing_folder("out_dir", out_dir)
    opset = check_positive_int("opset", opset)
    lowest = 18 if dynamo else 14
    if opset < lowest:
        raise ValueError(f"opset must be at least {lowest} for the "
                         f"{'dynamo' if dynamo else 'TorchScript'} exporter, got {opset}")
    if not model.decoder.layers:
        raise ValueError("the model's decoder has no layers")
    return path


def export_onnx(
    model: EncoderDecoder,
    out_dir: str | os.PathLike[str],
    *,
    opset: int = 18,
    attention_weights: bool | str = True,
    dynamo: bool = False,
) -> dict[str, Path]:
    """Export a model to `encoder.onnx` and `decoder.onnx` in `out_dir`.

    - `encoder.onnx`: inputs `src` `(batch, src_len)` int64 and `src_mask`
      `(batch, 1, src_len)` bool (a keep-mask: `True` = may attend); output `memory`
      `(batch, src_len, d_model)`.
    - `decoder.onnx`, one decoding step: inputs `memory`, `src_mask` and the target prefix
      `ys` `(batch, tgt_len)` int64, starting with the start symbol; outputs `log_probs`
      `(batch, tgt_vocab)`, the log-probabilities of the token after `ys`, and, with
      `attention_weights`, `cross_attention` `(batch, src_len)`: the last decoder layer's
      attention from the last position over the source, averaged over the heads.
    - With `attention_weights="all"`, every attention map as well, `N` being the number of
      layers: the encoder graph adds `encoder_self_attention` `(batch, N, h, src_len,
      src_len)`, the decoder graph `decoder_self_attention` `(batch, N, h, tgt_len, tgt_len)`
      and `decoder_cross_attention` `(batch, N, h, tgt_len, src_len)`. Row `i` is the
      attention of the decoder position that predicts the token after `ys[:, i]`; the
      subsequent mask makes it the same at every later step, so the last step's maps cover
      the whole output.

    `batch`, `src_len` and `tgt_len` are dynamic axes. The decoder recomputes the whole prefix
    at each step (no key/value cache crosses the graph boundary). The graphs use the reference
    attention ([`attention`][vanilla_transformer.model.attention.attention]) and LayerNorm in
    eval mode, so they hold only standard ONNX operators. The model itself is left as it was.

    The default exporter is PyTorch's TorchScript-based one (`dynamo=False`): in our runs with
    torch 2.13 on a CPU it exported the test model in about a second, where the
    `torch.export`-based one (`dynamo=True`, which needs `onnxscript` and an opset of at least
    18) took 15 to 25 seconds. Both give the same graphs' outputs to within float rounding.

    Args:
        model: the model to export.
        out_dir: an existing folder; the two files are written (or replaced) there, each
            atomically (`vanilla_transformer._io.atomic_path`).
        opset: the ONNX opset version.
        attention_weights: `True` adds the `cross_attention` output to the decoder graph;
            `"all"` adds every attention map too (see above); `False` neither.
        dynamo: use `torch.onnx.export(..., dynamo=True)` instead of the TorchScript exporter.

    Returns:
        `{"encoder": path, "decoder": path}`.

    Raises:
        TypeError: if `model` is not an `EncoderDecoder`, `out_dir` is not a path or `opset`
            is not an int.
        ValueError: if `out_dir` is not an existing folder or `opset` is too low.

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.interop import export_onnx
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2)
        >>> with tempfile.TemporaryDirectory() as out_dir:
        ...     paths = export_onnx(model, out_dir)
        ...     sorted(p.name for p in paths.values())
        ['decoder.onnx', 'encoder.onnx']
    """
    path = _check_export_args(model, out_dir, opset, dynamo)
    if not isinstance(attention_weights, (bool, str)) or attention_weights not in ATTENTION_MODES:
        raise TypeError(f"attention_weights must be True, False or 'all', got "
                        f"{attention_weights!r}")
    weight = next(model.parameters())
    max_len = min((m.max_len for m in model.modules() if isinstance(m, PositionalEncoding)),
                  default=8)
    # example inputs: distinct sizes above 1, so that no axis is specialised to a constant
    batch, src_len, tgt_len = 2, min(5, max_len), min(3, max_len)
    src = torch.ones(batch, src_len, dtype=torch.long, device=weight.device)
    src_mask = torch.ones(batch, 1, src_len, dtype=torch.bool, device=weight.device)
    ys = torch.ones(batch, tgt_len, dtype=torch.long, device=weight.device)
    every = attention_weights == "all"
    outputs: tuple[str, ...] = DECODER_OUTPUTS if attention_weights else DECODER_OUTPUTS[:1]
    encoder_outputs: tuple[str, ...] = ENCODER_OUTPUTS
    if every:
        outputs = outputs + ALL_ATTENTION_OUTPUTS["decoder"]
        encoder_outputs = encoder_outputs + ALL_ATTENTION_OUTPUTS["encoder"]
    axes = {"src": {0: "batch", 1: "src_len"}, "src_mask": {0: "batch", 2: "src_len"},
            "memory": {0: "batch", 1: "src_len"}, "ys": {0: "batch", 1: "tgt_len"},
            "log_probs": {0: "batch"}, "cross_attention": {0: "batch", 1: "src_len"},
            "encoder_self_attention": {0: "batch", 3: "src_len", 4: "src_len"},
            "decoder_self_attention": {0: "batch", 3: "tgt_len", 4: "tgt_len"},
            "decoder_cross_attention": {0: "batch", 3: "tgt_len", 4: "src_len"}}
    paths = {"encoder": path / "encoder.onnx", "decoder": path / "decoder.onnx"}
    with export_mode(model, keep_all=every), torch.no_grad(), warnings.catch_warnings():
        # expected and harmless here: the TorchScript exporter's deprecation notices, the
        # tracer's note that d_k becomes a constant, torch.export's notes on `.attn`, on axes
        # that share a name and on its own deprecations
        warnings.filterwarnings("ignore", message="You are using the legacy TorchScript")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.onnx")
        warnings.filterwarnings("ignore", message="# The axis name")
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)`")
        # torch's stubs do not list torch.jit.TracerWarning, which exists at run time
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # type: ignore[attr-defined]
        warnings.filterwarnings("ignore", message="The tensor attribute")
        encoder = EncoderGraph(model, attention_weights).eval()
        decoder = DecoderGraph(model, attention_weights).eval()
        memory = encoder(src, src_mask)
        memory = memory[0] if every else memory
        for graph, args, inputs, names, out in (
            (encoder, (src, src_mask), ENCODER_INPUTS, encoder_outputs, paths["encoder"]),
            (decoder, (memory, src_mask, ys), DECODER_INPUTS, outputs, paths["decoder"]),
        ):
            _export(graph, args, out, inputs, names, axes, opset, dynamo)
    return paths


def _export(
    graph: nn.Module,
    args: tuple[torch.Tensor, ...],
    out: Path,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    axes: dict[str, dict[int, str]],
    opset: int,
    dynamo: bool,
) -> None:
    options: dict[str, Any] = dict(input_names=list(inputs), output_names=list(outputs),
                                   opset_version=opset, dynamo=dynamo)
    if dynamo:
        dims = {name: torch.export.Dim(name) for name in ("batch", "src_len", "tgt_len")}
        options.update(external_data=False, verbose=False, dynamic_shapes={
            name: {axis: dims[dim] for axis, dim in axes[name].items()} for name in inputs})
    else:
        options.update(dynamic_axes={name: axes[name] for name in (*inputs, *outputs)})
    with atomic_path(out) as tmp:  # a failed export leaves the previous file as it was
        torch.onnx.export(graph, args, str(tmp), **options)


def _session(session: Any) -> Any:
    """An ONNX Runtime session: `session` itself, or one opened from a path on the CPU."""
    if isinstance(session, (str, os.PathLike)):
        import onnxruntime  # optional dependency: only needed here

        return onnxruntime.InferenceSession(str(session), providers=["CPUExecutionProvider"])
    if not callable(getattr(session, "run", None)):
        raise TypeError(f"expected an onnxruntime.InferenceSession or the path of an .onnx file, "
                        f"got {type(session).__name__}")
    return session


def greedy_decode_onnx(
    encoder_session: Any,
    decoder_session: Any,
    src: Any,
    src_mask: Any,
    max_len: int,
    start_symbol: int,
    end_symbol: int | None = None,
    *,
    pad_symbol: int | None = None,
) -> np.ndarray:
    """Greedy decoding with the graphs of [`export_onnx`][vanilla_transformer.interop.onnx.export_onnx].

    The same loop as [`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode]
    (without a cache), in NumPy and ONNX Runtime: encode once, then run the decoder graph
    `max_len - 1` times on the growing prefix and append the most likely token.

    Args:
        encoder_session: an `onnxruntime.InferenceSession` of `encoder.onnx`, or its path
            (opened on the CPU).
        decoder_session: the same for `decoder.onnx`.
        src: source ids `(batch, src_len)`, an integer array or CPU tensor.
        src_mask: keep-mask `(batch or 1, 1, src_len)` or `(batch, src_len)`, `True` or
            non-zero = may attend; `None` attends everywhere.
        max_len: length of the output, the start symbol included.
        start_symbol: the first decoder input.
        end_symbol: if given, a sequence stops once it produces this token, and decoding stops
            early once every sequence has.
        pad_symbol: what to write after a sequence's end symbol; defaults to `end_symbol`.

    Returns:
        Token ids, an int64 array `(batch, out_len)` with `out_len <= max_len`, starting with
        `start_symbol`.

    Raises:
        ValueError: if `src` is not a non-empty `(batch, src_len)` array, `src_mask` has the
            wrong shape, or a size or symbol is out of range.
        TypeError: if `src` is not integer, a size or symbol is not an int, or a session is
            neither a session nor a path.

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.interop import export_onnx, greedy_decode_onnx
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
        >>> src = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 0]])
        >>> with tempfile.TemporaryDirectory() as out_dir:
        ...     paths = export_onnx(model, out_dir)
        ...     ys = greedy_decode_onnx(paths["encoder"], paths["decoder"], src, src != 0, 6, 1)
        >>> ys.shape, bool((ys == greedy_decode(model, src, src != 0, 6, 1).numpy()).all())
        ((2, 6), True)
    """
    import numpy as np  # optional dependency (the [onnx] extra brings it): only needed here

    src = np.asarray(src)
    if src.ndim != 2 or src.size == 0:
        raise ValueError(f"src must be a non-empty (batch, src_len) array, got shape {src.shape}")
    if not np.issubdtype(src.dtype, np.integer):
        raise TypeError(f"src must hold integer token ids, got dtype {src.dtype}")
    batch, src_len = src.shape
    if src_mask is None:
        src_mask = np.ones((batch, 1, src_len), dtype=bool)
    src_mask = np.asarray(src_mask)
    if src_mask.ndim == 2:
        src_mask = src_mask[:, None, :]  # (batch, src_len) -> (batch, 1, src_len)
    if src_mask.ndim != 3 or src_mask.shape[0] not in (1, batch) or src_mask.shape[1:] != (
            1, src_len):
        raise ValueError(f"src_mask must have shape (batch or 1, 1, src_len) or (batch, src_len) "
                         f"with batch={batch}, src_len={src_len}, got {src_mask.shape}")
    src_mask = np.ascontiguousarray(np.broadcast_to(src_mask != 0, (batch, 1, src_len)))
    check_positive_int("max_len", max_len)
    check_non_negative_int("start_symbol", start_symbol)
    for name, symbol in (("end_symbol", end_symbol), ("pad_symbol", pad_symbol)):
        if symbol is not None:
            check_non_negative_int(name, symbol)
    encoder, decoder = _session(encoder_session), _session(decoder_session)

    (memory,) = encoder.run(["memory"], {"src": src.astype(np.int64), "src_mask": src_mask})
    ys = np.full((batch, 1), start_symbol, dtype=np.int64)
    done = np.zeros(batch, dtype=bool)
    fill = pad_symbol if pad_symbol is not None else end_symbol
    for _ in range(max_len - 1):
        (log_probs,) = decoder.run(["log_probs"],
                                   {"memory": memory, "src_mask": src_mask, "ys": ys})
        next_word = log_probs.argmax(axis=-1)  # (batch,)
        if end_symbol is not None:
            next_word = np.where(done, fill, next_word)
            done = done | (next_word == end_symbol)
        ys = np.concatenate([ys, next_word[:, None].astype(np.int64)], axis=1)
        if end_symbol is not None and done.all():
            break
    return ys


def trim_positions(model: EncoderDecoder, max_len: int) -> EncoderDecoder:
    """A copy of `model` whose positional table holds only `max_len` positions.

    The sinusoids are recomputed, so nothing is lost but the positions beyond `max_len`; an
    exported graph that needs no more is that much smaller.

    Args:
        model: a model built by `make_model` (it has a `config`).
        max_len: the longest sequence the copy accepts, at most the model's.

    Returns:
        The new model, in eval mode, with the same weights.

    Raises:
        ValueError: if `max_len` is not positive or exceeds the model's table.

    Examples:
        >>> model = make_model(7, 7, N=1, d_model=16, d_ff=32, h=2)
        >>> trim_positions(model, 64).src_embed[1].pe.shape
        torch.Size([1, 64, 16])
    """
    from ..model.encoder_decoder import make_model_from_config

    check_positive_int("max_len", max_len)
    config = getattr(model, "config", None)
    if config is None:
        raise ValueError("model has no config; build it with make_model")
    if max_len > config.max_len:
        raise ValueError(f"max_len={max_len} exceeds the model's positional table of "
                         f"{config.max_len} positions")
    trimmed = make_model_from_config(config.replace(max_len=max_len))
    weights = {k: v for k, v in model.state_dict().items() if not k.endswith(".pe")}
    trimmed.load_state_dict(weights, strict=False)  # only the recomputed tables are missing
    return trimmed.eval()
