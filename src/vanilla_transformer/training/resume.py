"""What a translator's run starts or continues with, read from its folder only as far as its
files agree: the settings, the tokenizer, the model's sizes and the newest checkpoint.

A resumed run refuses anything that would change its model or its data (unless `new_data`),
and a missing fingerprint is a refusal, not a skipped check. `load_translator` reads a trained
run the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import (
    DEFAULT_PRESET,
    RUN_OPTIONS,
    TRANSLATION_PRESETS,
    ModelConfig,
    RunOptions,
    TranslationConfig,
)
from ..data.tokenizer import SharedTokenizer, train_tokenizer
from ..model.encoder_decoder import EncoderDecoder
from .checkpoints import (
    MODEL_FILE,
    TOKENIZER_FILE,
    checkpoint_paths,
    load_checkpoint,
    load_model_state,
    load_train_state,
)
from .ranks import resolve_device
from .run_folder import Refusal, check_tokenizer_file, read_run_config

__all__ = ["Prepared", "prepare_new", "prepare_resumed", "prepare_follower", "load_tokenizer",
           "load_translator"]


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


def load_tokenizer(path: Path) -> SharedTokenizer:
    """`SharedTokenizer.load`, after refusing parts that training never writes."""
    check_tokenizer_file(path)
    return SharedTokenizer.load(path)


def prepare_new(preset: str | None, model_options: dict[str, Any], config: TranslationConfig,
                options: dict[str, Any], sample: Sequence[tuple[str, str]]) -> Prepared:
    """A new run: the preset's sizes and a tokenizer learned from `sample`."""
    preset = preset or DEFAULT_PRESET
    tokenizer = train_tokenizer([s for pair in sample for s in pair], config.vocab_size)
    vocab = tokenizer.vocab_size
    sizes = {**TRANSLATION_PRESETS[preset], **model_options}
    model_config = ModelConfig(src_vocab=vocab, tgt_vocab=vocab, **sizes)
    return Prepared(preset, model_config, config, RunOptions(**{**RUN_OPTIONS, **options}),
                    tokenizer)


def prepare_follower(folder: Path, resume: bool, restart_data: bool) -> Prepared:
    """What process 0 prepared and wrote, read by the other processes."""
    saved = read_run_config(folder)
    paths = checkpoint_paths(folder)
    return Prepared(saved["preset"], ModelConfig.from_dict(saved["model"]),
                    TranslationConfig.from_dict(saved["training"]),
                    RunOptions.from_dict(saved["options"]),
                    SharedTokenizer.load(folder / TOKENIZER_FILE),
                    load_train_state(paths[-1]) if resume and paths else None, restart_data)


def _check_same_model(model_config: ModelConfig, preset: str | None, saved_preset: str,
                      model_options: dict[str, Any]) -> None:
    if preset is not None and preset != saved_preset:
        raise Refusal(f"preset={preset} differs from the run's {saved_preset}; a resumed run "
                      "keeps its model (drop preset, or start a new run with overwrite=True)",
                      "preset", "overwrite")
    for name, value in model_options.items():
        if getattr(model_config, name) != value:
            raise Refusal(f"{name}={value} differs from the run's "
                          f"{getattr(model_config, name)}; a resumed run keeps its model (drop "
                          f"{name}, or start a new run with overwrite=True)", name, "overwrite")


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
        raise Refusal("cannot tell whether the training data are the run's: its config.json "
                      "holds no fingerprint of them; pass new_data=True to continue on these",
                      "new_data")
    raise Refusal(
        f"the training data differ from the run's (it trained on {saved['size']} bytes, "
        f"sha256 {saved['sha256'][:12]}; these are {fingerprint.get('size')} bytes, sha256 "
        f"{str(fingerprint.get('sha256'))[:12]}); pass new_data=True to continue on them",
        "new_data")


