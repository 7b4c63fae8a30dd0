"""Numbers of the Contributing page (docs/contributing.md): the fast-path variants that were
never slower than the package, read from the recorded results of benchmarks/fast_paths.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def values() -> dict[str, Any]:
    worst: dict[str, float] = {}  # variant -> its highest ratio to the package, every run
    for run in ("cpu", "cpu_gpu_host", "cuda"):
        res = json.loads(Path(f"benchmarks/results/fast_paths_{run}.json").read_text())
        for row in res["lengths"].values():
            for variant, ratio in row["ratio_to_package"].items():
                worst[variant] = max(worst.get(variant, 0.0), ratio)
    never_slower = sorted(v for v, r in worst.items() if v != "package" and round(r, 2) <= 1)
    assert never_slower, worst
    names = [f"`{v}`" for v in never_slower]
    return {"never_slower": ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1
            else names[0]}
