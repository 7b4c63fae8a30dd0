"""The house limits of `training/`: no module over 400 lines, no function body over 60 lines,
no function over 8 parameters; and one place that reads torchrun's `RANK`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vanilla_transformer

PACKAGE = Path(vanilla_transformer.__file__).parent
MODULES = sorted((PACKAGE / "training").glob("*.py"))


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = function.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return [name for name in names if name not in ("self", "cls")]


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = function.body
    first = body[0]
    if len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        first = body[1]  # the docstring is not body
    return (function.end_lineno or first.lineno) - first.lineno + 1


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_house_limits_hold(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 400
    for function in _functions(path):
        assert len(_parameters(function)) <= 8, (function.name, _parameters(function))
        assert _body_lines(function) <= 60, function.name


def test_the_limits_count_what_they_say():
    source = "def f(self, a, b, /, c, *d, e, **f):\n    '''doc'''\n    x = 1\n    return x\n"
    function = ast.parse(source).body[0]
    assert sorted(_parameters(function)) == ["a", "b", "c", "d", "e", "f"]
    assert _body_lines(function) == 2


def test_only_the_ranks_module_reads_torchruns_rank():
    readers = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
               if '"RANK"' in p.read_text(encoding="utf-8")]
    assert readers == ["training/ranks.py"], readers
