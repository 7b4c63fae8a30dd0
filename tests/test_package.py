"""The top-level package: every public name importable from it, nothing imported until used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_builds_and_imports_nothing() -> None:
    out = _python("import sys, vanilla_transformer as vt\n"
                  "print('torch' in sys.modules, vt.__version__, len(vt.__all__))")
    assert out == "False 0.1.0 69"


def test_one_name_imports_only_what_it_needs() -> None:
    out = _python("import sys\nfrom vanilla_transformer import make_model\n"
                  "print(make_model.__module__, 'vanilla_transformer.training.loop' in "
                  "sys.modules, 'vanilla_transformer.interop.onnx' in sys.modules)")
    assert out == "vanilla_transformer.model.encoder_decoder False False"


def test_star_import_gives_all_and_only_all() -> None:
    import vanilla_transformer

    namespace: dict[str, object] = {}
    exec("from vanilla_transformer import *", namespace)
    names = set(namespace) - {"__builtins__"}
    assert names == set(vanilla_transformer.__all__)
    assert "torch" not in names and "nn" not in names


@pytest.mark.parametrize("name", ["make_model", "ModelConfig", "greedy_decode", "KVCache",
                                  "parameter_count_for", "to_torch", "rate"])
def test_lazy_name_is_the_defining_modules_object(name: str) -> None:
    import importlib

    import vanilla_transformer

    value = getattr(vanilla_transformer, name)
    module = importlib.import_module(value.__module__)
    assert getattr(module, name) is value
    assert name in dir(vanilla_transformer)


def test_annotated_transformer_names_and_unknown_names() -> None:
    import copy
    import math

    import torch

    import vanilla_transformer

    assert vanilla_transformer.torch is torch and vanilla_transformer.nn is torch.nn
    assert vanilla_transformer.math is math and vanilla_transformer.copy is copy
    with pytest.raises(AttributeError, match="no attribute 'make_modle'"):
        vanilla_transformer.make_modle  # noqa: B018
