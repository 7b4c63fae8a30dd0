"""Numbers of the copy-task guide: the recorded runs of the command line and its defaults."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def values() -> dict[str, Any]:
    from vanilla_transformer.cli.copy_task import _add_arguments
    from vanilla_transformer.training import CopyTaskConfig

    parser = argparse.ArgumentParser()
    _add_arguments(parser)
    eval_size = parser.parse_args([]).eval_size
    rows = json.loads(Path("benchmarks/results/copy_task.json").read_text())["rows"]
    assert all(r["exact_match_percent"] == 100.0 for r in rows)  # "each copied all"
    train = [r["train_s"] for r in rows]
    wall = [r["wall_s"] for r in rows]
    config = CopyTaskConfig()
    return {
        "eval_size": eval_size,
        "runs": len(rows),
        "seed_last": max(r["seed"] for r in rows),
        "train_low": round(min(train)),
        "train_high": round(max(train)),
        "wall_low": round(min(wall)),
        "wall_high": round(max(wall)),
        "steps": config.steps,
        "batch_size": config.batch_size,
        "smoothing": config.smoothing,
    }
