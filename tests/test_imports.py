"""The package's modules import one another without a cycle (`TYPE_CHECKING` imports
included), and the layering of the package docstring holds for the analysis modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vanilla_transformer"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The package's modules that `path` imports, at any depth of its code."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                target = node.module or ""
            if not target.startswith("vanilla_transformer"):
                continue
            for alias in node.names:  # `from . import x` imports the module x
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in MODULES else target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("vanilla_transformer")}
    return found & set(MODULES) - {name}


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("subpackage", ["analysis"])
def test_no_import_cycle(subpackage):
    """Package `__init__` files re-export, so they are left out; every module is checked."""
    graph = {name: _imports(path) - {n for n, p in MODULES.items() if p.name == "__init__.py"}
             for name, path in MODULES.items() if path.name != "__init__.py"}
    assert _cycle(graph) is None
    table = _imports(MODULES["vanilla_transformer.analysis._table"])
    assert not {m for m in table if m.startswith(f"vanilla_transformer.{subpackage}.")}


def test_component_is_one_class_importable_from_parameters():
    from vanilla_transformer import Component as top
    from vanilla_transformer.analysis import Component as package
    from vanilla_transformer.analysis._table import Component
    from vanilla_transformer.analysis.parameters import Component as parameters

    assert top is package is parameters is Component
    assert Component("attention", per_block=10, blocks=3).to_dict() == dict(
        per_block=10, blocks=3, subtotal=30, note="")
