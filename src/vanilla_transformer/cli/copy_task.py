"""The `copy-task` subcommand: train a small model to copy its input, report the loss and the
exact match on held-out sequences, and save or load the model.

Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from ..config import COPY_MODEL, CopyTaskConfig
from ..config.model import check_seed
from .options import (
    OVERWRITE_HELP,
    ModelField,
    add_config_arguments,
    add_field_arguments,
    check_threads,
    config_values,
    fields_of,
)

__all__ = ['MAX_EVAL_SIZE', 'TASK_FIELDS', 'TASK_DEFAULTS', 'MODEL_DEFAULTS', 'add_task_arguments',
           'task_config_from_args', 'register', 'run_copy_task', 'main']

TASK_FIELDS: tuple[ModelField, ...] = fields_of(CopyTaskConfig, exclude={"model"})
"""`CopyTaskConfig`'s fields other than `model`."""
TASK_DEFAULTS: dict[str, Any] = {f.name: f.default for f in TASK_FIELDS}
"""`CopyTaskConfig()`'s fields other than `model`, with their values."""
MODEL_DEFAULTS: dict[str, Any] = COPY_MODEL.to_dict()
"""`COPY_MODEL.to_dict()`, the copy task's default model."""

MAX_EVAL_SIZE = 1_000_000
"""The most held-out sequences `--eval-size` accepts (the default is 100)."""


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of a [`CopyTaskConfig`][vanilla_transformer.training.copy_task.CopyTaskConfig]:
    the model's (generated from `ModelConfig`), the data's and the training's.

    Args:
        parser: the parser to extend (the `copy-task` subcommand, the `torchrun` entry).

    Examples:
        >>> import argparse
        >>> from vanilla_transformer.cli.copy_task import add_task_arguments, task_config_from_args
        >>> parser = argparse.ArgumentParser()
        >>> add_task_arguments(parser)
        >>> task_config_from_args(parser.parse_args(["--d-model", "32", "--steps", "5"])).d_model
        32
    """
    add_config_arguments(parser.add_argument_group("model"), MODEL_DEFAULTS,
                         exclude={"src_vocab", "tgt_vocab"})
    by_name = {f.name: f for f in TASK_FIELDS}
    add_field_arguments(parser.add_argument_group("data"),
                        [by_name[n] for n in ("vocab", "seq_len")])
    train = parser.add_argument_group("training")
    add_field_arguments(train, [by_name[n] for n in ("seed", "steps", "batch_size",
                                                     "accum_iter", "warmup", "factor",
                                                     "smoothing")])
    train.add_argument("--threads", type=int, default=1,
                       help="CPU threads for PyTorch (default %(default)s: the model is small, so "
                       "more threads mostly add overhead)")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")


def task_config_from_args(args: argparse.Namespace) -> CopyTaskConfig:
    """The [`CopyTaskConfig`][vanilla_transformer.training.copy_task.CopyTaskConfig] that options
    added by [`add_task_arguments`][vanilla_transformer.cli.copy_task.add_task_arguments] describe.

    Raises:
        ValueError: for a value out of range. TypeError: for a value of the wrong type.
    """
    check_seed(args.seed, "--seed")
    return CopyTaskConfig(
        vocab=args.vocab, seq_len=args.seq_len, model=COPY_MODEL.replace(**config_values(args)),
        batch_size=args.batch_size, steps=args.steps, accum_iter=args.accum_iter,
        warmup=args.warmup, factor=args.factor, smoothing=args.smoothing, seed=args.seed,
    )


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    add_task_arguments(parser)
    run = parser.add_argument_group("evaluation and files")
    run.add_argument("--eval-size", type=int, default=100,
                     help="held-out sequences to decode (default %(default)s)")
    run.add_argument("--eval-seed", type=int, default=None,
                     help="seed of the held-out sequences (default: --seed plus 1)")
    run.add_argument("--examples", type=int, default=3,
                     help="decoded examples to print (default %(default)s)")
    run.add_argument("--save", metavar="PATH", help="save the trained model to PATH")
    run.add_argument("--load", metavar="PATH",
                     help="load a model saved with --save instead of training one")
    run.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `copy-task` subcommand to a command line.

    The subcommand's handler is stored as the parser default `handler` (the convention of
    [`cli`][vanilla_transformer.cli]): after `args = parser.parse_args()`, call
    `args.handler(args)`; it returns the exit status.

    Args:
        subparsers: the object returned by `parser.add_subparsers()`.

    Returns:
        The subcommand's parser.

    Examples:
        >>> import argparse
        >>> from vanilla_transformer.cli.copy_task import register
        >>> parser = argparse.ArgumentParser(prog="vanilla-transformer")
        >>> _ = register(parser.add_subparsers(dest="command"))
        >>> args = parser.parse_args(["copy-task", "--seed", "3", "--no-progress"])
        >>> args.seed, args.steps, args.handler.__name__
        (3, 400, 'run_copy_task')
    """
    parser = subparsers.add_parser(
        "copy-task",
        help="train a small model to copy random sequences and report its exact match",
        description=(
            "Train a small Transformer on the copy task (random sequences, start symbol 1, "
            "padding 0), report the loss, and greedy-decode held-out sequences drawn with "
            "another seed. Prints 'exact match: X%' at the end."
        ),
    )
    _add_arguments(parser)
    parser.set_defaults(handler=run_copy_task)
    return parser


