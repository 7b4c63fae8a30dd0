"""Files written whole or not at all.

A save that is killed halfway must never leave a truncated file where a good one was: every
file the package saves whole (checkpoints, a run's state and settings, TSV corpora, the
tokenizer, ONNX graphs) goes to a temporary file in the same folder, is flushed to disk, and
then replaces the target in one `os.replace`. A run's `metrics.jsonl`, which grows line by
line, is the exception: it is written in place, so a kill can cut its last line short; a
lock file is created in place.

A folder has one writer at a time: `RunLock`, whose lock file names the writer's process id,
trusts nothing but a live process. A full disk is reported as `ENOSPC` naming the file, and
the next writer removes the temporaries a kill left.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write", "atomic_path", "atomic_torch_save", "naming", "save_atomically",
           "write_json", "is_temporary", "remove_entry", "make_folder", "LOCK_FILE", "RunLock",
           "output_file", "output_folder"]

LOCK_FILE = ".lock"
"""The lock file of a folder that one process writes at a time."""
_MAX_PID = 2**22  # Linux's largest pid_max


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any]) -> Path:
    """Call `write(file)` on a temporary file beside `path`, then move it onto `path`.

    Args:
        path: the file to create or replace; its folder must exist.
        write: writes the content to the binary file object it is given.

    Returns:
        `path` as a `Path`.

    Raises:
        FileNotFoundError: if the folder of `path` does not exist (nothing is written).
        ValueError: if `path` is there but is not a regular file (a folder, a device, a
            named pipe): nothing is written.

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
    if path.exists() and not path.is_file():  # a device, a pipe: replacing it is never meant
        raise ValueError(f"cannot write {str(path)!r}: it is not a regular file, and only a "
                         "regular file is replaced")
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
    import torch  # here: the file layer itself is used by `--help`, which must stay torch-free

    return atomic_write(path, lambda f: torch.save(obj, f))


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Give an `OSError` raised inside the block that names no file the name `path`."""
    try:
        yield
    except OSError as error:
        if error.filename is not None or error.errno is None:
            raise
        raise OSError(error.errno, error.strerror or str(error), os.fspath(path)) from error


def save_atomically(path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any]) -> None:
    """`atomic_write`, a full disk reported as `OSError(ENOSPC)` naming `path` (torch's
    writer says only "unexpected pos")."""
    try:
        atomic_write(path, write)
    except RuntimeError as error:
        folder = Path(os.fspath(path)).parent
        full = shutil.disk_usage(folder).free < (1 << 20) or "unexpected pos" in str(error)
        code = errno.ENOSPC if full else errno.EIO
        raise OSError(code, os.strerror(code), os.fspath(path)) from error


def write_json(path: Path, data: Any) -> None:
    """Write `data` as indented UTF-8 JSON, atomically."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    save_atomically(path, lambda f: f.write(text.encode("utf-8")))


def is_temporary(name: str) -> bool:
    """Whether a file name is a writer's temporary: `atomic_write`'s `.NAME.XXXX.tmp`, or a
    `.NAME.tmp-PID` or `.NAME.old-PID` a writer stages by hand."""
    return name.startswith(".") and (name.endswith(".tmp") or ".tmp-" in name
                                     or ".old-" in name)


def remove_entry(entry: Path) -> None:
    """Remove a file, a link or a folder with what it holds."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def make_folder(path: Path) -> Path:
    """Create the output folder `path` (and its parents) if needed, refusing one that cannot be
    created or written, with a `ValueError` that names it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create output folder {str(path)!r}: {error.strerror or error}"
                         ) from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"output folder {str(path)!r} is not writable")
    return path


def _pid_alive(pid: int) -> bool:
    if not 0 < pid < _MAX_PID:  # 0 and negatives name process groups, not a process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    except OSError as error:
        return error.errno != errno.ESRCH
    return True


