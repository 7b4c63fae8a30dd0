"""Command-line options generated from the fields of `ModelConfig`, the one list of a model's
hyperparameters.

Every subcommand that builds or describes a model (`params`, `copy-task`, the `torchrun` entry)
adds its model options with
[`add_config_arguments`][vanilla_transformer.cli.options.add_config_arguments] and reads them
back with [`config_values`][vanilla_transformer.cli.options.config_values]. A new field of
[`ModelConfig`][vanilla_transformer.model.config.ModelConfig] becomes an option everywhere, with
its help taken from the field's entry in the class docstring.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from collections.abc import Collection, Mapping
from typing import Any, NoReturn

from ..model.config import ModelConfig
from ..model.layers import LAYER_NORMS

__all__ = ["OneLineParser", "CommandFailed", "add_config_arguments", "config_values"]


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line on stderr (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class CommandFailed(Exception):
    """A command's work failed (not its input): `main` prints the message as one line on
    stderr and exits with `status` (1 unless told).

    Examples:
        >>> CommandFailed("training diverged at step 7", 1).status
        1
    """

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status

_TYPES = {"int": int, "float": float, "float | None": float, "str": str}
_CHOICES = {"layer_norm": LAYER_NORMS}
_ALIASES = {"N": ["-N"]}


def _field_help() -> dict[str, str]:
    """The first sentence of each field's entry under `Args:` in `ModelConfig`'s docstring."""
    doc = inspect.cleandoc(ModelConfig.__doc__ or "")
    args = doc.split("Args:", 1)[-1].split("\n\n", 1)[0]
    entries = re.findall(r"^ {4}(\w+): (.*?)(?=^ {4}\w+: |\Z)", args, re.M | re.S)
    return {name: " ".join(text.split()).split(". ")[0].rstrip(".") for name, text in entries}


def add_config_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    defaults: Mapping[str, Any] | ModelConfig | None = None,
    *,
    exclude: Collection[str] = (),
    shown: Mapping[str, Any] | None = None,
) -> None:
    """Add one option per field of `ModelConfig` to `parser`.

    Flags are the field names with `-` for `_`: `--d-model`, `--d-ff`, `--N` (also `-N`).
    Integer and float fields take a value, `layer_norm` one of its choices, and boolean fields
    are switches with a negative form (`--tie-weights`/`--no-tie-weights`); `--final-norm`/
    `--no-final-norm` is three-state, `None` when neither is given. `--post-norm` is an alias
    of `--no-norm-first`.

    Args:
        parser: a parser or an argument group.
        defaults: the value of each option when it is not given (a `ModelConfig` or a mapping
            of field names). With `None`, every option defaults to `None` ("not given") and
            the help shows `make_model`'s default.
        exclude: fields to leave out (e.g. the vocabularies, where the task sets them).
        shown: the defaults the help shows when they differ from the options' values (e.g. a
            preset's sizes, applied later, while the options default to `None`).

    Examples:
        >>> import argparse
        >>> from vanilla_transformer.cli.options import add_config_arguments, config_values
        >>> parser = argparse.ArgumentParser()
        >>> add_config_arguments(parser, exclude={"src_vocab", "tgt_vocab"})
        >>> args = parser.parse_args(["--d-model", "64", "--no-tie-weights", "--post-norm"])
        >>> config_values(args)
        {'d_model': 64, 'tie_weights': False, 'norm_first': False}
    """
    helps = _field_help()
    values = defaults.to_dict() if isinstance(defaults, ModelConfig) else dict(defaults or {})
    for f in dataclasses.fields(ModelConfig):
        if f.name in exclude:
            continue
        default = values.get(f.name)
        value_shown = f.default if defaults is None else default
        if shown is not None and f.name in shown:
            value_shown = shown[f.name]
        text = helps.get(f.name, f.name)
        if value_shown is not dataclasses.MISSING:
            text += f" (default: {value_shown})"
        kwargs: dict[str, Any] = dict(dest=f.name, default=default)
        if f.type in ("bool", "bool | None"):
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = _TYPES[f.type]
            kwargs["choices"] = _CHOICES.get(f.name)
        flags = [*_ALIASES.get(f.name, []), "--" + f.name.replace("_", "-")]
        # set after construction: some Python versions append a default to a switch's help
        parser.add_argument(*flags, **kwargs).help = text.replace("%", "%%")
        if f.name == "norm_first":
            parser.add_argument("--post-norm", action="store_false", dest="norm_first",
                                default=argparse.SUPPRESS,
                                help="the paper's post-norm blocks (same as --no-norm-first)")


def config_values(args: argparse.Namespace) -> dict[str, Any]:
    """The `ModelConfig` fields that parsed options set: those present and not `None`.

    Args:
        args: a namespace parsed by a parser given
            [`add_config_arguments`][vanilla_transformer.cli.options.add_config_arguments].

    Returns:
        A dict of field names to values, ready for `ModelConfig(**...)` or `.replace(**...)`.

    Examples:
        See [`add_config_arguments`][vanilla_transformer.cli.options.add_config_arguments].
    """
    names = (f.name for f in dataclasses.fields(ModelConfig))
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
