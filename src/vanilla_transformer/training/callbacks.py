"""What the training loop calls after each step: each a small object with one job.

[`fit`][vanilla_transformer.training.loop.fit] calls `on_step(progress)` of each callback, in
order, after every optimizer step, and `on_end(progress)` once when the loop ends (also after
an error). A callback stops training by setting `progress.stop` to its reason: `MetricsLog`
logs, `StopWhen` keeps a time limit, `CheckpointKeeper` validates (with a `Validator`) and
saves, `EarlyStopping` stops after `patience` validations without a better score.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from ..config import LOWER_IS_BETTER
from ..data.translation_batches import encode_pairs
from . import checkpoints as files
from .loss import teacher_forced_nll
from .ranks import Ranks
from .run_folder import metrics_writer

if TYPE_CHECKING:
    from ..data.tokenizer import SharedTokenizer
    from ..inference.evaluate import TranslationScores
    from ..model.encoder_decoder import EncoderDecoder
    from .loop import FitProgress

__all__ = ["Callback", "MetricsLog", "StopWhen", "Validator", "CheckpointKeeper",
           "EarlyStopping", "ProgressBar", "auto_bleu_tokenize", "best_entry", "VALID_KEYS"]

Log = Callable[[str], None]


class Callback(Protocol):
    """What `fit` calls: `on_step` after every optimizer step, `on_end` once at the end (by
    default nothing)."""

    def on_step(self, progress: FitProgress) -> None: ...

    def on_end(self, progress: FitProgress) -> None:
        return None


def auto_bleu_tokenize(references: Sequence[str]) -> str:
    """sacrebleu's BLEU tokenizer for `references`: `char` when they average fewer than four
    words (no word 4-grams), else `13a`.

    Examples:
        >>> auto_bleu_tokenize(["vierhunderteins", "zwei"]), auto_bleu_tokenize(["a b c d e"])
        ('char', '13a')
    """
    if not references:
        return "13a"
    words = sum(len(r.split()) for r in references) / len(references)
    return "char" if words < 4 else "13a"


VALID_KEYS = ("valid_loss", "valid_ppl", "valid_exact", "valid_bleu", "valid_chrf")
"""What a validation writes to `metrics.jsonl`, beside its step and training loss."""


def _sign(key: str) -> int:
    return -1 if key.removeprefix("valid_") in LOWER_IS_BETTER else 1


def best_entry(history: Sequence[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The validation with the best `key` (the lowest `valid_loss`, the highest score; the
    earliest of equals), or `None`.

    Examples:
        >>> history = [{"step": 1, "valid_loss": 2.0}, {"step": 2, "valid_loss": 1.5}]
        >>> best_entry(history, "valid_loss")["step"]
        2
    """
    scored = [h for h in history if key in h]
    return max(scored, key=lambda h: (_sign(key) * h[key], -h["step"])) if scored else None


class MetricsLog:
    """Every `every` steps, a line of `metrics.jsonl` (process 0, and with `tensorboard` its
    scalars): the mean loss since the last line, the learning rate and all processes' tokens
    per second; also each validation's scores."""

    def __init__(self, folder: Path, ranks: Ranks, optimizer: torch.optim.Optimizer, *,
                 every: int, resumed_at: int | None, tensorboard: bool) -> None:
        self.ranks, self.optimizer, self.every = ranks, optimizer, every
        self.write = (metrics_writer(folder / files.METRICS_FILE, resumed_at) if ranks.rank == 0
                      else None)
        self.board: Any = None
        if tensorboard and ranks.rank == 0:
            from torch.utils.tensorboard import SummaryWriter

            # a resumed run drops the events after its checkpoint, as metrics.jsonl its lines
            self.board = SummaryWriter(str(folder / files.TENSORBOARD_FOLDER), purge_step=(
                None if resumed_at is None else resumed_at + 1))
        self.start, self.tokens_before, self.losses = time.perf_counter(), 0, list[float]()

    def log(self, entry: dict[str, Any]) -> None:
        """Write one line (process 0 only)."""
        if self.write is None:
            return
        self.write(entry)
        if self.board is not None:
            for key, value in entry.items():  # a validation's line repeats the step's loss
                if key != "step" and not (key == "loss" and "valid_loss" in entry):
                    self.board.add_scalar(key, value, entry["step"])
            self.board.flush()

    def on_step(self, progress: FitProgress) -> None:
        self.losses.append(progress.loss)
        if progress.step % self.every:
            return
        now = time.perf_counter()
        tokens = self.ranks.total(progress.counts.tokens - self.tokens_before)
        self.log({"step": progress.step, "loss": sum(self.losses) / len(self.losses),
                  "lr": self.optimizer.param_groups[0]["lr"],
                  "tokens_per_s": round(tokens / max(now - self.start, 1e-9), 1)})
        self.start, self.tokens_before, self.losses = now, progress.counts.tokens, []

    def on_end(self, progress: FitProgress) -> None:
        if self.board is not None:
            self.board.close()


