r"""Training a translator with the paper's whole recipe, resumable to the step.

A shared byte-pair vocabulary (section 5.1), batches of about `max_tokens` tokens (5.1), Adam
with $\beta = (0.9, 0.98)$, $\epsilon = 10^{-9}$ and the warm-up schedule (5.3), label smoothing
0.1 (5.4), and at the end the average of the last $k$ checkpoints (6.1):

$$\theta_{avg} = \frac{1}{k} \sum_{i=1}^{k} \theta_{(i)}$$

Every checkpoint holds the model, the optimizer, the schedule, the random state and the
position in the data, and is written atomically, so a resumed run continues exactly where the
uninterrupted one would be. The run folder has one writer at a time and is never replaced
unless asked ([`run_folder`][vanilla_transformer.training.run_folder]); a loss or gradient that
is not finite stops the run before it reaches a file.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._checks import check_non_negative_int, check_positive_int
from .._io import atomic_torch_save
from ..data.batching import Batch
from ..data.corpus import StreamingTokenBatches, iter_tsv, sample_tsv, tokenize_corpus
from ..data.token_batches import epoch_order, make_token_batches
from ..data.tokenizer import BOS, EOS, PAD, SharedTokenizer, train_tokenizer
from ..inference.evaluate import score_translations, translate_sentences
from ..model.config import PAPER_OPTIONS, PRESETS, ModelConfig
from ..model.encoder_decoder import make_model_from_config
from ._ranks import ProcessZeroError, Ranks, join
from .checkpoints import (
    check_weights_fit_config,
    load_checkpoint,
    load_model_state,
    model_state,
    save_checkpoint,
)
from .distributed import _leave_group
from .loop import TrainingDiverged, TrainState, run_epoch
from .loss import SimpleLossCompute, label_smoothed_kl
from .run_folder import (
    BEST_FILE,
    CHECKPOINTS,
    CONFIG_FILE,
    IDS_FOLDER,
    METRICS_FILE,
    MODEL_FILE,
    TENSORBOARD_FOLDER,
    TOKENIZER_FILE,
    RunLock,
    check_folder,
    checkpoint_paths,
    clear_run,
    file_fingerprint,
    metrics_writer,
    read_run_config,
    remove_stale_temporaries,
    write_json,
)
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
    "BEST_METRICS",
    "DEVICES",
    "AMP_MODES",
    "auto_bleu_tokenize",
    "resolve_device",
    "RUN_OPTIONS",
    "amp_context",
]


TRANSLATION_PRESETS: dict[str, dict[str, Any]] = {
    "paper-small": dict(N=2, d_model=64, d_ff=256, h=4, dropout=0.1, **PAPER_OPTIONS),
    **PRESETS,
}
"""Model sizes for translation: `paper-small`, the paper's arrangement (post-norm, tied
weights, no generator bias, `nn.LayerNorm`, no dropout on the attention weights or inside the
feed-forward network) at a size whose default run of 1200 steps took about two minutes on 2 CPU
cores in our runs (`benchmarks/results/translate_numbers.json`), and the package's `PRESETS`
(`paper-base`, `paper-big`, `base`, `big`)."""

DEFAULT_PRESET = "paper-small"

TRAIN_STATE_FORMAT = "vanilla-transformer-train-state"
"""The `format` field of the training checkpoints in `RUN/checkpoints/`."""

BEST_METRICS = ("exact", "bleu", "chrf")
"""Validation scores `keep_best` can select the final model by."""

DEVICES = ("auto", "cpu", "cuda")
"""Where a run trains or decodes: `auto` is `cuda` when a GPU is available, else `cpu`."""

AMP_MODES = ("off", "bf16", "fp16")
"""Mixed precision: `off` (float32), bfloat16, or float16 (with loss scaling, CUDA only)."""



TOKENIZER_SAMPLE = 100_000
"""Pairs of a TSV file the tokenizer of a new run learns from (`sample_tsv`)."""

RUN_OPTIONS: dict[str, Any] = dict(log_every=10, keep_best=False, best_metric="exact",
                                   patience=None, tensorboard=False)
"""What a run records and keeps, beside the recipe (`TranslationConfig`), with their defaults:
`log_every`, the steps between the lines of `metrics.jsonl` (loss, learning rate, speed);
`keep_best`, make the final model the checkpoint with the best validation score instead of the
average of the last ones; `best_metric`, the score `keep_best` and `patience` follow (one of
`BEST_METRICS`); `patience`, stop after this many validations without a better score (`None`:
never); `tensorboard`, also write what goes to `metrics.jsonl` as TensorBoard scalars in
`RUN/tensorboard/` (needs the `tensorboard` package). Pass them in
`train_translation(changes=...)`; a run saves them in `config.json`."""


def _check_run_options(options: dict[str, Any], eval_size: int) -> dict[str, Any]:
    check_positive_int("log_every", options["log_every"])
    if not isinstance(options["keep_best"], bool):
        raise TypeError(f"keep_best must be a bool, got {options['keep_best']!r}")
    if options["best_metric"] not in BEST_METRICS:
        raise ValueError(f"best_metric must be one of {BEST_METRICS}, got "
                         f"{options['best_metric']!r}")
    if options["patience"] is not None:
        check_positive_int("patience", options["patience"])
    if not isinstance(options.get("tensorboard", False), bool):
        raise TypeError(f"tensorboard must be a bool, got {options['tensorboard']!r}")
    if options.get("tensorboard"):
        importlib.import_module("torch.utils.tensorboard")  # the package is missing: say so now
    if (options["keep_best"] or options["patience"] is not None) and eval_size == 0:
        raise ValueError("keep_best and patience need validation scores: eval_size must be "
                         "positive, got 0")
    return options


@dataclass(frozen=True)
class TranslationConfig:
    r"""How a translator is trained (the model's sizes are a `ModelConfig`).

    Each field's `metadata["help"]` is its help on the command line (`translate train`).

    Args:
        vocab_size: the shared byte-pair vocabulary's size.
        max_tokens: padded tokens per batch (section 5.1 uses about 25000 per language).
        accum_iter: batches whose gradients make one optimizer step (on each process of a
            distributed run): `max_tokens * accum_iter * processes` tokens per step.
        warmup: warm-up steps of the learning-rate schedule.
        factor: the schedule's scale.
        smoothing: label smoothing $\epsilon_{ls}$ (the paper: 0.1).
        max_steps: optimizer steps in all (a resumed run counts the steps before it).
        max_minutes: stop after this many minutes of this call (a checkpoint is written).
        save_every: steps between checkpoints (each one validates).
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

    vocab_size: int = field(default=250, metadata={
        "help": "size of the shared byte-pair vocabulary"})
    max_tokens: int = field(default=1500, metadata={"help": "padded tokens per batch"})
    accum_iter: int = field(default=1, metadata={
        "help": "batches per optimizer step (per process when distributed)"})
    warmup: int = field(default=400, metadata={
        "help": "warm-up steps of the learning-rate schedule"})
    factor: float = field(default=1.0, metadata={"help": "scale of the learning-rate schedule"})
    smoothing: float = field(default=0.1, metadata={"help": "label smoothing epsilon"})
    max_steps: int = field(default=1200, metadata={
        "help": "optimizer steps in all, resumed ones included"})
    max_minutes: float | None = field(default=None, metadata={
        "help": "stop after this many minutes of this call, with a checkpoint"})
    save_every: int = field(default=100, metadata={
        "help": "steps between checkpoints; each one validates"})
    average: int = field(default=5, metadata={
        "help": "how many of the last checkpoints are averaged into model.pt"})
    eval_size: int = field(default=200, metadata={
        "help": "validation sentences decoded at each checkpoint"})
    seed: int = field(default=0, metadata={
        "help": "seed of the initial weights, the dropout and the batch order"})

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_tokens", "accum_iter", "warmup", "max_steps",
                     "save_every", "average"):
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
        """Rebuild from `to_dict`'s output; missing keys keep their defaults.

        Raises:
            ValueError: for a key that is not a field, naming it and the fields.

        Examples:
            >>> TranslationConfig.from_dict({"max_step": 10})  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: unknown TranslationConfig settings ['max_step']; expected some of ...
        """
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown TranslationConfig settings {unknown}; expected some of "
                             f"{known}")
        return cls(**data)


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
        history: one dict per checkpoint: `step`, `seconds`, `loss`, and on the first
            `eval_size` validation pairs, greedy-decoded, `valid_exact` (exact match in
            percent), `valid_bleu` and `valid_chrf`.
        seconds: training time in all, resumed runs included.
        averaged: the steps of the checkpoints averaged into `model`.
        stopped: why training ended before `max_steps`: `""` (it did not), `"interrupted"`
            (`should_stop` said so), `"time"` (`max_minutes`) or `"patience"`.
        skipped: training pairs left out because they do not fit the positional table.
    """

    model: nn.Module
    tokenizer: SharedTokenizer
    out: Path
    step: int
    losses: list[float]
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    averaged: list[int] = field(default_factory=list)
    stopped: str = ""
    skipped: int = 0


def resolve_device(device: str | torch.device) -> torch.device:
    """The device `device` names: `"auto"` is CUDA when available, else the CPU.

    Raises:
        ValueError: for an unknown name, or `"cuda"` on a machine without a GPU.

    Examples:
        >>> resolve_device("cpu")
        device(type='cpu')
    """
    if isinstance(device, torch.device):
        return device
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for, but PyTorch sees no CUDA GPU here; use "
                         "'cpu' or 'auto'")
    return torch.device(device)


def amp_context(device: torch.device, amp: str) -> contextlib.AbstractContextManager[Any]:
    """The autocast context of a mixed-precision mode (`AMP_MODES`) on `device`.

    Raises:
        ValueError: for an unknown mode, or `fp16` off CUDA.

    Examples:
        >>> with amp_context(torch.device("cpu"), "bf16"):
        ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
        torch.bfloat16
    """
    if amp not in AMP_MODES:
        raise ValueError(f"amp must be one of {AMP_MODES}, got {amp!r}")
    if amp == "off":
        return contextlib.nullcontext()
    if amp == "fp16" and device.type != "cuda":
        raise ValueError("amp 'fp16' needs a CUDA device (float16 on the CPU is slow and needs "
                         "loss scaling); use 'bf16' or 'off'")
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def auto_bleu_tokenize(references: Sequence[str]) -> str:
    """sacrebleu's BLEU tokenizer for `references`: `char` when they average fewer than four
    words (word 4-grams would not exist), else its default `13a`.

    Examples:
        >>> auto_bleu_tokenize(["vierhunderteins", "zwei"]), auto_bleu_tokenize(["a b c d e"])
        ('char', '13a')
    """
    if not references:
        return "13a"
    words = sum(len(r.split()) for r in references) / len(references)
    return "char" if words < 4 else "13a"


def load_train_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a training checkpoint with `torch.load(weights_only=True)`.

    Raises:
        ValueError: if the file is not a training checkpoint, or its weights do not fit its
            configuration.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated or foreign file; torch's warning kept in full
        reason = " ".join(str(error).split())
        raise ValueError(f"{os.fspath(path)}: not a readable checkpoint ({reason})") from None
    if not isinstance(state, dict) or state.get("format") != TRAIN_STATE_FORMAT:
        raise ValueError(f"{os.fspath(path)}: not a training checkpoint")
    if not isinstance(state.get("config"), dict) or not isinstance(state.get("model"), dict):
        raise ValueError(f"{os.fspath(path)}: an incomplete training checkpoint")
    check_weights_fit_config(ModelConfig.from_dict(state["config"]), state["model"],
                             os.fspath(path))
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


def _same_tokenizer(a: str, b: str) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except ValueError:
        return a == b


def load_translator(
    run: str | os.PathLike[str], checkpoint: str = "averaged", device: str = "cpu"
) -> tuple[nn.Module, SharedTokenizer]:
    """The trained model and tokenizer of a run folder.

    Args:
        run: the folder `train_translation` wrote.
        checkpoint: `"averaged"` (the final model, `model.pt`) or `"last"` (the newest training
            checkpoint, before averaging).
        device: `"cpu"`, `"cuda"` or `"auto"` (see `resolve_device`).

    Returns:
        `(model, tokenizer)`, the model in eval mode.

    Raises:
        ValueError: if `run` is not a trained run folder, or `model.pt` was trained with a
            different tokenizer from `tokenizer.json`.
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
    tokenizer = SharedTokenizer.load(path / TOKENIZER_FILE)
    try:
        model, metadata = load_checkpoint(path / MODEL_FILE)
    except (OSError, ValueError) as error:
        reason = " ".join(str(error).split())
        raise ValueError(f"{str(path / MODEL_FILE)!r} is not a model checkpoint ({reason})"
                         ) from None
    embedded = metadata.get("tokenizer")
    if isinstance(embedded, str) and not _same_tokenizer(embedded,
                                                         tokenizer.tokenizer.to_str()):
        raise ValueError(f"{str(path / TOKENIZER_FILE)!r} is not the tokenizer "
                         f"{str(path / MODEL_FILE)!r} was trained with; restore the run's own "
                         "tokenizer.json")
    if tokenizer.vocab_size > model.config.src_vocab:
        raise ValueError(f"{str(path / TOKENIZER_FILE)!r} has {tokenizer.vocab_size} ids but "
                         f"the model only {model.config.src_vocab}")
    if checkpoint == "last":
        paths = checkpoint_paths(path)
        if not paths:
            raise ValueError(f"{str(path)!r} has no training checkpoints")
        load_model_state(model, load_train_state(paths[-1])["model"], str(paths[-1]))
    return model.to(target).eval(), tokenizer


