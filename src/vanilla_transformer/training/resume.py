"""How a translator's run starts: its arguments checked, its folder owned, and what it trains
with, read from the folder only as far as its files agree.

A new run is accepted (`accept`) only once its data are read and its model sized; before that,
a refusal or a stop leaves the folder as it was. A resumed run refuses a change of model or of
data (unless `new_data`); a missing fingerprint is a refusal, not a skipped check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from .. import config as settings
from .._io import make_folder
from ..config import ModelConfig, RunOptions, TranslationConfig
from ..config.tasks import unknown_keys
from ..data.corpus import iter_tsv, sample_tsv
from ..data.tokenizer import SharedTokenizer, load_trained_tokenizer, train_tokenizer
from ..data.translation_batches import file_fingerprint, pairs_fingerprint
from . import checkpoints as files
from .checkpoints import load_train_state
from .loop import FitProgress
from .ranks import Ranks, RefusalError, amp_context, resolve_device
from .run_folder import (
    RunLock,
    check_folder,
    clear_run,
    read_run_config,
    remove_entry,
    remove_stale_temporaries,
)

__all__ = ["Prepared", "prepare_new", "prepare_resumed", "prepare_follower",
           "TrainCall", "check_call", "check_options", "own_folder", "accept", "restore"]

T = TypeVar("T")
TOKENIZER_SAMPLE = 100_000
"""Pairs of a TSV file the tokenizer of a new run learns from (`sample_tsv`)."""


@dataclass
class Prepared:
    """What a run trains with: its settings, its tokenizer and, resumed, its newest state."""

    preset: str
    model_config: ModelConfig
    config: TranslationConfig
    options: RunOptions
    tokenizer: SharedTokenizer
    state: dict[str, Any] | None = None
    restart_data: bool = False  # resumed on other data: start a new epoch

    def run_config(self, data: dict[str, Any]) -> dict[str, Any]:
        """The contents of `config.json`."""
        return {"preset": self.preset, "model": self.model_config.to_dict(),
                "training": self.config.to_dict(), "options": vars(self.options).copy(),
                "data": data}


def _settings(saved: dict[str, Any], key: str, build: Callable[[dict[str, Any]], Any],
              folder: Path) -> Any:
    try:
        return build(saved.get(key) or {})
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot resume: {str(folder / 'config.json')!r} holds bad {key} "
                         f"settings ({error})") from None


def prepare_new(call: TrainCall, sample: Sequence[tuple[str, str]]) -> Prepared:
    """A new run: the preset's sizes and a tokenizer learned from `sample`."""
    preset = call.preset or settings.DEFAULT_PRESET
    tokenizer = train_tokenizer([s for pair in sample for s in pair], call.config.vocab_size)
    vocab = tokenizer.vocab_size
    sizes = {**settings.TRANSLATION_PRESETS[preset], **call.model_options}
    return Prepared(preset, ModelConfig(src_vocab=vocab, tgt_vocab=vocab, **sizes), call.config,
                    RunOptions(**{**settings.RUN_OPTIONS, **call.options}), tokenizer)


def prepare_follower(folder: Path, resume: bool, restart_data: bool) -> Prepared:
    """What process 0 prepared and wrote, read by the other processes."""
    saved = read_run_config(folder)
    paths = files.checkpoint_paths(folder)
    return Prepared(saved["preset"], ModelConfig.from_dict(saved["model"]),
                    TranslationConfig.from_dict(saved["training"]),
                    RunOptions.from_dict(saved["options"]),
                    SharedTokenizer.load(folder / files.TOKENIZER_FILE),
                    load_train_state(paths[-1]) if resume and paths else None, restart_data)


def _check_same_model(model_config: ModelConfig, preset: str | None, saved_preset: str,
                      model_options: dict[str, Any]) -> None:
    given = {**({} if preset is None else {"preset": preset}), **model_options}
    saved = {"preset": saved_preset, **{name: getattr(model_config, name) for name in model_options}}
    for name, value in given.items():
        if value != saved[name]:
            raise RefusalError(f"{name}={value} differs from the run's {saved[name]}; a resumed run "
                               f"keeps its model (drop {name}, or start a new run with "
                               "overwrite=True)", name, "overwrite")


