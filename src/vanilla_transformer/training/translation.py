r"""Training a translator with the paper's whole recipe, resumable to the step: a shared
byte-pair vocabulary and batches of about `max_tokens` tokens (section 5.1), Adam and the
warm-up schedule (5.3), label smoothing (5.4), and at the end the average of the last $k$
checkpoints (6.1), of the last `AVERAGE_SPAN` of the run only:

$$\theta_{avg} = \frac{1}{k} \sum_{i=1}^{k} \theta_{(i)}$$

This module is the recipe; [`fit`][vanilla_transformer.training.loop.fit] runs it and its
[`callbacks`][vanilla_transformer.training.callbacks] validate, checkpoint and log. A checkpoint
holds all a resumed run needs to continue exactly where the uninterrupted one would be.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..config import AMP_MODES, BEST_METRICS, DEFAULT_TIMEOUT, DEVICES, RUN_OPTIONS
from ..config import DEFAULT_PRESET as DEFAULT_PRESET
from ..config import TRANSLATION_PRESETS as TRANSLATION_PRESETS
from ..config import TranslationConfig as TranslationConfig
from ..data.tokenizer import PAD, SharedTokenizer
from ..data.translation_batches import BatchStream, encode_pairs, training_batches
from ..inference.evaluate import score_translations
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from . import checkpoints as files
from .callbacks import CheckpointKeeper, EarlyStopping, MetricsLog, ProgressBar, StopWhen, Validator
from .callbacks import auto_bleu_tokenize as auto_bleu_tokenize
from .checkpoints import TRAIN_STATE_FORMAT as TRAIN_STATE_FORMAT
from .checkpoints import average_checkpoints, checkpoint_paths, load_train_state
from .loop import FitProgress, TrainingDiverged, fit
from .loss import SimpleLossCompute, label_smoothed_kl
from .ranks import ProcessZeroError, Ranks, amp_context, check_fits_memory, join, leave
from .ranks import resolve_device as resolve_device
from .resume import (
    Prepared,
    TrainCall,
    accept,
    check_call,
    check_options,
    own_folder,
    prepare_follower,
    restore,
)
from .run_folder import load_translator
from .schedule import make_optimizer

__all__ = [
    "TRANSLATION_PRESETS", "DEFAULT_PRESET", "TRAIN_STATE_FORMAT", "TranslationConfig",
    "TranslationRun", "train_translation", "checkpoint_paths", "load_train_state",
    "average_checkpoints", "load_translator", "BEST_METRICS", "DEVICES", "AMP_MODES",
    "auto_bleu_tokenize", "resolve_device", "RUN_OPTIONS", "amp_context",
]


@dataclass
class TranslationRun:
    """What `train_translation` returns.

    Attributes:
        model: the final model, in eval mode. tokenizer: the shared vocabulary. out: the run
            folder.
        step: optimizer steps in all. losses: every step's loss, resumed ones included.
        history: one dict per checkpoint: `step`, `seconds`, `loss` and the `VALID_KEYS` of
            the first `eval_size` validation pairs.
        seconds: training time in all. averaged: the steps averaged into `model`.
        stopped: why training ended before `max_steps`: `""` (it did not), `"interrupted"`,
            `"time"` or `"patience"`.
        skipped: training pairs left out, too long for the positional table.
    """

    model: EncoderDecoder
    tokenizer: SharedTokenizer
    out: Path
    step: int
    losses: list[float]
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    averaged: list[int] = field(default_factory=list)
    stopped: str = ""
    skipped: int = 0


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
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    distributed: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> TranslationRun:
    """Train a translator on `(source, target)` pairs, writing the run folder `out`: the
    tokenizer, the settings, `metrics.jsonl`, checkpoints every `save_every` steps (the last
    `average` kept) and `model.pt`, the average of those in the last `AVERAGE_SPAN` of the run,
    or with `keep_best` the best. A TSV path is streamed, tokenised once into `out/ids/`.
    With `distributed`, call it in every process of a `torchrun` job; process 0 writes.

    Args:
        train_pairs: training pairs, or the path of a TSV file of them.
        valid_pairs: validation pairs (the first `eval_size` are scored at each checkpoint).
        out: the run folder (created if needed).
        preset: a key of `TRANSLATION_PRESETS`. model_options: `ModelConfig` fields over it.
        config: training settings (default `TranslationConfig()`).
        changes: `TranslationConfig` fields and `RUN_OPTIONS` to change on resume.
        resume: continue the run in `out`. overwrite: replace it, once the new one is accepted.
        new_data: on resume, accept other training data (a new epoch starts).
        data_fingerprint: `{"size", "sha256"}` of the training data (default: computed).
        should_stop: asked after every step; true saves and stops (`"interrupted"`).
        device: `"cpu"`, `"cuda"` or `"auto"`. amp: one of `AMP_MODES`.
        progress: a progress bar on stderr. log: gets a line at each checkpoint and at the end.
        distributed: train as one process of a `torchrun` job.
        timeout: seconds a process waits for the others.

    Returns:
        The [`TranslationRun`][vanilla_transformer.training.translation.TranslationRun].

    Raises:
        ValueError: before anything is written, for bad arguments, data, sizes or folders, or
            a resume that does not fit the run (a `RefusalError` names its `keywords`).
        TrainingDiverged: if a loss or a gradient is not finite.

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.training.translation import TranslationConfig, train_translation
        >>> pairs = [("one", "eins"), ("two", "zwei"), ("three", "drei")]
        >>> cfg = TranslationConfig(vocab_size=30, max_steps=5, save_every=1, average=2,
        ...                         eval_size=2, warmup=2)
        >>> run = train_translation(pairs, pairs, tempfile.mkdtemp(), config=cfg,
        ...                         model_options=dict(d_model=16, d_ff=32, N=1))
        >>> run.step, len(run.losses), run.averaged
        (5, 5, [4, 5])
    """
    call = check_call(train_pairs, valid_pairs, out, preset, model_options, config, changes,
                       resume, overwrite, new_data, data_fingerprint, should_stop, device, amp,
                       progress, log)
    ranks, owns_group, call.device = join(distributed, timeout, call.device)
    together = False  # true where every process stops at once: then they meet at a barrier
    try:
        if ranks.rank > 0:  # the others wait for process 0 to prepare the folder, then read it
            prepared = ranks.share(None)
            if prepared["error"]:
                together = True
                raise ProcessZeroError(prepared["error"])
            call.progress, call.log = False, lambda line: None
            run = _train(call, ranks, prepare_follower(call.folder, resume,
                                                       prepared["restart_data"]))
        else:
            try:
                run = own_folder(call, lambda prepared, accepted: _train(call, ranks, prepared,
                                                                         accepted))
            except ValueError as error:
                if ranks.size > 1 and not ranks.shared:  # a refused run: the others stop too
                    ranks.share({"error": str(error), "restart_data": False})
                    together = True
                raise
        together = True
        return run
    finally:
        if owns_group:
            leave(together)


def _train(call: TrainCall, ranks: Ranks, prepared: Prepared,
           accepted: list[bool] | None = None) -> TranslationRun:
    """The recipe: batches, model, optimizer, loss and callbacks, then `fit`."""
    config, model_config = prepared.config, prepared.model_config
    check_options(prepared.options, config.eval_size)
    check_fits_memory(model_config, call.device)
    ids = call.folder / (files.STAGED_IDS if call.overwrite and not call.resume else files.IDS_FOLDER)
    with files.naming(ids):
        batches = training_batches(call.train, prepared.tokenizer, ids, model_config.max_len,
                                   config, call.log)
    valid = [pair for pair, ids_pair in zip(call.valid, encode_pairs(
        prepared.tokenizer, call.valid), strict=True)
        if len(ids_pair[0]) + 1 + 50 < model_config.max_len
        and len(ids_pair[1]) + 1 <= model_config.max_len][: config.eval_size]
    if ranks.rank == 0:
        accept(call, ranks, prepared, accepted if accepted is not None else [False])
    torch.manual_seed(config.seed)  # the same initial weights on every process
    model = make_model_from_config(model_config)
    if ranks.rank > 0:
        torch.manual_seed(config.seed + ranks.rank)  # other dropout masks than process 0's
    optimizer, scheduler = make_optimizer(model, model_config.d_model, factor=config.factor,
                                          warmup=config.warmup)
    model.to(call.device)  # first: Adam's restored moments follow the parameters' device
    progress, position = restore(prepared, model, optimizer, scheduler, ranks, batches[0])
    stream = BatchStream(batches, epoch=position[0], position=position[1], step=progress.step,
                         max_steps=config.max_steps, accum_iter=config.accum_iter,
                         rank=ranks.rank, size=ranks.size, device=call.device)
    keeper = _keeper(call, ranks, prepared, model, valid, optimizer, scheduler, stream,
                     progress)
    progress = _fit(call, ranks, prepared, model, optimizer, scheduler, stream, progress,
                    keeper)
    model.cpu()
    if ranks.share(not checkpoint_paths(call.folder)):
        keeper.save(progress)
    return _final(call, ranks, prepared, model, progress, keeper.history, batches[2])


def _keeper(call: TrainCall, ranks: Ranks, prepared: Prepared, model: EncoderDecoder,
            valid: list[tuple[str, str]], optimizer: torch.optim.Optimizer, scheduler: Any,
            stream: BatchStream, progress: FitProgress) -> CheckpointKeeper:
    config, options = prepared.config, prepared.options
    metrics = MetricsLog(call.folder, ranks, optimizer, every=options.log_every,
                         resumed_at=progress.step if call.resume else None,
                         tensorboard=options.tensorboard)
    history = [] if prepared.state is None else list(prepared.state["history"])

    def state() -> dict[str, Any]:
        return {"config": prepared.model_config.to_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": stream.epoch,
                "position": stream.position}

    return CheckpointKeeper(
        call.folder, model, ranks, save_every=config.save_every, max_steps=config.max_steps,
        average=config.average, keep_best=options.best_metric if options.keep_best else None,
        validator=Validator(model, prepared.tokenizer, valid, lambda *a, **k: score_translations(
            *a, **k)), metrics=metrics, state=state,
        history=history, log=call.log)


def _fit(call: TrainCall, ranks: Ranks, prepared: Prepared, model: nn.Module,
         optimizer: torch.optim.Optimizer, scheduler: Any, stream: BatchStream,
         progress: FitProgress, keeper: CheckpointKeeper) -> FitProgress:
    config, options = prepared.config, prepared.options
    trained: nn.Module = model
    if ranks.size > 1:
        # the generator runs outside DDP's forward; its gradients are still averaged, because
        # DDP hooks every parameter that receives a gradient in backward()
        trained = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[call.device.index] if call.device.type == "cuda" else None)
    # the label-smoothed KL of LabelSmoothing, without building a (rows, V) target
    loss_compute = SimpleLossCompute(model.generator, functools.partial(  # type: ignore[arg-type]
        label_smoothed_kl, padding_idx=PAD, smoothing=config.smoothing))
    callbacks = [keeper.metrics, StopWhen(ranks, config.max_minutes, call.should_stop, call.log)]
    if call.progress and progress.step < config.max_steps:
        callbacks.append(ProgressBar(config.max_steps, progress.step, lambda: stream.epoch,
                                     keeper.due))
    callbacks += [keeper, EarlyStopping(keeper.history, ranks, metric=options.best_metric,
                                        patience=options.patience,
                                        save_every=config.save_every, log=call.log)]
    if progress.step >= config.max_steps:
        return progress
    try:
        return fit(stream, trained, loss_compute, optimizer, scheduler, callbacks=callbacks,
                   progress=progress, accum_iter=config.accum_iter,
                   autocast=amp_context(call.device, call.amp),
                   scaler=torch.amp.GradScaler("cuda") if call.amp == "fp16" else None)
    except TrainingDiverged as error:
        last = checkpoint_paths(call.folder)
        kept = f"; {call.folder / files.CHECKPOINTS} keeps step {files.step_of(last[-1])}" if last else ""
        raise TrainingDiverged(
            f"training diverged at step {progress.step + 1}: {error.reason}; no update was made "
            f"from it and nothing was saved{kept}; lower the learning rate (factor) or check "
            "the data", reason=error.reason, keywords=("factor",)) from None


def _final(call: TrainCall, ranks: Ranks, prepared: Prepared, model: EncoderDecoder,
           progress: FitProgress, history: list[dict[str, Any]], skipped: int) -> TranslationRun:
    """The final model, written by process 0 as `model.pt` and read by the others."""
    if ranks.rank > 0:
        problem = ranks.share(None)
        if problem:
            raise TrainingDiverged(problem)
        final, meta = files.load_checkpoint(call.folder / files.MODEL_FILE)
        model.load_state_dict(final.state_dict())
        averaged = list(meta.get("averaged", []))
    else:
        averaged, problem = _write_final_model(model, call.folder, prepared.tokenizer,
                                               progress.step, prepared.config.average,
                                               prepared.options.keep_best, call.log)
        ranks.share(problem)
        if problem:
            raise TrainingDiverged(problem)
    return TranslationRun(model.eval(), prepared.tokenizer, call.folder, progress.step,
                          progress.losses, history, progress.seconds, averaged, progress.stop,
                          skipped)


def _write_final_model(model: nn.Module, folder: Path, tokenizer: SharedTokenizer, step: int,
                       average: int, keep_best: bool, log: Callable[[str], None]
                       ) -> tuple[list[int], str | None]:
    """Load the best or the averaged checkpoints into `model`, and write `model.pt`: `(steps
    it comes from, why it was not written or None)`."""
    best_path = folder / files.CHECKPOINTS / files.BEST_FILE
    if keep_best and best_path.is_file():
        best_model, meta = files.load_checkpoint(best_path)
        model.load_state_dict(best_model.state_dict())
        averaged = [int(meta["steps"])]
    else:
        by_step = {files.step_of(p): p for p in checkpoint_paths(folder)}
        averaged = files.averaging_window(list(by_step), average)
        files.load_model_state(model, average_checkpoints([by_step[s] for s in averaged]),
                               "the averaged checkpoints")
        log(_averaging_line(sorted(by_step)[-average:], averaged))
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return averaged, (f"the final model of step {step} holds non-finite weights; "
                          f"{files.MODEL_FILE} was not written")
    files.save_checkpoint(folder / files.MODEL_FILE, model, steps=step, averaged=averaged,
                          tokenizer=tokenizer.tokenizer.to_str())
    return averaged, None


def _averaging_line(kept: list[int], averaged: list[int]) -> str:
    """The line on what `model.pt` averages, or why only the last checkpoint."""
    start = math.ceil(averaged[-1] * (1 - files.AVERAGE_SPAN))
    steps = ", ".join(map(str, averaged))
    if len(averaged) > 1:
        return (f"{files.MODEL_FILE}: the average of the checkpoints of steps {steps}, the last "
                f"{files.AVERAGE_SPAN:.0%} of the run (from step {start})")
    older = [step for step in kept if step < start]
    why = (f"step {older[-1]} is before step {start}, where the last "
           f"{files.AVERAGE_SPAN:.0%} of the run starts" if older else "the only one kept")
    return f"{files.MODEL_FILE}: averaging skipped, the checkpoint of step {steps} alone ({why})"
