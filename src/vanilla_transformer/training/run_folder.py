"""A run folder: the files one training run writes, and the rules that keep them whole.

A run folder holds `tokenizer.json`, `config.json`, `model.pt` (the averaged model),
`metrics.jsonl` and `checkpoints/step-*.pt`. Three rules keep it from being lost:

- one writer at a time: a writer holds the lock file `.lock`, which names its process id; a
  second writer is refused while that process lives, and a lock left by a dead process is
  taken over;
- a new run never replaces an old one unless told to (`overwrite`);
- every file but `metrics.jsonl` and the lock is written atomically (`vanilla_transformer._io`),
  so a kill leaves at worst a temporary file, which the next writer removes; `metrics.jsonl`
  is appended a line per step, so a kill can cut its last line short, and a resumed run
  rewrites it (atomically) without that line and without the lines after its checkpoint.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._io import atomic_write

__all__ = [
    "MODEL_FILE",
    "TOKENIZER_FILE",
    "CONFIG_FILE",
    "METRICS_FILE",
    "CHECKPOINTS",
    "LOCK_FILE",
    "RunLock",
    "is_run_folder",
    "remove_stale_temporaries",
    "file_fingerprint",
    "BEST_FILE",
    "IDS_FOLDER",
    "TENSORBOARD_FOLDER",
    "checkpoint_paths",
    "check_folder",
    "clear_run",
    "read_run_config",
    "write_json",
    "metrics_writer",
]

MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE, METRICS_FILE, CHECKPOINTS, LOCK_FILE = (
    "model.pt", "tokenizer.json", "config.json", "metrics.jsonl", "checkpoints", ".lock")

BEST_FILE = "best.pt"
"""In `CHECKPOINTS/`: the checkpoint with the best validation score (with `keep_best`)."""

IDS_FOLDER = "ids"
"""Where a run fed a TSV file keeps its token ids (`tokenize_corpus`), reused on resume."""

TENSORBOARD_FOLDER = "tensorboard"
"""Where `tensorboard=True` writes its event files."""

_RUN_FILES = (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE, METRICS_FILE, CHECKPOINTS, LOCK_FILE)


def is_run_folder(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder holding any file a training run writes.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> is_run_folder(folder), (folder / "config.json").write_text("{}") > 0
        (False, True)
        >>> is_run_folder(folder)
        True
    """
    folder = Path(os.fspath(path))
    return folder.is_dir() and any((folder / name).exists() for name in _RUN_FILES)


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files an interrupted atomic write left in a run folder.

    Call it only while holding the folder's [`RunLock`][vanilla_transformer.training.run_folder.RunLock]:
    another writer's temporary file is not stale.

    Returns:
        The files removed.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / ".model.pt.x1y2.tmp").write_bytes(b"half a file")
        >>> [p.name for p in remove_stale_temporaries(folder)]
        ['.model.pt.x1y2.tmp']
    """
    folder = Path(os.fspath(path))
    removed = []
    for place in (folder, folder / CHECKPOINTS):
        if place.is_dir():
            for tmp in sorted(place.glob(".*.tmp")):
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
    return removed


def _pid_alive(pid: int) -> bool:
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
    """The lock that makes one process the only writer of a run folder.

    The lock is the file `.lock` in the folder, created exclusively and holding the owner's
    process id. Use it as a context manager; it is released (the file removed) on exit.

    Args:
        folder: the run folder (it must exist).

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

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(os.fspath(folder))
        self.path = self.folder / LOCK_FILE
        self.held = False

    def holder(self) -> int | None:
        """The pid written in the lock file, or `None` if there is no readable one."""
        try:
            return int(self.path.read_text().strip())
        except (OSError, ValueError):
            return None

    def acquire(self) -> None:
        """Take the lock, taking over one left by a dead process."""
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pid = self.holder()
                if pid is not None and pid != os.getpid() and _pid_alive(pid):
                    raise ValueError(
                        f"run folder {str(self.folder)!r} is in use: process {pid} is writing "
                        f"it (its lock is {str(self.path)!r}); wait for it to finish or stop it"
                    ) from None
                self.path.unlink(missing_ok=True)  # stale: its writer is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            self.held = True
            return
        raise ValueError(f"cannot take the lock {str(self.path)!r}: another writer keeps "
                         "taking it")

    def release(self) -> None:
        """Remove the lock file if this process holds it."""
        if self.held and self.holder() == os.getpid():
            self.path.unlink(missing_ok=True)
        self.held = False

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def file_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The size in bytes and the SHA-256 of a file, read in chunks.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.tsv"
        >>> _ = path.write_text("one\\teins\\n")
        >>> print(file_fingerprint(path)["size"])
        9
    """
    digest = hashlib.sha256()
    size = 0
    with open(os.fspath(path), "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"size": size, "sha256": digest.hexdigest()}


def checkpoint_paths(out: str | os.PathLike[str]) -> list[Path]:
    """The training checkpoints of a run folder, oldest first.

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.training.run_folder import checkpoint_paths
        >>> checkpoint_paths(tempfile.mkdtemp())
        []
    """
    folder = Path(os.fspath(out)) / CHECKPOINTS
    return sorted(folder.glob("step-*.pt")) if folder.is_dir() else []


def write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def check_folder(path: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse, before anything is written, a folder that a new run would clobber.

    Raises:
        ValueError: if `path` is a file, is locked by a live process, is not a run folder
            while `resume`, or holds files while neither `resume` nor `overwrite`.
    """
    if path.exists() and not path.is_dir():
        raise ValueError(f"cannot create output folder {str(path)!r}: a file of that name "
                         "exists")
    lock = RunLock(path)
    holder = lock.holder() if path.is_dir() else None
    if holder is not None and holder != os.getpid():
        lock.acquire()  # raises, naming the holder, if it is alive
        lock.release()
    if resume:
        if not is_run_folder(path):
            raise ValueError(f"cannot resume: {str(path)!r} is not a run folder (no "
                             f"{CONFIG_FILE}, {TOKENIZER_FILE} or {CHECKPOINTS}/)")
        return
    leftovers = [p.name for p in path.iterdir() if p.name != LOCK_FILE
                 and not p.name.endswith(".tmp")] if path.is_dir() else []
    if leftovers and not overwrite:
        raise ValueError(f"output folder {str(path)!r} is not empty (it holds "
                         f"{', '.join(sorted(leftovers)[:4])}); continue its run with --resume, "
                         "replace it with --overwrite, or choose another folder")


