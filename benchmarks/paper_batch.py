"""The paper's model at the paper's batch size: about 25,000 target tokens per optimizer step.

The paper (section 5.1) batched sentence pairs by length so that each training batch held about
25,000 source and 25,000 target tokens. This script times whole training steps of
`make_model(V, V, **PRESETS["paper-base"])` (post-norm, one shared vocabulary of 37,000 tokens,
tied weights: 63M parameters) at that size, against `nn.Transformer(norm_first=False)` of the
same size between the same embeddings and generator (`torch-post` of `performance.py`), in one
run:

- a step is the forward pass, the generator's log-probabilities, the label-smoothed loss
  (`label_smoothed_kl`, ε = 0.1, divided by the number of target tokens), the backward pass and
  an Adam step (β2 = 0.98, ε = 1e-9);
- each implementation runs eager and under `torch.compile` (the forward pass, generator and loss
  compiled as one function), under bf16 autocast, and with `--fp32` also eager in float32;
- the batch is `--tokens // --length` pairs of `--length` source and `--length` target tokens
  (the paper's sentences average about 25 tokens), random ids, no padding;
- every configuration takes one step per round, the order reversed every other round, so that a
  slow spell of the machine hits all of them alike; the results compare medians of one run.

Reported per configuration: the median step time, target tokens per second, peak memory (on a
GPU `torch.cuda.max_memory_allocated`; on a CPU the peak resident size, `VmHWM`, and its growth
during the step), the model FLOPs utilisation (the calculator's training FLOPs per step, divided
by the step time and by the device's peak: `--peak-tflops` on a GPU, the measured matrix-multiply
peak at the same dtype on a CPU) and, for compiled runs, the compilation time apart from the
step time.

    .venv/bin/python benchmarks/paper_batch.py --quick                   # check it runs
    .venv/bin/python benchmarks/paper_batch.py --threads 2 --warmup 1 --steps 3   # 22 GiB
    .venv/bin/python benchmarks/paper_batch.py --device cuda --fp32

Results: `benchmarks/results/paper_batch_{cpu,cuda}.json`, read by the Performance page.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Read before importing torch: importing torch._dynamo sets this variable to its default.
CACHE_GIVEN = os.environ.get("TORCHINDUCTOR_CACHE_DIR")

import torch
from torch import nn
from torch._dynamo.utils import counters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from performance import TorchCore, adam, machine, matmul_peak

from vanilla_transformer import PRESETS, Batch, ModelConfig, make_model
from vanilla_transformer._io import atomic_write
from vanilla_transformer.analysis import forward_flops_for
from vanilla_transformer.training import label_smoothed_kl

RESULTS = Path(__file__).resolve().parent / "results"
VOCAB = 37000  # the paper's shared English-German byte-pair vocabulary (section 5.1)
PAD = 0
SMOOTHING = 0.1
IMPLS = ("paper", "torch-post")
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
H100_BF16_TFLOPS = 989.0  # H100 SXM, bf16 dense (without sparsity)
H100_FP32_TFLOPS = 67.0  # H100 SXM, float32 without tensor cores (PyTorch's default: no TF32)


class Objective(nn.Module):
    """The loss of one batch: model, generator, label-smoothed loss per target token."""

    def __init__(self, model: nn.Module, ntokens: int) -> None:
        super().__init__()
        self.model, self.ntokens = model, ntokens

    def forward(self, src, tgt, src_mask, tgt_mask, tgt_y):
        logp = self.model.generator(self.model(src, tgt, src_mask, tgt_mask))
        loss = label_smoothed_kl(logp.reshape(-1, logp.size(-1)), tgt_y.reshape(-1), PAD,
                                 SMOOTHING)
        return loss / self.ntokens


def build(impl: str, vocab: int, device: torch.device) -> nn.Module:
    """`paper-base`, or `nn.Transformer` post-norm (dropout 0.1) between its embeddings and
    generator; both from the same seed."""
    torch.manual_seed(0)
    model = make_model(vocab, vocab, **PRESETS["paper-base"])
    if impl == "torch-post":
        model = TorchCore(model, 0.1, norm_first=False)
    return model.to(device).train()


def make_batch(length: int, tokens: int, vocab: int, device: torch.device) -> Batch:
    """`tokens // length` pairs of `length` source and `length` target tokens, no padding."""
    g = torch.Generator().manual_seed(length)
    data = torch.randint(1, vocab, (max(1, tokens // length), length + 1), generator=g)
    return Batch(data[:, :length].to(device), data.to(device), pad=PAD)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def rss(field: str) -> int:
    """A size from `/proc/self/status` in bytes (`VmRSS`: now; `VmHWM`: the peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


class Config:
    """One implementation in one mode at one dtype: its model, optimizer and step."""

    def __init__(self, impl: str, mode: str, dtype: str, batch: Batch, vocab: int,
                 device: torch.device) -> None:
        self.impl, self.mode, self.dtype, self.device, self.batch = impl, mode, dtype, device, batch
        self.model = build(impl, vocab, device)
        self.opt = adam(self.model)
        objective = Objective(self.model, batch.tgt_y.numel())
        self.objective = torch.compile(objective) if mode == "compiled" else objective
        self.times: list[float] = []
        self.memory: list[tuple[int, int]] = []  # (peak bytes, growth during the step)

    @property
    def name(self) -> str:
        return f"{self.impl} {self.mode} {self.dtype}"

    def step(self) -> None:
        b = self.batch
        ctx = (torch.autocast(self.device.type, dtype=torch.bfloat16) if self.dtype == "bf16"
               else contextlib.nullcontext())
        with ctx:
            loss = self.objective(b.src, b.tgt, b.src_mask, b.tgt_mask, b.tgt_y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def timed_step(self) -> float:
        """One step's seconds, and its peak memory recorded in `self.memory`."""
        gc.collect()
        if self.device.type == "cuda":
            sync(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            base = torch.cuda.memory_allocated(self.device)
        else:
            with contextlib.suppress(OSError, AttributeError):
                ctypes.CDLL("libc.so.6").malloc_trim(0)  # return freed heap, so growth is real
            base = rss("VmRSS")
            Path("/proc/self/clear_refs").write_text("5")  # reset the VmHWM high-water mark
        t0 = time.perf_counter()
        self.step()
        sync(self.device)
        seconds = time.perf_counter() - t0
        if self.device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(self.device)
        else:
            peak = rss("VmHWM")
        self.memory.append((peak, peak - base))
        return seconds


def compile_unavailable(device: torch.device) -> str | None:
    """Why `torch.compile` cannot run here, or None."""
    if device.type == "cpu" and not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        return "no C++ compiler on the PATH (TorchInductor needs one to compile for a CPU)"
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--tokens", type=int, default=25000, help="target tokens per step")
    parser.add_argument("--length", type=int, default=25, help="source and target length")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (>= 1)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--fp32", action="store_true", help="also eager float32")
    parser.add_argument("--peak-tflops", type=float, default=H100_BF16_TFLOPS,
                        help="GPU bf16 peak for the FLOPs utilisation (default: H100 SXM, dense)")
    parser.add_argument("--peak-tflops-fp32", type=float, default=H100_FP32_TFLOPS,
                        help="GPU float32 peak (default: H100 SXM without tensor cores)")
    parser.add_argument("--skip-compiled", metavar="REASON", default=None,
                        help="run eager only, and record this reason in the results")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check that it runs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.warmup < 1 or args.steps < 1:
        parser.error(f"--warmup and --steps must be at least 1, got {args.warmup}, {args.steps}")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda, but torch.cuda.is_available() is False")
    vocab, tokens, length = (1000, 200, 10) if args.quick else (VOCAB, args.tokens, args.length)
    steps, warmup = (2, 1) if args.quick else (args.steps, args.warmup)
    out = args.out or (Path("/tmp") / f"paper_batch_quick_{device.type}.json" if args.quick
                       else RESULTS / f"paper_batch_{device.type}.json")

    # Compile from scratch: an inductor cache left by an earlier run would shorten compile_s.
    fresh = CACHE_GIVEN is None
    cache = tempfile.mkdtemp(prefix="paper_batch_inductor_")
    if fresh:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(cache, "triton"))
    load_before = os.getloadavg()
    batch = make_batch(length, tokens, vocab, device)
    config = ModelConfig(vocab, vocab, **PRESETS["paper-base"])
    flops = forward_flops_for(config, batch=batch.src.size(0), src_len=length,
                              tgt_len=length).training_total
    dtypes = ["bf16"] + (["fp32"] if args.fp32 else [])
    skipped = args.skip_compiled or compile_unavailable(device)
    groups = [("eager", d) for d in dtypes] + ([] if skipped else [("compiled", "bf16")])

    # Peaks: on a GPU the datasheet figure; on a CPU the best matrix multiply of the run.
    if device.type == "cuda":
        peaks = {"bf16": {"flop_s": args.peak_tflops * 1e12, "source": "--peak-tflops"},
                 "fp32": {"flop_s": args.peak_tflops_fp32 * 1e12,
                          "source": "--peak-tflops-fp32"}}
    else:
        n = 256 if args.quick else 2048
        peaks = {}
        for d in dtypes:
            sample = matmul_peak(n, dtype=DTYPES[d])
            peaks[d] = {"n": n, "best_s": sample["best_s"], "flop_s": sample["peak_flop_s"],
                        "source": f"measured: the best {n} x {n} x {n} matmul of the run"}
            print(f"matmul peak {d}: {peaks[d]['flop_s'] / 1e9:.0f} GFLOP/s", flush=True)

    runs: dict = {}
    for mode, dtype in groups:  # one group at a time: only its models are in memory
        configs = [Config(impl, mode, dtype, batch, vocab, device) for impl in IMPLS]
        for c in list(configs):
            breaks = sum(counters["graph_break"].values())
            sync(device)
            t0 = time.perf_counter()
            try:
                c.step()  # the first step compiles, and creates the gradients and Adam's state
                sync(device)
            except Exception as e:
                if mode != "compiled":
                    raise
                reason = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                runs.setdefault(mode, {}).setdefault(dtype, {})[c.impl] = {"skipped": reason}
                print(f"{c.name}: compiling failed: {reason}", flush=True)
                configs.remove(c)
                continue
            c.first_step_s = time.perf_counter() - t0
            c.graph_breaks = sum(counters["graph_break"].values()) - breaks
            for _ in range(warmup - 1):
                c.step()
            sync(device)
            print(f"{c.name}: first step {c.first_step_s:.1f} s", flush=True)

        for r in range(steps):
            for c in configs if r % 2 == 0 else configs[::-1]:
                c.times.append(c.timed_step())
                print(f"round {r + 1}/{steps}  {c.name:<24} {c.times[-1]:8.3f} s", flush=True)
            if device.type == "cpu":  # the peak sampled under the same conditions as the steps
                sample = matmul_peak(peaks[dtype]["n"], repeats=3, dtype=DTYPES[dtype])
                if sample["peak_flop_s"] > peaks[dtype]["flop_s"]:
                    peaks[dtype].update(best_s=sample["best_s"], flop_s=sample["peak_flop_s"])

        row = runs.setdefault(mode, {}).setdefault(dtype, {})
        for c in configs:
            med = statistics.median(c.times)
            row[c.impl] = {
                "median_s": med,
                "times_s": c.times,
                "tokens_per_s": batch.tgt_y.numel() / med,
                "first_step_s": c.first_step_s,
                "peak_memory_bytes": max(p for p, _ in c.memory),
                "step_memory_bytes": max(g for _, g in c.memory),
                "parameters": sum(p.numel() for p in c.model.parameters()),
            }
            if mode == "compiled":
                row[c.impl]["compile_s"] = c.first_step_s - med  # the first step less a step
                row[c.impl]["graph_breaks"] = c.graph_breaks
        if all("median_s" in row.get(i, {}) for i in IMPLS):
            row["paper / torch-post"] = row["paper"]["median_s"] / row["torch-post"]["median_s"]
            print(f"{mode} {dtype}: paper {row['paper']['tokens_per_s']:.0f} tok/s, "
                  f"torch-post {row['torch-post']['tokens_per_s']:.0f} tok/s, "
                  f"paper / torch-post {row['paper / torch-post']:.3f}", flush=True)
        del configs, c
        gc.collect()
    if skipped:
        runs["compiled"] = {"skipped": skipped}
    for by_dtype in runs.values():  # the utilisation against the run's best peak
        for dtype, row in by_dtype.items():
            for r in row.values() if isinstance(row, dict) else ():
                if isinstance(r, dict) and "median_s" in r:
                    r["mfu"] = flops / r["median_s"] / peaks[dtype]["flop_s"]

    m = machine()
    del m["load_average"]
    m.update(device=device.type, load_average_before=load_before,
             load_average_after=os.getloadavg())
    if device.type == "cuda":
        m["gpu"] = torch.cuda.get_device_name(device)
    record = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": m,
        "config": {
            "preset": "paper-base", "vocab": vocab,
            "tokens": tokens, "length": length, "batch": batch.src.size(0),
            "target_tokens_per_step": batch.tgt_y.numel(),
            "loss": f"label_smoothed_kl, smoothing {SMOOTHING}, per target token",
            "steps": steps, "warmup": warmup, "quick": args.quick,
            "inductor_cache": "fresh" if fresh else os.environ["TORCHINDUCTOR_CACHE_DIR"],
        },
        "training_flops_per_step": flops,
        "peak": peaks,
        "runs": runs,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, lambda f: f.write((json.dumps(record, indent=2) + "\n").encode()))
    shutil.rmtree(cache, ignore_errors=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
