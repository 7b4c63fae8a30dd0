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
