"""The starter files: one per step, each with the signature, a docstring that says what to
compute, and `raise NotImplementedError` for a body; and the loader that `practice check` uses.

They ship as real Python files in the package's `practice/starters/` folder, with their README.

The files import one another by name (`from attention import attention`), so they live in one
folder; [`load_file`][vanilla_transformer.practice.load_file] puts that folder first on the
import path while it loads one of them. Written by `vanilla-transformer practice start DIR`
and downloadable from the *Rebuild it yourself* page.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import IO

from .._io import atomic_write

__all__ = ["FOLDER", "STARTERS", "README", "write_starters", "load_file", "LoadError"]

FOLDER = Path(__file__).resolve().parent / "starters"
"""The starter files, as the package ships them: real Python files, one per step, and the
README; they are data, not modules of the package (the folder has no `__init__.py`)."""


def _step_number(text: str) -> int:
    """Where a starter comes in the order: the N of its docstring's "Step N," opening."""
    found = re.match(r'"""Step (\d+),', text)
    if found is None:
        raise ValueError(f"a starter file does not open with its step number: {text[:40]!r}")
    return int(found.group(1))


def _read_starters() -> dict[str, str]:
    texts = {p.name: p.read_text(encoding="utf-8") for p in FOLDER.glob("*.py")}
    ordered = sorted(texts, key=lambda name: _step_number(texts[name]))
    return {**{name: texts[name] for name in ordered},
            "README.md": (FOLDER / "README.md").read_text(encoding="utf-8")}


STARTERS: dict[str, str] = _read_starters()
"""Every starter file's name and text, in the steps' order, the README last."""

README = STARTERS["README.md"]
"""The README of the starter files: the order of the steps and how to check one."""


def write_starters(folder: str | os.PathLike[str], *, overwrite: bool = False) -> list[Path]:
    """Write the starter files into `folder` (created if needed).

    Args:
        folder: where to write them.
        overwrite: replace files that exist; by default an existing file is kept, so your
            work is never lost.

    Returns:
        The paths written (the files kept are not listed).

    Raises:
        ValueError: if `folder` exists and is not a folder.

    Example:
        >>> import tempfile
        >>> written = write_starters(tempfile.mkdtemp())
        >>> len(written), written[0].name
        (15, 'subsequent_mask.py')
    """
    path = Path(os.fspath(folder))
    if path.exists() and not path.is_dir():
        raise ValueError(f"{str(path)!r} exists and is not a folder")
    path.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in STARTERS.items():
        target = path / name
        if target.exists() and not overwrite:
            continue
        atomic_write(target, _writer(text.encode("utf-8")))
        written.append(target)
    return written


def _writer(data: bytes) -> Callable[[IO[bytes]], object]:
    return lambda f: f.write(data)


class LoadError(Exception):
    """A file that does not load: missing, not Python, raising on import, or lacking a name."""


def load_file(path: str | os.PathLike[str]) -> ModuleType:
    """Import a learner's file as a module, its own folder first on the import path.

    The modules of its sibling files that it imports are forgotten afterwards, so that files
    of the same names in another folder load afresh.

    Args:
        path: a `.py` file.

    Returns:
        The module.

    Raises:
        LoadError: if the file is missing or raises while it loads (a syntax error, a failed
            import), with the reason in one line.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "two.py").write_text("TWO = 2\\n")
        >>> _ = (folder / "four.py").write_text("from two import TWO\\nFOUR = 2 * TWO\\n")
        >>> load_file(folder / "four.py").FOUR
        4
    """
    file = Path(os.fspath(path))
    if not file.is_file():
        raise LoadError(f"{file}: no such file")
    folder = str(file.resolve().parent)
    siblings = {p.stem for p in file.resolve().parent.glob("*.py")}
    saved = {name: sys.modules.pop(name) for name in siblings if name in sys.modules}
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(f"_practice_{file.stem}", file)
        if spec is None or spec.loader is None:
            raise LoadError(f"{file}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except SyntaxError as error:
            raise LoadError(f"{file}, line {error.lineno}: SyntaxError: {error.msg}") from None
        except Exception as error:  # noqa: BLE001 - report whatever the file raised, in one line
            text = " ".join(str(error).split())
            raise LoadError(f"{file} raised {type(error).__name__} while loading: {text}") from None
        return module
    finally:
        sys.path.remove(folder)
        for name in siblings:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
