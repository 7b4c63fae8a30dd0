"""The `vanilla-transformer` command line (also `python -m vanilla_transformer`).

Subcommands: `params`, the parameter, FLOP and memory calculator of
[`analysis`][vanilla_transformer.analysis], `copy-task`
([`cli.copy_task`][vanilla_transformer.cli.copy_task]) and `translate`
([`cli.translate`][vanilla_transformer.cli.translate]). Each module exposes
`register(subparsers)`, called in [`build_parser`][vanilla_transformer.cli.build_parser]; the
model's options come from [`cli.options`][vanilla_transformer.cli.options]. Every failure is one
line on stderr and an exit status: 2 for a rejected argument, bad input or a missing optional
package (the line names its extra's pip command), 1 when the work fails (a runtime error, a
disk error), 130 when interrupted.

Parsing, `--help` and `--version` import no PyTorch: each handler imports what it needs.

Explained on the *Parameter calculator* guide page.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import copy_task, practice, translate
from .options import (
    EXTRAS,
    PRESET_NAMES,
    CommandFailed,
    OneLineParser,
    add_config_arguments,
    config_values,
    flag_message,
)

if TYPE_CHECKING:
    from ..config import ModelConfig

__all__ = [
    "PROG",
    "PRESET_VOCAB",
    "build_parser",
    "register",
    "config_from_args",
    "run_params",
    "main",
]

PROG = "vanilla-transformer"

PRESET_VOCAB = 37000
"""Vocabulary used with `--preset` when `--src-vocab`/`--tgt-vocab` are not given: the paper's
shared English-German byte-pair vocabulary of about 37000 tokens (section 5.1)."""



def build_parser() -> argparse.ArgumentParser:
    """The parser of the `vanilla-transformer` command, with every subcommand registered.

    Returns:
        The top-level `argparse.ArgumentParser`.

    Examples:
        >>> args = build_parser().parse_args(["params", "--preset", "base"])
        >>> args.command, args.preset
        ('params', 'base')
    """
    parser = OneLineParser(
        prog=PROG,
        description="The original encoder-decoder Transformer: tools on the command line.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}",
                        help="print the version and exit")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser
    )
    # ---- Subcommand registrations: the single place where subcommands are added. ----
    # Each line calls a module's register(subparsers); add new subcommands here.
    register(subparsers)  # params
    copy_task.register(subparsers)  # copy-task
    translate.register(subparsers)  # translate
    practice.register(subparsers)  # practice
    # ---- end of subcommand registrations ----
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vanilla-transformer")
    except PackageNotFoundError:  # run from a source tree
        return "unknown"


def register(subparsers: Any) -> None:
    """Add the `params` subcommand to `subparsers` (the pattern every subcommand module follows).

    Args:
        subparsers: the object returned by `ArgumentParser.add_subparsers`.

    Returns:
        Nothing; the new parser sets `handler` to
        [`run_params`][vanilla_transformer.cli.run_params].

    Examples:
        >>> import argparse
        >>> parser = argparse.ArgumentParser(prog="demo")
        >>> register(parser.add_subparsers(dest="command"))
        >>> parser.parse_args(["params", "--preset", "big", "-N", "2"]).N
        2
    """
    p = subparsers.add_parser(
        "params",
        help="count parameters, FLOPs and memory of a model without building it",
        description=(
            "Count the trainable parameters of make_model(...) and estimate its memory; with "
            "--src-len/--tgt-len also its forward FLOPs, activations and key/value cache. "
            f"--preset uses the paper's sizes and, unless given, a shared vocabulary of "
            f"{PRESET_VOCAB}; other options keep make_model's defaults (untied weights, "
            "pre-norm, generator bias)."
        ),
    )
    model = p.add_argument_group("model (as make_model)")
    model.add_argument(
        "--preset", choices=PRESET_NAMES, help="the paper's base or big sizes (Table 3)"
    )
    add_config_arguments(model)
    run = p.add_argument_group("workload (for FLOPs, activations and the key/value cache)")
    run.add_argument("--batch", type=int, help="sentence pairs per batch (1)")
    run.add_argument("--src-len", type=int, help="source length (default: --tgt-len)")
    run.add_argument("--tgt-len", type=int, help="target length (default: --src-len)")
    p.add_argument("--dtype", default="float32", help="float32 (default), bf16, fp16, float64")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(handler=run_params)


def config_from_args(args: argparse.Namespace) -> ModelConfig:
    """The `ModelConfig` that parsed `params` options describe (validated).

    A preset sets `N`, `d_model`, `d_ff`, `h`, `dropout` and both vocabularies
    ([`PRESET_VOCAB`][vanilla_transformer.cli.PRESET_VOCAB]); options given explicitly win;
    anything left keeps `make_model`'s default.

    Args:
        args: the namespace parsed by the `params` subcommand.

    Returns:
        The configuration.

    Raises:
        ValueError: if a vocabulary is missing without `--preset`, or for any value
            `ModelConfig` rejects. TypeError: for a value of the wrong type.

    Examples:
        >>> args = build_parser().parse_args(["params", "--preset", "big", "--tie-weights"])
        >>> cfg = config_from_args(args)
        >>> cfg.d_model, cfg.src_vocab, cfg.tie_weights, cfg.norm_first
        (1024, 37000, True, True)
    """
    from ..config import PRESETS, ModelConfig

    values: dict[str, Any] = dict(PRESETS[args.preset]) if args.preset else {}
    if args.preset:
        values.update(src_vocab=PRESET_VOCAB, tgt_vocab=PRESET_VOCAB)
    values.update(config_values(args))
    if "src_vocab" not in values or "tgt_vocab" not in values:
        raise ValueError("--src-vocab and --tgt-vocab are required unless --preset is given")
    return ModelConfig(**values)


def run_params(args: argparse.Namespace) -> int:
    """Print the calculator's figures for parsed `params` options.

    Prints the parameter table, the closed form and the memory estimate; with a length, also
    the FLOPs and the activation and key/value-cache estimates (`--src-len` and `--tgt-len`
    default to each other, `--batch` to 1). With `--json`, one JSON object instead.

    Args:
        args: the namespace parsed by the `params` subcommand.

    Returns:
        0.

    Raises:
        ValueError: for a bad configuration, length or dtype (`main` turns it into one line on
            stderr and exit status 2).

    Examples:
        >>> args = build_parser().parse_args(["params", "--src-vocab", "11", "--tgt-vocab", "11",
        ...                                   "-N", "2", "--src-len", "10", "--json"])
        >>> run_params(args)  # doctest: +ELLIPSIS
        {...
          "flops": {
            "batch": 1,
            "src_len": 10,
            "tgt_len": 10,
            "total": 294942720,
        ...
        0
    """
    from ..analysis.flops import forward_flops_for
    from ..analysis.memory import memory_estimate_for
    from ..analysis.parameters import parameter_count_for

    config = config_from_args(args)
    src_len = args.src_len if args.src_len is not None else args.tgt_len
    tgt_len = args.tgt_len if args.tgt_len is not None else args.src_len
    if args.batch is not None and src_len is None:
        raise ValueError("--batch needs --src-len or --tgt-len")
    batch = 1 if args.batch is None else args.batch
    params = parameter_count_for(config)
    memory = memory_estimate_for(
        config, batch=batch, src_len=src_len, tgt_len=tgt_len, dtype=args.dtype
    )
    flops = None
    if src_len is not None:
        flops = forward_flops_for(config, batch=batch, src_len=src_len, tgt_len=tgt_len)
    if args.json:
        data = dict(config=config.to_dict(), parameters=params.to_dict(), memory=memory.to_dict())
        if flops is not None:
            data["flops"] = flops.to_dict()
        print(json.dumps(data, indent=2))
        return 0
    sections = [params.table(), f"formula: {params.formula}", memory.table()]
    if flops is not None:
        sections.append(flops.table())
    else:
        sections.append(
            "(add --src-len and --tgt-len for FLOPs, activations and the key/value cache)"
        )
    print("\n\n".join(sections))
    return 0


def _top_level_option(word: str) -> bool:
    """Whether `word` is an option of the command itself (`--help`, `--version`, or an
    abbreviation argparse accepts), not of a subcommand."""
    name = word.split("=", 1)[0]
    return name == "-h" or (len(name) > 2 and any(o.startswith(name) for o in ("--help",
                                                                               "--version")))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default: `sys.argv[1:]`).

    Args:
        argv: the arguments, without the program name.

    Returns:
        The exit status: 0 on success, 2 for a bad argument or input, 1 when the work fails,
        130 when interrupted; every failure is one line on stderr.

    Examples:
        >>> main(["params", "--src-vocab", "11", "--tgt-vocab", "11", "-N", "2"])
        ... # doctest: +ELLIPSIS
        parameters of make_model(11, 11, N=2, ...
        total...14,731,787
        ...
        0
        >>> main(["params", "--preset", "base", "--d-model", "500"])  # one line on stderr
        2
    """
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    first = next(iter(argv), "")
    if first.startswith("-") and not _top_level_option(first):  # argparse: "COMMAND missing"
        print(f"{PROG}: error: unknown option {first!r}; a command's options go after the "
              f"COMMAND (see '{PROG} --help')", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, or an argparse error already printed
        return exit_.code if isinstance(exit_.code, int) else 1

    def fail(message: object, status: int) -> int:
        text = " ".join(str(message).split())
        print(f"{PROG} {args.command}: error: {text}", file=sys.stderr, flush=True)
        return status

    try:
        status: int = args.handler(args)
        return status
    except CommandFailed as error:
        return fail(error, error.status)
    except (ValueError, TypeError) as error:  # the library's keyword names become flags
        return fail(flag_message(error), 2)
    except BrokenPipeError:  # the reader went away, e.g. `... | head`: not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keep Python's exit flush quiet
        return 0
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except ModuleNotFoundError as error:
        extra = EXTRAS.get((error.name or "").split(".")[0])
        if extra is None:
            return fail(f"{type(error).__name__}: {error}", 1)
        return fail(f"this needs the optional package {error.name!r}: pip install "
                    f"'vanilla-transformer[{extra}]'", 2)
    except OSError as error:  # a full disk, a permission denied
        where = f" ({error.filename})" if error.filename else ""
        return fail(f"{error.strerror or error}{where}", 1)
    except MemoryError:
        return fail("out of memory", 1)
    except Exception as error:  # noqa: BLE001 - a failure of the work: one line, no traceback
        return fail(f"{type(error).__name__}: {error}", 1)
