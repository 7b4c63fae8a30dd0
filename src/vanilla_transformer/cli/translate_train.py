"""`translate train`: train a translator on source<TAB>target files into a run folder.

Its options are the fields of `TranslationConfig`, `RunOptions` and `ModelConfig` (see
[`cli.options`][vanilla_transformer.cli.options]); the library's refusals name its keyword
arguments, shown here as these flags. `--config FILE` reads the same settings from a JSON
file ([`read_config_file`][vanilla_transformer.cli.translate_train.read_config_file]), a
run folder's own `config.json` included; options given on the command line override it.
Ctrl-C (or SIGTERM) stops after the current step with a checkpoint; while the data are still
being read and tokenised, it stops at once and leaves the folder as it was.

A new run sizes the settings it is not given from its data: the vocabulary, the preset and the
validation sample, by the rules of [`config.sizing`][vanilla_transformer.config.sizing]; its
first line says what was chosen and why. Options given, on the command line or in `--config`'s
file, are kept as they are, and `--resume` keeps the run's own.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import signal
import sys
from pathlib import Path
from typing import Any

from ..config import (
    AMP_MODES,
    BEST_METRICS,
    DEFAULT_PRESET,
    DEVICES,
    TRANSLATE_TIMEOUT,
    TRANSLATION_PRESETS,
    ModelConfig,
    RunOptions,
    TranslationConfig,
)
from ..config.sizing import PRESET_LIMITS, SAMPLE, Choice, corpus_stats, describe, size_run
from .options import (
    CommandFailed,
    add_config_arguments,
    check_threads,
    config_values,
    fields_of,
    flag,
    flag_message,
)

__all__ = ["TRAINING_DEFAULTS", "RUN_OPTIONS", "TRAINING_HELP", "PAPER_SMALL", "PRESET_NAMES",
           "add_train_arguments", "read_config_file", "run_train"]

TRAINING_DEFAULTS: dict[str, Any] = TranslationConfig().to_dict()
"""`TranslationConfig`'s defaults."""
RUN_OPTIONS: dict[str, Any] = vars(RunOptions()).copy()
"""`RunOptions`'s defaults."""
TRAINING_HELP: dict[str, str] = {f.name: f.help for f in (*fields_of(TranslationConfig),
                                                          *fields_of(RunOptions))}
"""Each training setting's help: its field's `metadata["help"]`."""
PAPER_SMALL: dict[str, Any] = dict(TRANSLATION_PRESETS[DEFAULT_PRESET])
"""`paper-small`'s sizes, shown in `train --help`."""
PRESET_NAMES = tuple(sorted(TRANSLATION_PRESETS))

_BOOLEANS = {"keep_best", "tensorboard"}
_SIZED = {"vocab_size": "sized from the training words", "eval_size": "sized from the "
          "validation targets' length"}  # config.sizing's rules, printed on the first line
_SECTIONS: dict[str, type] = {"model": ModelConfig, "training": TranslationConfig,
                              "options": RunOptions}
_SECTION_OF = {f.name: section for section, cls in _SECTIONS.items()
               for f in dataclasses.fields(cls)}
_FOLLOW_TOKENIZER = {"src_vocab", "tgt_vocab"}  # a run records them; its tokenizer sets them
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an int"), "float": ((int, float), "a number"), "bool": ((bool,), "a bool"),
    "str": ((str,), "a string")}


def _check_kind(where: str, value: Any, annotation: str) -> None:
    """Refuse `value` unless it has the field's declared type (`int`, `float | None`, ...)."""
    kind, _, optional = annotation.partition(" | ")
    if value is None and optional == "None":
        return
    types, name = _KINDS[kind]
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        shown = "null" if value is None else json.dumps(value)
        raise ValueError(f"{where} must be {name}{' or null' if optional else ''}, got {shown}")


def _put(settings: dict[str, Any], where: str, section: str, name: str, value: Any) -> None:
    cls, key = _SECTIONS[section], f"{section}.{name}"
    field = {f.name: f for f in dataclasses.fields(cls)}.get(name)
    if field is None:
        raise ValueError(f"{where}: unknown setting {key!r}; {section} takes "
                         f"{', '.join(f.name for f in dataclasses.fields(cls))}")
    _check_kind(f"{where}: {key!r}", value, str(field.type))
    if name in settings[section]:
        raise ValueError(f"{where}: {key!r} is given twice")
    if name not in _FOLLOW_TOKENIZER:
        settings[section][name] = value


