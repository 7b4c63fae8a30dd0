"""Checkpoints: a model saved with its `ModelConfig`, so it can be rebuilt without its code.

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

__all__ = ['CHECKPOINT_FORMAT', 'save_checkpoint', 'load_checkpoint']


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
        "version": 1,
        "config": config.to_dict(),
        "state_dict": model.state_dict(),
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
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"{name} is not a checkpoint written by save_checkpoint: torch.load "
                         f"failed ({type(error).__name__}: {reason})") from error
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{name} is not a checkpoint written by save_checkpoint")
    missing = [k for k in ("config", "state_dict", "metadata") if k not in data]
    if missing:
        raise ValueError(f"{name} is an incomplete checkpoint: it lacks {', '.join(missing)}")
    model = make_model_from_config(ModelConfig.from_dict(data["config"]))
    try:
        model.load_state_dict(data["state_dict"])
    except RuntimeError as error:
        reason = " ".join(str(error).split())[:300]
        raise ValueError(f"{name}: the saved weights do not fit the saved configuration "
                         f"({reason})") from error
    return model.eval(), data["metadata"]
