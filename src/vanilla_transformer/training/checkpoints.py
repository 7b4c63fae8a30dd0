"""Checkpoints: a model saved with its `ModelConfig`, so it can be rebuilt without its code.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from ..model.config import ModelConfig
from ..model.encoder_decoder import make_model_from_config

__all__ = ['CHECKPOINT_FORMAT', 'save_checkpoint', 'load_checkpoint']


CHECKPOINT_FORMAT = "vanilla-transformer-checkpoint"
"""The `format` field of files written by `save_checkpoint`."""


def save_checkpoint(path: str | os.PathLike[str], model: nn.Module, **metadata: Any) -> None:
    """Save a model built by `make_model` with its configuration, so it can be rebuilt later.

    The file is written with `torch.save` and holds plain data only (the configuration as a
    dict, the `state_dict`, and `metadata`), so
    [`load_checkpoint`][vanilla_transformer.training.checkpoints.load_checkpoint] can read it with
    `torch.load(..., weights_only=True)`.

    Args:
        path: the file to write.
        model: a model with a `config` (one built by `make_model` or `make_model_from_config`).
        **metadata: extra plain values to store (numbers, strings, lists, dicts, tensors).

    Raises:
        ValueError: if `model` has no `config`.

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
    torch.save(
        {
            "format": CHECKPOINT_FORMAT,
            "version": 1,
            "config": config.to_dict(),
            "state_dict": model.state_dict(),
            "metadata": dict(metadata),
        },
        path,
    )


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
        ValueError: if the file is not such a checkpoint.

    Examples:
        See [`save_checkpoint`][vanilla_transformer.training.checkpoints.save_checkpoint].
    """
    data = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a checkpoint written by save_checkpoint")
    model = make_model_from_config(ModelConfig.from_dict(data["config"]))
    model.load_state_dict(data["state_dict"])
    return model.eval(), data["metadata"]