def read_config_file(path: str) -> dict[str, Any]:
    """The settings of a JSON config file: `{"preset", "model", "training", "options"}`.

    The file is an object with a `preset` name and the sections `model` (fields of
    `ModelConfig`), `training` (of `TranslationConfig`) and `options` (of `RunOptions`), as a
    run writes them in its `config.json`; a setting may also stand alone at the top, outside
    its section. A run's `data` (the fingerprint of its training file) and its model's
    vocabularies (set by the tokenizer it learns, from `vocab_size`) are read and left out.

    Raises:
        ValueError: in one line that names the file and the key, for a file that is not a
            JSON object, an unknown key, a value of the wrong type, or a key given twice.

    Examples:
        >>> import json, tempfile
        >>> path = tempfile.mktemp(suffix=".json")
        >>> _ = open(path, "w").write(json.dumps({"training": {"max_steps": 5}, "d_model": 32}))
        >>> read_config_file(path)
        {'preset': None, 'model': {'d_model': 32}, 'training': {'max_steps': 5}, 'options': {}}
    """
    where = f"--config {path}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{where}: is a folder; give a file, such as RUN/config.json") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{where}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object of settings, got {type(data).__name__}")
    settings: dict[str, Any] = {"preset": None, **{section: {} for section in _SECTIONS}}
    for key, value in data.items():
        if key == "preset":
            if value is not None and value not in PRESET_NAMES:
                raise ValueError(f"{where}: 'preset' must be one of {', '.join(PRESET_NAMES)}, "
                                 f"got {json.dumps(value)}")
            settings["preset"] = value
        elif key in _SECTIONS:
            if not isinstance(value, dict):
                raise ValueError(f"{where}: {key!r} must be an object of settings, got "
                                 f"{json.dumps(value)}")
            for name, item in value.items():
                _put(settings, where, key, name, item)
        elif key in _SECTION_OF:
            _put(settings, where, _SECTION_OF[key], key, value)
        elif key != "data":
            raise ValueError(f"{where}: unknown setting {key!r}; expected preset, model, "
                             "training, options, data, or a setting of one of them")
    return settings


def _help(name: str) -> str:
    """A setting's help with the settings it names written as flags."""
    text = TRAINING_HELP[name]
    for other in ("best_metric", "keep_best", "patience"):
        text = text.replace(other, flag(other))
    return text


