"""The package's two recipes against `torch.nn.Transformer`, and how close they come to the machine.

One run measures, on the same inputs and with every model built from the same seed:

- a training step (forward, backward, Adam) at the base size with about 2048 source and 2048
  target tokens per batch, at lengths 64, 256 and 1024, for
  - `paper`: `make_model(V, V, **PRESETS["paper-base"])`: post-norm, tied weights, dropout 0.1
    on sublayer outputs and embedding sums only (section 5.4), so attention runs in PyTorch's
    fused kernel in training too;
  - `paper-ff-dropout`: the same with dropout 0.1 inside the feed-forward network as well, as
    the Annotated Transformer has it, to show what that dropout costs;
  - `annotated`: `make_model(V, V)`, the Annotated Transformer's arrangement, with dropout on
    the attention weights and inside the feed-forward network;
  - `torch-post`, `torch-post-nodrop`: `nn.Transformer(norm_first=False)` of the same size with
    dropout 0.1 and with none (to show how much of the difference dropout makes), and `torch-pre`:
    `nn.Transformer(norm_first=True)` with dropout 0.1, the match for `annotated`; each between
    the embeddings and generator of the package model it is compared with;
- the matrix-multiply peak of the machine (a 2048 x 2048 x 2048 product), and each training
  step's FLOPs (from the calculator) per second as a fraction of it;
- greedy decoding with and without the key/value cache, and beam search (beam 4) with the cache,
  of the `paper` model, batch 1;
- the peak resident memory of a training step at length 1024, each model in a fresh process;
- an operator profile of one training step of `paper-ff-dropout` and `paper` at lengths 64 and
  1024.

Implementations take turns, one step each per round, alternating the order, so that a slow
spell of the machine hits all of them alike; the results compare medians within this one run.

    .venv/bin/python benchmarks/performance.py --threads 1      # about 30 minutes on 1 core
    .venv/bin/python benchmarks/performance.py --quick          # small sizes: check it runs
    .venv/bin/python benchmarks/performance.py --threads 1 --again 256 1024   # remeasure those
    .venv/bin/python benchmarks/performance.py --threads 1 --again-memory     # and the memory

Results: `benchmarks/results/performance.json`, read by the Performance page (never rerun by
the build).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

from vanilla_transformer import (
    PRESETS,
    Batch,
    ModelConfig,
    beam_search,
    greedy_decode,
    make_model_from_config,
)
from vanilla_transformer._io import atomic_write
from vanilla_transformer.analysis import forward_flops_for

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "performance.json"
VOCAB = 1000
IMPLEMENTATIONS = ("paper", "paper-ff-dropout", "annotated", "torch-post", "torch-post-nodrop",
                   "torch-pre")
PAIRS = {
    "paper / torch-post": ("paper", "torch-post"),
    "paper / torch-post-nodrop": ("paper", "torch-post-nodrop"),
    "paper-ff-dropout / paper": ("paper-ff-dropout", "paper"),
    "annotated / torch-pre": ("annotated", "torch-pre"),
}
MEMORY_IMPLEMENTATIONS = ("paper", "annotated", "torch-post", "torch-pre")
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


class TorchCore(nn.Module):
    """`nn.Transformer` between a package model's embeddings and generator."""

    def __init__(self, model: nn.Module, dropout: float, norm_first: bool) -> None:
        super().__init__()
        c = model.config
        self.config = c
        self.src_embed, self.tgt_embed, self.generator = (model.src_embed, model.tgt_embed,
                                                          model.generator)
        self.core = nn.Transformer(c.d_model, c.h, c.N, c.N, c.d_ff, dropout,
                                   batch_first=True, norm_first=norm_first)

    def forward(self, src, tgt, src_mask, tgt_mask):  # the package's keep-masks, inverted
        pad = ~src_mask[:, 0]
        return self.core(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=~tgt_mask[0],
                         src_key_padding_mask=pad, memory_key_padding_mask=pad)


def config_of(impl: str) -> ModelConfig:
    """The package configuration an implementation is built from (or wraps)."""
    if impl in ("annotated", "torch-pre"):
        return ModelConfig(VOCAB, VOCAB, **PRESETS["base"])
    config = ModelConfig(VOCAB, VOCAB, **PRESETS["paper-base"])
    return config.replace(ff_dropout=None) if impl == "paper-ff-dropout" else config


def build(impl: str) -> nn.Module:
    torch.manual_seed(0)
    model = make_model_from_config(config_of(impl))
    if impl.startswith("torch"):
        return TorchCore(model, 0.0 if impl.endswith("nodrop") else 0.1, impl == "torch-pre")
    return model


