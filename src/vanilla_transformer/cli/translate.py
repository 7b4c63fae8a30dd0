"""The `translate` subcommand: make a corpus, train a translator on any parallel text, score it,
use it.

```console
vanilla-transformer translate catalogs --lang de --out DATA
vanilla-transformer translate numbers --lang de --out DATA
vanilla-transformer translate train --train DATA/train.tsv --valid DATA/valid.tsv --out RUN
vanilla-transformer translate eval RUN --data DATA/test.tsv
vanilla-transformer translate RUN "four hundred and twenty-one"
vanilla-transformer translate numbers-de "four hundred and twenty-one"
```

RUN is a run folder or the name of a translator that ships with the package, `numbers-de` or
`numbers-fr` ([`pretrained`][vanilla_transformer.pretrained]).

Every failure is one line on stderr and an exit status: 2 for bad input (an argument, a file,
a run folder that does not fit) or a missing optional package (before anything is written,
naming its extra's pip command), 1 when the work itself fails (training diverged, a disk
error), 130 when interrupted. PyTorch and the optional packages are imported only when an
action runs. This module parses and dispatches, and writes the `catalogs` corpus (read by
[`data.catalogs`][vanilla_transformer.data.catalogs]); `train` is
[`cli.translate_train`][vanilla_transformer.cli.translate_train], the others
[`cli.translate_use`][vanilla_transformer.cli.translate_use].

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..pretrained import TRANSLATORS
from .options import OneLineParser, require_modules
from .outputs import check_folder_outputs, make_folder
from .translate_export import add_export_arguments, run_export
from .translate_train import (
    PAPER_SMALL,
    PRESET_NAMES,
    RUN_OPTIONS,
    TRAINING_DEFAULTS,
    TRAINING_HELP,
    add_train_arguments,
    run_train,
)
from .translate_use import (
    add_eval_arguments,
    add_numbers_arguments,
    add_run_arguments,
    run_eval,
    run_numbers,
    run_run,
)

__all__ = ["ACTIONS", "NEEDS", "register", "run_translate", "build_translate_parser", "TRAINING_DEFAULTS",
           "RUN_OPTIONS", "TRAINING_HELP", "PAPER_SMALL", "PRESET_NAMES", "add_catalogs_arguments",
           "run_catalogs"]

_LOCALE_DIR, _MAX_CHARS = "/usr/share/locale", 100  # data.catalogs's, which imports PyTorch


def add_catalogs_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `translate catalogs`."""
    parser.add_argument("--lang", required=True,
                        help="the catalogs' language, as its folder in LOCALE_DIR is named: de, "
                             "fr, pt_BR, ... (the source is English)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder for train.tsv, valid.tsv and test.tsv")
    for name in ("valid", "test"):
        parser.add_argument(f"--{name}-size", type=int, default=1000,
                            help=f"pairs in {name}.tsv (default %(default)s); the rest are "
                                 "for training")
    parser.add_argument("--seed", type=int, default=0, help="split seed (default %(default)s)")
    parser.add_argument("--max-chars", type=int, default=_MAX_CHARS,
                        help="leave out messages longer than this on either side "
                             "(default %(default)s)")
    parser.add_argument("--locale-dir", default=_LOCALE_DIR, metavar="LOCALE_DIR",
                        help="where the catalogs are installed (default %(default)s)")
    parser.add_argument("--overwrite", action="store_true",
                        help="write over files that exist (never over a run's own file)")