def _save_state(path: Path, **state: Any) -> None:
    atomic_torch_save({"format": TRAIN_STATE_FORMAT, "version": 2, **state}, path)


def _pairs_fingerprint(pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Size and SHA-256 of `pairs` written as TSV text (what `write_tsv` would write)."""
    digest, size = hashlib.sha256(), 0
    for src, tgt in pairs:
        line = f"{src}\t{tgt}\n".encode()
        digest.update(line)
        size += len(line)
    return {"size": size, "sha256": digest.hexdigest()}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _fits(pair: tuple[list[int], list[int]], max_len: int) -> bool:
    # the source gets </s>, the target <s> (decoder input) or </s> (label)
    return len(pair[0]) + 1 <= max_len and len(pair[1]) + 1 <= max_len


def _training_batches(
    train: Sequence[tuple[str, str]] | Path,
    ids: Callable[[Sequence[tuple[str, str]]], list[tuple[list[int], list[int]]]],
    tokenizer: SharedTokenizer,
    folder: Path,
    max_len: int,
    config: TranslationConfig,
    resume: bool,
    log: Callable[[str], None],
) -> tuple[int, Callable[[int, int], Batch], int]:
    """`(batches per epoch, batch at (epoch, position), pairs skipped)` of the training data.

    Pairs in memory are encoded and batched at once (`make_token_batches`); a TSV file is
    tokenised into `folder/ids/` and batched lazily (`StreamingTokenBatches`): the same batches
    in the same order. Pairs that do not fit `max_len` positions are left out either way.
    """
    def refuse(total: int) -> None:
        raise ValueError(f"no training pair fits the positional table of {max_len} positions "
                         f"(max_len); all {total} are longer")

    if isinstance(train, Path):
        corpus = tokenize_corpus(train, tokenizer, folder / IDS_FOLDER)
        total = len(corpus)
        # the source gets </s>, the target <s> (decoder input) or </s> (label)
        fits = (corpus.src_lengths() + 1 <= max_len) & (corpus.tgt_lengths() + 1 <= max_len)
        keep = fits.nonzero().flatten()
        if len(keep) == 0:
            if not resume:  # a refused new run leaves its folder as it found it
                shutil.rmtree(folder / IDS_FOLDER, ignore_errors=True)
            refuse(total)
        stream = StreamingTokenBatches(corpus, config.max_tokens, pad=PAD, bos=BOS, eos=EOS,
                                       seed=config.seed, keep=keep)
        n_batches, batch_at, skipped = stream.batches_in_epoch(), stream.batch, total - len(keep)
    else:
        encoded = ids(train)
        total = len(encoded)
        kept = [pair for pair in encoded if _fits(pair, max_len)]
        if not kept:
            refuse(total)
        batches = make_token_batches(kept, config.max_tokens, pad=PAD, bos=BOS, eos=EOS)
        orders: dict[int, list[int]] = {}

        def batch_at(epoch: int, position: int) -> Batch:
            if epoch not in orders:
                orders.clear()
                orders[epoch] = epoch_order(len(batches), config.seed, epoch)
            return batches[orders[epoch][position]]

        n_batches, skipped = len(batches), total - len(kept)
    if skipped:
        log(f"skipped {skipped} of {total} training pairs: longer than the positional "
            f"table's {max_len} positions")
    return n_batches, batch_at, skipped


def train_translation(
    train_pairs: Sequence[tuple[str, str]] | str | os.PathLike[str],
    valid_pairs: Sequence[tuple[str, str]],
    out: str | os.PathLike[str],
    *,
    preset: str | None = None,
    model_options: dict[str, Any] | None = None,
    config: TranslationConfig | None = None,
    changes: Mapping[str, Any] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    new_data: bool = False,
    data_fingerprint: Mapping[str, Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
    device: str = "cpu",
    amp: str = "off",
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    distributed: bool = False,
    timeout: float = 1800.0,
) -> TranslationRun:
    """Train a translator on `(source, target)` sentence pairs, writing the run to `out`.

    `out` receives `tokenizer.json`, `config.json`, `metrics.jsonl` (one JSON line every
    `log_every` steps and one per validation), `checkpoints/step-*.pt` (every `save_every`
    steps and at the end; the last `average` are kept) and `model.pt`, the average of the kept
    checkpoints (a `save_checkpoint` file), or with `keep_best` the best-scoring checkpoint.

    A new run needs an empty (or missing) folder, unless `overwrite`, which removes the old
    run's files first. One process at a time may write a folder (a lock file names it). With
    `resume=True` the run continues from its newest checkpoint with the saved tokenizer, model
    and settings; `changes` (and, from `config`, `max_steps` and `max_minutes`) replace saved
    settings. Training pairs that do not fit the model's positional table are left out and
    counted.

    Given the path of a `source<TAB>target` file instead of pairs, the run streams it: a new
    run's tokenizer learns from `TOKENIZER_SAMPLE` pairs drawn from it (`sample_tsv`), the
    file is tokenised once into `out/ids/` (`tokenize_corpus`, reused on resume while the file
    and the tokenizer are the same), and the batches are collated one at a time
    (`StreamingTokenBatches`): the same batches, in the same order, as for its pairs in memory.

    With `distributed`, call it in every process of a `torchrun` job: the processes train one
    run with `DistributedDataParallel` (NCCL on `cuda:LOCAL_RANK` with `device="cuda"`, gloo on
    the CPU). Each optimizer step takes `accum_iter * processes` consecutive batches, and every
    loss is divided by the target tokens of them all, so K processes compute the steps one
    process computes with K times `accum_iter`, apart from the dropout masks, which differ per
    process. Process 0 owns the folder: it checks it,
    prepares the tokenizer and the ids, validates and writes; the others read what it prepared.

    Args:
        train_pairs: training pairs, or the path of a TSV file of them.
        valid_pairs: validation pairs (the first `eval_size` are decoded at each checkpoint).
        out: the run folder (created if needed).
        preset: a key of `TRANSLATION_PRESETS` (default `DEFAULT_PRESET`; on resume, if given,
            it must be the run's).
        model_options: `ModelConfig` fields that override the preset's (on resume, each must
            equal the run's).
        config: training settings (default `TranslationConfig()`).
        changes: `TranslationConfig` fields and `RUN_OPTIONS` to change (on resume: the saved
            settings are kept otherwise; `vocab_size` cannot change).
        resume: continue the run in `out`.
        overwrite: replace the run in `out` with a new one.
        new_data: on resume, accept training pairs that differ from the run's (their
            fingerprint is checked otherwise); the data position restarts at a new epoch.
        data_fingerprint: `{"size", "sha256"}` of the training file, to store and check on
            resume (default: computed from `train_pairs`, or read from the file in chunks).
        should_stop: called after every step; when it returns true the run writes a
            checkpoint and the final model and returns with `stopped="interrupted"`.
        device: `"cpu"`, `"cuda"` or `"auto"`.
        amp: mixed precision, one of `AMP_MODES`.
        progress: show a tqdm progress bar on stderr.
        log: called with one line at each checkpoint (default: nothing).
        distributed: train as one process of a `torchrun` job (see above).
        timeout: with `distributed`, seconds a process waits for the others (validation
            runs on process 0 while the others wait).

    Returns:
        The [`TranslationRun`][vanilla_transformer.training.translation.TranslationRun].

    Raises:
        ValueError: before any training, for an unknown preset, no pairs, a folder that cannot
            be written, is not empty, or is being written by another process, or a resume that
            does not fit the run (no checkpoint, another model, other data).
        TrainingDiverged: if a loss or a gradient is not finite; the step is named, and no
            file is written from it.

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
    if preset is not None and preset not in TRANSLATION_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(TRANSLATION_PRESETS)}")
    if isinstance(train_pairs, (str, os.PathLike)):
        train_pairs = Path(os.fspath(train_pairs))
        if not train_pairs.is_file():
            next(iter_tsv(train_pairs))  # raises the file's error
    elif len(train_pairs) == 0:
        raise ValueError("train_pairs must hold at least one pair")
    if len(valid_pairs) == 0:
        raise ValueError("valid_pairs must hold at least one pair")
    if resume and overwrite:
        raise ValueError("resume and overwrite exclude each other: continue the run or "
                         "replace it")
    target = resolve_device(device)
    amp_context(target, amp)  # checks amp
    config = TranslationConfig() if config is None else config
    changes = dict(changes or {})
    unknown = set(changes) - {f.name for f in fields(TranslationConfig)} - set(RUN_OPTIONS)
    if unknown:
        raise ValueError(f"changes holds unknown settings {sorted(unknown)}; expected fields of "
                         f"TranslationConfig or {sorted(RUN_OPTIONS)}")
    options = {k: changes.pop(k) for k in list(changes) if k in RUN_OPTIONS}
    if not resume:
        config = TranslationConfig(**{**config.to_dict(), **changes})
        _check_run_options({**RUN_OPTIONS, **options}, config.eval_size)
    if data_fingerprint:
        fingerprint = dict(data_fingerprint)
    elif isinstance(train_pairs, Path):
        fingerprint = {"path": str(train_pairs.resolve()), **file_fingerprint(train_pairs)}
    else:
        fingerprint = _pairs_fingerprint(train_pairs)
    path = Path(os.fspath(out))
    ranks, owns_group, target = join(distributed, timeout, target)
    common = dict(preset=preset, model_options=model_options or {}, config=config,
                  changes=changes, options=options, resume=resume, overwrite=overwrite,
                  new_data=new_data, fingerprint=fingerprint, should_stop=should_stop,
                  device=target, amp=amp, ranks=ranks)
    together = False  # true where every process stops at once: then they meet at a barrier
    try:
        if ranks.rank > 0:  # the others wait for process 0 to prepare the folder, then read it
            prepared = ranks.share(None)
            if prepared["error"]:
                together = True
                raise ProcessZeroError(prepared["error"])
            run = _train_locked(train_pairs, valid_pairs, path, **common, progress=False,
                                log=lambda line: None, restart_data=prepared["restart_data"])
        else:
            try:
                run = _train_first(train_pairs, valid_pairs, path, common, progress, log)
            except ValueError as error:
                if ranks.size > 1 and not ranks.shared:  # a refused run: the others stop too
                    ranks.share({"error": str(error), "restart_data": False})
                    together = True
                raise
        together = True
        return run
    finally:
        if owns_group:
            _leave_group(together)


