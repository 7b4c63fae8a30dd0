"""The checks every command that writes makes before any work: no output over a file it reads,
a file of a run folder, or a file that exists (without `--overwrite`), and output folders that
can be created and written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from .._io import make_folder

__all__ = ["OVERWRITE_HELP", "check_output", "check_folder_outputs", "make_folder"]

OVERWRITE_HELP = "write over files that exist (never over a file read, or a run's own file)"
"""The help of `--overwrite`, the same for every command that writes."""


def _in_run_folder(path: Path) -> bool:
    """Whether `path` is a file a training run writes, in a run folder."""
    from ..training.checkpoints import CHECKPOINTS
    from ..training.run_folder import is_run_folder

    parent = path.parent
    if parent.name == CHECKPOINTS and is_run_folder(parent.parent):
        return True
    names = ("model.pt", "tokenizer.json", "config.json", "metrics.jsonl", ".lock")
    return path.name in names and is_run_folder(parent)


def check_output(path: str, option: str, *, reads: Sequence[str] = (),
                 overwrite: bool = False) -> None:
    """Refuse, before any work, an output file that would destroy something.

    Raises:
        ValueError: if `path` is a folder, its folder is missing, it is a file the command
            reads, a run folder's own file, or (without `overwrite`) a file that exists.
    """
    target = Path(path).resolve()
    if Path(path).is_dir():
        raise ValueError(f"cannot write {path!r}: it is a folder")
    if not target.parent.is_dir():
        raise ValueError(f"cannot write {path!r}: folder {str(target.parent)!r} does not exist")
    if any(Path(r).resolve() == target for r in reads if r):
        raise ValueError(f"{option} {path!r} is a file this command reads; choose another file")
    if _in_run_folder(target):
        raise ValueError(f"{option} {path!r} is a file of a run folder; choose another file")
    if target.exists() and not overwrite:
        raise ValueError(f"{option} {path!r} exists; give --overwrite to replace it, or choose "
                         "another file")


def check_folder_outputs(out: str, names: Iterable[str], overwrite: bool) -> Path:
    """Refuse an output folder that is a run folder, or holds one of `names` (without
    `overwrite`)."""
    from ..training.run_folder import is_run_folder

    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"cannot create output folder {out!r}: a file of that name exists")
    if is_run_folder(path):
        raise ValueError(f"--out {out!r} is a run folder; its files are the run's: choose "
                         "another folder")
    existing = [n for n in names if (path / n).exists()]
    if existing and not overwrite:
        raise ValueError(f"--out {out!r} already holds {', '.join(existing)}; give --overwrite "
                         "to replace them, or choose another folder")
    return path
