r"""The copy task: train a small Transformer to output its input, and check it with greedy decoding.

The task is the Annotated Transformer's first experiment and the quickest end-to-end test of a
Transformer implementation: random sequences from
[`data_gen`][vanilla_transformer.data.copy_task.data_gen] (start symbol `1`, tokens `1..vocab-1`,
padding `0`), the target equal to the source. Training uses the paper's optimizer settings
(section 5.3: Adam with $\beta_1 = 0.9$, $\beta_2 = 0.98$, $\epsilon = 10^{-9}$ and the warm-up
schedule [`rate`][vanilla_transformer.training.schedule.rate]), scaled down to a model that trains in
well under a minute on a laptop CPU.

The trained model is judged by **exact match**: the share of 100 held-out sequences (drawn with
a different seed from the training data) that greedy decoding, started from the start symbol
`1`, reproduces token for token.

The command line's `copy-task` subcommand (see [`register`][vanilla_transformer.cli.copy_task.register])
trains, reports the loss and the exact match, and saves or loads the model.

Explained on the *Training the copy task* page.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .._checks import (
    check_dropout,
    check_heads,
    check_non_negative_int,
    check_positive_int,
)
from ..data.copy_task import PAD, START_SYMBOL, data_gen
from ..inference.greedy import greedy_decode
from ..model.encoder_decoder import EncoderDecoder, make_model
from .loop import TrainState, run_epoch
from .loss import LabelSmoothing, SimpleLossCompute
from .schedule import make_optimizer

__all__ = ['CopyTaskConfig', 'CopyTaskRun', 'train_copy_model', 'exact_match']


@dataclass(frozen=True)
class CopyTaskConfig:
    """Everything that determines a copy-task run; the defaults reach 100% exact match.

    The defaults were tuned for a 2-core CPU: one layer per stack learns this task in fewer
    steps than two, 400 steps of 64 sequences take a few seconds to a few tens of seconds, and
    the paper's label smoothing of 0.1 keeps the gradients from vanishing once the model is
    sure of itself (without it, late spikes in the loss sometimes cost a sequence or two of
    the held-out set).

    Args:
        vocab: vocabulary size, padding and start symbol included.
        seq_len: sequence length, start symbol included.
        N: layers per stack.
        d_model: model width.
        d_ff: feed-forward width.
        h: attention heads.
        dropout: dropout probability (none by default: the data is unlimited, so the model
            cannot over-fit, and it learns faster without).
        batch_size: sequences per batch.
        steps: optimizer steps.
        accum_iter: batches per optimizer step.
        warmup: warm-up steps of the learning-rate schedule.
        factor: scale of the learning-rate schedule.
        smoothing: label smoothing $\\epsilon_{ls}$ (paper section 5.4).
        seed: seed of the weights, the dropout and the training data.

    Raises:
        ValueError: for a value out of range. TypeError: for a value of the wrong type.

    Examples:
        >>> from vanilla_transformer.training import CopyTaskConfig
        >>> CopyTaskConfig(steps=10).replace(seed=3).seed
        3
    """

    vocab: int = 11
    seq_len: int = 10
    N: int = 1
    d_model: int = 64
    d_ff: int = 256
    h: int = 4
    dropout: float = 0.0
    batch_size: int = 64
    steps: int = 400
    accum_iter: int = 1
    warmup: int = 100
    factor: float = 1.0
    smoothing: float = 0.1
    seed: int = 0

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
        for name in ("N", "d_ff", "batch_size", "steps", "accum_iter", "warmup"):
            check_positive_int(name, getattr(self, name))
        check_heads(self.h, self.d_model)
        check_dropout(self.dropout)
        check_dropout(self.smoothing, "smoothing")
        check_non_negative_int("seed", self.seed)
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)):
            raise TypeError(f"factor must be a positive number, got {self.factor!r}")
        if not self.factor > 0:
            raise ValueError(f"factor must be a positive number, got {self.factor}")

    def replace(self, **changes: Any) -> CopyTaskConfig:
        """A copy with some fields changed (and checked again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The configuration as a plain dict."""
        return dataclasses.asdict(self)

    def make_model(self) -> EncoderDecoder:
        """A freshly initialised model of this size (uses the global random generator)."""
        return make_model(
            self.vocab, self.vocab, N=self.N, d_model=self.d_model, d_ff=self.d_ff, h=self.h,
            dropout=self.dropout,
        )


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
        >>> from vanilla_transformer.training import CopyTaskConfig, train_copy_model
        >>> run = train_copy_model(CopyTaskConfig(d_model=16, d_ff=32, N=1, steps=2, batch_size=4))
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
        >>> from vanilla_transformer.training import CopyTaskConfig, train_copy_model
        >>> run = train_copy_model(CopyTaskConfig(d_model=16, d_ff=32, N=1, steps=3, batch_size=4))
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
        optimizer, scheduler = make_optimizer(model, config.d_model, factor=config.factor,
                                              warmup=config.warmup)
        criterion = LabelSmoothing(config.vocab, padding_idx=PAD, smoothing=config.smoothing)
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
