"""`--help` and `--version` import no PyTorch, and the option lists written out for them agree
with the classes they mirror."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

HELPS = [
    ["--help"],
    ["--version"],
    ["params", "--help"],
    ["copy-task", "--help"],
    ["translate", "--help"],
    ["translate", "numbers", "--help"],
    ["translate", "train", "--help"],
    ["translate", "eval", "--help"],
    ["translate", "export", "--help"],
    ["translate", "RUN", "--help"],
]


@pytest.mark.parametrize("argv", HELPS, ids=" ".join)
def test_help_does_not_import_torch(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from vanilla_transformer.cli import main\n"
        f"status = main({argv!r})\n"
        "assert status == 0, status\n"
        "print('torch' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()  # the help (or the version) was printed
    assert done.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("module", ["vanilla_transformer.cli", "vanilla_transformer",
                                    "vanilla_transformer.cli.distributed"])
def test_importtime_shows_no_torch(module: str) -> None:
    argv = ["translate", "train", "--help"] if module != "vanilla_transformer.cli.distributed" \
        else ["--help"]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", module, *argv], check=False,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--max-steps" in done.stdout or "--steps" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "vanilla_transformer.cli.options" in imported  # importtime did report
    assert "torch" not in imported and "numpy" not in imported


def test_model_fields_agree_with_model_config() -> None:
    from vanilla_transformer.cli.options import LAYER_NORMS, MODEL_FIELDS, PRESET_NAMES
    from vanilla_transformer.model import layers
    from vanilla_transformer.model.config import PRESETS, ModelConfig

    fields = dataclasses.fields(ModelConfig)
    assert [f.name for f in MODEL_FIELDS] == [f.name for f in fields]
    assert [(f.name, f.type, f.default, f.help) for f in MODEL_FIELDS] == [
        (f.name, f.type, f.default, f.metadata["help"]) for f in fields]
    assert LAYER_NORMS == layers.LAYER_NORMS
    assert tuple(sorted(PRESETS)) == PRESET_NAMES


def test_copy_task_fields_agree():
    from vanilla_transformer.cli.copy_task import (
        MODEL_DEFAULTS,
        TASK_DEFAULTS,
        TASK_FIELDS,
    )
    from vanilla_transformer.training.copy_task import COPY_MODEL, CopyTaskConfig

    expected = CopyTaskConfig().to_dict()
    assert expected.pop("model") == MODEL_DEFAULTS == COPY_MODEL.to_dict()
    assert expected == TASK_DEFAULTS
    fields = {f.name: f for f in dataclasses.fields(CopyTaskConfig) if f.name != "model"}
    assert {f.name: (f.type, f.default, f.help) for f in TASK_FIELDS} == {
        name: (f.type, f.default, f.metadata["help"]) for name, f in fields.items()}


def test_translate_training_help_is_the_fields_metadata():
    from vanilla_transformer.cli.translate import TRAINING_HELP
    from vanilla_transformer.training.translation import TranslationConfig

    for f in dataclasses.fields(TranslationConfig):
        assert TRAINING_HELP[f.name] == f.metadata["help"], f.name


def test_distributed_timeout_agrees() -> None:
    from vanilla_transformer.cli import distributed as cli_distributed
    from vanilla_transformer.training import ranks

    assert cli_distributed.DEFAULT_TIMEOUT == ranks.DEFAULT_TIMEOUT


def test_the_config_imports_without_torch() -> None:
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # importing torch now fails\n"
        "from vanilla_transformer.config import COPY_MODEL, CopyTaskConfig, TranslationConfig\n"
        "from vanilla_transformer.config import ModelConfig, RunOptions\n"
        "assert CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, h=2)).d_model == 16\n"
        "assert TranslationConfig(max_steps=3).max_steps == 3 and RunOptions().log_every > 0\n"
        "try:\n"
        "    ModelConfig(5, 5, d_model=10, h=3)\n"
        "except ValueError as error:\n"
        "    print(error)\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "d_model must be divisible by h" in done.stdout