def _add_settings(run: argparse._ArgumentGroup) -> None:
    """One option per field of `TranslationConfig` and `RunOptions`, `None` when not given."""
    for name, default in {**TRAINING_DEFAULTS, **RUN_OPTIONS}.items():
        shown = "none" if default is None else "no" if default is False else default
        suffix = (f" (default {shown}, or the run's with --resume)" if name in _BOOLEANS
                  or name == "best_metric" else f" (default {shown})")
        if name in _SIZED:
            suffix = f" (default: {_SIZED[name]}; with --resume, the run's)"
        kwargs: dict[str, Any] = {"default": None, "help": _help(name) + suffix}
        if name in _BOOLEANS:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif name == "best_metric":
            kwargs["choices"] = BEST_METRICS
        else:
            kwargs["type"] = float if isinstance(default, float) or name == "max_minutes" else int
        run.add_argument(flag(name), dest=name, **kwargs)


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `translate train`."""
    files = parser.add_argument_group("files")
    files.add_argument("--config", metavar="FILE",
                       help="start from the settings of a JSON file, such as a run's "
                            "config.json; options given here override it")
    files.add_argument("--train", required=True, metavar="FILE", help="training pairs (TSV)")
    files.add_argument("--valid", required=True, metavar="FILE", help="validation pairs (TSV)")
    files.add_argument("--out", required=True, metavar="RUN", help="the run folder to write")
    mode = files.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help="continue the run in RUN from its newest checkpoint, with its saved "
                           "settings unless an option is given again")
    mode.add_argument("--overwrite", action="store_true",
                      help="replace the run in RUN (its checkpoints and model are deleted once "
                           "the new run is accepted)")
    files.add_argument("--new-data", action="store_true",
                       help="with --resume: continue on a training file that differs from the "
                            "run's")
    run = parser.add_argument_group("training")
    run.add_argument("--preset", choices=PRESET_NAMES, default=None, metavar="PRESET",
                     help=f"model sizes: {', '.join(PRESET_NAMES)} (default: sized from the "
                          f"number of training pairs, {DEFAULT_PRESET} under "
                          f"{PRESET_LIMITS[0][0]:,}; with --resume, the run's)")
    _add_settings(run)
    run.add_argument("--threads", type=int, default=1,
                     help="CPU threads for PyTorch (default %(default)s: the default model is "
                          "small, and a second thread on a busy machine slows it down)")
    run.add_argument("--device", choices=DEVICES, default="auto",
                     help="where to compute: auto (default) is cuda when PyTorch sees a "
                          "GPU, else cpu")
    run.add_argument("--amp", choices=AMP_MODES, default="off",
                     help="mixed precision (default off); fp16 needs cuda")
    run.add_argument("--distributed", action="store_true",
                     help="train as one process of a torchrun job, with "
                          "DistributedDataParallel: 'torchrun --standalone --nproc-per-node K "
                          "-m vanilla_transformer translate train --distributed ...' (NCCL "
                          "with cuda, else gloo); each step takes accum-iter batches per "
                          "process")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                     help="with --distributed only: how long a process waits for the others, "
                          f"e.g. while process 0 validates (default {TRANSLATE_TIMEOUT})")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_arguments(
        parser.add_argument_group(f"model (overrides the preset; defaults: {DEFAULT_PRESET})"),
        exclude={"src_vocab", "tgt_vocab"}, shown=PAPER_SMALL)


class _StopOnSignal:
    """SIGINT and SIGTERM ask training to stop after the current step; a second one stops it
    at once (KeyboardInterrupt). Before training has begun (while the data are read and
    tokenised) the first one stops at once. Checkpoints and settings are written atomically
    either way; `metrics.jsonl` can lose its last line, which `--resume` drops."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.signal: int | None = None
        self.training = False  # true once the loop has asked whether to stop
        self.previous: dict[int, Any] = {}

    def __call__(self) -> bool:
        self.training = True
        return self.signal is not None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signal is not None or not self.training:
            self.signal = signum
            raise KeyboardInterrupt
        self.signal = signum
        if not self.quiet:
            print(f"\n{signal.Signals(signum).name}: stopping after this step (again to stop at "
                  "once)", file=sys.stderr, flush=True)

    def __enter__(self) -> _StopOnSignal:
        for signum in (signal.SIGINT, signal.SIGTERM):
            # not the main thread (ValueError): no handlers, Ctrl-C stops at once
            with contextlib.suppress(ValueError):
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        # after a stop the command only reports and exits with 130: a second signal that comes
        # now has nothing left to stop, and must not turn that exit into death by signal
        for signum, handler in self.previous.items():
            signal.signal(signum, signal.SIG_IGN if self.signal is not None else handler)


def _print(line: str) -> None:
    print(line, flush=True)


def _tqdm_write(line: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stdout)


