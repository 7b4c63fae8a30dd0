"""What the training loop calls after each step: each a small object with one job, and
with its own state.

[`fit`][vanilla_transformer.training.fit_loop.fit] calls `on_step(progress)` of each callback,
in order, after every optimizer step, and `on_end(progress)` once when the loop ends (also
after an error). A callback stops training by setting `progress.stop` to its reason. `MetricsLog`
logs, `StopWhen` keeps a time limit, `CheckpointKeeper` validates (with a `Validator`), tells
its listeners each validation (`on_validation`), and saves, with each callback's own
`state_dict()`; `EarlyStopping` stops after `patience` validations without a better score.

Where order matters, a callback says so in `after` (the callbacks that must run before it on
each step), and `fit` refuses another order (`fit_loop.check_order`): the step's log line
comes before its validation's, a stop before the checkpoint that records it, the progress bar
is cleared before the checkpoint's line, and early stopping reads the validation of the step
it decides on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn

from . import checkpoints as files
from .ranks import Ranks, random_state
from .run_folder import metrics_writer
from .validation import VALID_KEYS, Validator, best_entry, sign

if TYPE_CHECKING:
    from .fit_loop import FitProgress

__all__ = ["Callback", "MetricsLog", "StopWhen", "Policy", "CheckpointKeeper",
           "EarlyStopping", "ProgressBar"]

Log = Callable[[str], None]


class Callback:
    """What `fit` calls: `on_step` after every optimizer step, `on_end` once at the end;
    `on_validation` when a validation is made; `state_dict` and `load_state_dict` save and
    restore the callback's own state in a checkpoint, under `state_key` (none by default);
    `load_state_dict` raises a `ValueError` for a state it cannot take.

    `after` names the callbacks (by class name) that must come before this one."""

    state_key: ClassVar[str] = ""
    after: ClassVar[tuple[str, ...]] = ()

    def on_step(self, progress: FitProgress) -> None:
        return None

    def on_validation(self, progress: FitProgress, entry: dict[str, Any]) -> None:
        return None

    def on_end(self, progress: FitProgress) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(value: Any) -> bool:
    """Whether `value` is a validation: a dict with a step and numbers by name."""
    return isinstance(value, dict) and _count(value.get("step")) and all(
        isinstance(k, str) and _number(v) for k, v in value.items())


def _expect(condition: bool, problem: str) -> None:
    """A `ValueError` saying `problem` unless `condition` (a callback's saved state)."""
    if not condition:
        raise ValueError(problem)


class MetricsLog(Callback):
    """Every `every` steps, a line of `metrics.jsonl` (process 0, and with `tensorboard` its
    scalars): the mean loss since the last line, the learning rate and all processes' tokens
    per second; also each validation's scores. Its state: the losses since the last line, and
    the last validation, whose line a resumed run writes again if it is missing."""

    state_key = "metrics"

    def __init__(self, folder: Path, ranks: Ranks, optimizer: torch.optim.Optimizer, *,
                 every: int, resumed_at: int | None, tensorboard: bool) -> None:
        self.ranks, self.optimizer, self.every = ranks, optimizer, every
        self.path = folder / files.METRICS_FILE
        self.write = metrics_writer(self.path, resumed_at) if ranks.rank == 0 else None
        self.board: Any = None
        if tensorboard and ranks.rank == 0:
            from torch.utils.tensorboard import SummaryWriter

            # a resumed run drops the events after its checkpoint, as metrics.jsonl its lines
            self.board = SummaryWriter(str(folder / files.TENSORBOARD_FOLDER), purge_step=(
                None if resumed_at is None else resumed_at + 1))
        self.start, self.tokens_before, self.losses = time.perf_counter(), 0, list[float]()
        self.validation: dict[str, Any] | None = None

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

    def on_validation(self, progress: FitProgress, entry: dict[str, Any]) -> None:
        if "valid_loss" in entry:
            self.validation = {"step": entry["step"], "loss": entry["loss"],
                               **{k: entry[k] for k in VALID_KEYS if k in entry}}
            self.log(self.validation)

    def state_dict(self) -> dict[str, Any]:
        return {"losses": list(self.losses), "validation": self.validation}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        losses, validation = state.get("losses", []), state.get("validation")
        _expect(isinstance(losses, list) and all(_number(x) for x in losses),
                "its 'losses' are not a list of numbers")
        _expect(validation is None or _entry(validation),
                "its 'validation' is not a validation's line")
        self.losses, self.validation = [float(x) for x in losses], validation
        if self.write is None or not isinstance(self.validation, dict):
            return
        step = self.validation.get("step")
        for line in self.path.read_text(encoding="utf-8").splitlines() if (
                self.path.is_file()) else []:
            if f'"step": {step},' in line and '"valid_loss"' in line:
                return
        self.log(self.validation)  # a run killed between its checkpoint and this line

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


@dataclass(frozen=True)
class Policy:
    """When `CheckpointKeeper` saves and what it keeps: a checkpoint every `save_every` steps,
    at `max_steps` and at a stop; the last `average`; with `keep_best` (a metric), the best
    model as `best.pt`."""

    save_every: int
    max_steps: int
    average: int
    keep_best: str | None = None


class CheckpointKeeper(Callback):
    """Validates and writes a training checkpoint when its `Policy` says, into `folder.path`
    (`folder.saved()` is told after each). Each validation goes to the `listeners`
    (`on_validation`) before the checkpoint is written, so their states hold it;
    `snapshot(progress, rng)` gives the checkpoint, and `history` (its state) has one entry per
    checkpoint. Process 0 writes; every process gives its random state."""

    state_key = "checkpoints"
    after = ("MetricsLog", "StopWhen", "ProgressBar")

    def __init__(self, folder: Any, model: nn.Module, ranks: Ranks, policy: Policy,
                 validator: Validator, listeners: Sequence[Callback],
                 snapshot: Callable[[FitProgress, dict[str, Any]], files.TrainCheckpoint],
                 log: Log) -> None:
        self.folder, self.model, self.ranks, self.policy = folder, model, ranks, policy
        self.validator, self.listeners, self.snapshot = validator, list(listeners), snapshot
        self.log, self.history = log, list[dict[str, Any]]()
        self.device = next(model.parameters()).device  # its random state is saved too

    def due(self, progress: FitProgress) -> bool:
        return bool(progress.step % self.policy.save_every == 0
                    or progress.step == self.policy.max_steps or progress.stop)

    def on_step(self, progress: FitProgress) -> None:
        if self.due(progress):
            self.save(progress)

    def state_dict(self) -> dict[str, Any]:
        return {"history": [dict(h) for h in self.history]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        history = state.get("history", [])
        _expect(isinstance(history, list) and all(_entry(h) for h in history),
                "its 'history' is not a list of validations")
        self.history = [dict(h) for h in history]

    def _rng(self) -> dict[str, Any] | None:
        states = self.ranks.gather(random_state(self.device))
        if self.ranks.rank > 0:
            return None
        rng: dict[str, Any] = dict(states[0])
        if self.ranks.size > 1:
            rng["ranks"] = [s["torch"] for s in states]
            rng["devices"] = [{k: v for k, v in s.items() if k != "torch"} for s in states]
        return rng

    def save(self, progress: FitProgress) -> None:
        """Validate and write the checkpoint of `progress.step` (process 0)."""
        rng = self._rng()
        if rng is None:
            return
        entry: dict[str, Any] = {"step": progress.step, "seconds": round(progress.seconds, 3),
                                 "loss": progress.losses[-1] if progress.losses else float("nan")}
        entry.update(self.validator.scores())
        key = f"valid_{self.policy.keep_best}"
        best_before = best_entry(self.history, key)
        self.history.append(entry)
        for listener in self.listeners:
            listener.on_validation(progress, entry)
        self.snapshot(progress, rng).save(self.folder.path)
        if self.policy.keep_best and key in entry and (
                best_before is None or sign(key) * (entry[key] - best_before[key]) > 0):
            files.save_checkpoint(self.folder.path / files.CHECKPOINTS / files.BEST_FILE,
                                  self.model, steps=progress.step,
                                  score={self.policy.keep_best: entry[key]})
        self._prune()
        self.folder.saved()
        scores = (f", valid loss {entry['valid_loss']:.4f} (perplexity {entry['valid_ppl']:.2f})"
                  f", exact match {entry['valid_exact']:.1f} %, BLEU {entry['valid_bleu']:.1f}"
                  if "valid_loss" in entry else "")
        self.log(f"step {progress.step}: loss {entry['loss']:.4f}{scores} "
                 f"({progress.seconds:.0f} s)")

    def _prune(self) -> None:
        for old in files.checkpoint_paths(self.folder.path)[:-1]:
            # a stop between saves (an interrupt, a time limit) wrote an extra checkpoint;
            # once training has gone past it, it would skew the average: drop it
            if files.step_of(old) % self.policy.save_every:
                old.unlink()
        for old in files.checkpoint_paths(self.folder.path)[: -self.policy.average]:
            old.unlink()


class EarlyStopping(Callback):
    """Stops training (`"patience"`) once `patience` validations in a row have not beaten the
    best `metric`; process 0 decides for all. It counts the validations it receives; its
    state is the best score, its step, and the validations since."""

    state_key = "early_stopping"
    after = ("CheckpointKeeper",)

    def __init__(self, ranks: Ranks, *, metric: str, patience: int | None, save_every: int,
                 log: Log) -> None:
        self.ranks, self.metric, self.key = ranks, metric, f"valid_{metric}"
        self.patience, self.save_every, self.log = patience, save_every, log
        self.best: float | None = None
        self.best_step, self.since = 0, 0

    def on_validation(self, progress: FitProgress, entry: dict[str, Any]) -> None:
        if self.key not in entry:
            return
        if self.best is None or sign(self.key) * (entry[self.key] - self.best) > 0:
            self.best, self.best_step, self.since = entry[self.key], entry["step"], 0
        else:  # a tie is not better
            self.since += 1

    def spent(self) -> bool:
        """Whether the last `patience` validations came after the best one."""
        return self.patience is not None and self.best is not None and (
            self.since >= self.patience)

    def on_step(self, progress: FitProgress) -> None:
        if progress.stop or progress.step % self.save_every:
            return
        if self.ranks.share(self.spent()):
            if self.best is not None:  # process 0, which validates
                self.log(f"no better validation {self.metric} in {self.patience} "
                         f"validations: stopping at step {progress.step} (best: step "
                         f"{self.best_step})")
            progress.stop = "patience"

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "best_step": self.best_step, "since": self.since}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        best, best_step, since = (state.get("best"), state.get("best_step", 0),
                                  state.get("since", 0))
        _expect(best is None or _number(best), "its 'best' is not a score")
        _expect(_count(best_step) and _count(since), "its 'best_step' or 'since' is not a count")
        self.best, self.best_step, self.since = best, best_step, since


class ProgressBar(Callback):
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