def _data_changed(saved: Any, fingerprint: dict[str, Any], new_data: bool) -> bool:
    """Whether the data differ from the run's (refused unless `new_data`); a run whose
    fingerprint is missing or malformed cannot tell, and is refused the same way."""
    known = isinstance(saved, dict) and isinstance(saved.get("size"), int) and isinstance(
        saved.get("sha256"), str)
    if known and (saved["size"], saved["sha256"]) == (fingerprint.get("size"),
                                                       fingerprint.get("sha256")):
        return False
    if new_data:
        return True
    if not known:
        raise RefusalError("cannot tell whether the training data are the run's: its config.json "
                           "holds no fingerprint of them; pass new_data=True to continue on these",
                           "new_data")
    raise RefusalError(
        f"the training data differ from the run's (it trained on {saved['size']} bytes, "
        f"sha256 {saved['sha256'][:12]}; these are {fingerprint.get('size')} bytes, sha256 "
        f"{str(fingerprint.get('sha256'))[:12]}); pass new_data=True to continue on them",
        "new_data")


def prepare_resumed(call: TrainCall) -> Prepared:
    """What a resumed run continues with, after refusing a change to the saved model or data."""
    folder, config, changes = call.folder, call.config, call.changes
    saved = read_run_config(folder)
    paths = files.checkpoint_paths(folder)
    if not paths:
        raise RefusalError(f"cannot resume: {str(folder)!r} holds no training checkpoint yet (the "
                           "run stopped before its first one); start it again with overwrite=True",
                           "overwrite")
    if not (folder / files.TOKENIZER_FILE).is_file():
        raise ValueError(f"cannot resume: {str(folder)!r} lacks {files.TOKENIZER_FILE}")
    state = load_train_state(paths[-1])
    tokenizer = load_trained_tokenizer(folder / files.TOKENIZER_FILE)
    model_config = ModelConfig.from_dict(state["config"])
    saved_preset = saved.get("preset") or settings.DEFAULT_PRESET
    _check_same_model(model_config, call.preset, saved_preset, call.model_options)
    training = _settings(saved, "training", TranslationConfig.from_dict, folder).to_dict()
    if config != TranslationConfig():
        training.update(max_steps=config.max_steps, max_minutes=config.max_minutes)
    if "vocab_size" in changes and changes["vocab_size"] != training["vocab_size"]:
        raise RefusalError(f"vocab_size={changes['vocab_size']} differs from the run's "
                           f"{training['vocab_size']}: the tokenizer is trained; drop vocab_size, "
                           "or start a new run with overwrite=True", "vocab_size", "overwrite")
    training.update(changes)
    if "max_minutes" not in changes and not config.max_minutes:
        training["max_minutes"] = None  # a time limit is for one call
    run_options = _settings(saved, "options", lambda d: RunOptions.from_dict(
        {**settings.RUN_OPTIONS, **d, **call.options}), folder)
    restart = _data_changed(saved.get("data"), call.fingerprint, call.new_data)
    return Prepared(saved_preset, model_config, TranslationConfig(**training), run_options,
                    tokenizer, state, restart)


@dataclass
class TrainCall:
    """The arguments of one `train_translation` call, checked."""

    train: Sequence[tuple[str, str]] | Path
    valid: Sequence[tuple[str, str]]
    folder: Path
    preset: str | None
    model_options: dict[str, Any]
    config: TranslationConfig
    changes: dict[str, Any]
    options: dict[str, Any]
    resume: bool
    overwrite: bool
    new_data: bool
    fingerprint: dict[str, Any]
    should_stop: Callable[[], bool] | None
    device: torch.device
    amp: str
    progress: bool
    log: Callable[[str], None]


def check_call(train: Any, valid: Sequence[tuple[str, str]], out: Any, preset: str | None,
                model_options: dict[str, Any] | None, config: TranslationConfig | None,
                changes: Mapping[str, Any] | None, resume: bool, overwrite: bool,
                new_data: bool, data_fingerprint: Mapping[str, Any] | None,
                should_stop: Callable[[], bool] | None, device: str, amp: str,
                progress: bool, log: Callable[[str], None] | None) -> TrainCall:
    """The arguments of `train_translation`, each refused before anything is written."""
    if preset is not None and preset not in settings.TRANSLATION_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(settings.TRANSLATION_PRESETS)}")
    if isinstance(train, (str, os.PathLike)):
        train = Path(os.fspath(train))
        if not train.is_file():
            next(iter_tsv(train))  # raises the file's error
    elif len(train) == 0:
        raise ValueError("train_pairs must hold at least one pair")
    if len(valid) == 0:
        raise ValueError("valid_pairs must hold at least one pair")
    if resume and overwrite:
        raise ValueError("resume and overwrite exclude each other: continue the run or "
                         "replace it")
    target = resolve_device(device)
    amp_context(target, amp)  # checks amp
    config = TranslationConfig() if config is None else config
    changes = dict(changes or {})
    unknown_keys(TranslationConfig, changes, list(settings.RUN_OPTIONS))
    options = {k: changes.pop(k) for k in list(changes) if k in settings.RUN_OPTIONS}
    if not resume:
        config = TranslationConfig(**{**config.to_dict(), **changes})
        check_options(RunOptions(**{**settings.RUN_OPTIONS, **options}), config.eval_size)
    if data_fingerprint:
        fingerprint = dict(data_fingerprint)
    elif isinstance(train, Path):
        fingerprint = {"path": str(train.resolve()), **file_fingerprint(train)}
    else:
        fingerprint = pairs_fingerprint(train)
    return TrainCall(train, valid, Path(os.fspath(out)), preset, dict(model_options or {}), config,
                 changes, options, resume, overwrite, new_data, fingerprint, should_stop,
                 target, amp, progress, log or (lambda line: None))