def run_catalogs(args: argparse.Namespace) -> int:
    """`translate catalogs`: read the catalogs, then write the three splits atomically.

    Raises:
        ValueError: before anything is written, for a bad option, an output folder that
            holds the files (without `--overwrite`) or is a run folder, or no catalogs for
            `--lang`.
    """
    from ..data.catalogs import catalog_corpus, catalog_files, summary
    from ..data.numbers import write_tsv

    for option in ("valid_size", "test_size", "seed", "max_chars"):
        if getattr(args, option) < (1 if option == "max_chars" else 0):
            raise ValueError(f"--{option.replace('_', '-')} must be an int >= "
                             f"{1 if option == 'max_chars' else 0}, got {getattr(args, option)}")
    names = [f"{split}.tsv" for split in ("train", "valid", "test")]
    folder = check_folder_outputs(args.out, names, args.overwrite)
    catalog_files(args.lang, args.locale_dir)  # none installed: refused before any folder
    corpus = catalog_corpus(args.lang, valid_size=args.valid_size, test_size=args.test_size,
                            seed=args.seed, max_chars=args.max_chars,
                            locale_dir=args.locale_dir)
    for line in summary(corpus, Path(args.locale_dir) / args.lang / "LC_MESSAGES"):
        print(line)
    make_folder(folder)
    for name, pairs in corpus.splits.items():
        path = write_tsv(folder / f"{name}.tsv", pairs)
        print(f"wrote {path}: {len(pairs):,} pairs")
    return 0


PROG = "vanilla-transformer translate"

ACTIONS = ("catalogs", "numbers", "train", "eval", "export")
"""The words `translate` takes as its first argument; anything else is a run folder."""

_DESCRIPTIONS = {
    "catalogs": ("Write English-to-LANG pairs from the gettext catalogs installed on this machine "
                 "(LOCALE_DIR/LANG/LC_MESSAGES/*.mo) as train/valid/test TSV files: plural, "
                 "untranslated, multi-line, markup and over-long entries left out, one "
                 "translation per English message, split by message."),
    "numbers": "Write English-to-LANG number words as train/valid/test TSV files.",
    "train": ("Train a translator on source<TAB>target files. RUN must be new or empty unless "
              "--resume or --overwrite is given. Ctrl-C (or SIGTERM) stops after the current "
              "step with a checkpoint; a second one stops at once."),
    "eval": "Print BLEU, chrF and exact match of RUN on a TSV file.",
    "export": ("Export RUN to DIR with its tokenizer: as ONNX graphs (encoder.onnx, a "
               "one-step decoder.onnx with the cross-attention weights) or, with --format "
               "ctranslate2, as a CTranslate2 model."),
}
NEEDS = {"catalogs": (), "numbers": ("num2words",), "train": ("tokenizers", "sacrebleu"),
         "eval": ("tokenizers", "sacrebleu"), "export": ("tokenizers",),
         "run": ("tokenizers",)}
