"""The plan of a translator's run, and what it trains with.

`RunPlan` is the run's arguments, checked and frozen: its data, its model, its recipe and its
files. `Prepared` is what the run trains with, made new or read from the folder of a resumed
run only as far as its files agree: a resumed run refuses a change of model or of data (unless
`new_data`); a missing fingerprint is a refusal, not a skipped check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import torch

from .. import config as settings
from ..config import ModelConfig, RunOptions, TranslationConfig
from ..config.tasks import unknown_keys
from ..data.corpus import iter_tsv, sample_tsv
from ..data.tokenizer import SharedTokenizer, load_trained_tokenizer, train_tokenizer
from ..data.translation_batches import file_fingerprint, pairs_fingerprint
from . import checkpoints as files
from .checkpoints import TrainCheckpoint
from .ranks import RefusalError, amp_context, resolve_device
from .run_folder import read_run_config

__all__ = ["TrainOptions", "TRAIN_DEFAULTS", "with_defaults", "RunPlan", "Hooks", "Prepared",
           "prepare", "prepare_follower", "check_options", "TOKENIZER_SAMPLE"]

TOKENIZER_SAMPLE = 100_000
"""Pairs of a TSV file the tokenizer of a new run learns from (`sample_tsv`)."""


class TrainOptions(TypedDict, total=False):
    """The keyword arguments of
    [`train_translation`][vanilla_transformer.training.translation.train_translation]."""

    preset: str | None
    model_options: dict[str, Any] | None
    config: TranslationConfig | None
    changes: Mapping[str, Any] | None
    resume: bool
    overwrite: bool
    new_data: bool
    data_fingerprint: Mapping[str, Any] | None
    should_stop: Callable[[], bool] | None
    device: str
    amp: str
    progress: bool
    log: Callable[[str], None] | None
    distributed: bool
    timeout: float


TRAIN_DEFAULTS: dict[str, Any] = {
    "preset": None, "model_options": None, "config": None, "changes": None, "resume": False,
    "overwrite": False, "new_data": False, "data_fingerprint": None, "should_stop": None,
    "device": "cpu", "amp": "off", "progress": False, "log": None, "distributed": False,
    "timeout": settings.DEFAULT_TIMEOUT}
"""The default of each of `TrainOptions`."""


def with_defaults(given: TrainOptions) -> dict[str, Any]:
    """`given` over `TRAIN_DEFAULTS`; a `TypeError` naming a keyword that is not one."""
    unknown = sorted(set(given) - set(TRAIN_DEFAULTS))
    if unknown:
        raise TypeError(f"train_translation got unknown keyword arguments {unknown}; "
                        f"expected some of {sorted(TRAIN_DEFAULTS)}")
    return {**TRAIN_DEFAULTS, **given}


@dataclass(frozen=True)
class Hooks:
    """How a run talks to its caller: `should_stop()` after every step, a progress bar, and
    `log(line)` at each checkpoint and at the end."""

    should_stop: Callable[[], bool] | None = None
    progress: bool = False
    log: Callable[[str], None] = print

    @staticmethod
    def quiet() -> Hooks:
        """The hooks of a process that does not speak for the job."""
        return Hooks(None, False, lambda line: None)


@dataclass(frozen=True)
class RunPlan:
    """One run's plan, checked and frozen: the data (`train`, `valid`, `fingerprint`), the
    model (`preset`, `model_options`), the recipe (`config`, `changes`, `options`, `device`,
    `amp`) and the files (`folder`, `resume`, `overwrite`, `new_data`)."""

    train: Sequence[tuple[str, str]] | Path
    valid: Sequence[tuple[str, str]]
    folder: Path
    preset: str | None
    model_options: dict[str, Any]
    config: TranslationConfig
    changes: dict[str, Any]
    options: dict[str, Any]
    fingerprint: dict[str, Any]
    resume: bool = False
    overwrite: bool = False
    new_data: bool = False
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    amp: str = "off"

    @classmethod
    def checked(cls, train: Any, valid: Sequence[tuple[str, str]], out: Any,
                given: dict[str, Any]) -> RunPlan:
        """The arguments of `train_translation` (`with_defaults`), each refused before
        anything is written."""
        preset, resume = given["preset"], bool(given["resume"])
        if preset is not None and preset not in settings.TRANSLATION_PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of "
                             f"{sorted(settings.TRANSLATION_PRESETS)}")
        train = _checked_data(train, valid)
        if resume and given["overwrite"]:
            raise ValueError("resume and overwrite exclude each other: continue the run or "
                             "replace it")
        device, amp = resolve_device(given["device"]), given["amp"]
        amp_context(device, amp)  # checks amp
        config = given["config"] or TranslationConfig()
        changes = dict(given["changes"] or {})
        unknown_keys(TranslationConfig, changes, list(settings.RUN_OPTIONS))
        options = {k: changes.pop(k) for k in list(changes) if k in settings.RUN_OPTIONS}
        if not resume:
            config = TranslationConfig(**{**config.to_dict(), **changes})
            check_options(RunOptions(**{**settings.RUN_OPTIONS, **options}), config.eval_size)
        given_fingerprint = given["data_fingerprint"]
        if given_fingerprint:
            fingerprint = dict(given_fingerprint)
        elif isinstance(train, Path):
            fingerprint = {"path": str(train.resolve()), **file_fingerprint(train)}
        else:
            fingerprint = pairs_fingerprint(train)
        return cls(train, valid, Path(os.fspath(out)), preset,
                   dict(given.get("model_options") or {}), config, changes, options,
                   fingerprint, resume, bool(given["overwrite"]),
                   bool(given.get("new_data", False)), device, amp)

    def data_record(self) -> dict[str, Any]:
        """What `config.json` records of the training data."""
        return {k: self.fingerprint[k] for k in ("path", "size", "sha256")
                if k in self.fingerprint}


def _checked_data(train: Any, valid: Sequence[tuple[str, str]]) -> Any:
    if isinstance(train, (str, os.PathLike)):
        train = Path(os.fspath(train))
        if not train.is_file():
            next(iter_tsv(train))  # raises the file's error
    elif len(train) == 0:
        raise ValueError("train_pairs must hold at least one pair")
    if len(valid) == 0:
        raise ValueError("valid_pairs must hold at least one pair")
    return train


def check_options(options: RunOptions, eval_size: int) -> RunOptions:
    """Refuse run options that cannot work: `tensorboard` without its package, `keep_best` or
    `patience` without validation."""
    if options.tensorboard:
        import torch.utils.tensorboard  # noqa: F401 - the package is missing: say so now
    if (options.keep_best or options.patience is not None) and eval_size == 0:
        raise ValueError("keep_best and patience need validation scores: eval_size must be "
                         "positive, got 0")
    return options


@dataclass
class Prepared:
    """What a run trains with: its settings, its tokenizer and, resumed, its newest
    checkpoint and the file it was read from."""

    preset: str
    model_config: ModelConfig
    config: TranslationConfig
    options: RunOptions
    tokenizer: SharedTokenizer
    state: TrainCheckpoint | None = None
    restart_data: bool = False  # resumed on other data: start a new epoch
    state_path: Path | None = None

    def run_config(self, data: dict[str, Any]) -> dict[str, Any]:
        """The contents of `config.json`."""
        return {"preset": self.preset, "model": self.model_config.to_dict(),
                "training": self.config.to_dict(), "options": vars(self.options).copy(),
                "data": data}


def prepare(plan: RunPlan, log: Callable[[str], None]) -> Prepared:
    """What the run of `plan` trains with (process 0)."""
    if not plan.resume:
        return prepare_new(plan, sample_tsv(plan.train, TOKENIZER_SAMPLE, seed=plan.config.seed)
                           if isinstance(plan.train, Path) else plan.train)
    prepared = prepare_resumed(plan)
    assert prepared.state is not None
    log(f"resuming from step {prepared.state.step} of {prepared.config.max_steps}")
    return prepared


def prepare_follower(folder: Path, resume: bool, restart_data: bool) -> Prepared:
    """What process 0 prepared and wrote in `folder`, read by the other processes."""
    saved = read_run_config(folder)
    paths = files.checkpoint_paths(folder)
    state = TrainCheckpoint.read(paths[-1]) if resume and paths else None
    return Prepared(saved["preset"], ModelConfig.from_dict(saved["model"]),
                    TranslationConfig.from_dict(saved["training"]),
                    RunOptions.from_dict(saved["options"]),
                    SharedTokenizer.load(folder / files.TOKENIZER_FILE), state, restart_data,
                    paths[-1] if state is not None else None)


def _settings(saved: dict[str, Any], key: str, build: Callable[[dict[str, Any]], Any],
              folder: Path) -> Any:
    try:
        return build(saved.get(key) or {})
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot resume: {str(folder / 'config.json')!r} holds bad {key} "
                         f"settings ({error})") from None


def prepare_new(plan: RunPlan, sample: Sequence[tuple[str, str]]) -> Prepared:
    """A new run: the preset's sizes and a tokenizer learned from `sample`."""
    preset = plan.preset or settings.DEFAULT_PRESET
    tokenizer = train_tokenizer([s for pair in sample for s in pair], plan.config.vocab_size)
    vocab = tokenizer.vocab_size
    sizes = {**settings.TRANSLATION_PRESETS[preset], **plan.model_options}
    return Prepared(preset, ModelConfig(src_vocab=vocab, tgt_vocab=vocab, **sizes), plan.config,
                    RunOptions(**{**settings.RUN_OPTIONS, **plan.options}), tokenizer)


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