def _train_first(
    train_pairs: Sequence[tuple[str, str]] | Path,
    valid_pairs: Sequence[tuple[str, str]],
    path: Path,
    common: dict[str, Any],
    progress: bool,
    log: Callable[[str], None] | None,
) -> TranslationRun:
    """Process 0's part (the only one without `distributed`): own the folder, then train."""
    check_folder(path, resume=common["resume"], overwrite=common["overwrite"])
    created = not path.exists()
    try:
        (path / CHECKPOINTS).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create output folder {str(path)!r}: "
                         f"{error.strerror or error}") from None
    if not os.access(path, os.W_OK) or not os.access(path / CHECKPOINTS, os.W_OK):
        raise ValueError(f"output folder {str(path)!r} is not writable")
    try:
        with RunLock(path):
            for tmp in remove_stale_temporaries(path):
                (log or print)(f"removed {tmp}, a file left by an interrupted save")
            return _train_locked(train_pairs, valid_pairs, path, **common, progress=progress,
                                 log=log or (lambda line: None))
    except ValueError:
        untouched = [p.name for p in path.iterdir()] == [CHECKPOINTS] and not any(
            (path / CHECKPOINTS).iterdir())
        if created and untouched:  # refused before any work: leave no empty folder behind
            shutil.rmtree(path)
        raise