class StopWhen(Callback):
    """Stops every process together after the step on which any of them has run `minutes`,
    or `should_stop()` said so: `progress.stop` is `"time"` or `"interrupted"`."""

    def __init__(self, ranks: Ranks, minutes: float | None,
                 should_stop: Callable[[], bool] | None, log: Log) -> None:
        self.ranks, self.minutes, self.should_stop, self.log = ranks, minutes, should_stop, log
        self.deadline = None if minutes is None else time.monotonic() + 60 * minutes

    def on_step(self, progress: FitProgress) -> None:
        late, interrupted = self.ranks.any(
            self.deadline is not None and time.monotonic() >= self.deadline,
            self.should_stop is not None and self.should_stop())
        if interrupted:
            progress.stop = "interrupted"
        elif late:
            progress.stop = "time"
            self.log(f"stopped after {self.minutes} minutes at step {progress.step}")


class Validator:
    """Scores the model on its own device on `pairs`: the teacher-forced loss, and greedy
    decodings' exact match, BLEU and chrF."""

    def __init__(self, model: EncoderDecoder, tokenizer: SharedTokenizer,
                 pairs: Sequence[tuple[str, str]],
                 score: Callable[..., TranslationScores] | None = None) -> None:
        self.model, self.tokenizer, self.pairs = model, tokenizer, list(pairs)
        self.bleu_tokenize = auto_bleu_tokenize([t for _, t in self.pairs])
        self.score = score
        self.ids = encode_pairs(tokenizer, self.pairs) if self.pairs else []

    def scores(self) -> dict[str, float]:
        """`valid_loss` (teacher forced, in nats per target token, no smoothing), `valid_ppl`,
        `valid_exact` (percent), `valid_bleu` and `valid_chrf`; `{}` without pairs."""
        if not self.pairs:
            return {}
        from ..data.tokenizer import BOS, EOS, PAD
        from ..inference.evaluate import score_translations, translate_sentences

        loss = teacher_forced_nll(self.model, self.ids, pad=PAD, bos=BOS, eos=EOS)
        ppl = math.exp(loss) if loss < 700 else math.inf  # past 700, exp overflows a float
        hyps = translate_sentences(self.model, self.tokenizer, [s for s, _ in self.pairs],
                                   beam_size=1)
        self.model.train()
        scores = (self.score or score_translations)(hyps, [t for _, t in self.pairs],
                                                    bleu_tokenize=self.bleu_tokenize)
        return {"valid_loss": round(loss, 6), "valid_ppl": round(ppl, 4),
                "valid_exact": scores.exact_match, "valid_bleu": round(scores.bleu, 4),
                "valid_chrf": round(scores.chrf, 4)}


