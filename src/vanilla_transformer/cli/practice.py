"""`vanilla-transformer practice`: rebuild the Transformer yourself, one checked step at a time.

- `practice start DIR` writes one starter file per step, and a README with their order
  ([`write_starters`][vanilla_transformer.practice.write_starters]);
- `practice check STEP FILE.py` checks the function or class of that step's name in the file
  with [`check`][vanilla_transformer.practice.check], in a child process under a time limit
  (`--timeout`, default `DEFAULT_TIMEOUT` seconds), passes through what the code prints
  (capped), prints the message and exits with 0 on a pass only, 1 on a failure (a wrong
  result, an error, `exit()`, a crash, the time limit) and 2 when the file does not load or
  the check itself fails (never a traceback).

Parsing and `--help` import no PyTorch. Walked through on the *Rebuild it yourself* page.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["STEP_NAMES", "DEFAULT_TIMEOUT", "register", "run_start", "run_check", "run_status",
           "run_hint"]

DEFAULT_TIMEOUT = 120.0
"""Seconds a check may run, PyTorch's start included, before it is stopped as a failure."""

STEP_NAMES = ("subsequent_mask", "attention", "multi_head_attention", "feed_forward",
              "positional_encoding", "embeddings", "layer_norm", "sublayer", "encoder_layer",
              "decoder_layer", "encoder_decoder", "label_smoothing", "greedy_decode", "translator")
