"""Checkpoints: a model saved with its `ModelConfig`, so it can be rebuilt without its code.

The sinusoid table of the positional encoding (section 3.5) is a buffer that the
configuration recomputes, and the largest tensor of a small model: it is not saved. Files
written before this rule, which hold it, still load.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import collections
import os
from typing import IO, Any

import torch
from torch import nn

from .._io import atomic_torch_save
from ..model.config import ModelConfig
from ..model.encoder_decoder import make_model_from_config

__all__ = [
    "CHECKPOINT_FORMAT",
    "save_checkpoint",
    "load_checkpoint",
    "model_state",
    "load_model_state",
    "check_weights_fit_config",
]


CHECKPOINT_FORMAT = "vanilla-transformer-checkpoint"
"""The `format` field of files written by `save_checkpoint`."""

# what torch.load(..., weights_only=True) reads back
_LEAVES = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)
_CONTAINERS = (list, tuple, set, dict, collections.OrderedDict, torch.Size)


def _check_plain(value: Any, where: str) -> None:
    """Raise a `TypeError` naming the first value `weights_only` loading would refuse."""
    if isinstance(value, torch.Tensor) or type(value) in _LEAVES:
        return
    if type(value) not in _CONTAINERS:
        hint = " (store str(path) for a path)" if isinstance(value, os.PathLike) else ""
        raise TypeError(
            f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which "
            f"torch.load(..., weights_only=True) cannot read back{hint}; checkpoint metadata "
            "must be plain data: None, bool, int, float, str, bytes, tensors, and lists, "
            "tuples, sets and dicts of them"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _check_plain(key, f"{where} key {key!r}")
            _check_plain(item, f"{where}[{key!r}]")
    else:
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")


def _recomputed(name: str) -> bool:
    """Whether a `state_dict` entry is the positional encoding's sinusoid table."""
    return name == "pe" or name.endswith(".pe")


