r"""Training a translator with the paper's whole recipe, resumable to the step.

A shared byte-pair vocabulary (section 5.1), batches of about `max_tokens` tokens (5.1), Adam
with $\beta = (0.9, 0.98)$, $\epsilon = 10^{-9}$ and the warm-up schedule (5.3), label smoothing
0.1 (5.4), and at the end the average of the last $k$ checkpoints (6.1):

$$\theta_{avg} = \frac{1}{k} \sum_{i=1}^{k} \theta_{(i)}$$

This module is the recipe; [`fit`][vanilla_transformer.training.loop.fit] runs it and its
[`callbacks`][vanilla_transformer.training.callbacks] validate, checkpoint and log. Every
checkpoint holds the model, the optimizer, the schedule, the random state and the position in
the data, so a resumed run continues exactly where the uninterrupted one would be. The run
folder has one writer at a time and is never replaced unless asked
([`run_folder`][vanilla_transformer.training.run_folder]); a loss or gradient that is not
finite stops the run before it reaches a file.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..config import (
    AMP_MODES,
    BEST_METRICS,
    DEFAULT_PRESET,
    DEVICES,
    RUN_OPTIONS,
    TRANSLATE_TIMEOUT,
    TRANSLATION_PRESETS,
    RunOptions,
    TranslationConfig,
)
from ..data.corpus import iter_tsv, sample_tsv
from ..data.tokenizer import PAD, SharedTokenizer
from ..inference.evaluate import score_translations
from ..model.encoder_decoder import EncoderDecoder, make_model_from_config
from .callbacks import (
    CheckpointKeeper,
    EarlyStopping,
    MetricsLog,
    StopWhen,
    Validator,
    auto_bleu_tokenize,
)
from .checkpoints import (
    BEST_FILE,
    CHECKPOINTS,
    CONFIG_FILE,
    IDS_FOLDER,
    MODEL_FILE,
    TOKENIZER_FILE,
    TRAIN_STATE_FORMAT,
    average_checkpoints,
    checkpoint_paths,
    load_checkpoint,
    load_model_state,
    load_train_state,
    naming,
    save_checkpoint,
    step_of,
    write_json,
)
from .loop import FitProgress, TrainingDiverged, fit
from .loss import SimpleLossCompute, label_smoothed_kl
from .ranks import ProcessZeroError, Ranks, amp_context, check_fits_memory, join, leave
from .ranks import resolve_device as resolve_device
from .resume import Prepared, load_translator, prepare_follower, prepare_new, prepare_resumed
from .run_folder import (
    STAGED_IDS,
    RunLock,
    check_folder,
    clear_run,
    file_fingerprint,
    remove_stale_temporaries,
)
from .schedule import make_optimizer
from .translation_data import BatchStream, encode_pairs, pairs_fingerprint, training_batches

__all__ = [
    "TRANSLATION_PRESETS", "DEFAULT_PRESET", "TRAIN_STATE_FORMAT", "TranslationConfig",
    "TranslationRun", "train_translation", "checkpoint_paths", "load_train_state",
    "average_checkpoints", "load_translator", "BEST_METRICS", "DEVICES", "AMP_MODES",
    "auto_bleu_tokenize", "resolve_device", "RUN_OPTIONS", "amp_context",
]

TOKENIZER_SAMPLE = 100_000
"""Pairs of a TSV file the tokenizer of a new run learns from (`sample_tsv`)."""


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


@dataclass
class _Call:
    """The arguments of one `train_translation` call, checked."""

    train: Sequence[tuple[str, str]] | Path
    valid: Sequence[tuple[str, str]]
    folder: Path
    preset: str | None
    model_options: dict[str, Any]
    config: TranslationConfig
    changes: dict[str, Any]
    options: dict[str, Any]
    resume: bool
    overwrite: bool
    new_data: bool
    fingerprint: dict[str, Any]
    should_stop: Callable[[], bool] | None
    device: torch.device
    amp: str
    progress: bool
    log: Callable[[str], None]


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
    timeout: float = TRANSLATE_TIMEOUT,
) -> TranslationRun:
    """Train a translator on `(source, target)` sentence pairs, writing the run to `out`.

    `out` receives `tokenizer.json`, `config.json`, `metrics.jsonl` (one JSON line every
    `log_every` steps and one per validation), `checkpoints/step-*.pt` (every `save_every`
    steps and at the end; the last `average` are kept) and `model.pt`, the average of the kept
    checkpoints (a `save_checkpoint` file), or with `keep_best` the best-scoring checkpoint.

    A new run needs an empty (or missing) folder, unless `overwrite`, which removes the old
    run's files once the new run is accepted (its data read and checked, its model sized).
    A refused run leaves the folder as it found it. One process at a time may write a folder
    (a lock file names it). With `resume=True` the run continues from its newest checkpoint
    with the saved tokenizer, model and settings; `changes` (and, from `config`, `max_steps`
    and `max_minutes`) replace saved settings. Training pairs that do not fit the model's
    positional table are left out and counted.

    Given the path of a `source<TAB>target` file instead of pairs, the run streams it: a new
    run's tokenizer learns from `TOKENIZER_SAMPLE` pairs drawn from it (`sample_tsv`), the
    file is tokenised once into `out/ids/` (reused on resume while the file and the tokenizer
    are the same), and the batches are collated one at a time: the same batches, in the same
    order, as for its pairs in memory.

    With `distributed`, call it in every process of a `torchrun` job: the processes train one
    run with `DistributedDataParallel` (NCCL on `cuda:LOCAL_RANK` with `device="cuda"`, gloo on
    the CPU). Each optimizer step takes `accum_iter * processes` consecutive batches, and every
    loss is divided by the target tokens of them all, so K processes compute the steps one
    process computes with K times `accum_iter`, apart from the dropout masks, which differ per
    process. Process 0 owns the folder: it checks it, prepares the tokenizer and the ids,
    validates and writes; the others read what it prepared.

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
        new_data: on resume, accept training data that differ from the run's, or whose
            fingerprint the run lacks; the data position restarts at a new epoch.
        data_fingerprint: `{"size", "sha256"}` of the training file, to store and check on
            resume (default: computed from `train_pairs`, or read from the file in chunks).
        should_stop: called after every step; when it returns true the run writes a
            checkpoint and the final model and returns with `stopped="interrupted"`.
        device: `"cpu"`, `"cuda"` or `"auto"`.
        amp: mixed precision, one of `AMP_MODES`.
        progress: show a tqdm progress bar on stderr.
        log: called with one line at each checkpoint (default: nothing is printed).
        distributed: train as one process of a `torchrun` job (see above).
        timeout: seconds a process waits for the others (validation runs on process 0
            while the others wait).

    Returns:
        The [`TranslationRun`][vanilla_transformer.training.translation.TranslationRun].

    Raises:
        ValueError: before anything is written, for an unknown preset, no pairs, a bad line
            in the training file, a model too big for memory, a folder that cannot be
            written, is not empty, or is being written by another process, or a resume that
            does not fit the run (no checkpoint, another model, other data). Its message
            names arguments as `name=value`; a `Refusal` lists them in `keywords`.
        TrainingDiverged: if a loss or a gradient is not finite; the step is named, and no
            file is written from it.

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.training.translation import TranslationConfig, train_translation
        >>> pairs = [("one", "eins"), ("two", "zwei"), ("three", "drei")]
        >>> cfg = TranslationConfig(vocab_size=30, max_steps=4, save_every=2, average=2,
        ...                         eval_size=2, warmup=2)
        >>> run = train_translation(pairs, pairs, tempfile.mkdtemp(), config=cfg,
        ...                         model_options=dict(d_model=16, d_ff=32, N=1))
        >>> run.step, len(run.losses), run.averaged
        (4, 4, [2, 4])
    """
    call = _check_call(train_pairs, valid_pairs, out, preset, model_options, config, changes,
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
                run = _train_first(call, ranks)
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


def _check_call(train: Any, valid: Sequence[tuple[str, str]], out: Any, preset: str | None,
                model_options: dict[str, Any] | None, config: TranslationConfig | None,
                changes: Mapping[str, Any] | None, resume: bool, overwrite: bool,
                new_data: bool, data_fingerprint: Mapping[str, Any] | None,
                should_stop: Callable[[], bool] | None, device: str, amp: str,
                progress: bool, log: Callable[[str], None] | None) -> _Call:
    """The arguments of `train_translation`, each refused before anything is written."""
    if preset is not None and preset not in TRANSLATION_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(TRANSLATION_PRESETS)}")
    if isinstance(train, (str, os.PathLike)):
        train = Path(os.fspath(train))
        if not train.is_file():
            next(iter_tsv(train))  # raises the file's error
    elif len(train) == 0:
        raise ValueError("train_pairs must hold at least one pair")
    if len(valid) == 0:
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
        _check_options(RunOptions(**{**RUN_OPTIONS, **options}), config.eval_size)
    if data_fingerprint:
        fingerprint = dict(data_fingerprint)
    elif isinstance(train, Path):
        fingerprint = {"path": str(train.resolve()), **file_fingerprint(train)}
    else:
        fingerprint = pairs_fingerprint(train)
    return _Call(train, valid, Path(os.fspath(out)), preset, dict(model_options or {}), config,
                 changes, options, resume, overwrite, new_data, fingerprint, should_stop,
                 target, amp, progress, log or (lambda line: None))


def _check_options(options: RunOptions, eval_size: int) -> RunOptions:
    if options.tensorboard:
        import torch.utils.tensorboard  # noqa: F401 - the package is missing: say so now
    if (options.keep_best or options.patience is not None) and eval_size == 0:
        raise ValueError("keep_best and patience need validation scores: eval_size must be "
                         "positive, got 0")
    return options


def _train_first(call: _Call, ranks: Ranks) -> TranslationRun:
    """Process 0's part (the only one without `distributed`): own the folder, then train. A
    new run that is refused or stopped before it is accepted leaves the folder as it was."""
    path = call.folder
    check_folder(path, resume=call.resume, overwrite=call.overwrite)
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create output folder {str(path)!r}: "
                         f"{error.strerror or error}") from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"output folder {str(path)!r} is not writable")
    accepted = [call.resume]
    try:
        with RunLock(path):
            for tmp in remove_stale_temporaries(path):
                call.log(f"removed {tmp}, a file left by an interrupted save")
            before = set(os.listdir(path))
            try:
                return _train(call, ranks, _prepare(call), accepted)
            except BaseException:
                if not accepted[0]:
                    _remove_new(path, before)
                raise
    finally:
        if created and path.is_dir() and not any(path.iterdir()):
            path.rmdir()  # refused before any work: leave no empty folder behind


def _remove_new(folder: Path, before: set[str]) -> None:
    """Remove what a refused run wrote: the entries of `folder` that were not in `before`."""
    for name in set(os.listdir(folder)) - before - {".lock"}:
        entry = folder / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _prepare(call: _Call) -> Prepared:
    if call.resume:
        prepared = prepare_resumed(
            call.folder, preset=call.preset, model_options=call.model_options,
            config=call.config, changes=call.changes, options=call.options,
            fingerprint=call.fingerprint, new_data=call.new_data)
        call.log(f"resuming from step {prepared.state['step']} of "  # type: ignore[index]
                 f"{prepared.config.max_steps}")
        return prepared
    sample = (sample_tsv(call.train, TOKENIZER_SAMPLE, seed=call.config.seed)
              if isinstance(call.train, Path) else call.train)
    return prepare_new(call.preset, call.model_options, call.config, call.options, sample)


def _accept(call: _Call, ranks: Ranks, prepared: Prepared, accepted: list[bool]) -> None:
    """Process 0 takes the folder for the run: an old run replaced goes now, the tokenizer and
    the settings are written, and the other processes are told."""
    folder = call.folder
    if not call.resume:
        if call.overwrite:
            clear_run(folder)
            if (folder / STAGED_IDS).is_dir():
                os.replace(folder / STAGED_IDS, folder / IDS_FOLDER)
        (folder / CHECKPOINTS).mkdir(exist_ok=True)
        with naming(folder / TOKENIZER_FILE):
            prepared.tokenizer.save(folder / TOKENIZER_FILE)
    accepted[0] = True
    data = {k: call.fingerprint[k] for k in ("path", "size", "sha256") if k in call.fingerprint}
    write_json(folder / CONFIG_FILE, prepared.run_config(data))
    if ranks.size > 1:
        ranks.share({"error": None, "restart_data": prepared.restart_data})
        ranks.shared = True


def _train(call: _Call, ranks: Ranks, prepared: Prepared,
           accepted: list[bool] | None = None) -> TranslationRun:
    """The recipe: batches, model, optimizer, loss and callbacks, then `fit`."""
    config, model_config = prepared.config, prepared.model_config
    _check_options(prepared.options, config.eval_size)
    check_fits_memory(model_config, call.device)
    ids = call.folder / (STAGED_IDS if call.overwrite and not call.resume else IDS_FOLDER)
    batches = training_batches(call.train, prepared.tokenizer, ids, model_config.max_len,
                               config, call.log)
    valid = [pair for pair, ids_pair in zip(call.valid, encode_pairs(
        prepared.tokenizer, call.valid), strict=True)
        if len(ids_pair[0]) + 1 + 50 < model_config.max_len][: config.eval_size]
    if ranks.rank == 0:
        _accept(call, ranks, prepared, accepted if accepted is not None else [False])
    torch.manual_seed(config.seed)  # the same initial weights on every process
    model = make_model_from_config(model_config)
    if ranks.rank > 0:
        torch.manual_seed(config.seed + ranks.rank)  # other dropout masks than process 0's
    optimizer, scheduler = make_optimizer(model, model_config.d_model, factor=config.factor,
                                          warmup=config.warmup)
    progress, position = _restore(prepared, model, optimizer, scheduler, ranks, batches[0])
    model.to(call.device)
    for value in optimizer.state.values():  # Adam's moments follow the model
        for key, tensor in value.items():
            if isinstance(tensor, torch.Tensor) and key != "step":
                value[key] = tensor.to(call.device)
    stream = BatchStream(batches, epoch=position[0], position=position[1], step=progress.step,
                         max_steps=config.max_steps, accum_iter=config.accum_iter, ranks=ranks,
                         device=call.device)
    keeper = _keeper(call, ranks, prepared, model, valid, optimizer, scheduler, stream,
                     progress)
    progress = _fit(call, ranks, prepared, model, optimizer, scheduler, stream, progress,
                    keeper)
    model.cpu()
    if ranks.share(not checkpoint_paths(call.folder)):
        keeper.save(progress)
    return _final(call, ranks, prepared, model, progress, keeper.history, batches[2])


def _restore(prepared: Prepared, model: nn.Module, optimizer: torch.optim.Optimizer,
             scheduler: Any, ranks: Ranks, n_batches: int) -> tuple[FitProgress, tuple[int, int]]:
    """A resumed run's model, optimizer, schedule and random state: `(progress, (epoch,
    position))`."""
    state = prepared.state
    if state is None:
        return FitProgress(), (0, 0)
    load_model_state(model, state["model"], "the newest checkpoint")
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    rng = state["rng"]
    if ranks.rank == 0:
        torch.set_rng_state(rng["torch"])
    elif len(rng.get("ranks", ())) == ranks.size:
        torch.set_rng_state(rng["ranks"][ranks.rank])
    else:  # saved by a run of another size: new masks, still not process 0's
        torch.manual_seed(prepared.config.seed + ranks.rank + state["step"])
    epoch, position = state["epoch"], state["position"]
    if prepared.restart_data or position > n_batches:
        epoch, position = epoch + 1, 0
    progress = FitProgress(state["step"], state["losses"].tolist(), float(state["seconds"]))
    return progress, (epoch, position)


def _keeper(call: _Call, ranks: Ranks, prepared: Prepared, model: EncoderDecoder,
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


def _fit(call: _Call, ranks: Ranks, prepared: Prepared, model: nn.Module,
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
        callbacks.append(_Bar(config.max_steps, progress.step, stream, keeper))
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
        kept = f"; {call.folder / CHECKPOINTS} keeps step {step_of(last[-1])}" if last else ""
        raise TrainingDiverged(
            f"training diverged at step {progress.step + 1}: {error.reason}; no update was made "
            f"from it and nothing was saved{kept}; lower the learning rate (factor) or check "
            "the data", reason=error.reason, keywords=("factor",)) from None


class _Bar:
    """A progress bar of steps on stderr, cleared before a checkpoint's log line."""

    def __init__(self, total: int, initial: int, stream: BatchStream,
                 keeper: CheckpointKeeper) -> None:
        from tqdm.auto import tqdm

        self.bar, self.stream, self.keeper = tqdm(total=total, initial=initial, desc="train",
                                                  unit="step"), stream, keeper

    def on_step(self, progress: FitProgress) -> None:
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{progress.loss:.3f}", epoch=self.stream.epoch, refresh=False)
        if self.keeper.due(progress):
            self.bar.clear()

    def on_end(self, progress: FitProgress) -> None:
        self.bar.close()


def _final(call: _Call, ranks: Ranks, prepared: Prepared, model: EncoderDecoder,
           progress: FitProgress, history: list[dict[str, Any]], skipped: int) -> TranslationRun:
    """The final model, written by process 0 as `model.pt` and read by the others."""
    if ranks.rank > 0:
        problem = ranks.share(None)
        if problem:
            raise TrainingDiverged(problem)
        final, meta = load_checkpoint(call.folder / MODEL_FILE)
        model.load_state_dict(final.state_dict())
        averaged = list(meta.get("averaged", []))
    else:
        averaged, problem = _write_final_model(model, call.folder, prepared.tokenizer,
                                               progress.step, prepared.config.average,
                                               prepared.options.keep_best)
        ranks.share(problem)
        if problem:
            raise TrainingDiverged(problem)
    return TranslationRun(model.eval(), prepared.tokenizer, call.folder, progress.step,
                          progress.losses, history, progress.seconds, averaged, progress.stop,
                          skipped)


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
        averaged = [step_of(p) for p in kept_paths]
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return averaged, (f"the final model of step {step} holds non-finite weights; "
                          f"{MODEL_FILE} was not written")
    save_checkpoint(folder / MODEL_FILE, model, steps=step, averaged=averaged,
                    tokenizer=tokenizer.tokenizer.to_str())
    return averaged, None