"""The steps, in order (the same as `vanilla_transformer.practice.STEPS`, written out here so
that `--help` needs no PyTorch)."""


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `practice` subcommand and its `start` and `check` actions.

    Args:
        subparsers: the object returned by `parser.add_subparsers()`.

    Returns:
        The subcommand's parser.

    Example:
        >>> parser = argparse.ArgumentParser(prog="vanilla-transformer")
        >>> _ = register(parser.add_subparsers(dest="command"))
        >>> args = parser.parse_args(["practice", "check", "attention", "attention.py"])
        >>> args.step, args.file, args.handler.__name__
        ('attention', 'attention.py', 'run_check')
    """
    parser = subparsers.add_parser(
        "practice",
        help="rebuild the Transformer yourself: starter files and checks of your code",
        description=("Write the Transformer yourself, step by step: 'start' writes one starter "
                     "file per step; 'check' compares your code with the package's on many "
                     "inputs and says what differs. The last step, 'translator', translates "
                     "numbers with your own model and the site's trained weights."),
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    parser_class=type(parser))
    start = actions.add_parser("start", help="write the starter files into a folder",
                               description="Write one starter file per step, and a README "
                                           "with their order, into DIR. Existing files are "
                                           "kept unless --force is given.")
    start.add_argument("dir", metavar="DIR", help="the folder to write (created if needed)")
    start.add_argument("--force", action="store_true", help="overwrite existing files")
    start.set_defaults(handler=run_start)
    check = actions.add_parser(
        "check", help="check one step of your code",
        description="Check the function or class of STEP's name in FILE against the package's. "
                    "Your code runs in a child process under a time limit. Exit status: 0 "
                    "passed, 1 failed (a wrong result, an error, exit(), a crash or the time "
                    "limit), 2 the file does not load.",
        epilog="steps, in order: " + ", ".join(STEP_NAMES))
    check.add_argument("step", metavar="STEP", choices=STEP_NAMES, help="the step to check")
    check.add_argument("file", metavar="FILE", help="your .py file")
    check.add_argument("--seed", type=int, default=0,
                       help="make other inputs (default 0)")
    check.add_argument("--timeout", metavar="SECONDS", type=_seconds, default=DEFAULT_TIMEOUT,
                       help="stop the check as a failure after this many seconds "
                            f"(default {DEFAULT_TIMEOUT:g})")
    check.add_argument("--weights", metavar="FOLDER", default=None,
                       help="translator only: the trained run to load (default: numbers-de, the "
                            "German translator that ships with the package)")
    check.set_defaults(handler=run_check)
    status = actions.add_parser(
        "status", help="check every step in a folder and print a table",
        description="Check every step's file in DIR, in order, each in a child process, and "
                    "print a table: passed, FAILED (with the first line of the message) or "
                    "not started. Exit status: 0 if every step passed, 1 otherwise.")
    status.add_argument("dir", metavar="DIR", help="your folder (as 'start' wrote it)")
    status.add_argument("--timeout", metavar="SECONDS", type=_seconds, default=DEFAULT_TIMEOUT,
                        help=f"the time limit of each step's check (default {DEFAULT_TIMEOUT:g})")
    status.set_defaults(handler=run_status)
    hint = actions.add_parser(
        "hint", help="print a hint for a step, one level at a time",
        description="Print a hint for STEP: level 1 says what to think about, the next ones "
                    "the operations and shapes, the last the steps nearly as code.",
        epilog="steps, in order: " + ", ".join(STEP_NAMES))
    hint.add_argument("step", metavar="STEP", choices=STEP_NAMES, help="the step")
    hint.add_argument("--level", type=int, default=1, help="which hint, from 1 (default 1)")
    hint.set_defaults(handler=run_hint)
    return parser


def run_start(args: argparse.Namespace) -> int:
    """Write the starter files; print what was written and what comes next.

    Returns:
        0.
    """
    from .._io import output_folder
    from ..practice import STARTERS, write_starters

    with output_folder(args.dir, "DIR", []) as folder:  # locked; a refusal leaves nothing
        written = write_starters(folder, overwrite=args.force)
    kept = len(STARTERS) - len(written)
    print(f"wrote {len(written)} files to {args.dir} (start with its README.md)"
          + (f"; kept {kept} files that exist (--force overwrites them)" if kept else ""))
    print("check a step with: vanilla-transformer practice check STEP FILE.py")
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _error(message: str) -> int:
    print(f"vanilla-transformer practice check: error: {message}", file=sys.stderr, flush=True)
    return 2


def run_check(args: argparse.Namespace) -> int:
    """Check one step of a file in a child process; print its output and the message.

    Returns:
        0 on a pass, 1 on a failure, 2 if the file does not load or lacks the step's name.
    """
    from ._practice_process import run_child

    if args.weights is not None and args.step != "translator":
        return _error(f"--weights is for the translator step only, not {args.step}")
    outcome = run_child(args.step, args.file, seed=args.seed, timeout=args.timeout,
                        folder=args.weights)
    if outcome.printed:
        print("Your code printed:", flush=True)
        print(outcome.printed, end="" if outcome.printed.endswith("\n") else "\n", flush=True)
    if outcome.error:
        return _error(outcome.message)
    print(outcome.message, flush=True)
    return outcome.code


def run_status(args: argparse.Namespace) -> int:
    """Check every step of a folder in order; print one row per step.

    Returns:
        0 if every step passed, 1 otherwise, 2 if DIR is not a folder.
    """
    from pathlib import Path

    from ._practice_process import run_child

    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"vanilla-transformer practice status: error: {args.dir} is not a folder",
              file=sys.stderr, flush=True)
        return 2
    width = max(map(len, STEP_NAMES))
    print(f"{'step':<{width}}  status", flush=True)
    passed = 0
    for step in STEP_NAMES:
        file = folder / f"{step}.py"
        if not file.is_file():
            row = "not started (no file)"
        else:
            outcome = run_child(step, str(file), seed=0, timeout=args.timeout)
            first = outcome.message.splitlines()[0] if outcome.message else ""
            if outcome.code == 0:
                row, passed = "passed", passed + 1
            elif first.startswith(f"{step}: not written yet"):
                row = "not started"
            else:
                row = first.removeprefix(f"{step}: ")
                row = row if row.startswith("FAILED") else f"FAILED: {row}"
                row = row if len(row) <= 78 - width else row[: 75 - width] + "..."
        print(f"{step:<{width}}  {row}", flush=True)
    print(f"{passed} of {len(STEP_NAMES)} steps passed.", flush=True)
    return 0 if passed == len(STEP_NAMES) else 1


def run_hint(args: argparse.Namespace) -> int:
    """Print one hint of a step.

    Returns:
        0, or 2 for a level out of range.
    """
    from ..practice._hints import hint

    try:
        print(hint(args.step, args.level), flush=True)
    except ValueError as error:
        print(f"vanilla-transformer practice hint: error: {error}", file=sys.stderr, flush=True)
        return 2
    return 0