class CheckpointKeeper(Callback):
    """Validates and writes a training checkpoint every `save_every` steps, at `max_steps`
    and at a stop; keeps the last `average`, and with `keep_best` the best model as `best.pt`.
    `state()` gives what a checkpoint holds beside the model; `history` gets one entry per
    checkpoint. Process 0 writes; every process gives its random state."""

    def __init__(self, folder: Path, model: nn.Module, ranks: Ranks, *, save_every: int,
                 max_steps: int, average: int, keep_best: str | None, validator: Validator,
                 metrics: MetricsLog, state: Callable[[], dict[str, Any]],
                 history: list[dict[str, Any]], log: Log) -> None:
        self.folder, self.model, self.ranks = folder, model, ranks
        self.save_every, self.max_steps, self.average = save_every, max_steps, average
        self.keep_best, self.validator, self.metrics = keep_best, validator, metrics
        self.state, self.history, self.log = state, history, log

    def due(self, progress: FitProgress) -> bool:
        return bool(progress.step % self.save_every == 0 or progress.step == self.max_steps
                    or progress.stop)

    def on_step(self, progress: FitProgress) -> None:
        if self.due(progress):
            self.save(progress)

    def save(self, progress: FitProgress) -> None:
        """Validate and write the checkpoint of `progress.step` (process 0)."""
        rng_states = self.ranks.gather(torch.get_rng_state())
        if self.ranks.rank > 0:
            return
        entry: dict[str, Any] = {"step": progress.step, "seconds": round(progress.seconds, 3),
                                 "loss": progress.losses[-1] if progress.losses else float("nan")}
        entry.update(self.validator.scores())
        key = f"valid_{self.keep_best}"
        best_before = best_entry(self.history, key)
        self.history.append(entry)
        weights = {k: v.detach().cpu() for k, v in files.model_state(self.model).items()}
        rng = {"torch": rng_states[0], **({"ranks": rng_states} if self.ranks.size > 1 else {})}
        files.save_train_state(self.folder / files.CHECKPOINTS / f"step-{progress.step:07d}.pt",
                         model=weights, rng=rng, step=progress.step, seconds=progress.seconds,
                         losses=torch.tensor(progress.losses, dtype=torch.float64),
                         history=self.history, **self.state())
        if self.keep_best and key in entry and (
                best_before is None or _sign(key) * (entry[key] - best_before[key]) > 0):
            files.save_checkpoint(self.folder / files.CHECKPOINTS / files.BEST_FILE, self.model,
                            steps=progress.step, score={self.keep_best: entry[key]})
        self._prune()
        if "valid_loss" in entry:
            self.metrics.log({"step": progress.step, "loss": entry["loss"], **{
                k: entry[k] for k in VALID_KEYS if k in entry}})
        scores = (f", valid loss {entry['valid_loss']:.4f} (perplexity {entry['valid_ppl']:.2f})"
                  f", exact match {entry['valid_exact']:.1f} %, BLEU {entry['valid_bleu']:.1f}"
                  if "valid_loss" in entry else "")
        self.log(f"step {progress.step}: loss {entry['loss']:.4f}{scores} "
                 f"({progress.seconds:.0f} s)")

    def _prune(self) -> None:
        for old in files.checkpoint_paths(self.folder)[:-1]:
            # a stop between saves (an interrupt, a time limit) wrote an extra checkpoint;
            # once training has gone past it, it would skew the average: drop it
            if files.step_of(old) % self.save_every:
                old.unlink()
        for old in files.checkpoint_paths(self.folder)[: -self.average]:
            old.unlink()


class EarlyStopping(Callback):
    """Stops training (`"patience"`) once `patience` validations in a row have not beaten the
    best `metric`; process 0 decides for all."""

    def __init__(self, history: list[dict[str, Any]], ranks: Ranks, *, metric: str,
                 patience: int | None, save_every: int, log: Log) -> None:
        self.history, self.ranks, self.metric = history, ranks, metric
        self.patience, self.save_every, self.log = patience, save_every, log

    def spent(self) -> bool:
        """Whether the last `patience` validations came after the best one."""
        best = best_entry(self.history, f"valid_{self.metric}")
        if self.patience is None or best is None:
            return False
        later = [h for h in self.history if h["step"] > best["step"]
                 and f"valid_{self.metric}" in h]
        return len(later) >= self.patience

    def on_step(self, progress: FitProgress) -> None:
        if progress.stop or progress.step % self.save_every:
            return
        if self.ranks.share(self.spent()):
            best = best_entry(self.history, f"valid_{self.metric}")
            if best is not None:  # process 0, which validates
                self.log(f"no better validation {self.metric} in {self.patience} "
                         f"validations: stopping at step {progress.step} (best: step "
                         f"{best['step']})")
            progress.stop = "patience"


class ProgressBar:
    """A progress bar of steps on stderr with the loss and `epoch()`, cleared where
    `clear_after(progress)` says a line will be logged."""

    def __init__(self, total: int, initial: int, epoch: Callable[[], int],
                 clear_after: Callable[[FitProgress], bool]) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, initial=initial, desc="train", unit="step")
        self.epoch, self.clear_after = epoch, clear_after

    def on_step(self, progress: FitProgress) -> None:
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{progress.loss:.3f}", epoch=self.epoch(), refresh=False)
        if self.clear_after(progress):
            self.bar.clear()

    def on_end(self, progress: FitProgress) -> None:
        self.bar.close()