class RunLock:
    """The lock that makes one process the only writer of a folder: the file `LOCK_FILE`,
    created exclusively and holding the owner's process id, removed on exit. A lock file that
    names no live process (a dead one, or no pid at all) is taken over. A writer of one file
    locks it with `name=".NAME.lock"` beside it.

    Raises:
        ValueError: on entry, if a live process holds the lock; the message names its pid.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> with RunLock(folder):
        ...     (folder / ".lock").read_text() == str(os.getpid())
        True
        >>> (folder / ".lock").exists()
        False
    """

    def __init__(self, folder: str | os.PathLike[str], name: str = LOCK_FILE) -> None:
        self.folder = Path(os.fspath(folder))
        self.path = self.folder / name
        self.held = False

    def holder(self) -> int | None:
        """The live process named in the lock file, or `None` if it names none."""
        try:
            text = self.path.read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            return None
        pid = int(text) if text.isdigit() and len(text) < 12 else 0
        return pid if _pid_alive(pid) or pid == os.getpid() else None

    def acquire(self) -> None:
        """Take the lock, taking over one that names no live process."""
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pid = self.holder()
                if pid is not None and pid != os.getpid():
                    raise ValueError(
                        f"{self._what()} is in use: process {pid} is writing it (its lock is "
                        f"{str(self.path)!r}); wait for it to finish or stop it") from None
                self.path.unlink(missing_ok=True)  # stale: its writer is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            self.held = True
            return
        raise ValueError(f"cannot take the lock {str(self.path)!r}: another writer keeps "
                         "taking it")

    def _what(self) -> str:
        if self.path.name == LOCK_FILE:
            return f"folder {str(self.folder)!r}"
        return f"file {str(self.folder / self.path.name[1:-len(LOCK_FILE)])!r}"

    def release(self) -> None:
        """Remove the lock file if this process holds it."""
        if self.held and self.holder() == os.getpid():
            self.path.unlink(missing_ok=True)
        self.held = False

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def _hold(lock: RunLock, flag: str, shown: str) -> Iterator[None]:
    """Hold `lock`; a live process that holds it is refused, naming the flag and the path."""
    try:
        lock.acquire()
    except ValueError as error:
        raise ValueError(f"{flag} {shown!r}: {error}") from None
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def output_file(path: str, flag: str, *, reads: dict[str, str | None] | None = None,
                stdin: bool = False, overwrite: bool = False,
                stdout: bool = False) -> Iterator[Path | None]:
    """The output rule for a file (`_checks.check_output_file`), then its lock (`RunLock` of
    `.NAME.lock` beside it) held while the block runs, and the rule checked again under it:
    of two commands that write one file at once, the second is refused, and so is a file in
    a folder another process holds.

    Yields:
        The file to write (a link's target), or `None` for `-` where `stdout` allows it.
    """
    from ._checks import check_output_file  # here: it imports torch, which --help must not

    def check() -> Path | None:
        return check_output_file(path, flag, reads=reads, stdin=stdin, overwrite=overwrite,
                                 stdout=stdout)

    target = check()
    if target is None:
        yield None
        return
    holder = RunLock(target.parent).holder()
    if holder is not None and holder != os.getpid():
        raise ValueError(f"{flag} {path!r}: folder {str(target.parent)!r} is in use: process "
                         f"{holder} is writing it; wait for it to finish or stop it")
    with _hold(RunLock(target.parent, f".{target.name}{LOCK_FILE}"), flag, path):
        check()
        yield target


@contextlib.contextmanager
def output_folder(path: str, flag: str, names: Sequence[str], *,
                  overwrite: bool = False) -> Iterator[Path]:
    """The output rule for a folder that will hold `names` (`_checks.check_output_folder`),
    then the folder created, its `RunLock` held while the block runs, and the rule checked
    again under it. A block that raises leaves nothing behind: what it added to the folder,
    and the folders it created, are removed.

    Yields:
        The folder.
    """
    from ._checks import check_output_folder  # here: it imports torch, which --help must not

    folder = check_output_folder(path, flag, names, overwrite=overwrite)
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    make_folder(folder)
    try:
        with _hold(RunLock(folder), flag, path):
            before = set(os.listdir(folder))
            try:
                check_output_folder(path, flag, names, overwrite=overwrite)
                yield folder
            except BaseException:
                for name in set(os.listdir(folder)) - before - {LOCK_FILE}:
                    remove_entry(folder / name)
                raise
    except BaseException:
        for made in created:
            with contextlib.suppress(OSError):
                made.rmdir()  # only if empty
        raise
