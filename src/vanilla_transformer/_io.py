"""Files written whole or not at all.

A save that is killed halfway must never leave a truncated file where a good one was: every
file the package writes goes to a temporary file in the same folder, is flushed to disk, and
then replaces the target in one `os.replace`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import torch

__all__ = ["atomic_write", "atomic_torch_save"]


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
    path = Path(os.fspath(path))
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {str(path)!r}: folder {str(folder)!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; a saved file is not
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


def _remove(tmp: str) -> None:
    """Remove a temporary file if it is still there."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def atomic_torch_save(obj: Any, path: str | os.PathLike[str]) -> Path:
    """`torch.save(obj, path)`, atomically (see [`atomic_write`][vanilla_transformer._io.atomic_write])."""
    return atomic_write(path, lambda f: torch.save(obj, f))
