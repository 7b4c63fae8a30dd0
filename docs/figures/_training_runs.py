"""The copy-task runs of the Training lesson, trained once per build.

Loaded with `runpy` by docs/figures/training_copy_loss.py, docs/figures/training_top_candidate.py
and docs/numbers/training.py. The run of the lesson's code (`CopyTaskConfig(steps=300,
batch_size=32, warmup=50)`, seed 0, one thread) and the same run without label smoothing are
kept in a module-level dictionary registered in `sys.modules`, so the figures and the numbers of
one build train each only once; a run is deterministic (seeded by its config), so reusing it
changes nothing.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import torch

from vanilla_transformer.training import CopyTaskConfig, CopyTaskRun, train_copy_model

CONFIG = CopyTaskConfig(steps=300, batch_size=32, warmup=50)
_STORE = sys.modules.setdefault("_vanilla_transformer_docs_copy_runs",
                                types.ModuleType("_vanilla_transformer_docs_copy_runs"))
if not hasattr(_STORE, "runs"):
    _STORE.runs = {}  # type: ignore[attr-defined]
_RUNS: dict[object, Any] = _STORE.runs


def copy_run(smoothing: float = CONFIG.smoothing) -> CopyTaskRun:
    """The lesson's copy-task run with label smoothing `smoothing` (a `CopyTaskRun`)."""
    if smoothing not in _RUNS:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # a model this small is fastest on one thread
        try:
            _RUNS[smoothing] = train_copy_model(CONFIG.replace(smoothing=smoothing))
        finally:
            torch.set_num_threads(threads)
    return _RUNS[smoothing]


def once(key: str, compute: Callable[[], Any]) -> Any:
    """`compute()`, computed once per build under `key` (for the figures' and numbers' data)."""
    if key not in _RUNS:
        _RUNS[key] = compute()
    return _RUNS[key]
