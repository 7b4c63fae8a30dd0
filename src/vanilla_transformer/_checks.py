r"""Argument checks shared by the package's modules.

Each check raises a `ValueError` or `TypeError` whose message names the bad value and what was
expected. The public entry points call them once, before any tensor work; the layers inside the
model trust their inputs.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import torch

__all__ = [
    "INTEGER_DTYPES",
    "TOKEN_ID_DTYPES",
    "MAX_SEED",
    "reads_values",
    "check_positive_int",
    "check_non_negative_int",
    "check_pad",
    "check_seed",
    "check_dropout",
    "check_heads",
    "check_token_ids",
    "check_mask",
    "check_keep_mask_values",
    "check_choice",
    "check_existing_folder",
    "has_run_shape",
    "run_folder_of",
    "check_path",
    "check_output_file",
    "check_output_folder",
    "check_new_run_folder",
]

INTEGER_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
"""Every integer dtype; the model's embeddings accept only `TOKEN_ID_DTYPES`."""

TOKEN_ID_DTYPES = (torch.int64, torch.int32)
"""The dtypes `nn.Embedding` accepts as indices."""

MAX_SEED = 2**63 - 1
"""The largest seed accepted: `torch.manual_seed` takes 64-bit seeds, and the package adds
small offsets (the held-out seed is the training seed plus one, each rank adds its rank)."""


def reads_values(x: torch.Tensor) -> bool:
    """Whether a check may read the values of `x`: only on the CPU and outside
    `torch.compile` (on a GPU it would synchronise, in a compiled graph it would break it)."""
    return x.device.type == "cpu" and not torch.compiler.is_compiling()


def check_positive_int(name: str, value: object) -> int:
    """Return `value` if it is an int > 0, else raise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return value


def check_non_negative_int(name: str, value: object) -> int:
    """Return `value` if it is an int >= 0, else raise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value}")
    return value


def check_pad(value: object, name: str = "pad") -> int:
    """Return `value` if it is a token id (an int >= 0) usable as padding, else raise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be the int id of the padding token, got {value!r} "
            f"({type(value).__name__})"
        )
    if value < 0:
        raise ValueError(f"{name} must be a token id >= 0, got {value}")
    return value


def check_seed(value: object, name: str = "seed") -> int:
    """Return `value` if it is an int seed in `[0, MAX_SEED]`, else raise."""
    check_non_negative_int(name, value)
    if value > MAX_SEED:  # type: ignore[operator]
        raise ValueError(f"{name} must be at most 2**63 - 1 = {MAX_SEED}, got {value}")
    return value  # type: ignore[return-value]


def check_dropout(value: object, name: str = "dropout") -> float:
    """Return `value` if it is a probability in [0, 1), else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {value!r}")
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def check_heads(h: int, d_model: int) -> None:
    """Raise unless `d_model` splits evenly into `h` heads."""
    check_positive_int("h", h)
    check_positive_int("d_model", d_model)
    if d_model % h != 0:
        raise ValueError(
            f"d_model must be divisible by h so every head gets d_k = d_model / h features; "
            f"got d_model={d_model}, h={h} (d_model % h = {d_model % h})"
        )


def check_token_ids(x: object, vocab: int | None, name: str = "token ids") -> None:
    """Raise unless `x` is a 2-D integer tensor `(batch, seq_len)` of ids in [0, vocab).

    The range is checked only for tensors on the CPU and outside `torch.compile`: reading the
    values on the host would synchronise with a GPU and break a compiled graph.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of integer ids, got {type(x).__name__}")
    if x.dtype not in INTEGER_DTYPES:
        raise TypeError(
            f"{name} must be an integer tensor (e.g. torch.long) of token ids, got dtype {x.dtype}; "
            "did you pass embeddings or a float tensor where ids were expected?"
        )
    if x.dtype not in TOKEN_ID_DTYPES:
        raise TypeError(
            f"{name} must be a torch.long (or torch.int32) tensor of token ids, got dtype "
            f"{x.dtype}, which an embedding cannot look up; convert it with {name}.long()"
        )
    if x.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, seq_len), got {tuple(x.shape)}")
    if vocab is None or x.numel() == 0 or not reads_values(x):
        return
    lo, hi = (int(t) for t in torch.aminmax(x))
    if lo < 0 or hi >= vocab:
        bad = lo if lo < 0 else hi
        raise ValueError(
            f"{name} must lie in [0, {vocab}) for a vocabulary of size {vocab}; found id {bad}"
        )


def check_mask(
    mask: torch.Tensor, batch: int, query_len: int, key_len: int, name: str = "mask"
) -> None:
    """Raise unless `mask` broadcasts to `(batch, query_len, key_len)`.

    Accepted shapes are `(batch or 1, query_len or 1, key_len)`, and the same with a head axis of
    size 1 inserted at position 1 (the form the attention modules use internally).
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.layout != torch.strided:
        raise ValueError(
            f"{name} must be a dense tensor of shape (batch or 1, {query_len} or 1, {key_len}), "
            f"got a tensor with layout {mask.layout}: convert it with .to_dense()"
        )
    shape = tuple(mask.shape)
    if mask.dim() == 4:
        if shape[1] != 1:
            raise ValueError(
                f"{name} with 4 dimensions must have a head axis of size 1, got shape {shape}"
            )
        shape = (shape[0], shape[2], shape[3])
    elif mask.dim() != 3:
        raise ValueError(
            f"{name} must have shape (batch or 1, {query_len} or 1, {key_len}), "
            f"got {mask.dim()}-D shape {tuple(mask.shape)}"
        )
    b, q, k = shape
    if b not in (1, batch) or q not in (1, query_len) or k != key_len:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} cannot broadcast to "
            f"(batch, query_len, key_len) = ({batch}, {query_len}, {key_len}); expected "
            f"({batch} or 1, {query_len} or 1, {key_len})"
        )


