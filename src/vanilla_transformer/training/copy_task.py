r"""The copy task: train a small Transformer to output its input, judged by exact match.

Training minimises the label-smoothed loss with Adam and the schedule of paper section 5.3;
the trained model must reproduce held-out sequences token for token under greedy decoding.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .._checks import check_dropout, check_non_negative_int, check_positive_int
from ..data.copy_task import PAD, START_SYMBOL, data_gen
from ..inference.greedy import greedy_decode
from ..model.config import ModelConfig
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from .loop import TrainState, run_epoch
from .loss import SimpleLossCompute, label_smoothed_kl
from .schedule import make_optimizer

__all__ = ['COPY_MODEL', 'CopyTaskConfig', 'CopyTaskRun', 'train_copy_model', 'exact_match']

COPY_MODEL = ModelConfig(11, 11, N=1, d_model=64, d_ff=256, h=4, dropout=0.0)
"""The copy task's default model: one layer per stack, which in our runs reached 100 % exact
match (`benchmarks/results/copy_task.json`), and no dropout: every batch is freshly drawn, so
no sequence is seen twice."""

_MODEL_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelConfig))
_MODEL_KEYWORDS = _MODEL_FIELDS - {"src_vocab", "tgt_vocab"}  # set by `vocab`


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

    Each field's `metadata["help"]` is its help on the command line (`copy-task`).

    Args:
        vocab: vocabulary size, padding and start symbol included.
        seq_len: sequence length, start symbol included.
        model: the model's hyperparameters ([`COPY_MODEL`][vanilla_transformer.training.copy_task.COPY_MODEL]
            by default); its `src_vocab` and `tgt_vocab` are replaced by `vocab`.
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
        >>> from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig
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
        check_positive_int("vocab", self.vocab)
        if self.vocab < 3:
            raise ValueError(
                f"vocab must be at least 3 (padding, start symbol, one token), got {self.vocab}"
            )
        check_positive_int("seq_len", self.seq_len)
        if self.seq_len < 2:
            raise ValueError(
                f"seq_len must be at least 2 (start symbol and one token), got {self.seq_len}"
            )
        if not isinstance(self.model, ModelConfig):
            raise TypeError(f"model must be a ModelConfig, got {type(self.model).__name__}")
        for name in ("batch_size", "steps", "accum_iter", "warmup"):
            check_positive_int(name, getattr(self, name))
        check_dropout(self.smoothing, "smoothing")
        check_non_negative_int("seed", self.seed)
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)):
            raise TypeError(f"factor must be a positive number, got {self.factor!r}")
        if not self.factor > 0:
            raise ValueError(f"factor must be a positive number, got {self.factor}")
        if self.seq_len > self.model.max_len:
            raise ValueError(
                f"seq_len {self.seq_len} exceeds the model's max_len {self.model.max_len}"
            )
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

        A keyword that names a field of `ModelConfig` (other than the vocabularies, which
        follow `vocab`) changes `model`.

        Raises:
            TypeError: for a keyword that is neither a field nor a model keyword.

        Examples:
            >>> config = CopyTaskConfig().replace(N=2, steps=50)
            >>> config.model.N, config.steps
            (2, 50)
        """
        own = {f.name for f in dataclasses.fields(self)}
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
        return dataclasses.asdict(self)

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
        known = [f.name for f in dataclasses.fields(cls)] + sorted(_MODEL_KEYWORDS)
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown CopyTaskConfig settings {unknown}; expected some of "
                             f"{known}")
        own = {k: v for k, v in data.items() if k not in _MODEL_KEYWORDS}
        if isinstance(own.get("model"), dict):
            own["model"] = ModelConfig.from_dict(own["model"])
        model_changes = {k: v for k, v in data.items() if k in _MODEL_KEYWORDS}
        model = own.get("model", COPY_MODEL)
        if model_changes and isinstance(model, ModelConfig):  # else __post_init__ refuses it
            own["model"] = model.replace(**model_changes)
        return cls(**own)

    def make_model(self) -> EncoderDecoder:
        """A freshly initialised model of this size (uses the global random generator)."""
        return make_model_from_config(self.model)


