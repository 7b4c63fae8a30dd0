"""Numbers of the Try it page, from the shipped translator's manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def values() -> dict[str, Any]:
    manifest = json.loads(Path("docs/assets/translator/manifest.json").read_text())
    steps = [entry["step"] for entry in manifest["training_steps"]]
    # the untrained model, four steps on the way, and the final average
    assert steps[0] == 0 and len(steps) == 6 and steps[-1] == manifest["steps"]
    files = manifest["files"]
    return {
        "step_1": steps[1],
        "step_2": steps[2],
        "step_3": steps[3],
        "step_4": steps[4],
        "parameters": manifest["parameters"],
        "vocab": manifest["vocab_size"],
        "train": manifest["corpus"]["sizes"]["train"],
        "steps": manifest["steps"],
        "averaged": len(manifest["averaged"]),
        "test_exact": manifest["test_exact_match"],
        "test_size": manifest["test_size"],
        "encoder_kb": round(files["encoder.onnx"]["bytes"] / 1000),
        "decoder_kb": round(files["decoder.onnx"]["bytes"] / 1000),
    }
