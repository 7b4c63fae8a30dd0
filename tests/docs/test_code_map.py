"""The Code map page's hook (docs/hooks/code_map.py): its module walk and its tables.

The page's own python block checks the layering of the real package; these tests check that the
hook reads imports right on a small package written for the test, and that its tables cover every
module of the real one.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "vanilla_transformer"


@pytest.fixture(scope="module")
def code_map():
    spec = importlib.util.spec_from_file_location("code_map_hook", ROOT / "docs" / "hooks" / "code_map.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_relative_and_absolute_imports_are_resolved(code_map, tmp_path):
    root = _write(
        tmp_path / "vanilla_transformer",
        {
            "__init__.py": '"""Top."""\nfrom .model.attention import attention\n',
            "_checks.py": '"""Checks."""\n',
            "model/__init__.py": '"""Model."""\nfrom .masks import m\nfrom .attention import attention\n',
            "model/masks.py": '"""Masks.\n\nMore."""\nfrom .._checks import check\n',
            "model/attention.py": '"""Attention."""\nfrom .masks import m\nfrom ..data import batching\n',
            "data/__init__.py": '"""Data."""\n',
            "data/batching.py": '"""Batches."""\nimport vanilla_transformer.model.masks\n',
            "cli/__init__.py": '"""CLI."""\nfrom . import extra\n',
            "cli/extra.py": '"""Extra."""\n',
        },
    )
    modules = {m.name: m for m in code_map.walk(root)}
    prefix = "vanilla_transformer."
    assert modules[prefix + "model.masks"].imports == {prefix + "_checks"}
    assert modules[prefix + "model.masks"].summary == "Masks."
    assert modules[prefix + "model.attention"].imports == {
        prefix + "model.masks", prefix + "data", prefix + "data.batching"
    }
    assert modules[prefix + "data.batching"].imports == {prefix + "model.masks"}
    assert modules[prefix + "cli"].imports == {prefix + "cli.extra"}
    assert modules["vanilla_transformer"].layer is None
    table = code_map.imports_table(list(modules.values()))
    # the upward import of model/attention.py shows in the table
    assert "| `model/` | 3 |" in table and "`_checks`, `data`" in table
    tables = code_map.modules_tables(root, list(modules.values()), tmp_path / "docs")
    # the order of model/__init__.py's imports: masks before attention
    assert tables.index("model.masks") < tables.index("model.attention")


def test_every_module_of_the_package_is_in_the_tables(code_map):
    modules = code_map.walk(SRC)
    tables = code_map.modules_tables(SRC, modules, ROOT / "docs")
    layered = [m for m in modules if m.layer is not None]
    assert len(layered) == len(modules) - 2  # all but __init__.py and __main__.py
    for m in layered:
        assert f"`{m.name.removeprefix('vanilla_transformer.')}`" in tables, m.name
    assert f"| {len(code_map.LAYERS) - 1} | `cli/` |" in code_map.imports_table(modules)
