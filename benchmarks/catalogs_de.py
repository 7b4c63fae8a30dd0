"""A translator trained for a fixed time on real text: this machine's German gettext catalogs.

    .venv/bin/python benchmarks/catalogs_de.py [--minutes 12] [--work /tmp/catalogs_de]

The package is imported from this checkout's `src/` (so a copy made with `git archive` measures
its own commit; give `--commit` to record which).

Builds the corpus with `translate catalogs --lang de`, trains with the settings `translate
train` sizes from the data (only `--max-minutes` given, and `--max-steps` high enough that the
clock stops the run), then scores the test set with `translate eval` (beam 4) twice: the
averaged `model.pt` and the last checkpoint. Every command goes through the command line, as a
user would type it. Writes `benchmarks/results/catalogs_de.json`: the commands, the corpus's
sizes, the sizing line, the training's steps and seconds, both scores, and ten test sentences
(drawn with a fixed seed) with both outputs. `judged` (a person's verdict on each of the ten,
added by hand) is kept from the previous results file when its sentences are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "catalogs_de.json"
CLI = [sys.executable, "-m", "vanilla_transformer"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _run(argv: list[str], log: Path) -> list[str]:
    """Run one command, echo it, keep its stdout (one string a line) and its log."""
    print("$", shlex.join(["vanilla-transformer", *argv]), flush=True)
    done = subprocess.run([*CLI, *argv], capture_output=True, text=True, check=False, env=ENV)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        sys.exit(f"exit status {done.returncode}:\n{done.stderr}")
    print(done.stdout, end="", flush=True)
    return done.stdout.splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=12.0)
    parser.add_argument("--work", default="/tmp/catalogs_de")
    parser.add_argument("--commit", default=None, help="the commit measured, to record")
    parser.add_argument("--collect", action="store_true",
                        help="run nothing: write the results of the run in --work again")
    args = parser.parse_args()
    work = Path(args.work)
    if work.exists() and not args.collect:
        sys.exit(f"{work} exists; remove it or give another --work")
    work.mkdir(parents=True, exist_ok=True)
    data, run = work / "data", work / "run"
    commands = {
        "corpus": ["translate", "catalogs", "--lang", "de", "--out", str(data)],
        "train": ["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                  str(data / "valid.tsv"), "--out", str(run), "--max-minutes",
                  f"{args.minutes:g}", "--max-steps", "1000000", "--no-progress"],
    }
    for checkpoint in ("averaged", "last"):
        commands[f"eval_{checkpoint}"] = [
            "translate", "eval", str(run), "--data", str(data / "test.tsv"), "--checkpoint",
            checkpoint, "--json", str(work / f"eval-{checkpoint}.json"), "--output",
            str(work / f"hyp-{checkpoint}.txt"), "--no-progress"]
    out: dict[str, list[str]] = {}
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    seconds: dict[str, float] = previous.get("seconds", {}) if args.collect else {}
    for name, argv in commands.items():
        if args.collect:
            out[name] = (work / f"{name}.log").read_text().splitlines()
            continue
        start = time.perf_counter()
        out[name] = _run(argv, work / f"{name}.log")
        seconds[name] = round(time.perf_counter() - start, 1)
    sizes = {name: sum(1 for line in (data / f"{name}.tsv").open(encoding="utf-8") if line.strip())
             for name in ("train", "valid", "test")}
    test = [line.rstrip("\n").split("\t") for line in (data / "test.tsv").open(encoding="utf-8")]
    hyps = {c: (work / f"hyp-{c}.txt").read_text(encoding="utf-8").splitlines()
            for c in ("averaged", "last")}
    picked = sorted(random.Random(0).sample(range(len(test)), 10))
    samples = [{"source": test[i][0], "reference": test[i][1], "averaged": hyps["averaged"][i],
                "last": hyps["last"][i]} for i in picked]
    scores = {c: json.loads((work / f"eval-{c}.json").read_text()) for c in ("averaged", "last")}
    config = json.loads((run / "config.json").read_text())
    train_lines = out["train"]
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
               if line.strip()]
    validations = [{k: m[k] for k in ("step", "valid_loss", "valid_ppl", "valid_bleu",
                                      "valid_chrf")} for m in metrics if "valid_loss" in m]
    speeds = [m["tokens_per_s"] for m in metrics if "tokens_per_s" in m]
    result = {
        "commands": {name: shlex.join(["vanilla-transformer", *argv])
                     for name, argv in commands.items()},
        "script": "benchmarks/catalogs_de.py --minutes " + f"{args.minutes:g}",
        "commit": args.commit,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "note": "2 CPU cores shared with other work while it ran; 1 PyTorch thread "
                            "(translate train's default)"},
        "corpus": {"summary": out["corpus"], "sizes": sizes},
        "sizing": train_lines[0],
        "training": {"minutes": args.minutes, "log": train_lines,
                     "steps": max(m["step"] for m in metrics),
                     "seconds": float(next(re.finditer(r"trained \d+ steps in ([\d.]+) s",
                                                       "\n".join(train_lines))).group(1)),
                     # each rate covers log_every steps of about the same tokens: the run's
                     # rate is their harmonic mean
                     "tokens_per_s": round(len(speeds) / sum(1 / v for v in speeds), 1),
                     "validations": validations,
                     "preset": config.get("preset"), "settings": config.get("training"),
                     "model": config.get("model")},
        "scores": {c: {k: scores[c][k] for k in ("bleu", "chrf", "exact_match", "signatures",
                                                 "decoding")} for c in scores},
        "seconds": seconds,
        "samples": samples,
    }
    old = previous.get("samples", [])
    if [s["source"] for s in old] == [s["source"] for s in samples] and "judged" in previous:
        result["judged"] = previous["judged"]
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
