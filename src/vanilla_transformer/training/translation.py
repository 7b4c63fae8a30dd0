r"""Training a translator with the paper's whole recipe, resumable to the step.

A shared byte-pair vocabulary (section 5.1), batches of about `max_tokens` tokens (5.1), Adam
with $\beta = (0.9, 0.98)$, $\epsilon = 10^{-9}$ and the warm-up schedule (5.3), label smoothing
0.1 (5.4), and at the end the average of the last $k$ checkpoints (6.1):

$$\theta_{avg} = \frac{1}{k} \sum_{i=1}^{k} \theta_{(i)}$$

Every checkpoint holds the model, the optimizer, the schedule, the random state and the
position in the data, and is written atomically, so a resumed run continues exactly where the
uninterrupted one would be.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._checks import check_non_negative_int, check_positive_int
from .._io import atomic_torch_save, atomic_write
from ..data.token_batches import epoch_order, make_token_batches
from ..data.tokenizer import BOS, EOS, PAD, SharedTokenizer, train_tokenizer
from ..inference.evaluate import score_translations, translate_sentences
from ..model.config import PAPER_OPTIONS, PRESETS, ModelConfig
from ..model.encoder_decoder import make_model_from_config
from .checkpoints import load_checkpoint, save_checkpoint
from .loss import LabelSmoothing, SimpleLossCompute
from .schedule import make_optimizer

__all__ = [
    "TRANSLATION_PRESETS",
    "DEFAULT_PRESET",
    "TRAIN_STATE_FORMAT",
    "TranslationConfig",
    "TranslationRun",
    "train_translation",
    "checkpoint_paths",
    "load_train_state",
    "average_checkpoints",
    "load_translator",
]


TRANSLATION_PRESETS: dict[str, dict[str, Any]] = {
    "paper-small": dict(N=2, d_model=64, d_ff=256, h=4, dropout=0.1, **PAPER_OPTIONS),
    **PRESETS,
}
"""Model sizes for translation: `paper-small`, the paper's arrangement (post-norm, tied
weights, no generator bias, `nn.LayerNorm`, no attention dropout) at a size that trains on a
laptop in minutes, and the package's `PRESETS` (`paper-base`, `paper-big`, `base`, `big`)."""

DEFAULT_PRESET = "paper-small"

TRAIN_STATE_FORMAT = "vanilla-transformer-train-state"
"""The `format` field of the training checkpoints in `RUN/checkpoints/`."""

MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE, CHECKPOINTS = (
    "model.pt", "tokenizer.json", "config.json", "checkpoints")