def clear_run(folder: Path) -> None:
    """Remove the files of a previous run (for `overwrite`), leaving other files alone."""
    for name in (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE, METRICS_FILE):
        (folder / name).unlink(missing_ok=True)
    for name in (CHECKPOINTS, IDS_FOLDER, TENSORBOARD_FOLDER):
        if (folder / name).is_dir():
            shutil.rmtree(folder / name)


def read_run_config(folder: Path) -> dict[str, Any]:
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"cannot resume: {str(folder)!r} lacks {CONFIG_FILE}, which holds the "
                         "run's settings; start again with --overwrite")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot resume: {str(path)!r} is not readable JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("training"), dict):
        raise ValueError(f"cannot resume: {str(path)!r} holds no 'training' settings")
    return data


def metrics_writer(path: Path, keep_up_to: int | None) -> Callable[[dict[str, Any]], None]:
    """Append JSON lines to `path`; on resume first drop the lines after step `keep_up_to`."""
    if keep_up_to is None:
        path.unlink(missing_ok=True)
    elif path.is_file():
        kept = []
        for line in path.read_text(encoding="utf-8").split("\n"):
            with contextlib.suppress(ValueError):
                if json.loads(line).get("step", 0) <= keep_up_to:
                    kept.append(line + "\n")
        text = "".join(kept).encode("utf-8")
        atomic_write(path, lambda f: f.write(text))

    def write(entry: dict[str, Any]) -> None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    return write