@dataclass
class CopyTaskRun:
    """The result of [`train_copy_model`][vanilla_transformer.training.copy_task.train_copy_model].

    Attributes:
        model: the trained model, in eval mode.
        config: the configuration it was trained with.
        losses: the mean loss per token of every optimizer step.
        train_state: the training counts.
        seconds: wall time of the training (model building included).

    Examples:
        >>> from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig, train_copy_model
        >>> config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, d_ff=32), steps=2,
        ...                         batch_size=4)
        >>> run = train_copy_model(config)
        >>> run.final_loss == run.losses[-1], run.model.training
        (True, False)
    """

    model: EncoderDecoder
    config: CopyTaskConfig
    losses: list[float] = field(default_factory=list)
    train_state: TrainState = field(default_factory=TrainState)
    seconds: float = 0.0

    @property
    def final_loss(self) -> float:
        """The mean loss per token of the last optimizer step."""
        return self.losses[-1]


def train_copy_model(
    config: CopyTaskConfig | None = None,
    *,
    progress: bool = False,
    on_step: Callable[[TrainState, float], None] | None = None,
) -> CopyTaskRun:
    """Train a model on the copy task.

    The run is reproducible: the weights and the dropout draw from the global generator seeded
    with `config.seed` (its previous state is restored afterwards), and the data from a private
    generator with the same seed. The same seed on the same machine and thread count gives the
    same losses and weights.

    Args:
        config: the run's settings; the defaults if `None`.
        progress: show a progress bar.
        on_step: called after every optimizer step with the counts and the step's loss.

    Returns:
        A [`CopyTaskRun`][vanilla_transformer.training.copy_task.CopyTaskRun] with the model in eval
        mode and the loss of every step.

    Examples:
        >>> from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig, train_copy_model
        >>> config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, d_ff=32), steps=3,
        ...                         batch_size=4)
        >>> run = train_copy_model(config)
        >>> len(run.losses), run.train_state.samples
        (3, 12)
    """
    config = CopyTaskConfig() if config is None else config
    start = time.perf_counter()
    losses: list[float] = []

    def record(state: TrainState, loss: float) -> None:
        losses.append(loss)
        if on_step is not None:
            on_step(state, loss)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = config.make_model()
        optimizer, scheduler = make_optimizer(model, config.model.d_model, factor=config.factor,
                                              warmup=config.warmup)
        criterion = functools.partial(label_smoothed_kl, padding_idx=PAD,
                                      smoothing=config.smoothing)
        nbatches = config.steps * config.accum_iter
        data = data_gen(config.vocab, config.batch_size, nbatches, seq_len=config.seq_len,
                        seed=config.seed)
        model.train()
        _, state = run_epoch(
            data, model, SimpleLossCompute(model.generator, criterion), optimizer, scheduler,
            mode="train", accum_iter=config.accum_iter, progress=progress, total=nbatches,
            on_step=record, desc="copy task",
        )
    model.eval()
    return CopyTaskRun(model, config, losses, state, time.perf_counter() - start)


def exact_match(
    model: EncoderDecoder, src: torch.Tensor, *, use_cache: bool = True
) -> tuple[float, torch.Tensor]:
    """Greedy-decode `src` and count the rows copied exactly.

    Decoding starts from the start symbol `1` (not from the padding id `0`, as some versions
    of the source code do) and produces `seq_len` tokens, the start symbol included. The model
    is put in eval mode.

    Args:
        model: the trained model.
        src: sequences `(n, seq_len)` from
            [`heldout_sequences`][vanilla_transformer.data.copy_task.heldout_sequences].
        use_cache: decode with the key/value cache (same tokens, faster).

    Returns:
        `(accuracy, decoded)`: the fraction of rows decoded exactly, in [0, 1], and the decoded
        ids `(n, seq_len)`.

    Examples:
        >>> from vanilla_transformer.training import exact_match
        >>> from vanilla_transformer.data import heldout_sequences
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2)
        >>> accuracy, decoded = exact_match(model, heldout_sequences(4))
        >>> decoded.shape, 0.0 <= accuracy <= 1.0
        (torch.Size([4, 10]), True)
    """
    model.eval()
    decoded = greedy_decode(model, src, src != PAD, max_len=src.size(1),
                            start_symbol=START_SYMBOL, use_cache=use_cache)
    accuracy = float((decoded == src).all(dim=1).float().mean())
    return accuracy, decoded
