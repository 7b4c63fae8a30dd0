"""Every file a training run writes: its names, its formats, and how each is read back.

A model file (`save_checkpoint`) holds a model with its `ModelConfig`; a training checkpoint
(`save_train_state`) all a run needs to continue. Both are plain data, written atomically and
read with `torch.load(weights_only=True)`; checkpoints are ordered by the step they hold.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import collections
import errno
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
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
    "BEST_FILE", "IDS_FOLDER", "STAGING", "SWAP_MARK", "TENSORBOARD_FOLDER", "TRAIN_STATE_FORMAT",
    "CHECKPOINT_FORMAT", "naming", "save_atomically", "write_json",
    "checkpoint_paths", "step_of", "CHECKPOINT_NAME", "TrainCheckpoint", "load_train_state",
    "RANK_RESULT_FORMAT", "save_rank_result", "load_rank_result", "save_checkpoint",
    "load_checkpoint", "model_state", "load_model_state", "check_weights_fit_config", "load_plain",
]

MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE, METRICS_FILE, CHECKPOINTS = (
    "model.pt", "tokenizer.json", "config.json", "metrics.jsonl", "checkpoints")
"""A run folder's final model, tokenizer, settings, log and checkpoints' folder (its lock is
`_io`'s `LOCK_FILE`)."""

BEST_FILE = "best.pt"
"""In `CHECKPOINTS/`: the checkpoint with the best validation score (with `keep_best`)."""

IDS_FOLDER = "ids"
"""Where a run fed a TSV file keeps its token ids (reused on resume)."""

STAGING, SWAP_MARK = ".staged-run", "SWAP"
"""Where a run that replaces another (`overwrite`) writes until its first checkpoint, and the
file in it that says the swap has begun (an interrupted swap is finished on the next open)."""

TENSORBOARD_FOLDER = "tensorboard"
"""Where `tensorboard=True` writes its event files."""

CHECKPOINT_FORMAT = "vanilla-transformer-checkpoint"
"""The `format` field of files written by `save_checkpoint`."""

TRAIN_STATE_FORMAT = "vanilla-transformer-train-state"
"""The `format` field of the training checkpoints in `RUN/checkpoints/`."""

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
    data = load_plain(path, f"{name} is not {what}", map_location)
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


CHECKPOINT_NAME = "step-{step:07d}.pt"
"""The name of the training checkpoint of a step, in `CHECKPOINTS/` (`step-0000042.pt`)."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _seconds(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def _losses(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() == 1 and value.is_floating_point()


def _generator(value: Any) -> bool:
    return (isinstance(value, torch.Tensor) and value.dtype == torch.uint8
            and value.dim() == 1)


def _rng(value: Any) -> bool:
    """Process 0's `random_state` (`"torch"`, with `"cuda"` or `"mps"` when used); with
    several processes, `"ranks"`: each one's CPU state, and `"devices"`: each one's others."""
    if not isinstance(value, dict) or not _generator(value.get("torch")):
        return False
    if value["torch"].numel() != torch.get_rng_state().numel():
        return False
    ranks, devices = value.get("ranks", []), value.get("devices", [])
    return (all(_generator(value[k]) for k in ("cuda", "mps") if k in value)
            and isinstance(ranks, list) and all(_generator(r) for r in ranks)
            and isinstance(devices, list) and all(isinstance(d, dict) and all(
                _generator(t) for t in d.values()) for d in devices))


def _optimizer(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("state"), dict)
            and isinstance(value.get("param_groups"), list))


def _callbacks(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, dict)
                                           for k, v in value.items())


_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "step": (_count, "a step count (an int, 0 or more)"),
    "seconds": (_seconds, "seconds (a finite number, 0 or more)"),
    "losses": (_losses, "a 1-D float tensor of every step's loss"),
    "optimizer": (_optimizer, "an optimizer's state_dict ('state' and 'param_groups')"),
    "scheduler": (lambda v: isinstance(v, dict), "a scheduler's state_dict (a dict)"),
    "epoch": (_count, "an epoch (an int, 0 or more)"),
    "position": (_count, "a batch position (an int, 0 or more)"),
    "rng": (_rng, "random states ('torch': the CPU generator's uint8 tensor, and the "
                  "accelerators' and processes' beside it)"),
    "callbacks": (_callbacks, "the callbacks' states (a dict of dicts by name)"),
}


@dataclass
class TrainCheckpoint:
    """A training checkpoint: all a resumed run needs to continue exactly where the
    uninterrupted one would be. This class is its one definition: its fields, its file name
    (`CHECKPOINT_NAME`), its writer (`save`) and its reader (`read`), which checks the type
    of every field and names the file in every error.

    Attributes:
        step: optimizer steps taken. seconds: training time so far. losses: every step's
            loss (float64). config: the model's `ModelConfig.to_dict()`. model: its weights.
        optimizer: scheduler: their `state_dict()`. epoch: position: where the batches are.
        rng: the random states of every process and device in use (`ranks.random_state`).
        callbacks: each callback's `state_dict()`, by its `state_key`.
    """

    step: int
    seconds: float
    losses: torch.Tensor
    config: dict[str, Any]
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    scheduler: dict[str, Any]
    epoch: int
    position: int
    rng: dict[str, Any]
    callbacks: dict[str, dict[str, Any]]

    @staticmethod
    def path(folder: str | os.PathLike[str], step: int) -> Path:
        """Where the checkpoint of `step` of the run in `folder` is written."""
        return Path(os.fspath(folder)) / CHECKPOINTS / CHECKPOINT_NAME.format(step=step)

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the checkpoint atomically into `folder`'s `CHECKPOINTS/` and read it back:
        one that does not load is an `OSError` naming it now, not on resume."""
        path = self.path(folder, self.step)
        data = {"format": TRAIN_STATE_FORMAT, "version": 3,
                **{f.name: getattr(self, f.name) for f in fields(self)}}
        save_atomically(path, lambda f: torch.save(data, f))
        try:
            self.read(path)
        except ValueError as error:
            path.unlink(missing_ok=True)  # the previous checkpoints stay the newest
            raise OSError(errno.EIO, f"the checkpoint just written does not read back, and "
                          f"was removed ({' '.join(str(error).split())[:200]})",
                          str(path)) from None
        return path

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TrainCheckpoint:
        """Read a training checkpoint; a `ValueError` naming the file if it is none, holds
        another step than its name says, holds a field of the wrong type, or weights that do
        not fit its configuration."""
        state, _ = _read(path, TRAIN_STATE_FORMAT, "a training checkpoint", ("config", "model"))
        name = repr(os.fspath(path))
        if state.get("version") == 2 and "callbacks" not in state:
            # written before each callback kept its own state: the keeper's was `history`
            state["callbacks"] = {"checkpoints": {"history": state.get("history", [])}}
        for key, (valid, expected) in _FIELDS.items():
            if key not in state:
                raise ValueError(f"{name} is not a whole training checkpoint: it lacks {key!r}")
            if not valid(state[key]):
                raise ValueError(f"{name} holds a bad {key!r}: "
                                 f"{_describe(state[key])} where {expected} belongs")
        if len(state["losses"]) != state["step"]:
            raise ValueError(f"{name} holds a bad 'losses': {len(state['losses'])} losses for "
                             f"{state['step']} steps")
        file_name = Path(os.fspath(path)).name
        if _STEP_NAME.fullmatch(file_name) and state["step"] != step_of(Path(file_name)):
            raise ValueError(f"{name} holds step {state['step']}, not the step its name says")
        return cls(**{f.name: state[f.name] for f in fields(cls)})


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def load_train_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The fields of the training checkpoint at `path` as a dict
    ([`TrainCheckpoint.read`][vanilla_transformer.training.checkpoints.TrainCheckpoint.read])."""
    checkpoint = TrainCheckpoint.read(path)
    return {f.name: getattr(checkpoint, f.name) for f in fields(checkpoint)}


RANK_RESULT_FORMAT = "vanilla-transformer-rank-result"
"""The `format` field of the file each process of a copy-task job writes (`rank<r>.pt`)."""


def save_rank_result(folder: str | os.PathLike[str], rank: int, *, losses: list[float],
                     state_dict: dict[str, torch.Tensor], train_state: dict[str, int]) -> Path:
    """Write process `rank`'s result of a copy-task job to `folder/rank<rank>.pt`,
    atomically."""
    path = Path(os.fspath(folder)) / f"rank{rank}.pt"
    data = {"format": RANK_RESULT_FORMAT, "version": 1, "losses": list(losses),
            "state_dict": dict(state_dict), "train_state": dict(train_state)}
    save_atomically(path, lambda f: torch.save(data, f))
    return path


def load_rank_result(folder: str | os.PathLike[str], rank: int) -> dict[str, Any]:
    """Process `rank`'s result written by `save_rank_result`: a dict of its `losses`,
    `state_dict` and `train_state`; a `ValueError` naming the file if it is not one."""
    path = Path(os.fspath(folder)) / f"rank{rank}.pt"
    data = load_plain(path, f"{str(path)!r} is not a process's result")
    if not isinstance(data, dict) or data.get("format") != RANK_RESULT_FORMAT:
        raise ValueError(f"{str(path)!r} is not a process's result (no {RANK_RESULT_FORMAT!r} "
                         "format)")
    return {key: data[key] for key in ("losses", "state_dict", "train_state")}


def load_plain(path: str | os.PathLike[str], refusal: str,
          map_location: str | torch.device = "cpu") -> Any:
    """`torch.load(weights_only=True)`, any error but an `OSError` a `ValueError`."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except OSError as error:
        if error.filename is not None:
            raise
        # a cut-short file: torch's reader fails to seek, naming nothing ("Invalid argument")
        raise ValueError(f"{refusal}: it is cut short or damaged ({error.strerror or error}); "
                         "an interrupted copy, or a full disk when it was written") from None
    except Exception as error:  # torch.load raises any type for a foreign file
        # in full: torch's own message warns against weights_only=False, which can run code
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"{refusal}: torch.load failed ({type(error).__name__}: "
                         f"{reason})") from error