def make_batch(length: int, tokens: int) -> Batch:
    g = torch.Generator().manual_seed(length)
    data = torch.randint(1, VOCAB, (max(1, tokens // length), length + 1), generator=g)
    return Batch(data[:, :length], data, pad=0)


def train_step(model: nn.Module, batch: Batch, opt: torch.optim.Optimizer) -> None:
    logp = model.generator(model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask))
    nn.functional.nll_loss(logp.reshape(-1, VOCAB), batch.tgt_y.reshape(-1)).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def adam(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ------------------------------------------------------------------------------- measurements


def matmul_peak(n: int, repeats: int = 10, dtype: torch.dtype = torch.float32) -> dict:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    for _ in range(3):
        torch.mm(a, b)
    best = min(timed(lambda: torch.mm(a, b)) for _ in range(repeats))
    return {"n": n, "best_s": best, "peak_flop_s": 2 * n**3 / best}


def training_steps(lengths, tokens: int, rounds: int, peak: dict) -> dict:
    """Median step times; every round also samples the matmul peak again (`peak` keeps the best),
    so that the peak and the steps are measured under the same conditions."""
    rows = {}
    for length in lengths:
        batch = make_batch(length, tokens)
        runs = {}
        for impl in IMPLEMENTATIONS:
            model = build(impl).train()
            opt = adam(model)
            train_step(model, batch, opt)  # warm-up: gradients and Adam state come to exist
            runs[impl] = (model, opt)
        times = {impl: [] for impl in IMPLEMENTATIONS}
        for r in range(rounds):
            for impl in IMPLEMENTATIONS if r % 2 == 0 else IMPLEMENTATIONS[::-1]:
                model, opt = runs[impl]
                times[impl].append(timed(lambda: train_step(model, batch, opt)))  # noqa: B023
            sample = matmul_peak(peak["n"], repeats=3)
            if sample["peak_flop_s"] > peak["peak_flop_s"]:
                peak.update(sample)
        med = {impl: statistics.median(t) for impl, t in times.items()}
        rows[str(length)] = {
            "batch": batch.src.size(0),
            "median_s": med,
            "times_s": times,
            "ratios": {k: med[a] / med[b] for k, (a, b) in PAIRS.items()},
        }
        print(f"length {length:5d}  " + "  ".join(
            f"{k} {v:.2f}" for k, v in rows[str(length)]["ratios"].items()), flush=True)
        del runs
    return rows


def fraction_of_peak(steps: dict, peak: dict) -> dict:
    """Matrix-multiply FLOPs of each package step per second, over the measured peak."""
    out = {}
    for length, row in steps.items():
        n = int(length)
        out[length] = {}
        for impl in ("paper", "paper-ff-dropout", "annotated"):
            flops = forward_flops_for(config_of(impl), batch=row["batch"], src_len=n,
                                      tgt_len=n).training_total
            out[length][impl] = flops / row["median_s"][impl] / peak["peak_flop_s"]
    return out


def decoding(token_counts, rounds: int, src_len: int = 32) -> dict:
    """Greedy decoding with and without the cache, and beam 4 with it (batch 1, no end symbol,
    so every run generates exactly the number of tokens asked for)."""
    model = build("paper").eval()
    g = torch.Generator().manual_seed(2)
    src = torch.randint(1, VOCAB, (1, src_len), generator=g)
    mask = torch.ones(1, 1, src_len, dtype=torch.bool)
    runs = {
        "greedy-recompute": lambda n: greedy_decode(model, src, mask, n + 1, 1, use_cache=False),
        "greedy-cache": lambda n: greedy_decode(model, src, mask, n + 1, 1, use_cache=True),
        "beam4-cache": lambda n: beam_search(model, src, mask, n + 1, 1, beam_size=4),
    }
    rows = {}
    with torch.inference_mode():
        for n in token_counts:
            a, b = runs["greedy-cache"](n), runs["greedy-recompute"](n)
            assert torch.equal(a, b), "the cache changed the tokens"
            times = {name: [] for name in runs}
            for _ in range(rounds):
                for name, run in runs.items():
                    times[name].append(timed(lambda run=run: run(n)))
            med = {name: statistics.median(t) for name, t in times.items()}
            rows[str(n)] = {"median_s": med,
                            "tokens_per_s": {name: n / s for name, s in med.items()}}
            print(f"decode {n:4d} tokens  " + "  ".join(
                f"{name} {n / s:.0f} tok/s" for name, s in med.items()), flush=True)
    return rows


PEAK_MEMORY_CHILD = """
import ctypes, gc, sys, torch
sys.path.insert(0, {bench!r})
import performance as p
torch.set_num_threads({threads})

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

model = p.build({impl!r}).train()
opt = p.adam(model)
batch = p.make_batch({length}, {tokens})
p.train_step(model, batch, opt)  # gradients and Adam state come to exist
gc.collect()
ctypes.CDLL("libc.so.6").malloc_trim(0)
base = rss("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # reset the peak-RSS high-water mark
p.train_step(model, batch, opt)
print(base, rss("VmHWM"))
"""


def peak_memory(length: int, tokens: int) -> dict:
    """Peak resident memory of a second training step, each model in a fresh process.

    `step_bytes` is the peak above the resident memory before the step: the activations kept
    for the backward pass and the temporaries.
    """
    rows = {}
    for impl in MEMORY_IMPLEMENTATIONS:
        code = PEAK_MEMORY_CHILD.format(bench=str(ROOT / "benchmarks"), impl=impl, length=length,
                                        tokens=tokens, threads=torch.get_num_threads())
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        base, peak = map(int, out.stdout.split()[-2:])
        rows[impl] = {"peak_bytes": peak, "step_bytes": peak - base}
        print(f"peak memory, length {length}: {impl:<10} {peak / 2**30:.2f} GiB "
              f"(step {(peak - base) / 2**30:.2f} GiB)", flush=True)
    return rows


def profile_step(impl: str, length: int, tokens: int, top: int = 8) -> dict:
    """Self time of each operator in one training step (the shares add up to the step)."""
    from torch.profiler import ProfilerActivity, profile

    batch = make_batch(length, tokens)
    model = build(impl).train()
    opt = adam(model)
    train_step(model, batch, opt)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_step(model, batch, opt)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events if e.key in MATMUL_OPS)
    return {
        "impl": impl, "length": length, "total_self_s": total / 1e6,
        "matmul_share": matmul / total,
        "top_ops": [{"op": e.key, "share": e.self_cpu_time_total / total, "calls": e.count}
                    for e in events[:top]],
    }


def machine() -> dict:
    cpu = platform.processor()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": torch.get_num_threads(),
            "python": platform.python_version(), "torch": torch.__version__,
            "load_average": os.getloadavg()[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: check that it runs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--again", type=int, nargs="+", metavar="LENGTH",
                        help="measure the training steps at these lengths again (on a quieter "
                             "machine) and replace them in the existing results file")
    parser.add_argument("--again-memory", action="store_true",
                        help="measure the peak memory again and replace it in the existing "
                             "results file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.again or args.again_memory:
        res = json.loads(args.out.read_text())
        load = os.getloadavg()[0]
        if args.again:
            res["training_step"].update(training_steps(
                args.again, res["config"]["tokens_per_batch"], res["config"]["rounds"],
                res["matmul_peak"]))
            res["fraction_of_peak"] = fraction_of_peak(res["training_step"], res["matmul_peak"])
            res["machine"]["load_average_rerun"] = [load, os.getloadavg()[0]]
            res["machine"]["rerun"] = {"date": time.strftime("%Y-%m-%d"), "lengths": args.again}
        if args.again_memory:
            lengths = [int(n) for n in res["training_step"]]
            res.setdefault("peak_memory_first_run", res["peak_memory"])
            res["peak_memory"] = peak_memory(max(lengths), res["config"]["tokens_per_batch"])
            res["machine"]["memory_rerun"] = time.strftime("%Y-%m-%d")
        atomic_write(args.out, lambda f: f.write((json.dumps(res, indent=2) + "\n").encode()))
        print(f"updated {args.out}")
        return 0
    quick = args.quick
    lengths = (16, 32) if quick else (64, 256, 1024)
    tokens = 64 if quick else 2048
    rounds = 1 if quick else args.rounds

    res: dict = {"date": time.strftime("%Y-%m-%d"), "machine": machine(),
                 "config": {"vocab": VOCAB, "tokens_per_batch": tokens, "rounds": rounds}}
    res["matmul_peak"] = matmul_peak(256 if quick else 2048)
    print(f"matmul peak {res['matmul_peak']['peak_flop_s'] / 1e9:.0f} GFLOP/s", flush=True)
    res["training_step"] = training_steps(lengths, tokens, rounds, res["matmul_peak"])
    print(f"matmul peak, best over the run {res['matmul_peak']['peak_flop_s'] / 1e9:.0f} GFLOP/s")
    res["fraction_of_peak"] = fraction_of_peak(res["training_step"], res["matmul_peak"])
    for length, row in res["fraction_of_peak"].items():
        print(f"length {length}: paper recipe at {row['paper']:.0%} of the matmul peak")
    res["decoding"] = decoding((4, 8) if quick else (16, 32, 64, 128, 256), rounds)
    res["peak_memory"] = peak_memory(max(lengths), tokens)
    res["profile"] = [profile_step(impl, n, tokens) for n in (min(lengths), max(lengths))
                      for impl in ("paper-ff-dropout", "paper")]
    for prof in res["profile"]:
        ops = ", ".join(f"{op['op']} {op['share']:.0%}" for op in prof["top_ops"][:4])
        print(f"profile {prof['impl']} at {prof['length']}: {ops}")
    res["machine"]["load_average_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out, lambda f: f.write((json.dumps(res, indent=2) + "\n").encode()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
