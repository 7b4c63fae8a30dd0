"""Every file a training run writes: its names, its formats, and how each is read back.

A model file (`save_checkpoint`) holds a model with its `ModelConfig`; a training checkpoint
(`save_train_state`) all a run needs to continue. Both are plain data, written atomically and
read with `torch.load(weights_only=True)`; checkpoints are ordered by the step they hold.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import collections
import errno
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import torch
from torch import nn

from .._io import LOCK_FILE, naming, save_atomically, write_json
from ..config import ModelConfig
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from ..model.encoder_decoder import check_weights_fit_config as check_weights_fit_config
from ..model.encoder_decoder import load_model_state as load_model_state
from ..model.encoder_decoder import model_state as model_state

__all__ = [
    "MODEL_FILE", "TOKENIZER_FILE", "CONFIG_FILE", "METRICS_FILE", "CHECKPOINTS", "LOCK_FILE",
    "BEST_FILE", "IDS_FOLDER", "STAGED_IDS", "TENSORBOARD_FOLDER", "TRAIN_STATE_FORMAT",
    "CHECKPOINT_FORMAT", "AVERAGE_SPAN", "naming", "save_atomically", "write_json",
    "checkpoint_paths", "step_of", "save_train_state", "load_train_state", "averaging_window",
    "average_checkpoints", "save_checkpoint", "load_checkpoint", "model_state",
    "load_model_state", "check_weights_fit_config",
]

MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE, METRICS_FILE, CHECKPOINTS = (
    "model.pt", "tokenizer.json", "config.json", "metrics.jsonl", "checkpoints")
"""A run folder's final model, tokenizer, settings, log and checkpoints' folder (its lock is
`_io`'s `LOCK_FILE`)."""

BEST_FILE = "best.pt"
"""In `CHECKPOINTS/`: the checkpoint with the best validation score (with `keep_best`)."""

IDS_FOLDER, STAGED_IDS = "ids", ".ids-staged"
"""Where a run fed a TSV file keeps its token ids (reused on resume), and where a run that
replaces another (`overwrite`) tokenises its data until it is accepted."""

TENSORBOARD_FOLDER = "tensorboard"
"""Where `tensorboard=True` writes its event files."""

CHECKPOINT_FORMAT = "vanilla-transformer-checkpoint"
"""The `format` field of files written by `save_checkpoint`."""

TRAIN_STATE_FORMAT = "vanilla-transformer-train-state"
"""The `format` field of the training checkpoints in `RUN/checkpoints/`."""

AVERAGE_SPAN = 0.2
"""The last part of a run whose checkpoints `model.pt` averages: a fifth of its steps. Averaging
helps once the weights move little, as at the end of the paper's long runs; earlier in a short
run it mixes in a weaker model."""

_STEP_NAME = re.compile(r"step-(\d{1,30})\.pt")


def step_of(path: Path) -> int:
    """The step a checkpoint's name says it holds (`step-0000042.pt`: 42)."""
    match = _STEP_NAME.fullmatch(path.name)
    if match is None:
        raise ValueError(f"{str(path)!r} is not named as a training checkpoint (step-N.pt)")
    return int(match.group(1))


def checkpoint_paths(out: str | os.PathLike[str]) -> list[Path]:
    """The training checkpoints of a run folder, in the order of their steps."""
    folder = Path(os.fspath(out)) / CHECKPOINTS
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if _STEP_NAME.fullmatch(p.name)), key=step_of)

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
    """Save a model built by `make_model` with its configuration and `metadata` (plain data),
    for `load_checkpoint`. A path is written atomically; a file object as it is.

    Raises:
        ValueError: if `model` has no `config`. TypeError: if a metadata value is not plain
            data, before anything is written. OSError: `ENOSPC` naming the file on a full disk.

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
        save_atomically(path, lambda f: torch.save(data, f))


def _read(path: str | os.PathLike[str], form: str, what: str, keys: tuple[str, ...],
          map_location: str | torch.device = "cpu") -> tuple[dict[str, Any], ModelConfig]:
    """The file of format `form` at `path` and its `ModelConfig`, once it holds the dicts
    `keys` (configuration and weights first) and the weights fit the configuration."""
    name = repr(os.fspath(path))
    data = _load(path, f"{name} is not {what}", map_location)
    if not isinstance(data, dict) or data.get("format") != form:
        raise ValueError(f"{name} is not {what}")
    missing = [k for k in keys if not isinstance(data.get(k), dict)]
    if missing:
        raise ValueError(f"{name} is not {what}: its {', '.join(missing)} is missing or not a "
                         "dict")
    try:
        config = ModelConfig.from_dict(data[keys[0]])
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} holds a bad model configuration: {error}") from None
    check_weights_fit_config(config, data[keys[1]], name)
    return data, config


def load_checkpoint(
    path: str | os.PathLike[str], map_location: str | torch.device = "cpu"
) -> tuple[EncoderDecoder, dict[str, Any]]:
    """Rebuild a model saved by `save_checkpoint`: `(model, metadata)`, the model in eval mode
    on `map_location`.

    Raises:
        ValueError: if the file is not such a checkpoint, is corrupt, or its weights do not fit
            its configuration. FileNotFoundError: if it does not exist.
    """
    data, config = _read(path, CHECKPOINT_FORMAT, "a checkpoint written by save_checkpoint",
                         ("config", "state_dict", "metadata"), map_location)
    model = make_model_from_config(config)
    load_model_state(model, data["state_dict"], repr(os.fspath(path)))
    return model.eval(), data["metadata"]


def save_train_state(path: Path, **state: Any) -> None:
    """Write a training checkpoint atomically and read it back: one that does not load is an
    `OSError` naming it now, not on resume."""
    save_atomically(path, lambda f: torch.save(
        {"format": TRAIN_STATE_FORMAT, "version": 2, **state}, f))
    try:
        load_train_state(path)  # its step is checked against its name
    except ValueError as error:
        path.unlink(missing_ok=True)  # the previous checkpoints stay the newest
        raise OSError(errno.EIO, f"the checkpoint just written does not read back, and was "
                      f"removed ({' '.join(str(error).split())[:200]})", str(path)) from None


def load_train_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a training checkpoint; a `ValueError` if it is none, holds another step than its
    name says, or its weights do not fit its configuration."""
    state, _ = _read(path, TRAIN_STATE_FORMAT, "a training checkpoint", ("config", "model"))
    step, name = state.get("step"), Path(os.fspath(path)).name
    if _STEP_NAME.fullmatch(name) and step != step_of(Path(name)):
        raise ValueError(f"{os.fspath(path)}: holds step {step!r}, not the step its name says")
    return state


