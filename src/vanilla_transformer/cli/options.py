"""Command-line options generated from the fields of `ModelConfig`, the one list of a model's
hyperparameters.

Every subcommand that builds or describes a model (`params`, `copy-task`, `translate train`,
the `torchrun` entry) adds its model options with
[`add_config_arguments`][vanilla_transformer.cli.options.add_config_arguments] and reads them
back with [`config_values`][vanilla_transformer.cli.options.config_values]. A new field of
[`ModelConfig`][vanilla_transformer.model.config.ModelConfig] becomes an option everywhere once
it is added to [`MODEL_FIELDS`][vanilla_transformer.cli.options.MODEL_FIELDS], the fields as
`--help` needs them: that list is written out here so that `--help` imports no PyTorch, and a
test checks each entry against `dataclasses.fields(ModelConfig)`: its name, type, default and
help, the field's `metadata["help"]`. No help is read out of a docstring.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple, NoReturn

__all__ = ["OneLineParser", "CommandFailed", "ModelField", "MODEL_FIELDS", "LAYER_NORMS",
           "PRESET_NAMES", "add_config_arguments", "add_field_arguments", "config_values"]


class ModelField(NamedTuple):
    """One field of a configuration dataclass as a command-line option needs it: its name,
    its type as written in the class, its default and its help (the field's
    `metadata["help"]`)."""

    name: str
    type: str
    default: Any
    help: str


_REQUIRED: Any = dataclasses.MISSING

MODEL_FIELDS: tuple[ModelField, ...] = (
    ModelField("src_vocab", "int", _REQUIRED,
               "source vocabulary size (0 allowed: no source embedding rows)"),
    ModelField("tgt_vocab", "int", _REQUIRED, "target vocabulary size (0 allowed)"),
    ModelField("N", "int", 6, "number of encoder layers and of decoder layers"),
    ModelField("d_model", "int", 512, "model width"),
    ModelField("d_ff", "int", 2048, "feed-forward hidden width"),
    ModelField("h", "int", 8, "number of attention heads; must divide `d_model`"),
    ModelField("dropout", "float", 0.1, "dropout probability in [0, 1)"),
    ModelField("tie_weights", "bool", False,
               "share one matrix between the source embedding, the target embedding and the "
               "generator (paper section 3.4)"),
    ModelField("norm_first", "bool", True,
               "pre-norm residual blocks (the Annotated Transformer) or post-norm (the paper)"),
    ModelField("layer_norm", "str", "annotated",
               '`"annotated"` (unbiased std, eps 1e-6 added to the std) or `"torch"` '
               "(`nn.LayerNorm`: biased variance, eps 1e-5 inside the square root)"),
    ModelField("final_norm", "bool | None", None, "whether each stack ends with a LayerNorm"),
    ModelField("generator_bias", "bool", True,
               "whether the generator's projection has a bias (the Annotated Transformer's has)"),
    ModelField("max_len", "int", 5000, "length of the positional-encoding table"),
    ModelField("attn_dropout", "float | None", None, "dropout on the attention weights"),
    ModelField("ff_dropout", "float | None", None,
               "dropout on the feed-forward network's hidden activations, between the ReLU "
               "and `W_2`"),
)
"""The fields of [`ModelConfig`][vanilla_transformer.model.config.ModelConfig], in order, with
their defaults (`dataclasses.MISSING` for the vocabularies) and their `metadata["help"]`; a test
checks them against the class."""

LAYER_NORMS = ("annotated", "torch")
"""`vanilla_transformer.model.layers.LAYER_NORMS`, for `--layer-norm`'s choices."""

PRESET_NAMES = ("base", "big", "paper-base", "paper-big")
"""The names of `vanilla_transformer.model.config.PRESETS`, for `--preset`'s choices."""


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


def add_config_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    defaults: Mapping[str, Any] | Any = None,
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
    values = defaults.to_dict() if hasattr(defaults, "to_dict") else dict(defaults or {})
    for f in MODEL_FIELDS:
        if f.name in exclude:
            continue
        default = values.get(f.name)
        value_shown = f.default if defaults is None else default
        if shown is not None and f.name in shown:
            value_shown = shown[f.name]
        text = f.help
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


def add_field_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, fields: Collection[ModelField]
) -> None:
    """Add one option per field, `--field-name VALUE`, defaulting to the field's default.

    Args:
        parser: a parser or an argument group.
        fields: the fields, e.g. the copy task's `TASK_FIELDS`.

    Examples:
        >>> import argparse
        >>> parser = argparse.ArgumentParser()
        >>> add_field_arguments(parser, [ModelField("seq_len", "int", 10, "sequence length")])
        >>> parser.parse_args(["--seq-len", "7"]).seq_len
        7
    """
    for f in fields:
        parser.add_argument("--" + f.name.replace("_", "-"), type=_TYPES[f.type],
                            default=f.default, dest=f.name,
                            help=f"{f.help} (default {f.default})".replace("%", "%%"))


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
    names = (f.name for f in MODEL_FIELDS)
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
