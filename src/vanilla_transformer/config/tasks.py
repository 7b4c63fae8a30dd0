r"""What a training run is: the copy task's and the translator's settings, and how a run is kept.

Every field carries its command-line help in `metadata["help"]`; the command line builds its
options from these classes, so `--help` reads them without PyTorch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .model import PAPER_OPTIONS, PRESETS, ModelConfig, check_int, check_number, check_probability

__all__ = ["MAX_COUNT", "COPY_MODEL", "CopyTaskConfig", "TRANSLATION_PRESETS", "DEFAULT_PRESET",
           "TranslationConfig", "RunOptions", "RUN_OPTIONS", "BEST_METRICS", "DEVICES",
           "AMP_MODES", "DEFAULT_TIMEOUT", "TRANSLATE_TIMEOUT", "LOWER_IS_BETTER", "unknown_keys"]

MAX_COUNT = 2**31 - 1
"""The largest count a training setting takes (steps, batches, tokens, sentences): larger ones
overflow the 32-bit integers of the tensors they end up in, or could never finish."""

DEFAULT_TIMEOUT = 600.0
"""Seconds a training process waits for the others (to join the group, or in a collective)
before it fails, for the copy task and the translator alike: long enough for process 0 to
validate (decode `eval_size` sentences) while the others wait, and a third of PyTorch's own
30 minutes, a long time to hold a job for a process that has stalled. `timeout` (`--timeout`)
changes it."""

TRANSLATE_TIMEOUT = DEFAULT_TIMEOUT
"""The same wait as `DEFAULT_TIMEOUT`, under the name older code imports."""

COPY_MODEL = ModelConfig(11, 11, N=1, d_model=64, d_ff=256, h=4, dropout=0.0)
"""The copy task's default model: one layer per stack, which in our runs reached 100 % exact
match (`benchmarks/results/copy_task.json`), and no dropout: every batch is freshly drawn, so
no sequence is seen twice."""

_MODEL_FIELDS = frozenset(f.name for f in fields(ModelConfig))
_MODEL_KEYWORDS = _MODEL_FIELDS - {"src_vocab", "tgt_vocab"}  # set by `vocab`


def unknown_keys(cls: type, data: dict[str, Any], extra: list[str] | None = None) -> None:
    """Refuse keys of `data` that are not fields of `cls` (or in `extra`), naming them."""
    known = [f.name for f in fields(cls)] + (extra or [])
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} settings {unknown}; expected some of {known}")


def _check_counts(config: Any, names: tuple[str, ...]) -> None:
    for name in names:
        check_int(name, getattr(config, name))
        if getattr(config, name) > MAX_COUNT:
            raise ValueError(f"{name} must be at most {MAX_COUNT}, got {getattr(config, name)}")


@dataclass(frozen=True)
class CopyTaskConfig:
    r"""Everything that determines a copy-task run; in our runs the defaults reached 100 % exact
    match (seeds 0 to 4, `benchmarks/results/copy_task.json`).

    The model's hyperparameters live in `model`, a
    [`ModelConfig`][vanilla_transformer.model.config.ModelConfig] whose vocabularies are set to
    `vocab`. To change some of them, give a changed model,
    `CopyTaskConfig(model=COPY_MODEL.replace(d_model=16))`, or name them in `replace`:
    `CopyTaskConfig().replace(d_model=16)` is the same configuration. They read through:
    `config.d_model` is `config.model.d_model`.

    Args:
        vocab: vocabulary size, padding and start symbol included.
        seq_len: sequence length, start symbol included.
        model: the model's hyperparameters (`COPY_MODEL` by default); its `src_vocab` and
            `tgt_vocab` are replaced by `vocab`.
        batch_size: sequences per batch.
        steps: optimizer steps.
        accum_iter: batches per optimizer step.
        warmup: warm-up steps of the learning-rate schedule.
        factor: scale of the learning-rate schedule.
        smoothing: label smoothing $\epsilon_{ls}$ (paper section 5.4).
        seed: seed of the weights, the dropout and the training data.

    Raises:
        ValueError: for a value out of range, or a `seq_len` longer than the model's `max_len`.
        TypeError: for a value of the wrong type, or a keyword that is not a field.

    Examples:
        >>> from vanilla_transformer.config import COPY_MODEL, CopyTaskConfig
        >>> config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, h=2), vocab=7)
        >>> config.model.d_model, config.d_model, config.model.src_vocab
        (16, 16, 7)
        >>> config.replace(seed=3, N=2) == CopyTaskConfig(
        ...     model=COPY_MODEL.replace(d_model=16, h=2, N=2), vocab=7, seed=3)
        True
    """

    vocab: int = field(default=11, metadata={"help": "vocabulary size"})
    seq_len: int = field(default=10, metadata={
        "help": "sequence length, start symbol included"})
    model: ModelConfig = field(default=COPY_MODEL, metadata={
        "help": "the model's hyperparameters"})
    batch_size: int = field(default=64, metadata={
        "help": "sequences per batch (per rank when distributed)"})
    steps: int = field(default=400, metadata={"help": "optimizer steps"})
    accum_iter: int = field(default=1, metadata={"help": "batches per optimizer step"})
    warmup: int = field(default=100, metadata={"help": "learning-rate warm-up steps"})
    factor: float = field(default=1.0, metadata={"help": "learning-rate scale"})
    smoothing: float = field(default=0.1, metadata={"help": "label smoothing"})
    seed: int = field(default=0, metadata={"help": "random seed"})

    def __post_init__(self) -> None:
        _check_counts(self, ("vocab", "seq_len"))
        if self.vocab < 3:
            raise ValueError(
                f"vocab must be at least 3 (padding, start symbol, one token), got {self.vocab}")
        if self.seq_len < 2:
            raise ValueError(
                f"seq_len must be at least 2 (start symbol and one token), got {self.seq_len}")
        if not isinstance(self.model, ModelConfig):
            raise TypeError(f"model must be a ModelConfig, got {type(self.model).__name__}")
        _check_counts(self, ("batch_size", "steps", "accum_iter", "warmup"))
        check_probability(self.smoothing, "smoothing")
        check_int("seed", self.seed, 0)
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)):
            raise TypeError(f"factor must be a positive number, got {self.factor!r}")
        if not self.factor > 0:
            raise ValueError(f"factor must be a positive number, got {self.factor}")
        if self.seq_len > self.model.max_len:
            raise ValueError(
                f"seq_len {self.seq_len} exceeds the model's max_len {self.model.max_len}")
        # the vocabulary is given once, by `vocab`: the model's follow it
        model = self.model.replace(src_vocab=self.vocab, tgt_vocab=self.vocab)
        object.__setattr__(self, "model", model)  # the instance is frozen

    def __getattr__(self, name: str) -> Any:
        # only called for names the instance lacks: the model's fields read through
        if name in _MODEL_FIELDS and "model" in self.__dict__:
            return getattr(self.__dict__["model"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def replace(self, **changes: Any) -> CopyTaskConfig:
        """A copy with some fields, or some of the model's, changed (and checked again).

        Raises:
            TypeError: for a keyword that is neither a field nor a model keyword.

        Examples:
            >>> config = CopyTaskConfig().replace(N=2, steps=50)
            >>> config.model.N, config.steps
            (2, 50)
        """
        own = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - own - _MODEL_KEYWORDS)
        if unknown:
            raise TypeError(f"unknown CopyTaskConfig settings {unknown}; expected some of "
                            f"{sorted(own)} or of the model's {sorted(_MODEL_KEYWORDS)}")
        model_changes = {k: changes.pop(k) for k in list(changes) if k in _MODEL_KEYWORDS}
        model = changes.get("model", self.model)
        if model_changes and isinstance(model, ModelConfig):  # else __post_init__ refuses it
            changes["model"] = model.replace(**model_changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The configuration as a plain dict, the model's as a nested dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CopyTaskConfig:
        """Rebuild a configuration from `to_dict`'s output (or 0.1.0's flat dict, with the
        model's keywords beside the other fields).

        Raises:
            ValueError: for a key that is neither a field nor a model keyword, naming it and
                the known keys.

        Examples:
            >>> CopyTaskConfig.from_dict({"vocab": 7, "d_model": 16, "h": 2}).model.d_model
            16
            >>> CopyTaskConfig.from_dict({"step": 5})  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: unknown CopyTaskConfig settings ['step']; expected some of ['vocab', ...
        """
        unknown_keys(cls, data, sorted(_MODEL_KEYWORDS))
        own = {k: v for k, v in data.items() if k not in _MODEL_KEYWORDS}
        if isinstance(own.get("model"), dict):
            own["model"] = ModelConfig.from_dict(own["model"])
        model_changes = {k: v for k, v in data.items() if k in _MODEL_KEYWORDS}
        model = own.get("model", COPY_MODEL)
        if model_changes and isinstance(model, ModelConfig):  # else __post_init__ refuses it
            own["model"] = model.replace(**model_changes)
        return cls(**own)


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

BEST_METRICS = ("loss", "exact", "bleu", "chrf")
"""Validation scores `keep_best` and `patience` can follow: `loss`, the teacher-forced
negative log-likelihood per token (lower is better, and meaningful for any data), or the greedy
decodings' exact match, BLEU or chrF (higher is better)."""

LOWER_IS_BETTER = frozenset({"loss"})
"""The `BEST_METRICS` whose smaller values are better."""

DEVICES = ("auto", "cpu", "cuda")
"""Where a run trains or decodes: `auto` is `cuda` when a GPU is available, else `cpu`."""

AMP_MODES = ("off", "bf16", "fp16")
"""Mixed precision: `off` (float32), bfloat16, or float16 (with loss scaling, CUDA only)."""


@dataclass(frozen=True)
class TranslationConfig:
    r"""How a translator is trained (the model's sizes are a `ModelConfig`).

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
        average: how many of the last checkpoints are averaged into the final model (only those
            in the last `AVERAGE_SPAN`, a fifth, of the run).
        eval_size: validation sentences scored (the teacher-forced loss) and greedy-decoded at
            each checkpoint.
        seed: seeds the initial weights, the dropout and the batch order.

    Raises:
        ValueError: for a value out of range. TypeError: for a value of the wrong type.

    Examples:
        >>> from vanilla_transformer.config import TranslationConfig
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
        "help": "how many of the last checkpoints model.pt averages (of the last fifth of the run)"})
    eval_size: int = field(default=200, metadata={
        "help": "validation sentences scored and decoded at each checkpoint"})
    seed: int = field(default=0, metadata={
        "help": "seed of the initial weights, the dropout and the batch order"})

    def __post_init__(self) -> None:
        _check_counts(self, ("vocab_size", "max_tokens", "accum_iter", "warmup", "max_steps",
                             "save_every", "average"))
        check_int("eval_size", self.eval_size, 0)
        if self.eval_size > MAX_COUNT:
            raise ValueError(f"eval_size must be at most {MAX_COUNT}, got {self.eval_size}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an int, got {self.seed!r}")
        from .model import check_seed

        check_seed(self.seed)
        check_number("factor", self.factor)
        for name in ("factor", "smoothing"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {value!r}")
        if not 0 <= self.smoothing < 1:
            raise ValueError(f"smoothing must be in [0, 1), got {self.smoothing}")
        if self.max_minutes is not None:
            try:
                check_number("max_minutes", self.max_minutes)
            except TypeError:
                raise ValueError(f"max_minutes must be a positive number, got "
                                 f"{self.max_minutes!r}") from None

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
        unknown_keys(cls, data)
        return cls(**data)


@dataclass(frozen=True)
class RunOptions:
    """What a translator's run records and keeps, beside the recipe (`TranslationConfig`).

    Args:
        log_every: the steps between the lines of `metrics.jsonl` (loss, learning rate, speed).
        keep_best: make the final model the checkpoint with the best validation score instead
            of the average of the last ones.
        best_metric: the score `keep_best` and `patience` follow (one of `BEST_METRICS`):
            `loss` by default, the validation loss, lower is better.
        patience: stop after this many validations without a better score (`None`: never).
        tensorboard: also write what goes to `metrics.jsonl` as TensorBoard scalars in
            `RUN/tensorboard/` (needs the `tensorboard` package).

    Examples:
        >>> RunOptions(patience=0)
        Traceback (most recent call last):
        ...
        ValueError: patience must be a positive int, got 0
    """

    log_every: int = field(default=10, metadata={
        "help": "steps between the lines of RUN/metrics.jsonl"})
    keep_best: bool = field(default=False, metadata={
        "help": "make model.pt the checkpoint with the best validation score instead of the "
                "average of the last ones"})
    best_metric: str = field(default="loss", metadata={
        "help": "the validation score of keep_best and patience: loss (teacher-forced, "
                "lower is better), or exact, bleu or chrf of greedy decoding"})
    patience: int | None = field(default=None, metadata={
        "help": "stop after this many validations without a better best_metric"})
    tensorboard: bool = field(default=False, metadata={
        "help": "also write metrics.jsonl's numbers as TensorBoard scalars in RUN/tensorboard/"})

    def __post_init__(self) -> None:
        _check_counts(self, ("log_every",))
        for name in ("keep_best", "tensorboard"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.best_metric not in BEST_METRICS:
            raise ValueError(f"best_metric must be one of {BEST_METRICS}, got "
                             f"{self.best_metric!r}")
        if self.patience is not None:
            _check_counts(self, ("patience",))

    @classmethod
    def from_dict(cls, data: Any) -> RunOptions:
        """Rebuild from a saved dict; refuses another shape or unknown keys."""
        if not isinstance(data, dict):
            raise ValueError(f"run options must be a dict, got {type(data).__name__}")
        unknown_keys(cls, data)
        return cls(**data)


RUN_OPTIONS: dict[str, Any] = asdict(RunOptions())
"""`RunOptions`'s fields with their defaults. Pass them in `train_translation(changes=...)`; a
run saves them in `config.json`."""