def averaging_window(steps: Sequence[int], average: int) -> list[int]:
    """The steps `model.pt` averages: of the last `average`, those in the run's last
    `AVERAGE_SPAN`.

    Examples:
        >>> averaging_window([500, 877], average=5)  # step 500 is too early to help
        [877]
        >>> averaging_window([800, 900, 1000, 1100, 1200], average=5)
        [1000, 1100, 1200]
    """
    if not steps:
        return []
    kept = sorted(steps)[-average:]
    return [step for step in kept if step >= kept[-1] * (1 - AVERAGE_SPAN)]


def average_checkpoints(paths: Sequence[str | os.PathLike[str]]) -> dict[str, torch.Tensor]:
    r"""The element-wise mean of the models in `paths` (section 6.1), training checkpoints or
    `save_checkpoint` files, in float64 (other tensors the last file's). A `ValueError` if
    `paths` is empty or the files hold different parameters.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.training.checkpoints import average_checkpoints
        >>> folder, paths = tempfile.mkdtemp(), []
        >>> for value in (1.0, 3.0):
        ...     paths.append(os.path.join(folder, f"{value}.pt"))
        ...     torch.save({"state_dict": {"w": torch.full((2,), value)}}, paths[-1])
        >>> average_checkpoints(paths)["w"]
        tensor([2., 2.])
    """
    if len(paths) == 0:
        raise ValueError("average_checkpoints needs at least one checkpoint")
    total: dict[str, torch.Tensor] = {}
    last: dict[str, torch.Tensor] = {}
    for path in paths:
        data = _load(path, f"{os.fspath(path)}: not a readable checkpoint")
        state = data.get("model", data.get("state_dict")) if isinstance(data, dict) else None
        if not isinstance(state, dict):
            raise ValueError(f"{os.fspath(path)}: holds no model state_dict")
        if total and set(state) != set(total):
            raise ValueError(f"{os.fspath(path)} holds different parameters from {paths[0]}")
        for name, tensor in state.items():
            if tensor.is_floating_point():
                total[name] = total.get(name, 0) + tensor.double()
            else:
                total.setdefault(name, tensor)
        last = state
    return {name: (total[name] / len(paths)).to(t.dtype) if t.is_floating_point() else t
            for name, t in last.items()}


def _load(path: str | os.PathLike[str], refusal: str,
          map_location: str | torch.device = "cpu") -> Any:
    """`torch.load(weights_only=True)`, any error but an `OSError` a `ValueError`."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except OSError:
        raise
    except Exception as error:  # torch.load raises any type for a foreign file
        # in full: torch's own message warns against weights_only=False, which can run code
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"{refusal}: torch.load failed ({type(error).__name__}: "
                         f"{reason})") from error