def run_copy_task(args: argparse.Namespace) -> int:
    """The `copy-task` subcommand: train (or load), evaluate, report, and optionally save.

    Args:
        args: the parsed options of the subcommand (see
            [`register`][vanilla_transformer.cli.copy_task.register]).

    Every option, the `--save` file and the `--load` file included, is checked before
    training starts (the `--save` file by the output rule of
    `_checks.check_output_file`, and locked until it is written by `_io.output_file`). A loss that
    diverged is reported on stderr.

    Returns:
        The exit status, `0`.

    Raises:
        ValueError: for an invalid option value, an empty path, a `--save` path whose folder
            is missing or not writable, that exists (without `--overwrite`), is not a regular
            file or is in a run folder, `--save` with `--load`, a `--load` file that is missing
            or not a checkpoint, or a loss that became NaN or infinite during training.

    Examples:
        >>> import argparse
        >>> from vanilla_transformer.cli.copy_task import register, run_copy_task
        >>> parser = argparse.ArgumentParser()
        >>> _ = register(parser.add_subparsers())
        >>> args = parser.parse_args(["copy-task", "--steps", "2", "--N", "1", "--d-model", "16",
        ...                           "--d-ff", "32", "--examples", "0", "--no-progress"])
        >>> run_copy_task(args)  # doctest: +ELLIPSIS
        copy task: vocab 11, seq_len 10; model N=1 d_model=16 h=4 d_ff=32; 2 steps of 64 ...
        step     1/2  loss ...
        step     2/2  loss ...
        final loss: ...
        exact match: ...% (.../100 held-out sequences, seed 1, greedy decoding from start symbol 1)
        0
    """
    import contextlib

    import torch

    from .._checks import check_non_negative_int, check_path, check_positive_int
    from .._io import output_file

    check_threads(args.threads)
    check_positive_int("--eval-size", args.eval_size)
    if args.eval_size > MAX_EVAL_SIZE:
        raise ValueError(f"--eval-size must be at most {MAX_EVAL_SIZE}, got {args.eval_size}")
    check_non_negative_int("--examples", args.examples)
    check_seed(args.seed, "--seed")
    if args.eval_seed is not None:
        check_seed(args.eval_seed, "--eval-seed")
    if args.load is not None:
        if args.save is not None:
            raise ValueError("--save goes with training; --load reads a model and saves "
                             "nothing: give one of them")
        if not os.path.isfile(check_path("--load", args.load)):
            raise ValueError(f"--load {args.load!r}: no such file")
    threads = torch.get_num_threads()
    with contextlib.ExitStack() as stack:
        if args.save is not None:
            _check_writable(args.save, "--save")
            args.save_to = stack.enter_context(output_file(args.save, "--save",
                                                           overwrite=args.overwrite))
        torch.set_num_threads(args.threads)
        try:
            return _run(args)
        finally:
            torch.set_num_threads(threads)


def _check_writable(path: str, option: str) -> None:
    """Raise unless `path` can be written, so a run does not train only to fail at saving."""
    from .._checks import check_path

    folder = os.path.dirname(os.path.abspath(check_path(option, path)))
    if os.path.isdir(path):
        raise ValueError(f"{option} {path!r} is a folder; give a file name, e.g. {path}/model.pt")
    if not os.path.isdir(folder):
        raise ValueError(f"{option} {path!r}: the folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path!r}: the folder {folder!r} is not writable")


