"""One training run of a translator, as one object: `Run` owns the folder it writes (through
a [`RunFolder`][vanilla_transformer.training.run_folder.RunFolder]), the model, the optimizer,
the schedule, the processes (`Ranks`) and the callbacks, and it saves and restores its own
state as one [`TrainCheckpoint`][vanilla_transformer.training.checkpoints.TrainCheckpoint].

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..data.tokenizer import PAD
from ..data.translation_batches import BatchStream, encode_pairs, training_batches
from ..inference.evaluate import TranslationScores
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from . import checkpoints as files
from .averaging import write_final_model
from .callbacks import (
    Callback,
    CheckpointKeeper,
    EarlyStopping,
    MetricsLog,
    Policy,
    ProgressBar,
    StopWhen,
)
from .checkpoints import TrainCheckpoint
from .fit_loop import FitProgress, fit
from .loop import TrainingDiverged
from .loss import SimpleLossCompute, label_smoothed_kl
from .plan import Hooks, Prepared, RunPlan, check_options
from .ranks import Ranks, amp_context, check_fits_memory, set_random_state
from .run_folder import RunFolder
from .schedule import make_optimizer
from .validation import Validator

__all__ = ["Run", "Parts", "Outcome"]

Outcome = tuple[FitProgress, list[dict[str, Any]], list[int], int]
"""What a run ends with: its progress, its validations, the steps `model.pt` averages, and
the training pairs it left out."""


@dataclass(frozen=True)
class Parts:
    """The collaborators a run is given: `score(hyps, refs, bleu_tokenize=...)` scores its
    validations (`score_translations`), and `loss(generator, criterion)` computes its loss
    (`SimpleLossCompute`)."""

    score: Callable[..., TranslationScores]
    loss: Callable[..., SimpleLossCompute]


class Run:
    """The run of `plan` in this process: `train()` reads the data, takes the folder (process
    0), builds or restores the model, optimizer, schedule and callbacks, trains with `fit` and
    writes the final model."""

    def __init__(self, plan: RunPlan, prepared: Prepared, ranks: Ranks, folder: RunFolder,
                 hooks: Hooks, parts: Parts) -> None:
        self.plan, self.prepared, self.ranks, self.folder = plan, prepared, ranks, folder
        self.hooks, self.parts = hooks, parts
        check_options(prepared.options, prepared.config.eval_size)
        check_fits_memory(prepared.model_config, plan.device)
        self.model: EncoderDecoder
        self.optimizer: torch.optim.Optimizer
        self.scheduler: Any
        self.callbacks: list[Callback] = []
        self.stream: BatchStream | None = None

    def _build(self) -> None:
        """The model, the optimizer and the schedule, each process's from the run's seed."""
        config, model_config = self.prepared.config, self.prepared.model_config
        torch.manual_seed(config.seed)  # the same initial weights on every process
        self.model = make_model_from_config(model_config)
        if self.ranks.rank > 0:
            torch.manual_seed(config.seed + self.ranks.rank)  # other masks than process 0's
        self.optimizer, self.scheduler = make_optimizer(
            self.model, model_config.d_model, factor=config.factor, warmup=config.warmup)
        self.model.to(self.plan.device)  # first: Adam's restored moments follow the weights

    def train(self) -> Outcome:
        """Train to the end, or to a stop: the run's `Outcome`."""
        plan, config = self.plan, self.prepared.config
        with files.naming(self.folder.path / files.IDS_FOLDER):
            batches = training_batches(plan.train, self.prepared.tokenizer,
                                       self.folder.path / files.IDS_FOLDER,
                                       self.prepared.model_config.max_len, config, self.hooks.log)
        if self.ranks.rank == 0:
            self._accept()
        self._build()
        progress, (epoch, position) = self._restore(batches[0])
        self.stream = BatchStream(batches, epoch=epoch, position=position, step=progress.step,
                                  max_steps=config.max_steps, accum_iter=config.accum_iter,
                                  rank=self.ranks.rank, size=self.ranks.size,
                                  device=plan.device)
        keeper = self._make_callbacks(progress)
        if self.prepared.state is not None:
            self._load_callbacks(self.prepared.state.callbacks)
        progress = self._fit(progress)
        self.model.cpu()
        if self.ranks.share(not files.checkpoint_paths(self.folder.path)):
            keeper.save(progress)
        return progress, keeper.history, self._final(progress), batches[2]

    def _accept(self) -> None:
        """Process 0 takes the folder: the tokenizer and the settings are written, and the
        other processes are told where."""
        path, prepared = self.folder.path, self.prepared
        if not self.plan.resume:
            (path / files.CHECKPOINTS).mkdir(exist_ok=True)
            with files.naming(path / files.TOKENIZER_FILE):
                prepared.tokenizer.save(path / files.TOKENIZER_FILE)
        self.folder.accept()
        files.write_json(path / files.CONFIG_FILE, prepared.run_config(self.plan.data_record()))
        if self.ranks.size > 1:
            self.ranks.share({"error": None, "restart_data": prepared.restart_data,
                              "folder": str(path)})

    def snapshot(self, progress: FitProgress, rng: dict[str, Any]) -> TrainCheckpoint:
        """The run's state after `progress.step`: what its checkpoint holds."""
        assert self.stream is not None
        return TrainCheckpoint(
            step=progress.step, seconds=progress.seconds,
            losses=torch.tensor(progress.losses, dtype=torch.float64),
            config=self.prepared.model_config.to_dict(),
            model={k: v.detach().cpu() for k, v in files.model_state(self.model).items()},
            optimizer=self.optimizer.state_dict(), scheduler=self.scheduler.state_dict(),
            epoch=self.stream.epoch, position=self.stream.position, rng=rng,
            callbacks={c.state_key: c.state_dict() for c in self.callbacks if c.state_key})

    def _restore(self, n_batches: int) -> tuple[FitProgress, tuple[int, int]]:
        """A resumed run's model, optimizer, schedule and random state: `(progress, (epoch,
        position))`."""
        state, where = self.prepared.state, repr(str(self.prepared.state_path))
        if state is None:
            return FitProgress(), (0, 0)
        files.load_model_state(self.model, state.model, where)
        for name, part in (("optimizer", self.optimizer), ("scheduler", self.scheduler)):
            try:
                part.load_state_dict(getattr(state, name))
            except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as error:
                raise ValueError(f"cannot resume from {where}: its {name!r} does not fit the "
                                 f"model ({' '.join(str(error).split())[:200]})") from None
        self._restore_random_state(state, where)
        epoch, position = state.epoch, state.position
        if self.prepared.restart_data or position > n_batches:
            epoch, position = epoch + 1, 0
        progress = FitProgress(state.step, state.losses.tolist(), float(state.seconds))
        return progress, (epoch, position)

    def _restore_random_state(self, state: TrainCheckpoint, where: str) -> None:
        rng, rank, size = state.rng, self.ranks.rank, self.ranks.size
        if rank == 0:
            mine: dict[str, Any] | None = rng
        elif len(rng.get("ranks", ())) == size:
            devices = rng.get("devices", [])
            mine = {"torch": rng["ranks"][rank], **(devices[rank] if devices else {})}
        else:  # saved by a run of another size: new masks, still not process 0's
            torch.manual_seed(self.prepared.config.seed + rank + state.step)
            mine = None
        if mine is not None:
            try:
                set_random_state(mine, self.plan.device)
            except (RuntimeError, TypeError, ValueError) as error:
                raise ValueError(f"cannot resume from {where}: its 'rng' holds a random state "
                                 f"this device cannot take ({error})") from None

    def _make_callbacks(self, progress: FitProgress) -> CheckpointKeeper:
        """The callbacks, in the order `fit` calls them; the checkpoint keeper."""
        config, options, ranks, log = (self.prepared.config, self.prepared.options,
                                       self.ranks, self.hooks.log)
        metrics = MetricsLog(self.folder.path, ranks, self.optimizer, every=options.log_every,
                             resumed_at=progress.step if self.plan.resume else None,
                             tensorboard=options.tensorboard)
        stopping = EarlyStopping(ranks, metric=options.best_metric, patience=options.patience,
                                 save_every=config.save_every, log=log)
        policy = Policy(config.save_every, config.max_steps, config.average,
                        options.best_metric if options.keep_best else None)
        keeper = CheckpointKeeper(self.folder, self.model, ranks, policy, self._validator(),
                                  [metrics, stopping], self.snapshot, log)
        self.callbacks = [metrics, StopWhen(ranks, config.max_minutes, self.hooks.should_stop,
                                            log)]
        if self.hooks.progress and progress.step < config.max_steps:
            stream = self.stream
            self.callbacks.append(ProgressBar(config.max_steps, progress.step,
                                              lambda: stream.epoch if stream else 0,
                                              keeper.due))
        self.callbacks += [keeper, stopping]
        return keeper

    def _validator(self) -> Validator:
        max_len, tokenizer = self.prepared.model_config.max_len, self.prepared.tokenizer
        valid = [pair for pair, ids in zip(self.plan.valid, encode_pairs(
            tokenizer, self.plan.valid), strict=True)
            if len(ids[0]) + 1 + 50 < max_len and len(ids[1]) + 1 <= max_len]
        return Validator(self.model, tokenizer, valid[: self.prepared.config.eval_size],
                         self.parts.score)

    def _load_callbacks(self, states: dict[str, dict[str, Any]]) -> None:
        for callback in self.callbacks:
            if callback.state_key in states:
                try:
                    callback.load_state_dict(states[callback.state_key])
                except ValueError as error:
                    raise ValueError(
                        f"cannot resume from {str(self.prepared.state_path)!r}: its "
                        f"'callbacks' state {callback.state_key!r} is bad: {error}") from None

    def _fit(self, progress: FitProgress) -> FitProgress:
        config, device, amp = self.prepared.config, self.plan.device, self.plan.amp
        if progress.step >= config.max_steps:
            return progress
        trained: nn.Module = self.model
        if self.ranks.size > 1:
            # the generator runs outside DDP's forward; its gradients are still averaged,
            # because DDP hooks every parameter that receives a gradient in backward()
            trained = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[device.index] if device.type == "cuda" else None)
        # the label-smoothed KL of LabelSmoothing, without building a (rows, V) target
        loss_compute = self.parts.loss(self.model.generator, functools.partial(
            label_smoothed_kl, padding_idx=PAD, smoothing=config.smoothing))
        assert self.stream is not None
        try:
            return fit(self.stream, trained, loss_compute, self.optimizer, self.scheduler,
                       callbacks=self.callbacks, progress=progress,
                       accum_iter=config.accum_iter, autocast=amp_context(device, amp),
                       scaler=torch.amp.GradScaler("cuda") if amp == "fp16" else None)
        except TrainingDiverged as error:
            last = files.checkpoint_paths(self.folder.path)
            kept = (f"; {self.folder.path / files.CHECKPOINTS} keeps step "
                    f"{files.step_of(last[-1])}" if last else "")
            raise TrainingDiverged(
                f"training diverged at step {progress.step + 1}: {error.reason}; no update was "
                f"made from it and nothing was saved{kept}; lower the learning rate (factor) "
                "or check the data", reason=error.reason, keywords=("factor",)) from None

    def _final(self, progress: FitProgress) -> list[int]:
        """The final model, written by process 0 as `model.pt` and read by the others: the
        steps it comes from."""
        model, folder = self.model, self.plan.folder
        if self.ranks.rank > 0:
            problem = self.ranks.share(None)
            if problem:
                raise TrainingDiverged(problem)
            final, meta = files.load_checkpoint(folder / files.MODEL_FILE)
            model.load_state_dict(final.state_dict())
            return list(meta.get("averaged", []))
        averaged, problem = write_final_model(
            model, folder, self.prepared.tokenizer, progress.step, self.prepared.config.average,
            self.prepared.options.keep_best, self.hooks.log)
        self.ranks.share(problem)
        if problem:
            raise TrainingDiverged(problem)
        return averaged
