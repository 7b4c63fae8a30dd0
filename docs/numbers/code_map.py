"""Numbers of the Code map (docs/code-map.md): its tables, made by the build's own hook, hold
every public module, and the top level re-exports what the page says."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any


def values() -> dict[str, Any]:
    import vanilla_transformer

    spec = importlib.util.spec_from_file_location("code_map", "docs/hooks/code_map.py")
    assert spec is not None and spec.loader is not None
    code_map = importlib.util.module_from_spec(spec)
    sys.modules["code_map"] = code_map  # its dataclass looks itself up there
    spec.loader.exec_module(code_map)
    root = Path(vanilla_transformer.__file__).parent
    modules = code_map.walk(root)
    layers = code_map.layers_table(root, modules, Path("docs"))
    tables = code_map.modules_tables(root, modules, Path("docs"))
    public = [m.name for m in modules
              if m.layer and not m.layer.startswith("_") and m.name.count(".") == 2
              and not m.name.rpartition(".")[2].startswith("_")]
    for name in public:
        assert f"[{name}]" in layers and f"[{name}]" in tables, name
    for name in ("training.translation", "data.tokenizer", "interop.onnx", "cli.translate"):
        assert f"vanilla_transformer.{name}" in public
    assert "make_model" in vanilla_transformer.__all__
    assert "load_translator" not in vanilla_transformer.__all__
    return {"public": len(public)}