def _diverged(losses: list[float], vocab: int) -> bool:
    """Whether the loss ended far above where it started, or above a uniform guess's."""
    worst_start = max(losses[0], math.log(vocab))
    return not math.isfinite(losses[-1]) or losses[-1] > 2 * worst_start


def _sizes(config: CopyTaskConfig) -> str:
    m = config.model
    return f"N={m.N} d_model={m.d_model} h={m.h} d_ff={m.d_ff}"


def _run(args: argparse.Namespace) -> int:
    import torch

    from ..data.copy_task import START_SYMBOL, heldout_sequences
    from ..training.checkpoints import load_checkpoint, save_checkpoint
    from ..training.copy_task import CopyTaskConfig, exact_match, train_copy_model
    from ..training.loop import TrainState

    if args.load:
        model, meta = load_checkpoint(args.load)
        # the task's sizes come from the file when it has them, else from the options
        config = (CopyTaskConfig.from_dict(meta["task"]) if "task" in meta
                  else task_config_from_args(args))
        print(f"loaded {args.load}: {_sizes(config)}, trained {meta.get('steps', '?')} steps "
              f"with seed {meta.get('seed', '?')}")
        seed = meta.get("seed", config.seed)
    else:
        config = task_config_from_args(args)
        print(f"copy task: vocab {config.vocab}, seq_len {config.seq_len}; model {_sizes(config)}; "
              f"{config.steps} steps of {config.batch_size * config.accum_iter} sequences; "
              f"seed {config.seed}", flush=True)
        every = max(1, config.steps // 5)

        def report(state: TrainState, loss: float) -> None:
            if args.no_progress and (state.accum_step % every == 0 or state.accum_step == 1):
                print(f"step {state.accum_step:5d}/{config.steps}  loss {loss:.4f}", flush=True)

        run = train_copy_model(config, progress=not args.no_progress, on_step=report)
        model, seed = run.model, config.seed
        n_params = sum(p.numel() for p in model.parameters())
        print(f"final loss: {run.final_loss:.6f} (mean per token, last step); "
              f"{n_params:,} parameters trained in {run.seconds:.1f} s")
        if _diverged(run.losses, config.vocab):
            print(f"warning: training diverged: the loss went from {run.losses[0]:.4g} at the "
                  f"first step to {run.final_loss:.4g} at the last; lower --factor (now "
                  f"{config.factor:g}) or raise --warmup (now {config.warmup})",
                  file=sys.stderr, flush=True)
        if args.save:
            save_checkpoint(args.save_to, model, task=config.to_dict(), seed=config.seed,
                            steps=config.steps, final_loss=run.final_loss)
            print(f"saved model to {args.save}")
    eval_seed = seed + 1 if args.eval_seed is None else args.eval_seed
    src = heldout_sequences(args.eval_size, vocab=config.vocab, seq_len=config.seq_len,
                            seed=eval_seed)
    accuracy, decoded = exact_match(model, src)
    for i in range(min(args.examples, src.size(0))):
        mark = "ok" if torch.equal(decoded[i], src[i]) else "WRONG"
        print(f"  {src[i].tolist()} -> {decoded[i].tolist()}  {mark}")
    hits = round(accuracy * src.size(0))
    print(f"exact match: {100 * accuracy:.1f}% ({hits}/{src.size(0)} held-out sequences, "
          f"seed {eval_seed}, greedy decoding from start symbol {START_SYMBOL})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the `copy-task` subcommand on its own: `python -m vanilla_transformer.cli.copy_task`.

    Args:
        argv: the options (default: `sys.argv[1:]`).

    Returns:
        The exit status of [`run_copy_task`][vanilla_transformer.cli.copy_task.run_copy_task].

    Examples:
        ```console
        python -m vanilla_transformer.cli.copy_task --seed 1 --save copy.pt
        python -m vanilla_transformer.cli.copy_task --load copy.pt
        ```
    """
    parser = argparse.ArgumentParser(prog="python -m vanilla_transformer.cli.copy_task",
                                     description="Train and evaluate the copy task.")
    _add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_copy_task(args)
    except (ValueError, TypeError) as error:  # one line, as the vanilla-transformer command
        print(f"{parser.prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
