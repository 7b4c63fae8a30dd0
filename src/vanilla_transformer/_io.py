"""Files written whole or not at all.

A save that is killed halfway must never leave a truncated file where a good one was: every
file the package saves whole (checkpoints, a run's state and settings, TSV corpora, the
tokenizer, ONNX graphs) goes to a temporary file in the same folder, is flushed to disk, and
then replaces the target in one `os.replace`. Files that grow line by line are the exception:
a run's `metrics.jsonl`, and the `--output` file of `translate RUN` while it translates
standard input, are written in place a line at a time, so a kill can cut their last line
short; a run folder's lock file is created in place.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import torch

__all__ = ["atomic_write", "atomic_path", "atomic_torch_save"]


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any]) -> Path:
    """Call `write(file)` on a temporary file beside `path`, then move it onto `path`.

    Args:
        path: the file to create or replace; its folder must exist.
        write: writes the content to the binary file object it is given.

    Returns:
        `path` as a `Path`.

    Raises:
        FileNotFoundError: if the folder of `path` does not exist (nothing is written).

    Examples:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
        >>> _ = atomic_write(target, lambda f: f.write(b"hello"))
        >>> target.read_text()
        'hello'
    """
    path, fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    return path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary file name beside `path`, for writers that want a name rather than a file
    object (such as `torch.onnx.export`); moved onto `path` when the block ends without error,
    removed when it raises.

    Args:
        path: the file to create or replace; its folder must exist.

    Yields:
        The temporary file's path (an empty file, which the block overwrites).

    Raises:
        FileNotFoundError: if the folder of `path` does not exist (nothing is written).

    Examples:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "graph.onnx"
        >>> with atomic_path(target) as tmp:
        ...     _ = tmp.write_bytes(b"graph")
        ...     target.exists()
        False
        >>> target.read_bytes(), sorted(p.name for p in target.parent.iterdir())
        (b'graph', ['graph.onnx'])
    """
    path, fd, tmp = _temporary(path)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _temporary(path: str | os.PathLike[str]) -> tuple[Path, int, str]:
    """`path` as a `Path`, and an open descriptor and name of a new temporary file beside it."""
    path = Path(os.fspath(path))
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {str(path)!r}: folder {str(folder)!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; a saved file is not
    return path, fd, tmp


def _remove(tmp: str) -> None:
    """Remove a temporary file if it is still there."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def atomic_torch_save(obj: Any, path: str | os.PathLike[str]) -> Path:
    """`torch.save(obj, path)`, atomically (see [`atomic_write`][vanilla_transformer._io.atomic_write])."""
    return atomic_write(path, lambda f: torch.save(obj, f))