def check_options(options: RunOptions, eval_size: int) -> RunOptions:
    if options.tensorboard:
        import torch.utils.tensorboard  # noqa: F401 - the package is missing: say so now
    if (options.keep_best or options.patience is not None) and eval_size == 0:
        raise ValueError("keep_best and patience need validation scores: eval_size must be "
                         "positive, got 0")
    return options


def own_folder(call: TrainCall, train: Callable[[Prepared, list[bool]], T]) -> T:
    """Process 0's part (the only one without `distributed`): own the folder, then
    `train(prepared, accepted)`. A new run that is refused or stopped before `accept` leaves
    the folder as it was."""
    path = call.folder
    check_folder(path, resume=call.resume, overwrite=call.overwrite)
    created = not path.exists()
    make_folder(path)
    accepted = [call.resume]
    try:
        with RunLock(path):
            for tmp in remove_stale_temporaries(path):
                call.log(f"removed {tmp}, a file left by an interrupted save")
            before = set(os.listdir(path))
            try:
                return train(_prepare(call), accepted)
            except BaseException:
                if not accepted[0]:
                    _remove_new(path, before)
                raise
    finally:
        if created and path.is_dir() and not any(path.iterdir()):
            path.rmdir()  # refused before any work: leave no empty folder behind


def _remove_new(folder: Path, before: set[str]) -> None:
    """Remove what a refused run wrote: the entries of `folder` that were not in `before`."""
    for name in set(os.listdir(folder)) - before - {files.LOCK_FILE}:
        remove_entry(folder / name)


def _prepare(call: TrainCall) -> Prepared:
    if not call.resume:
        return prepare_new(call, sample_tsv(call.train, TOKENIZER_SAMPLE, seed=call.config.seed)
                           if isinstance(call.train, Path) else call.train)
    prepared = prepare_resumed(call)
    call.log(f"resuming from step {prepared.state['step']} of "  # type: ignore[index]
             f"{prepared.config.max_steps}")
    return prepared


def accept(call: TrainCall, ranks: Ranks, prepared: Prepared, accepted: list[bool]) -> None:
    """Process 0 takes the folder for the run: an old run replaced goes now, the tokenizer and
    the settings are written, and the other processes are told."""
    folder = call.folder
    if not call.resume:
        if call.overwrite:
            clear_run(folder)
            if (folder / files.STAGED_IDS).is_dir():
                os.replace(folder / files.STAGED_IDS, folder / files.IDS_FOLDER)
        (folder / files.CHECKPOINTS).mkdir(exist_ok=True)
        with files.naming(folder / files.TOKENIZER_FILE):
            prepared.tokenizer.save(folder / files.TOKENIZER_FILE)
    accepted[0] = True
    data: dict[str, Any] = {k: call.fingerprint[k] for k in ("path", "size", "sha256")
                            if k in call.fingerprint}
    files.write_json(folder / files.CONFIG_FILE, prepared.run_config(data))
    if ranks.size > 1:
        ranks.share({"error": None, "restart_data": prepared.restart_data})
        ranks.shared = True


def restore(prepared: Prepared, model: nn.Module, optimizer: torch.optim.Optimizer,
             scheduler: Any, ranks: Ranks, n_batches: int) -> tuple[FitProgress, tuple[int, int]]:
    """A resumed run's model, optimizer, schedule and random state: `(progress, (epoch,
    position))`."""
    state = prepared.state
    if state is None:
        return FitProgress(), (0, 0)
    files.load_model_state(model, state["model"], "the newest checkpoint")
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    rng = state["rng"]
    if ranks.rank == 0:
        torch.set_rng_state(rng["torch"])
    elif len(rng.get("ranks", ())) == ranks.size:
        torch.set_rng_state(rng["ranks"][ranks.rank])
    else:  # saved by a run of another size: new masks, still not process 0's
        torch.manual_seed(prepared.config.seed + ranks.rank + state["step"])
    epoch, position = state["epoch"], state["position"]
    if prepared.restart_data or position > n_batches:
        epoch, position = epoch + 1, 0
    progress = FitProgress(state["step"], state["losses"].tolist(), float(state["seconds"]))
    return progress, (epoch, position)
