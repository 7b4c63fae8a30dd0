r"""Training a translator with the paper's whole recipe, resumable to the step: a shared
byte-pair vocabulary and batches of about `max_tokens` tokens (section 5.1), Adam and the
warm-up schedule (5.3), label smoothing (5.4), and at the end the average of the last $k$
checkpoints (6.1), of the last `AVERAGE_SPAN` of the run only:

$$\theta_{avg} = \frac{1}{k} \sum_{i=1}^{k} \theta_{(i)}$$

This module is the entry: `train_translation` checks its arguments into a
[`RunPlan`][vanilla_transformer.training.plan.RunPlan], and a
[`Run`][vanilla_transformer.training.run.Run] trains it with
[`fit`][vanilla_transformer.training.fit_loop.fit], whose
[`callbacks`][vanilla_transformer.training.callbacks] validate, checkpoint and log. A
checkpoint holds all a resumed run needs to continue exactly where the uninterrupted one
would be.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Unpack

from ..config import AMP_MODES, BEST_METRICS, DEVICES, RUN_OPTIONS
from ..config import DEFAULT_PRESET as DEFAULT_PRESET
from ..config import TRANSLATION_PRESETS as TRANSLATION_PRESETS
from ..config import TranslationConfig as TranslationConfig
from ..data.tokenizer import SharedTokenizer
from ..inference.evaluate import score_translations
from ..model.encoder_decoder import EncoderDecoder
from .averaging import average_checkpoints as average_checkpoints
from .checkpoints import TRAIN_STATE_FORMAT as TRAIN_STATE_FORMAT
from .checkpoints import checkpoint_paths, load_train_state
from .loss import SimpleLossCompute
from .plan import Hooks, RunPlan, TrainOptions, prepare, prepare_follower, with_defaults
from .ranks import ProcessZeroError, Ranks, amp_context, join, leave
from .ranks import resolve_device as resolve_device
from .run import Parts, Run
from .run_folder import RunFolder, load_translator
from .validation import auto_bleu_tokenize as auto_bleu_tokenize

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
    **options: Unpack[TrainOptions],
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
        **options: the keyword-only `TrainOptions` below, each with its default in
            `TRAIN_DEFAULTS`; another keyword is a `TypeError`.

    Keyword Args:
        preset (str | None): a key of `TRANSLATION_PRESETS`.
        model_options (dict | None): `ModelConfig` fields over the preset's.
        config (TranslationConfig | None): training settings (default `TranslationConfig()`).
        changes (Mapping | None): `TranslationConfig` fields and `RUN_OPTIONS` to change on
            resume.
        resume (bool): continue the run in `out`.
        overwrite (bool): replace it; the old run stays whole until the new one's first
            checkpoint.
        new_data (bool): on resume, accept other training data (a new epoch starts).
        data_fingerprint (Mapping | None): `{"size", "sha256"}` of the training data
            (default: computed).
        should_stop (Callable | None): asked after every step; true saves and stops
            (`"interrupted"`).
        device (str): `"cpu"`, `"cuda"` or `"auto"`.
        amp (str): one of `AMP_MODES`.
        progress (bool): a progress bar on stderr.
        log (Callable | None): gets a line at each checkpoint and at the end.
        distributed (bool): train as one process of a `torchrun` job.
        timeout (float): seconds a process waits for the others.

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
    given = with_defaults(options)
    plan = RunPlan.checked(train_pairs, valid_pairs, out, given)
    hooks = Hooks(given["should_stop"], bool(given["progress"]),
                  given["log"] or (lambda line: None))
    ranks, owns_group, device = join(bool(given["distributed"]), given["timeout"], plan.device)
    plan = replace(plan, device=device)
    together = False  # true where every process stops at once: then they meet at a barrier
    folder: RunFolder | None = None
    try:
        if ranks.rank > 0:
            run = _follow(plan, ranks)
        else:  # process 0, the only one without `distributed`, owns the folder
            folder = RunFolder.open(plan.folder, resume=plan.resume,
                                    overwrite=plan.overwrite, log=hooks.log)
            with folder:
                prepared = prepare(plan, hooks.log)
                run = _result(Run(plan, prepared, ranks, folder, hooks, _parts()),
                              prepared.tokenizer)
        together = True
        return run
    except ProcessZeroError:
        together = True
        raise
    except ValueError as error:
        if ranks.size > 1 and ranks.rank == 0 and not (folder and folder.accepted):
            # a refused run: the others, waiting to be told, stop too
            ranks.share({"error": str(error), "restart_data": False, "folder": ""})
            together = True
        raise
    finally:
        if owns_group:
            leave(together)


def _follow(plan: RunPlan, ranks: Ranks) -> TranslationRun:
    """Another process's part: wait for process 0 to prepare the folder, then read it."""
    told = ranks.share(None)
    if told["error"]:
        raise ProcessZeroError(told["error"])
    folder = RunFolder(Path(told["folder"]))
    prepared = prepare_follower(folder.path, plan.resume, told["restart_data"])
    return _result(Run(plan, prepared, ranks, folder, Hooks.quiet(), _parts()),
                   prepared.tokenizer)


def _parts() -> Parts:
    """The recipe's scorer and loss, as this module names them when the run starts."""
    return Parts(score_translations, SimpleLossCompute)


def _result(run: Run, tokenizer: SharedTokenizer) -> TranslationRun:
    progress, history, averaged, skipped = run.train()
    return TranslationRun(run.model.eval(), tokenizer, run.plan.folder, progress.step,
                          progress.losses, history, progress.seconds, averaged, progress.stop,
                          skipped)