def model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's `state_dict` without the buffers its configuration recomputes.

    Examples:
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
        >>> sorted(set(model.state_dict()) - set(model_state(model)))
        ['src_embed.1.pe', 'tgt_embed.1.pe']
    """
    return {k: v for k, v in model.state_dict().items() if not _recomputed(k)}


def load_model_state(
    model: nn.Module, state: dict[str, torch.Tensor], name: str = "the state"
) -> None:
    """Load `state` into `model`, recomputed buffers optional (old files hold them).

    Raises:
        ValueError: if a parameter is missing, unexpected, or of the wrong shape, naming it.
    """
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as error:
        reason = " ".join(str(error).split())[:300]
        raise ValueError(f"{name}: the saved weights do not fit the saved configuration "
                         f"({reason})") from error
    missing = [k for k in missing if not _recomputed(k)]
    if missing or unexpected:
        raise ValueError(f"{name}: the saved weights do not fit the saved configuration "
                         f"(missing {missing[:3]}, unexpected {list(unexpected)[:3]})")


def _layer_count(state: dict[str, Any], stack: str) -> int:
    prefix = f"{stack}.layers."
    indices = {int(k[len(prefix):].split(".", 1)[0]) for k in state if k.startswith(prefix)}
    return max(indices) + 1 if indices else 0


def check_weights_fit_config(
    config: ModelConfig, state: dict[str, Any], name: str = "the file"
) -> None:
    """Check the sizes a configuration claims against the weights' shapes, before building it.

    A configuration is only a few numbers, and building it allocates memory in proportion to
    them: a file saying `N=10000` next to the weights of two layers must fail at once, not after
    building ten thousand layers.

    Args:
        config: the saved configuration.
        state: the saved `state_dict`.
        name: the file, for the message.

    Raises:
        ValueError: naming the first size that does not match.

    Examples:
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
        >>> check_weights_fit_config(model.config.replace(N=10_000), model.state_dict(), "m.pt")
        Traceback (most recent call last):
        ...
        ValueError: m.pt: the saved weights do not fit the saved configuration: it says
        N=10000 but the weights hold 1 encoder layers
    """
    def shape(key: str) -> tuple[int, ...] | None:
        tensor = state.get(key)
        return tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else None

    for stack in ("encoder", "decoder"):
        layers = _layer_count(state, stack)
        if layers != config.N:
            raise ValueError(f"{name}: the saved weights do not fit the saved configuration: "
                             f"it says N={config.N} but the weights hold {layers} {stack} "
                             "layers")
    claims = [
        ("src_embed.0.lut.weight", (config.src_vocab, config.d_model), "src_vocab, d_model"),
        ("tgt_embed.0.lut.weight", (config.tgt_vocab, config.d_model), "tgt_vocab, d_model"),
        ("encoder.layers.0.feed_forward.w_1.weight", (config.d_ff, config.d_model),
         "d_ff, d_model"),
        ("src_embed.1.pe", (1, config.max_len, config.d_model), "1, max_len, d_model"),
    ]
    for key, expected, fields in claims:
        found = shape(key)
        if found is not None and found != expected:
            raise ValueError(f"{name}: the saved weights do not fit the saved configuration: "
                             f"it says ({fields}) = {expected} but {key} has shape {found}")


def save_checkpoint(
    path: str | os.PathLike[str] | IO[bytes], model: nn.Module, **metadata: Any
) -> None:
    """Save a model built by `make_model` with its configuration, so it can be rebuilt later.

    The file is written with `torch.save` and holds plain data only (the configuration as a
    dict, the `state_dict`, and `metadata`), so
    [`load_checkpoint`][vanilla_transformer.training.checkpoints.load_checkpoint] can read it with
    `torch.load(..., weights_only=True)`; metadata that could not be read back is refused
    before anything is written. The file is written whole or not at all: it goes to a
    temporary file beside `path` that then replaces `path`, so a save that is killed halfway
    leaves the previous checkpoint intact.

    Args:
        path: the file to write (its folder must exist), or a binary file object, which is
            written as it is.
        model: a model with a `config` (one built by `make_model` or `make_model_from_config`).
        **metadata: extra plain values to store (numbers, strings, lists, dicts, tensors).

    Raises:
        ValueError: if `model` has no `config`.
        TypeError: if a metadata value is not plain data (a `pathlib.Path`, say: store
            `str(path)`).
        FileNotFoundError: if the folder of `path` does not exist.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.training import load_checkpoint, save_checkpoint
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
        >>> path = os.path.join(tempfile.mkdtemp(), "model.pt")
        >>> save_checkpoint(path, model, steps=10)
        >>> again, meta = load_checkpoint(path)
        >>> meta, again.config == model.config
        ({'steps': 10}, True)
    """
    config = getattr(model, "config", None)
    if config is None:
        raise ValueError(
            "model has no config to rebuild it from; build it with make_model or "
            "make_model_from_config"
        )
    for key, value in metadata.items():
        _check_plain(value, f"metadata {key!r}")
    data = {
        "format": CHECKPOINT_FORMAT,
        "version": 2,
        "config": config.to_dict(),
        "state_dict": model_state(model),
        "metadata": dict(metadata),
    }
    if hasattr(path, "write"):  # a file object: its owner decides how it is written
        torch.save(data, path)
    else:
        atomic_torch_save(data, path)


def load_checkpoint(
    path: str | os.PathLike[str], map_location: str | torch.device = "cpu"
) -> tuple[nn.Module, dict[str, Any]]:
    """Rebuild a model saved by [`save_checkpoint`][vanilla_transformer.training.checkpoints.save_checkpoint].

    Args:
        path: the file to read.
        map_location: where to load the tensors.

    Returns:
        `(model, metadata)`: the model in eval mode with the saved weights, and the saved
        metadata dict.

    Raises:
        ValueError: if the file is not such a checkpoint (another file, a truncated or
            corrupt one, or one whose weights do not fit its configuration).
        FileNotFoundError: if the file does not exist.

    Examples:
        See [`save_checkpoint`][vanilla_transformer.training.checkpoints.save_checkpoint].
    """
    name = repr(os.fspath(path))
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except OSError:
        raise
    except Exception as error:  # pickle, zip and format errors of a file that is no checkpoint
        # in full: torch's own message warns against loading an untrusted file with
        # weights_only=False, which can run code
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"{name} is not a checkpoint written by save_checkpoint: torch.load "
                         f"failed ({type(error).__name__}: {reason})") from error
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{name} is not a checkpoint written by save_checkpoint")
    missing = [k for k in ("config", "state_dict", "metadata") if k not in data]
    if missing:
        raise ValueError(f"{name} is an incomplete checkpoint: it lacks {', '.join(missing)}")
    if not isinstance(data["config"], dict) or not isinstance(data["state_dict"], dict):
        raise ValueError(f"{name} is not a checkpoint written by save_checkpoint: its config "
                         "or state_dict is not a dict")
    config = ModelConfig.from_dict(data["config"])
    check_weights_fit_config(config, data["state_dict"], name)
    model = make_model_from_config(config)
    load_model_state(model, data["state_dict"], name)
    return model.eval(), data["metadata"]
