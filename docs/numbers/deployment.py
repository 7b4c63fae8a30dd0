"""Numbers of the Deployment guide: the shipped translator in CTranslate2, float32 against int8,
and its parity with the package, as `benchmarks/deploy_ct2.py` recorded them."""

import json
from pathlib import Path
from typing import Any


def values() -> dict[str, Any]:
    data = json.loads(Path("benchmarks/results/deploy_ct2.json").read_text())
    out: dict[str, Any] = {"version": data["ctranslate2"], "repeats": data["repeats"],
                           "load": data["load_average_at_start"], "machine": data["machine"],
                           **data["parity"]}
    for run in data["runs"]:
        key = f"{run['compute_type']}_{'greedy' if run['beam'] == 1 else 'beam'}"
        out[f"{key}_ms"] = 1000 * run["seconds"]
        out[f"{key}_bleu"] = run["bleu"]
        out[f"{key}_chrf"] = run["chrf"]
        out[f"{key}_exact"] = run["exact_match"]
    for search in ("greedy", "beam"):  # outputs int8 changed
        out[f"int8_{search}_changed"] = out["total"] - out[f"int8_{search}_same_as_float32"]
    for name, size in data["model_bin_bytes"].items():
        out[f"{name}_kb"] = size / 1000
    out["size_ratio"] = data["model_bin_bytes"]["float32"] / data["model_bin_bytes"]["int8"]
    # the two length penalties of a nine-token hypothesis at the paper's alpha
    out["gnmt_nine"] = ((5 + 9) / 6) ** 0.6
    out["power_nine"] = 9**0.6
    for search in ("greedy", "beam"):
        out[f"{search}_speedup"] = out[f"float32_{search}_ms"] / out[f"int8_{search}_ms"]
    return out
