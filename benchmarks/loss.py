"""The label-smoothed loss: `label_smoothed_kl` against PyTorch's cross-entropy and the class.

One forward and backward pass from logits `(rows, V)` to their gradient, for:

- `cross_entropy`: `F.cross_entropy(logits, target, ignore_index=pad, label_smoothing=0.1,
  reduction="sum")`, PyTorch's fused kernel (its smoothing spreads over all V classes, the label
  and padding included: a slightly different target, the same amount of work);
- `label_smoothed_kl`: `label_smoothed_kl(logits.log_softmax(-1), target, pad, 0.1)`;
- `LabelSmoothing`: the teaching class on the same log-probabilities, which builds the
  `(rows, V)` target.

Time: the variants take turns, one pass each per round, and the result is the ratio of median
times to `cross_entropy`, so drift of the machine hits them all alike. Peak memory: each
variant runs once in a fresh subprocess, which reports its peak resident set size
(`VmHWM`) after the pass minus the one after building the inputs, so the figure is the
memory the pass needs on top of the logits and targets (the logits' gradient included).

    .venv/bin/python benchmarks/loss.py                  # about 5 minutes on 2 cores
    .venv/bin/python benchmarks/loss.py --shapes 1500x8000 --rounds 2   # a smoke test

Results: `benchmarks/results/loss.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from vanilla_transformer.training import LabelSmoothing, label_smoothed_kl

RESULTS = Path(__file__).resolve().parent / "results" / "loss.json"
PAD = 0
SMOOTHING = 0.1
VARIANTS = ("cross_entropy", "label_smoothed_kl", "LabelSmoothing")


def inputs(rows: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(rows, vocab, generator=generator).requires_grad_(True)
    target = torch.randint(1, vocab, (rows,), generator=generator)
    target[torch.rand(rows, generator=generator) < 0.1] = PAD  # about 10 % padding rows
    return logits, target


def loss_of(variant: str, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if variant == "cross_entropy":
        return F.cross_entropy(logits, target, ignore_index=PAD, label_smoothing=SMOOTHING,
                               reduction="sum")
    log_probs = logits.log_softmax(-1)
    if variant == "label_smoothed_kl":
        return label_smoothed_kl(log_probs, target, PAD, SMOOTHING)
    return LabelSmoothing(logits.size(1), PAD, SMOOTHING)(log_probs, target)


def one_pass(variant: str, logits: torch.Tensor, target: torch.Tensor) -> float:
    logits.grad = None
    start = time.perf_counter()
    loss_of(variant, logits, target).backward()
    return time.perf_counter() - start


def maxrss_mb() -> float:
    """Peak resident set size of this process, in MiB.

    `VmHWM` of the process's own memory map, not `ru_maxrss`, which a child started by a large
    parent inherits (Linux folds the parent's size into it at `exec`)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def memory_child(variant: str, rows: int, vocab: int, threads: int) -> None:
    """Run in a fresh process: print the peak memory of one pass, beyond the inputs."""
    torch.set_num_threads(threads)
    logits, target = inputs(rows, vocab)
    before = maxrss_mb()
    one_pass(variant, logits, target)
    print(json.dumps({"before_mb": before, "after_mb": maxrss_mb()}))


def memory(variant: str, rows: int, vocab: int, threads: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", variant, "--shapes", f"{rows}x{vocab}",
         "--threads", str(threads)], check=True, capture_output=True, text=True,
    ).stdout
    res = json.loads(out.strip().splitlines()[-1])
    res["peak_extra_mb"] = res["after_mb"] - res["before_mb"]
    return res


def measure(rows: int, vocab: int, rounds: int, threads: int) -> dict:
    logits, target = inputs(rows, vocab)
    values = {v: float(loss_of(v, logits, target).detach()) for v in VARIANTS}
    grads = {}
    for v in ("label_smoothed_kl", "LabelSmoothing"):
        logits.grad = None
        loss_of(v, logits, target).backward()
        grads[v] = logits.grad.clone()
    max_grad_diff = float((grads["label_smoothed_kl"] - grads["LabelSmoothing"]).abs().max())
    del grads
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for v in VARIANTS:  # warm-up
        one_pass(v, logits, target)
    for _ in range(rounds):
        for v in VARIANTS:
            times[v].append(one_pass(v, logits, target))
    del logits, target
    medians = {v: statistics.median(t) for v, t in times.items()}
    mem = {v: memory(v, rows, vocab, threads) for v in VARIANTS}
    base_t, base_m = medians["cross_entropy"], mem["cross_entropy"]["peak_extra_mb"]
    return {
        "rows": rows, "vocab": vocab,
        "loss": values,
        "relative_difference_vs_LabelSmoothing": abs(values["label_smoothed_kl"]
                                                     - values["LabelSmoothing"])
        / abs(values["LabelSmoothing"]),
        "max_abs_gradient_difference_vs_LabelSmoothing": max_grad_diff,
        "seconds": times,
        "median_s": medians,
        "time_ratio_to_cross_entropy": {v: medians[v] / base_t for v in VARIANTS},
        "memory_mb": mem,
        "memory_ratio_to_cross_entropy": {v: mem[v]["peak_extra_mb"] / base_m for v in VARIANTS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["1500x8000", "4096x37000"],
                        help="ROWSxV shapes to measure")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        rows, vocab = (int(n) for n in args.shapes[0].split("x"))
        memory_child(args.child, rows, vocab, args.threads)
        return
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    results = {}
    for shape in args.shapes:
        rows, vocab = (int(n) for n in shape.split("x"))
        results[shape] = r = measure(rows, vocab, args.rounds, args.threads)
        print(f"{shape}: time / cross_entropy "
              + ", ".join(f"{v} {x:.2f}" for v, x in r["time_ratio_to_cross_entropy"].items())
              + "; peak memory / cross_entropy "
              + ", ".join(f"{v} {x:.2f}" for v, x in r["memory_ratio_to_cross_entropy"].items()))
    report = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(), "torch": torch.__version__,
                    "threads": args.threads, "load_before": load_before,
                    "load_after": os.getloadavg()},
        "rounds": args.rounds, "smoothing": SMOOTHING, "padding_idx": PAD,
        "command": "benchmarks/loss.py " + " ".join(sys.argv[1:]),
        "shapes": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
