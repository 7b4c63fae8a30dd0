"""Who raised an error: the learner's function (found on the traceback by the folder of the
learner's files), the way the learner's module is built, or the check itself."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

__all__ = ["raised_where", "error_sentence"]

_PACKAGE = Path(__file__).resolve().parents[1]
_TORCH = Path(torch.__file__).resolve().parent


def _error_text(error: BaseException, limit: int = 300) -> str:
    """The error in one line, cut at a word boundary after about `limit` characters."""
    text = " ".join(str(error).split())
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0] + " ..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


_PACKAGE = Path(__file__).resolve().parents[1]
_TORCH = Path(torch.__file__).resolve().parent


def _folder(implementation: Any) -> Path | None:
    """The folder of the file that defines `implementation` (a function, class, module or
    instance), or `None` if it is the package's own."""
    if isinstance(implementation, ModuleType):
        file = getattr(implementation, "__file__", None)
    else:
        module = sys.modules.get(getattr(implementation, "__module__", "") or "")
        file = getattr(module, "__file__", None) if module is not None else None
        code = getattr(implementation, "__code__", None)
        file = getattr(code, "co_filename", file)
    if not isinstance(file, str):
        return None
    folder = Path(file).resolve().parent
    return None if folder.is_relative_to(_PACKAGE) or folder.is_relative_to(_TORCH) else folder


def raised_where(error: BaseException, *implementations: Any) -> str | None:
    """`"MultiHeadedAttention.forward (multi_head_attention.py, line 30)"`: the learner's
    innermost function on the error's traceback (the learner's code being the files beside
    `implementations`), or `None` if none of it is on the traceback."""
    folders = {f for f in map(_folder, implementations) if f is not None}
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if Path(code.co_filename).resolve().parent in folders:
            found = (getattr(code, "co_qualname", code.co_name), Path(code.co_filename).name,
                     tb.tb_lineno)
        tb = tb.tb_next
    if found is None:
        return None
    name, file, line = found
    name = name.rsplit("<locals>.", 1)[-1]
    return f"{name} ({file}, line {line})" if name != "<module>" else f"{file}, line {line}"


def error_sentence(error: BaseException, implementation: Any, what: str,
                   *more: Any) -> tuple[str, str]:
    """`(label, text)` saying who raised `error`: the learner's function, the way the
    learner's module is built, or the check on what the learner's code returned."""
    from ._inputs import StructureError

    if isinstance(error, StructureError):
        return "Your code is not built as the reference: ", " ".join(str(error).split()) + "."
    where = raised_where(error, implementation, *more)
    if where is not None:
        return f"Your {where} raised ", _error_text(error).rstrip(".") + "."
    return (f"What your {what} gave could not be checked: ",
            _error_text(error, 1000).rstrip(".") + ".")
