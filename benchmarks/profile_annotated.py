"""Where does a training step of the Annotated recipe spend its time, next to `nn.Transformer`?

Profiles one training step (forward, backward, Adam) of `annotated` (`make_model(V, V)`:
pre-norm, dropout on the attention weights and in the feed-forward network, the Annotated
LayerNorm) and of `torch-pre` (`nn.Transformer(norm_first=True)`, dropout 0.1, between the same
embeddings and generator), both from `benchmarks/performance.py`, with `torch.profiler` on the
CPU, and prints each operator's self time for both side by side.

    .venv/bin/python benchmarks/profile_annotated.py --threads 1 --lengths 64 256 1024
    .venv/bin/python benchmarks/profile_annotated.py --threads 1 --time --rounds 3
    .venv/bin/python benchmarks/profile_annotated.py --threads 1 --time --rounds 7 \
        --tokens 2048 --out benchmarks/results/annotated_recipe.json

`--time` skips the profiler and times whole training steps of `annotated`, `torch-pre`, `paper`
and `torch-post` in interleaved rounds, printing the medians' ratios and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from vanilla_transformer._io import atomic_write

sys.path.insert(0, str(Path(__file__).resolve().parent))
from performance import adam, build, make_batch, train_step

IMPLS = ("annotated", "torch-pre")


def self_times(impl: str, length: int, tokens: int) -> dict[str, tuple[float, int]]:
    """Self CPU seconds and call count of each operator in one training step."""
    batch = make_batch(length, tokens)
    model = build(impl).train()
    opt = adam(model)
    train_step(model, batch, opt)  # warm-up, and Adam's state
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_step(model, batch, opt)
    return {e.key: (e.self_cpu_time_total / 1e6, e.count) for e in prof.key_averages()}


PAIRS = {"annotated / torch-pre": ("annotated", "torch-pre"),
         "paper / torch-post": ("paper", "torch-post")}


def step_ratios(lengths, tokens: int, rounds: int) -> dict:
    """Median step times of the two recipes and their `nn.Transformer` matches, in one run.

    Besides the ratio of medians, each pair's ratio is also taken round by round (the two
    steps of a round ran back to back) and the median of those is reported: a slow spell of
    the machine then touches both sides of a ratio.
    """
    impls = ("annotated", "torch-pre", "paper", "torch-post")
    results = {}
    for length in lengths:
        batch = make_batch(length, tokens)
        models = {i: build(i).train() for i in impls}
        opts = {i: adam(m) for i, m in models.items()}
        for i in impls:
            train_step(models[i], batch, opts[i])  # warm-up
        load = os.getloadavg()
        times = {i: [] for i in impls}
        for r in range(rounds):
            for i in impls if r % 2 == 0 else impls[::-1]:
                t0 = time.perf_counter()
                train_step(models[i], batch, opts[i])
                times[i].append(time.perf_counter() - t0)
        med = {i: statistics.median(t) for i, t in times.items()}
        paired = {name: statistics.median(x / y for x, y in zip(times[a], times[b]))
                  for name, (a, b) in PAIRS.items()}
        results[str(length)] = {
            "batch": max(1, tokens // length), "times_s": times, "median_s": med,
            "ratio_of_medians": {name: med[a] / med[b] for name, (a, b) in PAIRS.items()},
            "median_paired_ratio": paired,
            "loadavg_before_after": [load[0], os.getloadavg()[0]],
        }
        print(f"length {length}, batch {max(1, tokens // length)}, load {load[0]:.2f} -> "
              f"{os.getloadavg()[0]:.2f}  "
              + "  ".join(f"{i} {med[i]:.3f}s" for i in impls)
              + "".join(f"  {name} {med[a] / med[b]:.3f} (paired {paired[name]:.3f})"
                        for name, (a, b) in PAIRS.items()), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--top", type=int, default=14)
    parser.add_argument("--time", action="store_true", help="time steps instead of profiling")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None,
                        help="with --time, also write the results as JSON (e.g. "
                             "benchmarks/results/annotated_recipe.json)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.time:
        results = step_ratios(args.lengths, args.tokens, args.rounds)
        if args.out:
            record = {"date": time.strftime("%Y-%m-%d"),
                      "machine": {"platform": platform.platform(),
                                  "threads": torch.get_num_threads(),
                                  "torch": torch.__version__},
                      "config": {"tokens_per_batch": args.tokens, "rounds": args.rounds},
                      "lengths": results}
            text = (json.dumps(record, indent=2) + "\n").encode()
            atomic_write(args.out, lambda f: f.write(text))
            print(f"wrote {args.out}")
        return
    for length in args.lengths:
        load = os.getloadavg()
        times = {impl: self_times(impl, length, args.tokens) for impl in IMPLS}
        totals = {impl: sum(s for s, _ in t.values()) for impl, t in times.items()}
        print(f"\nlength {length}, batch {max(1, args.tokens // length)}, threads "
              f"{args.threads}, load {load[0]:.2f}  total self s: "
              + "  ".join(f"{i} {totals[i]:.3f}" for i in IMPLS)
              + f"  ratio {totals['annotated'] / totals['torch-pre']:.3f}")
        ops = sorted(set().union(*times.values()),
                     key=lambda op: -max(t.get(op, (0, 0))[0] for t in times.values()))
        print(f"{'op':40s} {'annotated s (calls)':>22s} {'torch-pre s (calls)':>22s} {'diff s':>8s}")
        for op in ops[: args.top]:
            a, t = (times[i].get(op, (0.0, 0)) for i in IMPLS)
            print(f"{op:40s} {a[0]:12.3f} ({a[1]:5d}) {t[0]:12.3f} ({t[1]:5d}) {a[0] - t[0]:8.3f}")


if __name__ == "__main__":
    main()
