"""Numbers of the Decoding lesson (docs/learn/decoding.md), computed as its code and figures do."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

from vanilla_transformer import PRESETS
from vanilla_transformer.training.translation import load_translator

FIGURES = Path("docs/figures")


def _figure(name: str) -> dict[str, Any]:
    return runpy.run_path(str(FIGURES / f"{name}.py"))


def _runs_table() -> str:
    """The recorded runs' exact match on the test numbers, as a Markdown table indented to sit
    in the page's note; the build stops if beam 4 is not below greedy in every run."""
    runs = json.loads(Path("benchmarks/results/translate_numbers.json").read_text())["runs"]
    keys = ("averaged/greedy", "averaged/beam4", "last/greedy", "last/beam4")
    lines = ["| seed | averaged, greedy | averaged, beam 4 | last, greedy | last, beam 4 |",
             "|---:|---:|---:|---:|---:|"]
    for run in runs:
        scores = [run["scores"][k]["exact_match"] for k in keys]
        assert scores[1] < scores[0] and scores[3] < scores[2], (run["seed"], scores)
        lines.append(f"| {run['seed']} | " + " | ".join(f"{s:.1f} %" for s in scores) + " |")
    return "\n    ".join(lines)


def values() -> dict[str, Any]:
    out: dict[str, Any] = {}
    model, tok = load_translator("docs/assets/translator")
    out["params"] = sum(p.numel() for p in model.parameters())
    out["V"] = tok.vocab_size
    # greedy decoding of the lesson's number: the step where two pieces compete
    greedy = _figure("decoding_greedy")
    out["number"] = greedy["NUMBER"]
    steps = greedy["steps"]()
    out["steps"] = len(steps)
    close = [t for t, (_, best) in enumerate(steps) if best[1][1] > 0.1]
    assert len(close) == 1, close
    t = close[0]
    out["close_step"] = t + 1
    out["close_first"], out["close_second"] = steps[t][1][0][1], steps[t][1][1][1]
    others = [best[0][1] for u, (_, best) in enumerate(steps) if u != t]
    out["others_min"], out["others_max"] = min(others), max(others)
    out["others_low"] = max(p for u, (_, best) in enumerate(steps) if u != t
                            for _, p in best[1:])
    # the beam tree: the four finished hypotheses of the result, best first
    tree = _figure("decoding_beam_tree")
    rows, finished = tree["beam_tree"]()
    best = sorted(finished, key=lambda f: f[0].score, reverse=True)[: tree["BEAM"]]
    out["beam_first"], out["beam_second"] = best[0][0].score, best[1][0].score
    out["beam_last"] = best[-1][0].score
    out["beam_steps"] = len(rows)
    out["tree_steps"] = tree["SHOWN"]
    # greedy against beam 4, five seeds
    wrong = _figure("decoding_beam_vs_greedy")["wrong"]()
    out["greedy_wrong_max"] = max(wrong["greedy"])
    out["beam_wrong_min"], out["beam_wrong_max"] = min(wrong["beam 4"]), max(wrong["beam 4"])
    out["runs_table"] = _runs_table()
    corpus = json.loads(Path("docs/assets/translator/manifest.json").read_text())["corpus"]
    out["test_size"] = corpus["sizes"]["test"]
    out["train_below"] = corpus["always_train_below"]
    # the crossing
    out["crossing"] = _figure("lesson_crossing")["NUMBER"]
    out["crossing_tail"] = out["crossing"] % 1000
    # the size of the cache of the base model, per position and sentence
    base = PRESETS["paper-base"]
    out["cache_numbers"] = 2 * base["N"] * base["d_model"]
    out["cache_kib"] = 4 * out["cache_numbers"] // 1024
    return out