def check_keep_mask_values(mask: torch.Tensor, name: str = "mask") -> None:
    """Raise if a floating-point keep-mask holds anything but 0 and 1, or only 0.

    A float mask of PyTorch's kind is *additive* (0 = may attend, `-inf` = blocked): read as a
    keep-mask it would be inverted. One with `-inf` fails the first check; one without any
    (all 0.0, "attend everywhere") would read as "attend nowhere", so it fails the second.
    Checked only where the values may be read (`reads_values`).
    """
    if not mask.is_floating_point() or mask.numel() == 0 or not reads_values(mask):
        return
    bad = mask[(mask != 0) & (mask != 1)]  # NaN is unequal to both, so it is caught too
    if bad.numel():
        raise ValueError(
            f"{name} is a float keep-mask (1 = may attend, 0 = blocked) but holds the value "
            f"{bad[0].item()}; a float keep-mask may hold only 0 and 1. An additive mask of "
            "PyTorch's (0 = attend, -inf = blocked) must be converted with "
            "vanilla_transformer.interop.attn_mask_to_keep"
        )
    if not bool(mask.any()):
        # All zeros reads as "no query may attend to any key", which no model wants; it is what
        # an additive mask of PyTorch's without any -inf (attend everywhere) looks like.
        raise ValueError(
            f"{name} is a float keep-mask (1 = may attend, 0 = blocked) holding only 0, so no "
            "query may attend to any key. An additive mask of PyTorch's that blocks nothing "
            "(all 0.0) means the opposite: pass None, or convert it with "
            "vanilla_transformer.interop.attn_mask_to_keep"
        )


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return `value` if it is one of `choices`, else raise."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_existing_folder(name: str, value: object) -> Path:
    """`value` as a `Path` to a folder that exists (an exporter writes into it, never creates it).

    Raises:
        TypeError: if `value` is not a `str` or `os.PathLike`.
        ValueError: if it does not exist or is not a folder.
    """
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__}")
    path = Path(value)
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise ValueError(f"{name} {str(path)!r} {what}; create the folder first")
    return path


# ---- The output rule: the checks every command that writes makes before any work ----
# No empty path; only a regular file is replaced (`-` is standard output where a command
# writes text); never a file the command reads, standard input included; nothing in a run
# folder, known by its shape; a file that exists only with `overwrite`. `_io.output_file` and
# `_io.output_folder` add the lock and leave nothing behind a refusal.

_RUN_CONFIG, _RUN_SECTIONS = "config.json", ("model", "training")
_RUN_BESIDE = ("tokenizer.json", "model.pt", "checkpoints")  # training.checkpoints' names


