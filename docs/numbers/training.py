"""Numbers of the Training lesson (docs/learn/training.md), computed as its code and figures do."""

from __future__ import annotations

import json
import math
import runpy
import statistics
from pathlib import Path
from typing import Any

import torch

from vanilla_transformer import padding_mask, subsequent_mask
from vanilla_transformer.data import number_pairs, split_numbers
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.training import LabelSmoothing, rate
from vanilla_transformer.training.translation import load_translator

FIGURES = Path("docs/figures")


def _figure(name: str) -> dict[str, Any]:
    return runpy.run_path(str(FIGURES / f"{name}.py"))


def _dropout_on_and_off() -> tuple[float, float]:
    """The mean probability of the right next piece on 200 training pairs, as the lesson's
    "dropout on and off, measured" block computes it: in training mode, then in eval mode."""
    model, tok = load_translator("docs/assets/translator")
    pairs = number_pairs(split_numbers(seed=0)["train"][:200])

    def mean_right() -> float:
        probs: list[float] = []
        for en, de in pairs:
            src = torch.tensor([tok.encode(en) + [EOS]])
            ids = [BOS] + tok.encode(de) + [EOS]
            tgt = torch.tensor([ids[:-1]])
            out = model(src, tgt, padding_mask(src, PAD), subsequent_mask(tgt.size(1)))
            p = model.generator(out).exp()[0]
            right = torch.tensor(ids[1:])
            probs += p[torch.arange(len(right)), right].tolist()
        return sum(probs) / len(probs)

    torch.manual_seed(0)
    with torch.no_grad():
        model.train()
        on = mean_right()
        model.eval()
        off = mean_right()
    return on, off


def values() -> dict[str, Any]:
    out: dict[str, Any] = {}
    # the opening figure: the probability of each right piece, untrained and trained
    learning = _figure("training_learning")
    _, probs = learning["right_piece_probs"]()
    out["step_a"], out["step_b"] = (int(learning["MODELS"][k].split("/")[1])
                                    for k in ("step 100", "step 400"))
    out["untrained_max"] = max(probs["untrained"])
    out["uniform"] = 1 / 250
    out["shipped_min"] = min(probs["shipped model"])
    out["shipped_max"] = max(probs["shipped model"])
    out["step100_first"] = probs["step 100"][0]
    out["step_b_min"] = min(probs["step 400"])
    out["step_b_max"] = max(probs["step 400"])
    # the schedule of the base model
    out["peak"] = rate(4000, 512, 1.0, 4000)
    out["rate_end"] = rate(100_000, 512, 1.0, 4000)
    # the smoothed rows: the package's for V = 11, Szegedy et al.'s, and the translator's V
    criterion = LabelSmoothing(size=11, padding_idx=0, smoothing=0.1)
    criterion(torch.log_softmax(torch.zeros(1, 11), dim=-1), torch.tensor([3]))
    assert criterion.true_dist is not None
    out["spread_11"] = criterion.true_dist[0, 1].item()
    out["szegedy_right_11"] = 0.9 + 0.1 / 11
    out["szegedy_other_11"] = 0.1 / 11
    out["V"] = 250
    out["szegedy_right_250"] = 0.9 + 0.1 / 250
    out["spread_250"] = 0.1 / 248
    # the top candidate, in the figure's three sets
    top_figure = _figure("training_top_candidate")
    tops = top_figure["top_probabilities"]()
    out["test_numbers"] = top_figure["NUMBERS"]
    translator = tops["translator"]
    out["translator_steps"] = len(translator)
    out["translator_median"] = statistics.median(translator)
    out["translator_max"] = max(translator)
    out["translator_above_90_pct"] = 100 * sum(p > 0.9 for p in translator) / len(translator)
    out["copy_smoothed_median"] = statistics.median(tops["copy, eps 0.1"])
    out["copy_smoothed_max"] = max(tops["copy, eps 0.1"])
    out["copy_sharp_median"] = statistics.median(tops["copy, eps 0"])
    # the right piece's mean probability on training pairs, dropout on and off
    out["dropout_on"], out["dropout_off"] = _dropout_on_and_off()
    # the copy task of the lesson
    runs = runpy.run_path(str(FIGURES / "_training_runs.py"))
    run = runs["copy_run"]()
    config = runs["CONFIG"]
    out["copy_steps"] = config.steps
    out["copy_batch"] = config.batch_size
    out["copy_first_loss"] = run.losses[0]
    out["copy_last_loss"] = run.losses[-1]
    out["copy_uniform_loss"] = LabelSmoothing(11, padding_idx=0, smoothing=0.1)(
        torch.full((1, 11), -math.log(11)), torch.tensor([3])).item()
    assert out["copy_first_loss"] > out["copy_uniform_loss"]  # what the prose says
    assert out["copy_last_loss"] < out["copy_first_loss"] / 10
    # the recorded benchmark runs of the copy task, one per seed: each copies every sequence
    rows = json.loads(Path("benchmarks/results/copy_task.json").read_text())["rows"]
    assert all(r["exact_match_percent"] == 100 for r in rows), rows
    out["copy_seeds"] = len(rows)
    return out
