"""The output rule: what every command that writes checks before any work.

- An empty path is refused, naming its flag.
- Only a regular file is replaced; a folder, a device, a named pipe or a socket is refused
  (`-` means standard output where a command writes text).
- A file the command reads, standard input included, is never its output.
- Nothing in a run folder is an output: a run's model, checkpoints and caches are its own. A
  run folder is known by its shape (`is_run_folder`), not by one file name.
- A file or folder that exists is replaced only with `overwrite`.
- The writer holds a `RunLock` while it works, and checks again under it; a refused command
  leaves nothing behind.

Every check raises a `ValueError` naming the flag and the path. Written files go through
[`_io`][vanilla_transformer._io]'s atomic writers.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from ._io import LOCK_FILE, RunLock, make_folder, remove_entry

__all__ = ["is_run_folder", "run_folder_of", "check_path", "check_output_file", "output_file",
           "check_output_folder", "output_folder"]

_RUN_CONFIG, _RUN_SECTIONS = "config.json", ("model", "training")
_RUN_BESIDE = ("tokenizer.json", "model.pt", "checkpoints")  # training.checkpoints' names


def is_run_folder(path: str | os.PathLike[str]) -> bool:
    """Whether `path` has a training run's shape: a `config.json` holding the `model` and
    `training` sections a run writes, beside its `tokenizer.json`, `model.pt` or
    `checkpoints/`. A folder that only holds a file of one of those names is not a run.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "config.json").write_text('{"model": {}, "training": {}}')
        >>> is_run_folder(folder)
        False
        >>> _ = (folder / "tokenizer.json").write_text("{}")
        >>> is_run_folder(folder)
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
    return next((p for p in (start, *start.parents) if is_run_folder(p)), None)


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


def _check_not_locked(flag: str, shown: str, *locks: RunLock) -> None:
    """Refuse a path another live process is writing (it holds one of `locks`)."""
    for lock in locks:
        pid = lock.holder() if lock.folder.is_dir() else None
        if pid is not None and pid != os.getpid():
            what = "the folder" if lock.path.name == LOCK_FILE else "the file"
            raise ValueError(f"{flag} {shown!r} is in use: process {pid} is writing {what} "
                             f"(its lock is {str(lock.path)!r}); wait for it to finish or "
                             "stop it")


def _file_lock(target: Path) -> RunLock:
    return RunLock(target.parent, f".{target.name}{LOCK_FILE}")


def check_output_file(path: str, flag: str, *, reads: dict[str, str | None] | None = None,
                      stdin: bool = False, overwrite: bool = False,
                      stdout: bool = False) -> Path | None:
    """Refuse, before any work, an output file that would destroy something, and return the
    file to write (a symbolic link's target), or `None` for `-` when `stdout` allows it.

    Only a regular file is ever replaced: a folder, a device, a named pipe or a socket is
    refused, `--overwrite` or not. A file the command reads (`reads`, by flag; standard input
    with `stdin`), links and hard links included, is refused; so is anything in a run folder
    (`run_folder_of`), and a file that exists, unless `overwrite`.

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
        read = {other: name for other, name in (reads or {}).items()
                if name and name != "-" and os.path.exists(name) and os.path.samefile(name, target)}
        if stdin and _same_as_stdin(info):
            read["standard input"] = path
        for other in read:
            raise ValueError(f"{flag} {path!r} is the file this command reads as {other}; "
                             "choose another file")
    run = run_folder_of(target.parent)
    if run is not None:
        raise ValueError(f"{flag} {path!r} is in the run folder {str(run)!r}, whose files "
                         "(its caches included) are the run's own; choose another file")
    _check_not_locked(flag, path, RunLock(target.parent), _file_lock(target))
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


@contextlib.contextmanager
def output_file(path: str, flag: str, *, reads: dict[str, str | None] | None = None,
                stdin: bool = False, overwrite: bool = False,
                stdout: bool = False) -> Iterator[Path | None]:
    """`check_output_file`, then hold the file's lock (`RunLock` of `.NAME.lock` beside it)
    while the block runs, checked again under the lock: of two commands that write one file
    at once, the second is refused."""
    def check() -> Path | None:
        return check_output_file(path, flag, reads=reads, stdin=stdin, overwrite=overwrite,
                                 stdout=stdout)

    target = check()
    if target is None:
        yield None
        return
    with _file_lock(target):
        check()
        yield target


def check_output_folder(path: str, flag: str, names: Sequence[str], *,
                        overwrite: bool = False) -> Path:
    """Refuse, before any work, an output folder that is, or lies in, a run folder, that
    another process writes, or that holds one of `names` (without `overwrite`; anything but
    a regular file, always).

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
    _check_not_locked(flag, path, RunLock(folder))
    for name in names:
        if (folder / name).exists() and not (folder / name).is_file():
            raise ValueError(f"{flag} {path!r} holds {name}, which is "
                             f"{_kind(os.stat(folder / name).st_mode)}, not a regular file")
    existing = [n for n in names if (folder / n).exists()]
    if existing and not overwrite:
        raise ValueError(f"{flag} {path!r} already holds {', '.join(existing)}; give "
                         "--overwrite to replace them, or choose another folder")
    return folder


@contextlib.contextmanager
def output_folder(path: str, flag: str, names: Sequence[str], *,
                  overwrite: bool = False) -> Iterator[Path]:
    """`check_output_folder`, then create the folder, hold its `RunLock` while the block runs
    and check again under it. A block that raises leaves nothing behind: what it added to the
    folder, and the folders it created, are removed."""
    folder = check_output_folder(path, flag, names, overwrite=overwrite)
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    make_folder(folder)
    try:
        with RunLock(folder):
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
