"""Wall time and exact match of the copy task with the default options.

Run by hand (never by the test suite):

    .venv/bin/python benchmarks/copy_task.py                 # the default seed
    .venv/bin/python benchmarks/copy_task.py --seeds 0 1 2   # several seeds, one after another

Each run is a fresh process, `python -m vanilla_transformer.cli.copy_task --no-progress --seed S`
(the same as `vanilla-transformer copy-task`), so the wall time includes starting Python and
importing PyTorch: it is what a reader waits for. The target is 100% exact match on the 100
held-out sequences in under 60 s on a 2-core CPU. Extra options after `--` are passed on, e.g.
`benchmarks/copy_task.py -- --steps 300`. Results go to `benchmarks/results/copy_task.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "copy_task.json"


def run(seed: int, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "vanilla_transformer.cli.copy_task", "--no-progress",
               "--seed", str(seed), *extra]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    match = re.search(r"^exact match: ([\d.]+)%", done.stdout, re.M)
    loss = re.search(r"^final loss: ([\d.]+).*trained in ([\d.]+) s", done.stdout, re.M)
    return dict(seed=seed, wall_s=wall, exact_match_percent=float(match.group(1)),
                final_loss=float(loss.group(1)), train_s=float(loss.group(2)),
                command=" ".join(command[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    parser.add_argument("extra", nargs="*", help="options for the copy-task command (after --)")
    args = parser.parse_args()

    rows = []
    for seed in args.seeds:
        row = run(seed, args.extra)
        rows.append(row)
        print(f"seed {seed}: exact match {row['exact_match_percent']:.1f}%, final loss "
              f"{row['final_loss']:.6f}, training {row['train_s']:.1f} s, wall time "
              f"{row['wall_s']:.1f} s", flush=True)
    worst = max(r["wall_s"] for r in rows)
    all_exact = all(r["exact_match_percent"] == 100.0 for r in rows)
    print(f"{len(rows)} run(s): slowest {worst:.1f} s wall time; 100% exact match in every run: "
          f"{all_exact}; 1-minute load average at the end: {os.getloadavg()[0]:.1f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(
        benchmark="copy_task", cpus=os.cpu_count(), machine=platform.machine(),
        python=platform.python_version(), time=time.strftime("%Y-%m-%dT%H:%M:%S"),
        load_average=os.getloadavg()[0], rows=rows, slowest_wall_s=worst, all_exact=all_exact,
    ), indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