@dataclass(frozen=True)
class TranslationConfig:
    r"""How a translator is trained (the model's sizes are a `ModelConfig`).

    Args:
        vocab_size: the shared byte-pair vocabulary's size.
        max_tokens: padded tokens per batch (section 5.1 uses about 25000 per language).
        warmup: warm-up steps of the learning-rate schedule.
        factor: the schedule's scale.
        smoothing: label smoothing $\epsilon_{ls}$ (the paper: 0.1).
        max_steps: optimizer steps in all (a resumed run counts the steps before it).
        max_minutes: stop after this many minutes of this call (a checkpoint is written).
        save_every: steps between checkpoints.
        average: how many of the last checkpoints are averaged into the final model.
        eval_size: validation sentences greedy-decoded at each checkpoint.
        seed: seeds the initial weights, the dropout and the batch order.

    Raises:
        ValueError: for a value out of range. TypeError: for a value of the wrong type.

    Examples:
        >>> from vanilla_transformer.training.translation import TranslationConfig
        >>> TranslationConfig(max_steps=10).average
        5
    """

    vocab_size: int = 250
    max_tokens: int = 1500
    warmup: int = 400
    factor: float = 1.0
    smoothing: float = 0.1
    max_steps: int = 1200
    max_minutes: float | None = None
    save_every: int = 100
    average: int = 5
    eval_size: int = 200
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_tokens", "warmup", "max_steps", "save_every", "average"):
            check_positive_int(name, getattr(self, name))
        check_non_negative_int("eval_size", self.eval_size)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an int, got {self.seed!r}")
        for name in ("factor", "smoothing"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {value!r}")
        if not (math.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"factor must be positive, got {self.factor}")
        if not 0 <= self.smoothing < 1:
            raise ValueError(f"smoothing must be in [0, 1), got {self.smoothing}")
        if self.max_minutes is not None and not (
            isinstance(self.max_minutes, (int, float)) and self.max_minutes > 0
        ):
            raise ValueError(f"max_minutes must be a positive number, got {self.max_minutes!r}")

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TranslationConfig:
        """Rebuild from `to_dict`'s output, ignoring unknown keys."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class TranslationRun:
    """What [`train_translation`][vanilla_transformer.training.translation.train_translation]
    returns.

    Attributes:
        model: the final model (the average of the last checkpoints), in eval mode.
        tokenizer: the shared vocabulary.
        out: the run folder.
        step: optimizer steps done in all.
        losses: the training loss (mean per target token) of every step, resumed ones included.
        history: one dict per checkpoint: `step`, `seconds`, `loss`, `valid_exact` (greedy
            exact match in percent on the first `eval_size` validation pairs).
        seconds: training time in all, resumed runs included.
        averaged: the steps of the checkpoints averaged into `model`.
    """

    model: nn.Module
    tokenizer: SharedTokenizer
    out: Path
    step: int
    losses: list[float]
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    averaged: list[int] = field(default_factory=list)


def _prepare_folder(out: str | os.PathLike[str]) -> Path:
    """Create `out` (and `out/checkpoints`) or raise a `ValueError` saying why it cannot be."""
    path = Path(os.fspath(out))
    try:
        (path / CHECKPOINTS).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create output folder {str(path)!r}: "
                         f"{error.strerror or error}") from None
    if not os.access(path, os.W_OK) or not os.access(path / CHECKPOINTS, os.W_OK):
        raise ValueError(f"output folder {str(path)!r} is not writable")
    return path


def checkpoint_paths(out: str | os.PathLike[str]) -> list[Path]:
    """The training checkpoints of a run folder, oldest first.

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.training.translation import checkpoint_paths
        >>> checkpoint_paths(tempfile.mkdtemp())
        []
    """
    folder = Path(os.fspath(out)) / CHECKPOINTS
    return sorted(folder.glob("step-*.pt")) if folder.is_dir() else []


def load_train_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a training checkpoint with `torch.load(weights_only=True)`.

    Raises:
        ValueError: if the file is not a training checkpoint.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated or foreign file
        raise ValueError(f"{os.fspath(path)}: not a readable checkpoint ({error})") from None
    if not isinstance(state, dict) or state.get("format") != TRAIN_STATE_FORMAT:
        raise ValueError(f"{os.fspath(path)}: not a training checkpoint")
    return state


def average_checkpoints(paths: Sequence[str | os.PathLike[str]]) -> dict[str, torch.Tensor]:
    r"""The element-wise mean of the models in `paths` (section 6.1).

    Floating-point tensors are averaged in float64 and cast back; other tensors are taken from
    the last file. Training checkpoints (`model`) and `save_checkpoint` files (`state_dict`)
    both work.

    Args:
        paths: checkpoint files of the same model.

    Returns:
        A `state_dict` for `model.load_state_dict`.

    Raises:
        ValueError: if `paths` is empty or the files hold different parameters.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.training.translation import average_checkpoints
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
        data = torch.load(path, map_location="cpu", weights_only=True)
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


def load_translator(
    run: str | os.PathLike[str], checkpoint: str = "averaged"
) -> tuple[nn.Module, SharedTokenizer]:
    """The trained model and tokenizer of a run folder.

    Args:
        run: the folder `train_translation` wrote.
        checkpoint: `"averaged"` (the final model, `model.pt`) or `"last"` (the newest training
            checkpoint, before averaging).

    Returns:
        `(model, tokenizer)`, the model in eval mode.

    Raises:
        ValueError: if `run` is not a trained run folder.
    """
    path = Path(os.fspath(run))
    if checkpoint not in ("averaged", "last"):
        raise ValueError(f"checkpoint must be 'averaged' or 'last', got {checkpoint!r}")
    if not path.is_dir():
        raise ValueError(f"{str(path)!r} is not a trained model: no such folder")
    if not (path / TOKENIZER_FILE).is_file() or not (path / MODEL_FILE).is_file():
        raise ValueError(f"{str(path)!r} is not a trained model: it lacks {TOKENIZER_FILE} or "
                         f"{MODEL_FILE} (train one with 'translate train --out {path}')")
    tokenizer = SharedTokenizer.load(path / TOKENIZER_FILE)
    try:
        model, _ = load_checkpoint(path / MODEL_FILE)
    except Exception as error:
        raise ValueError(f"{str(path / MODEL_FILE)!r} is not a model checkpoint ({error})") from None
    if checkpoint == "last":
        paths = checkpoint_paths(path)
        if not paths:
            raise ValueError(f"{str(path)!r} has no training checkpoints")
        model.load_state_dict(load_train_state(paths[-1])["model"])
    return model.eval(), tokenizer


def _save_state(path: Path, **state: Any) -> None:
    atomic_torch_save({"format": TRAIN_STATE_FORMAT, "version": 1, **state}, path)


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def train_translation(
    train_pairs: Sequence[tuple[str, str]],
    valid_pairs: Sequence[tuple[str, str]],
    out: str | os.PathLike[str],
    *,
    preset: str = DEFAULT_PRESET,
    model_options: dict[str, Any] | None = None,
    config: TranslationConfig | None = None,
    resume: bool = False,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> TranslationRun:
    """Train a translator on `(source, target)` sentence pairs, writing the run to `out`.

    `out` receives `tokenizer.json`, `config.json`, `checkpoints/step-*.pt` (every
    `save_every` steps and at the end; the last `average` are kept) and `model.pt`, the
    average of the kept checkpoints (a `save_checkpoint` file). With `resume=True` the run
    continues from its newest checkpoint with the saved tokenizer and settings, except
    `max_steps` and `max_minutes`, which come from `config`.

    Args:
        train_pairs: training pairs.
        valid_pairs: validation pairs (the first `eval_size` are decoded at each checkpoint).
        out: the run folder (created if needed).
        preset: a key of `TRANSLATION_PRESETS`.
        model_options: `ModelConfig` fields that override the preset's.
        config: training settings (default `TranslationConfig()`).
        resume: continue the run in `out`.
        progress: show a tqdm progress bar on stderr.
        log: called with one line at each checkpoint (default: nothing).

    Returns:
        The [`TranslationRun`][vanilla_transformer.training.translation.TranslationRun].

    Raises:
        ValueError: for an unknown preset, no pairs, a folder that cannot be written, or
            `resume` without a checkpoint; before any training.

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.training.translation import TranslationConfig, train_translation
        >>> pairs = [("one", "eins"), ("two", "zwei"), ("three", "drei")]
        >>> cfg = TranslationConfig(vocab_size=30, max_steps=4, save_every=2, average=2,
        ...                         eval_size=2, warmup=2)
        >>> run = train_translation(pairs, pairs, tempfile.mkdtemp(), config=cfg, progress=False,
        ...                         model_options=dict(d_model=16, d_ff=32, N=1))
        >>> run.step, len(run.losses), run.averaged
        (4, 4, [2, 4])
    """
    config = TranslationConfig() if config is None else config
    if preset not in TRANSLATION_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(TRANSLATION_PRESETS)}")
    if len(train_pairs) == 0 or len(valid_pairs) == 0:
        raise ValueError("train_pairs and valid_pairs must each hold at least one pair")
    log = log or (lambda line: None)
    folder = _prepare_folder(out)
    state: dict[str, Any] | None = None
    if resume:
        paths = checkpoint_paths(folder)
        if not paths or not (folder / TOKENIZER_FILE).is_file():
            raise ValueError(f"cannot resume: {str(folder)!r} holds no checkpoint and tokenizer")
        state = load_train_state(paths[-1])
        tokenizer = SharedTokenizer.load(folder / TOKENIZER_FILE)
        saved = TranslationConfig.from_dict(json.loads((folder / CONFIG_FILE).read_text())["training"])
        config = TranslationConfig(**{**saved.to_dict(), "max_steps": config.max_steps,
                                      "max_minutes": config.max_minutes})
        model_config = ModelConfig.from_dict(state["config"])
    else:
        for old in checkpoint_paths(folder):  # a fresh run must not average stale checkpoints
            old.unlink()
        options = {**TRANSLATION_PRESETS[preset], **(model_options or {})}
        tokenizer = train_tokenizer([s for pair in train_pairs for s in pair], config.vocab_size)
        vocab = tokenizer.vocab_size
        model_config = ModelConfig(src_vocab=vocab, tgt_vocab=vocab, **options)
        tokenizer.save(folder / TOKENIZER_FILE)
        _write_json(folder / CONFIG_FILE, {"preset": preset, "model": model_config.to_dict(),
                                           "training": config.to_dict()})

    def ids(pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        src = tokenizer.encode_batch([s for s, _ in pairs])
        tgt = tokenizer.encode_batch([t for _, t in pairs])
        return list(zip(src, tgt))

    batches = make_token_batches(ids(train_pairs), config.max_tokens, pad=PAD, bos=BOS, eos=EOS)
    valid = list(valid_pairs[: config.eval_size])

    torch.manual_seed(config.seed)
    model = make_model_from_config(model_config)
    optimizer, scheduler = make_optimizer(model, model_config.d_model, factor=config.factor,
                                          warmup=config.warmup)
    loss_compute = SimpleLossCompute(
        model.generator, LabelSmoothing(model_config.tgt_vocab, PAD, config.smoothing))
    step, epoch, position, seconds = 0, 0, 0, 0.0
    losses: list[float] = []
    history: list[dict[str, Any]] = []
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"]["torch"])
        step, epoch, position = state["step"], state["epoch"], state["position"]
        seconds = float(state["seconds"])
        losses = state["losses"].tolist()
        history = list(state["history"])

    def checkpoint() -> None:
        entry: dict[str, Any] = {"step": step, "seconds": round(seconds, 3),
                                 "loss": losses[-1] if losses else float("nan")}
        if valid:
            hyps = translate_sentences(model, tokenizer, [s for s, _ in valid], beam_size=1)
            entry["valid_exact"] = score_translations(hyps, [t for _, t in valid]).exact_match
        model.train()
        history.append(entry)
        _save_state(folder / CHECKPOINTS / f"step-{step:07d}.pt", config=model_config.to_dict(),
                    model=model.state_dict(), optimizer=optimizer.state_dict(),
                    scheduler=scheduler.state_dict(), rng={"torch": torch.get_rng_state()},
                    step=step, epoch=epoch, position=position, seconds=seconds,
                    losses=torch.tensor(losses, dtype=torch.float64), history=history)
        for old in checkpoint_paths(folder)[: -config.average]:
            old.unlink()
        exact = f", valid exact match {entry['valid_exact']:.1f} %" if valid else ""
        log(f"step {step}: loss {entry['loss']:.4f}{exact} ({seconds:.0f} s)")

    bar = None
    if progress and step < config.max_steps:
        from tqdm.auto import tqdm

        bar = tqdm(total=config.max_steps, initial=step, desc="train", unit="step")
    deadline = None if config.max_minutes is None else time.monotonic() + 60 * config.max_minutes
    model.train()
    start = time.perf_counter() - seconds
    order = epoch_order(len(batches), config.seed, epoch)
    try:
        while step < config.max_steps:
            if position == len(batches):
                epoch, position = epoch + 1, 0
                order = epoch_order(len(batches), config.seed, epoch)
            batch = batches[order[position]]
            out_states = model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
            loss_sum, loss_node = loss_compute(out_states, batch.tgt_y, batch.ntokens)
            loss_node.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            step, position = step + 1, position + 1
            losses.append(float(loss_sum) / int(batch.ntokens))
            seconds = time.perf_counter() - start
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.3f}", epoch=epoch, refresh=False)
            late = deadline is not None and time.monotonic() >= deadline
            if step % config.save_every == 0 or step == config.max_steps or late:
                if bar is not None:
                    bar.clear()
                checkpoint()
            if late:
                log(f"stopped after {config.max_minutes} minutes at step {step}")
                break
    finally:
        if bar is not None:
            bar.close()
    if not checkpoint_paths(folder):
        checkpoint()
    kept = checkpoint_paths(folder)[-config.average:]
    model.load_state_dict(average_checkpoints(kept))
    averaged = [int(p.stem.split("-")[1]) for p in kept]
    save_checkpoint(folder / MODEL_FILE, model, steps=step, averaged=averaged,
                    tokenizer=tokenizer.tokenizer.to_str())
    return TranslationRun(model.eval(), tokenizer, folder, step, losses, history, seconds, averaged)