def _resumed(
    folder: Path,
    *,
    preset: str | None,
    model_options: dict[str, Any],
    config: TranslationConfig,
    changes: dict[str, Any],
    options: dict[str, Any],
    fingerprint: dict[str, Any],
    new_data: bool,
) -> tuple[dict[str, Any], SharedTokenizer, ModelConfig, TranslationConfig, dict[str, Any],
           str | None, bool]:
    """What a resumed run continues with: `(state, tokenizer, model_config, config, options,
    preset, data_changed)`, after refusing a flag that would change the saved model or data."""
    saved = read_run_config(folder)
    paths = checkpoint_paths(folder)
    if not paths:
        raise ValueError(f"cannot resume: {str(folder)!r} holds no training checkpoint yet "
                         "(the run stopped before its first one); start it again with "
                         "--overwrite")
    if not (folder / TOKENIZER_FILE).is_file():
        raise ValueError(f"cannot resume: {str(folder)!r} lacks {TOKENIZER_FILE}")
    state = load_train_state(paths[-1])
    tokenizer = SharedTokenizer.load(folder / TOKENIZER_FILE)
    model_config = ModelConfig.from_dict(state["config"])
    saved_preset = saved.get("preset")
    if preset is not None and saved_preset is not None and preset != saved_preset:
        raise ValueError(f"--preset {preset} differs from the run's {saved_preset}; a "
                         "resumed run keeps its model (drop --preset, or start a new run "
                         "with --overwrite)")
    preset = saved_preset
    for name, value in model_options.items():
        if getattr(model_config, name) != value:
            raise ValueError(f"{_flag(name)} {value} differs from the run's "
                             f"{getattr(model_config, name)}; a resumed run keeps its "
                             f"model (drop {_flag(name)}, or start a new run with "
                             "--overwrite)")
    training = TranslationConfig.from_dict(saved["training"]).to_dict()
    if config is not None and config != TranslationConfig():
        training.update(max_steps=config.max_steps, max_minutes=config.max_minutes)
    if "vocab_size" in changes and changes["vocab_size"] != training["vocab_size"]:
        raise ValueError(f"--vocab-size {changes['vocab_size']} differs from the run's "
                         f"{training['vocab_size']}: the tokenizer is trained; drop "
                         "--vocab-size, or start a new run with --overwrite")
    training.update(changes)
    training.setdefault("max_minutes", None)
    if "max_minutes" not in changes and not (config and config.max_minutes):
        training["max_minutes"] = None  # a time limit is for one call
    config = TranslationConfig(**training)
    options = {**RUN_OPTIONS, **(saved.get("options") or {}), **options}
    saved_data = saved.get("data")
    data_changed = isinstance(saved_data, dict) and (
        (saved_data.get("size"), saved_data.get("sha256"))
        != (fingerprint.get("size"), fingerprint.get("sha256")))
    if data_changed and not new_data:
        raise ValueError(
            f"the training data differ from the run's (it trained on "
            f"{saved_data.get('size')} bytes, sha256 {str(saved_data.get('sha256'))[:12]}; "
            f"these are {fingerprint.get('size')} bytes, sha256 "
            f"{str(fingerprint.get('sha256'))[:12]}); pass --new-data to continue on them")
    return state, tokenizer, model_config, config, options, preset, data_changed


