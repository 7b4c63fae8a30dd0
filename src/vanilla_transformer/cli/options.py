"""Command-line options generated from the fields of the configuration dataclasses in
`vanilla_transformer.config`, which import without PyTorch.

Every subcommand that builds or describes a model (`params`, `copy-task`, `translate train`,
the `torchrun` entry) adds its model options with
[`add_config_arguments`][vanilla_transformer.cli.options.add_config_arguments] and reads them
back with [`config_values`][vanilla_transformer.cli.options.config_values]; a task's own
settings come from its dataclass's fields ([`fields_of`][vanilla_transformer.cli.options.fields_of]).
A field's help is its `metadata["help"]`: a new field becomes an option everywhere, with no
list to copy it into.

The library names its arguments in its errors (`d_model=32`, `overwrite=True`); an error that
lists them in `keywords` is shown with the flags instead
([`flag_message`][vanilla_transformer.cli.options.flag_message]).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple, NoReturn

from ..config import LAYER_NORMS, PRESETS, ModelConfig

__all__ = ["OneLineParser", "CommandFailed", "ModelField", "MODEL_FIELDS", "LAYER_NORMS",
           "PRESET_NAMES", "MAX_THREADS", "check_threads", "fields_of", "flag", "flag_message",
           "add_config_arguments", "add_field_arguments", "config_values", "EXTRAS",
           "MissingExtra", "require_modules", "OVERWRITE_HELP"]

OVERWRITE_HELP = ("replace files that exist (only regular files; never a file the command "
                  "reads, or anything in a run folder)")
"""The help of `--overwrite`, the same for every command that writes (the rule is
`_checks.check_output_file`'s and `_checks.check_output_folder`'s)."""


class ModelField(NamedTuple):
    """One field of a configuration dataclass as a command-line option needs it: its name,
    its type as written in the class, its default and its help (the field's
    `metadata["help"]`)."""

    name: str
    type: str
    default: Any
    help: str


def fields_of(cls: type, exclude: Collection[str] = ()) -> tuple[ModelField, ...]:
    """The fields of a configuration dataclass as options need them, in order.

    Examples:
        >>> from vanilla_transformer.config import TranslationConfig
        >>> fields_of(TranslationConfig)[0]
        ModelField(name='vocab_size', type='int', default=250, help='size of the shared byte-pair vocabulary')
    """
    return tuple(ModelField(f.name, str(f.type), f.default, f.metadata["help"])
                 for f in dataclasses.fields(cls) if f.name not in exclude)


MODEL_FIELDS: tuple[ModelField, ...] = fields_of(ModelConfig)
"""The fields of [`ModelConfig`][vanilla_transformer.model.config.ModelConfig], in order, with
their defaults (`dataclasses.MISSING` for the vocabularies) and their `metadata["help"]`."""

PRESET_NAMES = tuple(sorted(PRESETS))
"""The names of `vanilla_transformer.config.PRESETS`, for `--preset`'s choices."""

_ALIASES = {"N": ["-N"]}


def flag(name: str) -> str:
    """The command-line flag of a keyword argument: `d_model` is `--d-model`, `N` is `-N`."""
    return _ALIASES.get(name, ["--" + name.replace("_", "-")])[0]


def flag_message(error: BaseException) -> str:
    """The message of `error` with the keyword arguments it lists in `keywords` written as
    flags: `name=True` as `--name`, `name=False` as `--no-name`, `name=V` as `--name V`, and
    the bare name as `--name`.

    Examples:
        >>> from vanilla_transformer.training.ranks import RefusalError
        >>> flag_message(RefusalError("d_model=32 differs; drop d_model or use overwrite=True",
        ...                      "d_model", "overwrite"))
        '--d-model 32 differs; drop --d-model or use --overwrite'
    """
    text = str(error)
    for name in sorted(getattr(error, "keywords", ()), key=len, reverse=True):
        word = rf"(?<![\w\-]){re.escape(name)}"
        text = re.sub(word + r"=True\b", flag(name), text)
        text = re.sub(word + r"=False\b", "--no-" + name.replace("_", "-"), text)
        text = re.sub(word + r"=", flag(name) + " ", text)
        text = re.sub(word + r"(?![\w=])", flag(name), text)
    return text


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line on stderr (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class CommandFailed(Exception):  # noqa: N818 - a public name since 0.1
    """A command's work failed (not its input): `main` prints the message as one line on
    stderr and exits with `status` (1 unless told).

    Examples:
        >>> CommandFailed("training diverged at step 7", 1).status
        1
    """

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


EXTRAS = {"tokenizers": "translate", "sacrebleu": "translate", "num2words": "translate",
          "onnx": "onnx", "onnxruntime": "onnx", "onnxscript": "onnx",
          "ctranslate2": "ctranslate2", "tensorboard": "tensorboard"}
"""The extra that installs each optional package (`pip install 'vanilla-transformer[EXTRA]'`)."""


class MissingExtra(CommandFailed):
    """An optional package a command needs is not installed: one line naming the pip command
    of its extra, and exit status 2 (the set-up, not the work, is at fault).

    Examples:
        >>> str(MissingExtra("onnx"))
        "this needs the optional package 'onnx': pip install 'vanilla-transformer[onnx]'"
    """

    def __init__(self, module: str) -> None:
        super().__init__(f"this needs the optional package {module!r}: pip install "
                         f"'vanilla-transformer[{EXTRAS[module]}]'", 2)
        self.module = module


def require_modules(modules: Collection[str]) -> None:
    """Refuse, before a command does anything, when one of `modules` (keys of `EXTRAS`) cannot
    be found; nothing is imported.

    Raises:
        MissingExtra: for the first module that is missing.

    Examples:
        >>> import sys
        >>> sys.modules["num2words"] = None  # as Python marks a module that cannot be imported
        >>> require_modules(["num2words"])
        Traceback (most recent call last):
        ...
        vanilla_transformer.cli.options.MissingExtra: this needs the optional package \
'num2words': pip install 'vanilla-transformer[translate]'
        >>> del sys.modules["num2words"]
    """
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package that is missing, no __spec__
            found = False
        if not found:
            raise MissingExtra(module)


MAX_THREADS = 1024
"""The most CPU threads `--threads` accepts."""


def check_threads(value: int) -> int:
    """`--threads`, refused unless in `[1, MAX_THREADS]`."""
    if not 0 < value <= MAX_THREADS:
        raise ValueError(f"--threads must be in [1, {MAX_THREADS}], got {value}")
    return value


_TYPES = {"int": int, "float": float, "float | None": float, "str": str, "int | None": int}
_CHOICES = {"layer_norm": LAYER_NORMS}


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
        parser.add_argument(flag(f.name), type=_TYPES[f.type], default=f.default, dest=f.name,
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