"""The optional packages each action needs (`cli.options.EXTRAS` names their extras); a
missing one stops the action before it writes anything, with exit status 2."""
_ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "catalogs": add_catalogs_arguments, "numbers": add_numbers_arguments, "train": add_train_arguments,
    "eval": add_eval_arguments, "export": add_export_arguments}


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `translate` subcommand to a command line.

    Its first argument is `catalogs`, `numbers`, `train`, `eval`, `export`, or a run folder to translate
    with; the rest is parsed by that action's parser (see
    [`build_translate_parser`][vanilla_transformer.cli.translate.build_translate_parser]).

    Args:
        subparsers: the object returned by `parser.add_subparsers()`.

    Returns:
        The subcommand's parser; its `handler` is
        [`run_translate`][vanilla_transformer.cli.translate.run_translate].

    Examples:
        >>> import argparse
        >>> from vanilla_transformer.cli.translate import register
        >>> parser = argparse.ArgumentParser(prog="vanilla-transformer")
        >>> _ = register(parser.add_subparsers(dest="command"))
        >>> parser.parse_args(["translate", "eval", "RUN", "--data", "t.tsv"]).words
        ['eval', 'RUN', '--data', 't.tsv']
    """
    parser = subparsers.add_parser(
        "translate",
        help="train and use a translator on any parallel text (source<TAB>target lines)",
        usage=f"{PROG} {{{','.join(ACTIONS)}}} ...\n       {PROG} RUN [TEXT ...]",
        description=(
            "catalogs: write a corpus of real text from this machine's gettext catalogs "
            "(train/valid/test TSV). "
            "numbers: write a number-words corpus (train/valid/test TSV). "
            "train: train a translator on source<TAB>target files of any parallel text. "
            "eval: print BLEU, chrF and exact match of a trained run on a TSV file. "
            "export: write a trained run as ONNX graphs or a CTranslate2 model, with its tokenizer. "
            "RUN [TEXT ...]: translate TEXT (or each line of stdin, or --input) with a "
            "trained run. RUN is a run folder or the name of a trained translator that ships "
            "with the package: " + "; ".join(f"{name} ({what})" for name, what in
                                             TRANSLATORS.items()) + ". "
            "Run 'translate ACTION --help' for an action's options."
        ),
    )
    parser.add_argument("words", nargs=argparse.REMAINDER, help="an action and its arguments")
    parser.set_defaults(handler=run_translate)
    return parser


def build_translate_parser(action: str) -> argparse.ArgumentParser:
    """The parser of one `translate` action: `catalogs`, `numbers`, `train`, `eval`, `export` or `run`.

    Raises:
        ValueError: for another action.

    Examples:
        >>> from vanilla_transformer.cli.translate import build_translate_parser
        >>> args = build_translate_parser("train").parse_args(
        ...     ["--train", "a.tsv", "--valid", "b.tsv", "--out", "RUN", "--d-model", "32"])
        >>> args.preset, args.max_steps, args.d_model  # None: not given
        (None, None, 32)
    """
    if action == "run":
        parser = OneLineParser(prog=PROG, usage=f"{PROG} RUN [TEXT ...] [options]",
                               description="Translate each TEXT, or each line of --input or "
                                           "stdin (one output line per input line).")
        add_run_arguments(parser)
        return parser
    if action not in _ARGUMENTS:
        raise ValueError(f"unknown translate action {action!r}; expected one of {ACTIONS}")
    parser = OneLineParser(prog=f"{PROG} {action}", description=_DESCRIPTIONS[action])
    _ARGUMENTS[action](parser)
    return parser


def run_translate(args: argparse.Namespace) -> int:
    """Dispatch `translate ...` to its action.

    Returns:
        The exit status: 0, 2 for bad arguments, 1 for a failure of the work, 130 when
        interrupted.

    Raises:
        ValueError: for bad input (a missing or malformed file, a folder that cannot be
            written, a run folder without a trained model); the `cli.main` wrapper prints it
            as one line and exits with status 2.

    Examples:
        >>> import argparse, tempfile, os
        >>> from vanilla_transformer.cli.translate import run_translate
        >>> out = tempfile.mkdtemp()
        >>> words = ["numbers", "--out", out, "--train-size", "5", "--valid-size", "2",
        ...          "--test-size", "2", "--limit", "100", "--always-train", "3"]
        >>> run_translate(argparse.Namespace(words=words))  # doctest: +ELLIPSIS
        wrote .../train.tsv: 5 pairs
        wrote .../valid.tsv: 2 pairs
        wrote .../test.tsv: 2 pairs
        0
    """
    words = list(args.words)
    if not words:
        print(f"{PROG}: error: expected one of {', '.join(ACTIONS)}, a run folder or "
              f"{' or '.join(TRANSLATORS)} "
              f"(see '{PROG} --help')", file=sys.stderr)
        return 2
    action = words[0] if words[0] in ACTIONS else "run"
    rest = words[1:] if action != "run" else words
    try:
        parser = build_translate_parser(action)
        options = parser.parse_intermixed_args(rest)
    except SystemExit as exit_:  # --help, or a parse error already printed
        return exit_.code if isinstance(exit_.code, int) else 1
    require_modules([*NEEDS[action], *(["tensorboard"] if getattr(
        options, "tensorboard", None) else [])])
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "catalogs": run_catalogs, "numbers": run_numbers, "train": run_train, "eval": run_eval,
        "export": run_export, "run": run_run}
    return handlers[action](options)