def prepare_resumed(folder: Path, *, preset: str | None, model_options: dict[str, Any],
                    config: TranslationConfig, changes: dict[str, Any],
                    options: dict[str, Any], fingerprint: dict[str, Any],
                    new_data: bool) -> Prepared:
    """What a resumed run continues with, after refusing a change to the saved model or data."""
    saved = read_run_config(folder)
    paths = checkpoint_paths(folder)
    if not paths:
        raise Refusal(f"cannot resume: {str(folder)!r} holds no training checkpoint yet (the "
                      "run stopped before its first one); start it again with overwrite=True",
                      "overwrite")
    if not (folder / TOKENIZER_FILE).is_file():
        raise ValueError(f"cannot resume: {str(folder)!r} lacks {TOKENIZER_FILE}")
    state = load_train_state(paths[-1])
    tokenizer = load_tokenizer(folder / TOKENIZER_FILE)
    model_config = ModelConfig.from_dict(state["config"])
    saved_preset = saved.get("preset") or DEFAULT_PRESET
    _check_same_model(model_config, preset, saved_preset, model_options)
    training = _settings(saved, "training", TranslationConfig.from_dict, folder).to_dict()
    if config != TranslationConfig():
        training.update(max_steps=config.max_steps, max_minutes=config.max_minutes)
    if "vocab_size" in changes and changes["vocab_size"] != training["vocab_size"]:
        raise Refusal(f"vocab_size={changes['vocab_size']} differs from the run's "
                      f"{training['vocab_size']}: the tokenizer is trained; drop vocab_size, "
                      "or start a new run with overwrite=True", "vocab_size", "overwrite")
    training.update(changes)
    if "max_minutes" not in changes and not config.max_minutes:
        training["max_minutes"] = None  # a time limit is for one call
    run_options = _settings(saved, "options", lambda d: RunOptions(**{**RUN_OPTIONS, **{
        k: v for k, v in d.items() if k in RUN_OPTIONS}, **options}), folder)
    restart = _data_changed(saved.get("data"), fingerprint, new_data)
    return Prepared(saved_preset, model_config, TranslationConfig(**training), run_options,
                    tokenizer, state, restart)


def _same_tokenizer(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def load_translator(
    run: str | os.PathLike[str], checkpoint: str = "averaged", device: str = "cpu"
) -> tuple[EncoderDecoder, SharedTokenizer]:
    """The trained model and tokenizer of a run folder.

    Args:
        run: the folder `train_translation` wrote.
        checkpoint: `"averaged"` (the final model, `model.pt`) or `"last"` (the newest training
            checkpoint, before averaging).
        device: `"cpu"`, `"cuda"` or `"auto"` (see `resolve_device`).

    Returns:
        `(model, tokenizer)`, the model in eval mode.

    Raises:
        ValueError: if `run` is not a trained run folder, `tokenizer.json` holds parts that
            training never writes, or `model.pt` does not hold the tokenizer it was trained
            with, or holds another one than `tokenizer.json`.
    """
    path = Path(os.fspath(run))
    if checkpoint not in ("averaged", "last"):
        raise ValueError(f"checkpoint must be 'averaged' or 'last', got {checkpoint!r}")
    target = resolve_device(device)
    if not path.is_dir():
        raise ValueError(f"{str(path)!r} is not a trained model: no such folder")
    if not (path / TOKENIZER_FILE).is_file() or not (path / MODEL_FILE).is_file():
        raise ValueError(f"{str(path)!r} is not a trained model: it lacks {TOKENIZER_FILE} or "
                         f"{MODEL_FILE} (train one with 'translate train --out {path}')")
    tokenizer_path, model_path = str(path / TOKENIZER_FILE), str(path / MODEL_FILE)
    try:
        model, metadata = load_checkpoint(path / MODEL_FILE)
    except (OSError, ValueError) as error:
        reason = " ".join(str(error).split())
        raise ValueError(f"{model_path!r} is not a model checkpoint ({reason})") from None
    embedded = metadata.get("tokenizer")
    if not isinstance(embedded, str):
        raise ValueError(f"{model_path!r} does not hold the tokenizer it was trained with, so "
                         f"{TOKENIZER_FILE} cannot be checked against it")
    tokenizer = load_tokenizer(path / TOKENIZER_FILE)
    if not _same_tokenizer(embedded, tokenizer.tokenizer.to_str()):
        raise ValueError(f"{tokenizer_path!r} is not the tokenizer {model_path!r} was trained "
                         "with; restore the run's own tokenizer.json")
    if tokenizer.vocab_size > model.config.src_vocab:
        raise ValueError(f"{tokenizer_path!r} has {tokenizer.vocab_size} ids but the model "
                         f"only {model.config.src_vocab}")
    if checkpoint == "last":
        paths = checkpoint_paths(path)
        if not paths:
            raise ValueError(f"{str(path)!r} has no training checkpoints")
        load_model_state(model, load_train_state(paths[-1])["model"], str(paths[-1]))
    return model.to(target).eval(), tokenizer