def _settings(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """`(model options, changes)`: those of `--config`'s file, overridden by the options
    given; `args.preset` becomes the file's when not given."""
    if args.config and args.resume:
        raise ValueError("--config starts a new run; --resume continues with the run's own "
                         "settings (give an option to change one)")
    from_file = read_config_file(args.config) if args.config else {
        "preset": None, "model": {}, "training": {}, "options": {}}
    args.preset = args.preset or from_file["preset"]
    given = {name: getattr(args, name) for name in (*TRAINING_DEFAULTS, *RUN_OPTIONS)
             if getattr(args, name, None) is not None}
    return ({**from_file["model"], **config_values(args)},
            {**from_file["training"], **from_file["options"], **given})


def _count_pairs(path: str) -> int:
    """The lines of a file, about its pairs (blank lines count too), without parsing them."""
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            lines, last = lines + chunk.count(b"\n"), chunk[-1:]
    return lines + (last != b"\n")


def _size(args: argparse.Namespace, valid_pairs: list[tuple[str, str]],
          changes: dict[str, Any]) -> dict[str, Choice]:
    """Size the settings a new run was not given (`config.sizing`): the preset goes to
    `args.preset`, the others into `changes`. Returns what was chosen."""
    from ..data.corpus import iter_tsv

    wanted = [name for name in ("vocab_size", "eval_size") if name not in changes]
    wanted += ["preset"] if args.preset is None else []
    if args.resume or not wanted:
        return {}
    sample = list(itertools.islice(iter_tsv(args.train), SAMPLE + 1))
    stats = corpus_stats(sample, valid_pairs,
                         pairs=_count_pairs(args.train) if len(sample) > SAMPLE else None)
    chosen = {name: choice for name, choice in size_run(stats).items() if name in wanted}
    for name, choice in chosen.items():
        if name == "preset":
            args.preset = choice.value
        else:
            changes[name] = choice.value
    return chosen


def _check_options(args: argparse.Namespace) -> None:
    """Refuse, before any file is read, options that do not go together, an empty path, and
    a folder a new run must not take (`_checks.check_new_run_folder`), naming the flags."""
    from .._checks import check_new_run_folder, check_path
    from ..training.ranks import check_timeout

    if args.new_data and not args.resume:
        raise ValueError("--new-data goes with --resume (a new run trains on what it is given)")
    for option in ("config", "train", "valid"):
        if getattr(args, option) is not None:
            check_path(f"--{option}", getattr(args, option))
    check_new_run_folder(args.out, "--out", overwrite=args.overwrite)
    if args.timeout is not None:
        check_timeout(args.timeout)
        if not args.distributed:
            raise ValueError("--timeout is how long a process of a --distributed job waits for "
                             "the others; without --distributed there are none: drop it")


def run_train(args: argparse.Namespace) -> int:
    """`translate train`: the exit status (0, or 130 when interrupted)."""
    import torch

    from ..data.corpus import iter_tsv
    from ..data.numbers import read_tsv
    from ..data.translation_batches import file_fingerprint
    from ..training.loop import TrainingDiverged
    from ..training.ranks import ProcessZeroError, process_rank
    from ..training.translation import train_translation

    _check_options(args)
    model_options, changes = _settings(args)
    check_threads(args.threads)
    # the training file is streamed (tokenised once into RUN/ids/), never read whole
    next(iter_tsv(args.train))  # a missing or malformed first line: fail before anything else
    valid_pairs = read_tsv(args.valid)
    sized = _size(args, valid_pairs, changes)
    fingerprint = {"path": str(Path(args.train).resolve()), **file_fingerprint(args.train)}
    torch.set_num_threads(args.threads)
    log = _print if args.no_progress else _tqdm_write
    follower = process_rank(args.distributed) != 0
    if follower:  # process 0 speaks for the job
        log, args.no_progress = (lambda line: None), True
    else:
        if sized:
            print(describe(sized), flush=True)
        print(f"training on {args.train}, validating on {len(valid_pairs)} pairs "
              f"({args.valid}); preset {args.preset or DEFAULT_PRESET}"
              f"{f', settings of {args.config}' if args.config else ''}"
              if not args.resume else f"continuing {args.out} on {args.train}", flush=True)
    with _StopOnSignal(quiet=follower) as stop:
        try:
            run = train_translation(
                args.train, valid_pairs, args.out, preset=args.preset,
                model_options=model_options, changes=changes, resume=args.resume,
                overwrite=args.overwrite, new_data=args.new_data, data_fingerprint=fingerprint,
                should_stop=stop, device=args.device, amp=args.amp,
                progress=not args.no_progress, log=log, distributed=args.distributed,
                timeout=TRANSLATE_TIMEOUT if args.timeout is None else args.timeout)
        except TrainingDiverged as error:
            raise CommandFailed(flag_message(error), 1) from None
        except ProcessZeroError:  # process 0 refused the run and says why
            return 2
    if follower:
        return 130 if run.stopped == "interrupted" else 0
    params = sum(p.numel() for p in run.model.parameters())
    how = ("the best checkpoint, of step" if len(run.averaged) == 1 and args.keep_best
           else "the checkpoint of step" if len(run.averaged) == 1
           else "the average of the checkpoints of steps")
    print(f"trained {run.step} steps in {run.seconds:.1f} s; {params:,} parameters; "
          f"vocabulary {run.tokenizer.vocab_size}")
    print(f"wrote {run.out / 'model.pt'}: {how} {', '.join(map(str, run.averaged))}")
    if run.stopped == "interrupted":
        print(f"interrupted at step {run.step}: continue with --resume", file=sys.stderr)
        return 130
    return 0
