"""English number words to German with the default `translate train` settings, on several seeds.

Run by hand (never by the test suite), ideally on an otherwise idle machine:

    nice .venv/bin/python benchmarks/translate_numbers.py              # seeds 0..4
    nice .venv/bin/python benchmarks/translate_numbers.py --seeds 0 1  # fewer seeds

For each seed it makes the corpus `translate numbers --seed S` makes (the default sizes: 20000
training numbers, 500 validation, 1000 test, from range(1000000), disjoint), trains with the
default `translate train` settings (preset `paper-small`, `TranslationConfig()` with that seed,
one PyTorch thread),
and records:

- time to solve: the training seconds at the first checkpoint whose greedy exact match on the
  first 200 validation pairs is 100 %, and the total training time;
- BLEU (sacrebleu, character tokenisation: most German numbers are one word, so word 4-grams
  do not exist), chrF and exact match on the 1000 unseen test numbers, greedy and beam 4
  (alpha 0.6, at most input length + 50 tokens), for the average of the last 5 checkpoints
  and for the last checkpoint alone.

Results go to `benchmarks/results/translate_numbers.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from vanilla_transformer.data.numbers import number_corpus
from vanilla_transformer.inference.evaluate import score_translations, translate_sentences
from vanilla_transformer.training.translation import (
    DEFAULT_PRESET,
    TRANSLATION_PRESETS,
    TranslationConfig,
    load_translator,
    train_translation,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "translate_numbers.json"


def run_seed(seed: int, folder: Path) -> dict:
    corpus = number_corpus("de", seed=seed)
    config = TranslationConfig(seed=seed)
    start = time.perf_counter()
    run = train_translation(corpus["train"], corpus["valid"], folder, config=config,
                            progress=False, log=lambda line: print(f"  [seed {seed}] {line}",
                                                                   flush=True))
    wall = time.perf_counter() - start
    solved = next((h for h in run.history if h.get("valid_exact") == 100.0), None)
    sources, refs = [s for s, _ in corpus["test"]], [t for _, t in corpus["test"]]
    scores = {}
    for checkpoint in ("averaged", "last"):
        model, tokenizer = load_translator(folder, checkpoint)
        for name, beam in (("greedy", 1), ("beam4", 4)):
            t0 = time.perf_counter()
            hyps = translate_sentences(model, tokenizer, sources, beam_size=beam)
            s = score_translations(hyps, refs, bleu_tokenize="char")
            scores[f"{checkpoint}/{name}"] = dict(
                bleu_char=round(s.bleu, 2), chrf=round(s.chrf, 2),
                exact_match=round(s.exact_match, 2),
                bleu_13a=round(score_translations(hyps, refs).bleu, 2),
                decode_seconds=round(time.perf_counter() - t0, 1))
            print(f"  [seed {seed}] {checkpoint:8s} {name:6s} {s.lines()}", flush=True)
    return dict(seed=seed, steps=run.step, train_seconds=round(run.seconds, 1),
                wall_seconds=round(wall, 1),
                solved_step=solved["step"] if solved else None,
                solved_seconds=solved["seconds"] if solved else None,
                history=run.history, scores=scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    torch.set_num_threads(1)  # as `translate train` does by default
    load = os.getloadavg()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            print(f"seed {seed}", flush=True)
            runs.append(run_seed(seed, Path(tmp) / f"run-{seed}"))
    summary = {}
    for key in runs[0]["scores"]:
        summary[key] = {m: round(statistics.mean(r["scores"][key][m] for r in runs), 2)
                        for m in ("bleu_char", "chrf", "exact_match", "bleu_13a")}
    solved = [r["solved_seconds"] for r in runs if r["solved_seconds"] is not None]
    result = dict(
        task="English number words -> German (num2words), test numbers unseen in training",
        preset=DEFAULT_PRESET, model=TRANSLATION_PRESETS[DEFAULT_PRESET],
        training=TranslationConfig().to_dict(),
        machine=dict(platform=platform.platform(), cpus=os.cpu_count(),
                     torch_threads=torch.get_num_threads(), torch=torch.__version__,
                     load_average_at_start=[round(x, 2) for x in load]),
        seeds=args.seeds,
        solved_runs=f"{len(solved)}/{len(runs)}",
        solved_seconds_mean=round(statistics.mean(solved), 1) if solved else None,
        train_seconds_mean=round(statistics.mean(r["train_seconds"] for r in runs), 1),
        mean_scores=summary,
        runs=runs,
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("solved_runs", "solved_seconds_mean",
                                             "train_seconds_mean", "mean_scores")}, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