def has_run_shape(path: str | os.PathLike[str]) -> bool:
    """Whether `path` has a training run's shape: a `config.json` holding the `model` and
    `training` sections a run writes, beside its `tokenizer.json`, `model.pt` or
    `checkpoints/`. A folder that only holds a file of one of those names is not a run.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "config.json").write_text('{"model": {}, "training": {}}')
        >>> has_run_shape(folder)
        False
        >>> _ = (folder / "tokenizer.json").write_text("{}")
        >>> has_run_shape(folder)
        True
    """
    folder = Path(os.fspath(path))
    if not any((folder / name).exists() for name in _RUN_BESIDE):
        return False
    try:
        config = json.loads((folder / _RUN_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and all(isinstance(config.get(k), dict)
                                            for k in _RUN_SECTIONS)


def run_folder_of(path: str | os.PathLike[str]) -> Path | None:
    """The run folder `path` is, or lies in (its caches and checkpoints included), or `None`."""
    start = Path(os.path.realpath(os.fspath(path)))
    return next((p for p in (start, *start.parents) if has_run_shape(p)), None)


def check_path(flag: str, value: str) -> str:
    """Refuse an empty path, naming its flag (an empty path would mean the current folder,
    or nothing at all)."""
    if value == "":
        raise ValueError(f"{flag} is empty; give a path")
    return value


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def check_output_file(path: str, flag: str, *, reads: dict[str, str | None] | None = None,
                      stdin: bool = False, overwrite: bool = False,
                      stdout: bool = False) -> Path | None:
    """Refuse, before any work, an output file that would destroy something, and return the
    file to write (a symbolic link's target), or `None` for `-` when `stdout` allows it.

    Only a regular file is ever replaced: a folder, a device, a named pipe or a socket is
    refused, `--overwrite` or not. A file the command reads (`reads`, by flag; standard input
    with `stdin`), links and hard links included, is refused; so is anything in a run folder
    (`run_folder_of`), and a file that exists, unless `overwrite`. Another writer's lock is
    `_io.output_file`'s to check.

    Raises:
        ValueError: naming `flag` and `path`, for each of those.
    """
    check_path(flag, path)
    if path == "-" and stdout:
        return None
    hint = "; give - for standard output" if stdout else ""
    target = Path(os.path.realpath(path))
    info = os.stat(target) if target.exists() else None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{flag} {path!r} is {_kind(info.st_mode)}, not a regular file; only "
                         f"a regular file is written or replaced{hint}")
    if not target.parent.is_dir():
        raise ValueError(f"{flag} {path!r}: the folder {str(target.parent)!r} does not exist")
    if info is not None:
        read = [other for other, name in (reads or {}).items() if name and name != "-"
                and os.path.exists(name) and os.path.samefile(name, target)]
        read += ["standard input"] if stdin and _same_as_stdin(info) else []
        if read:
            raise ValueError(f"{flag} {path!r} is the file this command reads as {read[0]}; "
                             "choose another file")
    run = run_folder_of(target.parent)
    if run is not None:
        raise ValueError(f"{flag} {path!r} is in the run folder {str(run)!r}, whose files "
                         "(its caches included) are the run's own; choose another file")
    if info is not None and not overwrite:
        raise ValueError(f"{flag} {path!r} exists; give --overwrite to replace it, or choose "
                         "another file")
    return target


def _same_as_stdin(info: os.stat_result) -> bool:
    try:
        own = os.fstat(0)
    except OSError:  # no standard input at all
        return False
    return (own.st_dev, own.st_ino) == (info.st_dev, info.st_ino)


def check_output_folder(path: str, flag: str, names: Sequence[str], *,
                        overwrite: bool = False) -> Path:
    """Refuse, before any work, an output folder that is, or lies in, a run folder, or that
    holds one of `names` (without `overwrite`; anything but a regular file, always).

    Raises:
        ValueError: naming `flag` and `path`, for each of those.
    """
    folder = Path(check_path(flag, path))
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{flag} {path!r} is a file, not a folder; choose another folder")
    run = run_folder_of(folder)
    if run is not None:
        where = "is a run folder" if run == folder.resolve() else f"is in the run folder {str(run)!r}"
        raise ValueError(f"{flag} {path!r} {where}; its files are the run's: choose another "
                         "folder")
    for name in names:
        if (folder / name).exists() and not (folder / name).is_file():
            raise ValueError(f"{flag} {path!r} holds {name}, which is "
                             f"{_kind(os.stat(folder / name).st_mode)}, not a regular file")
    existing = [n for n in names if (folder / n).exists()]
    if existing and not overwrite:
        raise ValueError(f"{flag} {path!r} already holds {', '.join(existing)}; give "
                         "--overwrite to replace them, or choose another folder")
    return folder


def check_new_run_folder(path: str, flag: str, *, overwrite: bool) -> Path:
    """Refuse a folder for a new run that lies in another run's folder, or, with `overwrite`,
    one that holds files but is not a run (`has_run_shape`): replacing it would delete a
    user's own files.

    Raises:
        ValueError: naming `flag` and `path`.
    """
    folder = Path(check_path(flag, path))
    outer = run_folder_of(folder.resolve().parent)
    if outer is not None:
        raise ValueError(f"{flag} {path!r} is in the run folder {str(outer)!r}, whose files "
                         "are that run's own; choose a folder outside it")
    if overwrite and folder.is_dir() and not has_run_shape(folder):
        held = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        if held:
            raise ValueError(f"{flag} {path!r} is not a run folder (it holds "
                             f"{', '.join(held[:4])}, but no run's config.json beside its "
                             "tokenizer.json or checkpoints/), and --overwrite replaces only "
                             "a run: choose another folder")
    return folder