def _train_locked(
    train_pairs: Sequence[tuple[str, str]] | Path,
    valid_pairs: Sequence[tuple[str, str]],
    folder: Path,
    *,
    preset: str | None,
    model_options: dict[str, Any],
    config: TranslationConfig,
    changes: dict[str, Any],
    options: dict[str, Any],
    resume: bool,
    overwrite: bool,
    new_data: bool,
    fingerprint: dict[str, Any],
    should_stop: Callable[[], bool] | None,
    device: torch.device,
    amp: str,
    progress: bool,
    log: Callable[[str], None],
    ranks: Ranks,
    restart_data: bool = False,
) -> TranslationRun:
    state: dict[str, Any] | None = None
    if ranks.rank > 0:  # what process 0 prepared and wrote
        saved = read_run_config(folder)
        tokenizer = SharedTokenizer.load(folder / TOKENIZER_FILE)
        model_config = ModelConfig.from_dict(saved["model"])
        config = TranslationConfig.from_dict(saved["training"])
        options, preset = saved["options"], saved["preset"]
        paths = checkpoint_paths(folder)
        state = load_train_state(paths[-1]) if resume and paths else None
    elif resume:
        state, tokenizer, model_config, config, options, preset, restart_data = _resumed(
            folder, preset=preset, model_options=model_options, config=config,
            changes=changes, options=options, fingerprint=fingerprint, new_data=new_data)
        log(f"resuming from step {state['step']} of {config.max_steps}")
    else:
        if overwrite:
            clear_run(folder)
            (folder / CHECKPOINTS).mkdir(exist_ok=True)
        preset = preset or DEFAULT_PRESET
        options = {**RUN_OPTIONS, **options}
        sizes = {**TRANSLATION_PRESETS[preset], **model_options}
        sample = (sample_tsv(train_pairs, TOKENIZER_SAMPLE, seed=config.seed)
                  if isinstance(train_pairs, Path) else train_pairs)
        tokenizer = train_tokenizer([s for pair in sample for s in pair], config.vocab_size)
        del sample
        vocab = tokenizer.vocab_size
        model_config = ModelConfig(src_vocab=vocab, tgt_vocab=vocab, **sizes)
    settings = _check_run_options(options, config.eval_size)
    data_info = {k: fingerprint.get(k) for k in ("path", "size", "sha256") if k in fingerprint}
    run_config = {"preset": preset, "model": model_config.to_dict(),
                  "training": config.to_dict(), "options": settings, "data": data_info}

    def ids(pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        src = tokenizer.encode_batch([s for s, _ in pairs])
        tgt = tokenizer.encode_batch([t for _, t in pairs])
        return list(zip(src, tgt))

    n_batches, batch_at, skipped = _training_batches(train_pairs, ids, tokenizer, folder,
                                                     model_config.max_len, config, resume, log)
    valid = [pair for pair, encoded_pair in zip(valid_pairs, ids(valid_pairs))
             if len(encoded_pair[0]) + 1 + 50 < model_config.max_len][: config.eval_size]

    if ranks.rank == 0:
        if not resume:  # written only now: nothing is written for a run refused above
            tokenizer.save(folder / TOKENIZER_FILE)
        write_json(folder / CONFIG_FILE, run_config)
        if ranks.size > 1:
            ranks.share({"error": None, "restart_data": restart_data})
            ranks.shared = True

    torch.manual_seed(config.seed)  # the same initial weights on every process
    model = make_model_from_config(model_config)
    if ranks.rank > 0:
        torch.manual_seed(config.seed + ranks.rank)  # other dropout masks than process 0's
    optimizer, scheduler = make_optimizer(model, model_config.d_model, factor=config.factor,
                                          warmup=config.warmup)
    # the label-smoothed KL of LabelSmoothing, without building a (rows, V) target
    loss_compute = SimpleLossCompute(model.generator, functools.partial(
        label_smoothed_kl, padding_idx=PAD, smoothing=config.smoothing))
    step, epoch, position, seconds = 0, 0, 0, 0.0
    losses: list[float] = []
    history: list[dict[str, Any]] = []
    if state is not None:
        load_model_state(model, state["model"], "the newest checkpoint")
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        rng = state["rng"]
        if ranks.rank == 0:
            torch.set_rng_state(rng["torch"])
        elif len(rng.get("ranks", ())) == ranks.size:
            torch.set_rng_state(rng["ranks"][ranks.rank])
        else:  # saved by a run of another size: new masks, still not process 0's
            torch.manual_seed(config.seed + ranks.rank + state["step"])
        step, epoch, position = state["step"], state["epoch"], state["position"]
        seconds = float(state["seconds"])
        losses = state["losses"].tolist()
        history = list(state["history"])
        if restart_data or position > n_batches:
            epoch, position = epoch + 1, 0
    model.to(device)
    for value in optimizer.state.values():  # Adam's moments follow the model
        for key, tensor in value.items():
            if isinstance(tensor, torch.Tensor) and key != "step":
                value[key] = tensor.to(device)
    trained: nn.Module = model
    if ranks.size > 1:
        # the generator runs outside DDP's forward; its gradients are still averaged, because
        # DDP hooks every parameter that receives a gradient in backward()
        trained = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    scaler = torch.amp.GradScaler("cuda") if amp == "fp16" else None
    metrics = (metrics_writer(folder / METRICS_FILE, step if resume else None)
               if ranks.rank == 0 else lambda entry: None)
    board = None
    if settings.get("tensorboard") and ranks.rank == 0:
        from torch.utils.tensorboard import SummaryWriter

        # a resumed run drops the events after its checkpoint, as metrics.jsonl drops its lines
        board = SummaryWriter(str(folder / TENSORBOARD_FOLDER),
                              purge_step=step + 1 if resume else None)
        write_line = metrics

        def metrics(entry: dict[str, Any]) -> None:
            write_line(entry)
            for key, value in entry.items():  # a validation's line repeats the step's loss
                if key != "step" and not (key == "loss" and "valid_exact" in entry):
                    board.add_scalar(key, value, entry["step"])
            board.flush()
    bleu_tokenize = auto_bleu_tokenize([t for _, t in valid])
    best_key = f"valid_{settings['best_metric']}"

    def best_entry() -> dict[str, Any] | None:
        scored = [h for h in history if best_key in h]
        return max(scored, key=lambda h: (h[best_key], -h["step"])) if scored else None

    def checkpoint() -> None:
        rng_states = ranks.gather(torch.get_rng_state())
        if ranks.rank > 0:
            return
        entry: dict[str, Any] = {"step": step, "seconds": round(seconds, 3),
                                 "loss": losses[-1] if losses else float("nan")}
        if valid:
            hyps = translate_sentences(model.cpu(), tokenizer, [s for s, _ in valid],
                                       beam_size=1)
            model.to(device)
            scores = score_translations(hyps, [t for _, t in valid], bleu_tokenize=bleu_tokenize)
            entry.update(valid_exact=scores.exact_match, valid_bleu=round(scores.bleu, 4),
                         valid_chrf=round(scores.chrf, 4))
        model.train()
        best_before = best_entry()
        history.append(entry)
        weights = {k: v.detach().cpu() for k, v in model_state(model).items()}
        _save_state(folder / CHECKPOINTS / f"step-{step:07d}.pt", config=model_config.to_dict(),
                    model=weights, optimizer=optimizer.state_dict(),
                    scheduler=scheduler.state_dict(),
                    rng={"torch": rng_states[0], **({"ranks": rng_states} if ranks.size > 1
                                                    else {})},
                    step=step, epoch=epoch, position=position, seconds=seconds,
                    losses=torch.tensor(losses, dtype=torch.float64), history=history)
        if settings["keep_best"] and best_key in entry and (
            best_before is None or entry[best_key] > best_before[best_key]
        ):
            save_checkpoint(folder / CHECKPOINTS / BEST_FILE, model, steps=step,
                            score={settings['best_metric']: entry[best_key]})
        for old in checkpoint_paths(folder)[:-1]:
            # a stop between saves (an interrupt, a time limit) wrote an extra checkpoint;
            # once training has gone past it, it would skew the average: drop it
            if int(old.stem.split("-")[1]) % config.save_every:
                old.unlink()
        for old in checkpoint_paths(folder)[: -config.average]:
            old.unlink()
        if valid:
            metrics({"step": step, "loss": entry["loss"], **{k: entry[k] for k in (
                "valid_exact", "valid_bleu", "valid_chrf")}})
        scores_text = (f", valid exact match {entry['valid_exact']:.1f} %, BLEU "
                       f"{entry['valid_bleu']:.1f}" if valid else "")
        log(f"step {step}: loss {entry['loss']:.4f}{scores_text} ({seconds:.0f} s)")

    def patience_spent() -> bool:
        best = best_entry()
        if settings["patience"] is None or best is None:
            return False
        later = [h for h in history if h["step"] > best["step"] and best_key in h]
        return len(later) >= settings["patience"]

    bar = None
    if progress and step < config.max_steps:
        from tqdm.auto import tqdm

        bar = tqdm(total=config.max_steps, initial=step, desc="train", unit="step")
    deadline = None if config.max_minutes is None else time.monotonic() + 60 * config.max_minutes
    start = time.perf_counter() - seconds
    stopped = ""
    # the log window: when it began, the tokens counted before it, its losses
    window = {"start": time.perf_counter(), "tokens_before": 0, "losses": []}

    def batches() -> Iterator[Batch]:
        """This process's batches from the saved position on, `accum_iter` per step, until
        `max_steps` or a stop; the position moves on before a step's last batch is yielded, so
        a checkpoint written after the step records where the next one starts."""
        nonlocal epoch, position
        done = step
        while done < config.max_steps and not stopped:
            first, first_epoch = position, epoch
            end = first + config.accum_iter * ranks.size
            epoch, position = first_epoch + end // n_batches, end % n_batches
            done += 1
            # process r takes every size-th batch of the step's, from the r-th on
            for i in range(first + ranks.rank, end, ranks.size):
                yield batch_at(first_epoch + i // n_batches, i % n_batches).to(device)

    def after_step(state: TrainState, loss: float) -> None:
        nonlocal step, seconds, stopped
        step += 1
        losses.append(loss)
        seconds = time.perf_counter() - start
        window["losses"].append(loss)
        if step % settings["log_every"] == 0:
            now = time.perf_counter()
            tokens = ranks.total(state.tokens - window["tokens_before"])
            metrics({"step": step, "loss": sum(window["losses"]) / len(window["losses"]),
                     "lr": optimizer.param_groups[0]["lr"],
                     "tokens_per_s": round(tokens / max(now - window["start"], 1e-9), 1)})
            window.update(start=now, tokens_before=state.tokens, losses=[])
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}", epoch=epoch, refresh=False)
        late, interrupted = ranks.any(  # a stop on any process stops them all, together
            deadline is not None and time.monotonic() >= deadline,
            should_stop is not None and should_stop())
        if step % config.save_every == 0 or step == config.max_steps or late or interrupted:
            if bar is not None:
                bar.clear()
            checkpoint()
        if interrupted:
            stopped = "interrupted"
        elif late:
            log(f"stopped after {config.max_minutes} minutes at step {step}")
            stopped = "time"
        elif step % config.save_every == 0 and ranks.share(patience_spent()):
            best = best_entry()
            if best is not None:  # process 0, which validates
                log(f"no better validation {settings['best_metric']} in "
                    f"{settings['patience']} validations: stopping at step {step} (best: "
                    f"step {best['step']})")
            stopped = "patience"

    model.train()
    try:
        if step < config.max_steps:
            run_epoch(batches(), trained, loss_compute, optimizer, scheduler,
                      accum_iter=config.accum_iter, progress=False, on_step=after_step,
                      autocast=amp_context(device, amp), scaler=scaler)
    except TrainingDiverged as error:
        last = checkpoint_paths(folder)
        kept_text = (f"; {folder / CHECKPOINTS} keeps step "
                     f"{int(last[-1].stem.split('-')[1])}" if last else "")
        raise TrainingDiverged(
            f"training diverged at step {step + 1}: {error.reason}; no update was made from "
            f"it and nothing was saved{kept_text}; lower the learning rate (--factor) or check "
            "the data", reason=error.reason) from None
    finally:
        if bar is not None:
            bar.close()
        if board is not None:
            board.close()
    model.cpu()
    if ranks.share(not checkpoint_paths(folder)):
        checkpoint()
    if ranks.rank > 0:  # the final model is process 0's model.pt
        problem = ranks.share(None)
        if problem:
            raise TrainingDiverged(problem)
        final, meta = load_checkpoint(folder / MODEL_FILE)
        model.load_state_dict(final.state_dict())
        return TranslationRun(model.eval(), tokenizer, folder, step, losses, history, seconds,
                              list(meta.get("averaged", [])), stopped, skipped)
    averaged, problem = _write_final_model(model, folder, tokenizer, step, config.average,
                                           settings["keep_best"])
    ranks.share(problem)
    if problem:
        raise TrainingDiverged(problem)
    return TranslationRun(model.eval(), tokenizer, folder, step, losses, history, seconds,
                          averaged, stopped, skipped)


def _write_final_model(model: nn.Module, folder: Path, tokenizer: SharedTokenizer, step: int,
                       average: int, keep_best: bool) -> tuple[list[int], str | None]:
    """Load the best checkpoint, or the average of the last `average`, into `model` and write
    it as `model.pt`: `(the steps it comes from, None)`, or `(steps, why it was not written)`."""
    best_path = folder / CHECKPOINTS / BEST_FILE
    if keep_best and best_path.is_file():
        best_model, meta = load_checkpoint(best_path)
        model.load_state_dict(best_model.state_dict())
        averaged = [int(meta["steps"])]
    else:
        kept_paths = checkpoint_paths(folder)[-average:]
        load_model_state(model, average_checkpoints(kept_paths), "the averaged checkpoints")
        averaged = [int(p.stem.split("-")[1]) for p in kept_paths]
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return averaged, (f"the final model of step {step} holds non-finite weights; "
                          f"{MODEL_FILE} was not written")
    save_checkpoint(folder / MODEL_FILE, model, steps=step, averaged=averaged,
                    tokenizer=tokenizer.tokenizer.to_str())
    return averaged, None
