r"""The copy task: train a small Transformer to output its input, judged by exact match.

Training minimises the label-smoothed loss with Adam and the schedule of paper section 5.3;
the trained model must reproduce held-out sequences token for token under greedy decoding.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..config import COPY_MODEL, CopyTaskConfig
from ..data.copy_task import PAD, START_SYMBOL, data_gen
from ..inference.greedy import greedy_decode
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from .loop import FitProgress, TrainState, fit
from .loss import SimpleLossCompute, label_smoothed_kl
from .ranks import check_fits_memory
from .schedule import make_optimizer

__all__ = ['COPY_MODEL', 'CopyTaskConfig', 'CopyTaskRun', 'train_copy_model', 'exact_match']
# COPY_MODEL and CopyTaskConfig live in vanilla_transformer.config; they are importable here too

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
    check_fits_memory(config.model, torch.device("cpu"))
    start = time.perf_counter()
    callbacks = [] if on_step is None else [_OnStep(on_step)]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = make_model_from_config(config.model)
        optimizer, scheduler = make_optimizer(model, config.model.d_model, factor=config.factor,
                                              warmup=config.warmup)
        criterion = functools.partial(label_smoothed_kl, padding_idx=PAD,
                                      smoothing=config.smoothing)
        nbatches = config.steps * config.accum_iter
        data = data_gen(config.vocab, config.batch_size, nbatches, seq_len=config.seq_len,
                        seed=config.seed)
        done = fit(data, model, SimpleLossCompute(model.generator, criterion), optimizer,
                   scheduler, callbacks=callbacks, accum_iter=config.accum_iter, bar=progress,
                   total=nbatches, desc="copy task")
    model.eval()
    return CopyTaskRun(model, config, done.losses, done.counts, time.perf_counter() - start)


class _OnStep:
    """A function `on_step(counts, loss)` as a callback of `fit`."""

    def __init__(self, function: Callable[[TrainState, float], None]) -> None:
        self.function = function

    def on_step(self, progress: FitProgress) -> None:
        self.function(progress.counts, progress.loss)

    def on_end(self, progress: FitProgress) -> None:
        pass


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