def prepare_resumed(plan: RunPlan) -> Prepared:
    """What a resumed run continues with, after refusing a change to the saved model or data."""
    folder, config, changes = plan.folder, plan.config, plan.changes
    saved = read_run_config(folder)
    paths = files.checkpoint_paths(folder)
    if not paths:
        raise RefusalError(f"cannot resume: {str(folder)!r} holds no training checkpoint yet (the "
                           "run stopped before its first one); start it again with overwrite=True",
                           "overwrite")
    if not (folder / files.TOKENIZER_FILE).is_file():
        raise ValueError(f"cannot resume: {str(folder)!r} lacks {files.TOKENIZER_FILE}")
    state = TrainCheckpoint.read(paths[-1])
    tokenizer = load_trained_tokenizer(folder / files.TOKENIZER_FILE)
    model_config = ModelConfig.from_dict(state.config)
    saved_preset = saved.get("preset") or settings.DEFAULT_PRESET
    _check_same_model(model_config, plan.preset, saved_preset, plan.model_options)
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
        {**settings.RUN_OPTIONS, **d, **plan.options}), folder)
    restart = _data_changed(saved.get("data"), plan.fingerprint, plan.new_data)
    return Prepared(saved_preset, model_config, TranslationConfig(**training), run_options,
                    tokenizer, state, restart, paths[-1])
