"""Performance benchmarks: the package's fast and reference attention paths against
`torch.nn.Transformer`, cached against recomputed greedy decoding, achieved FLOP/s against the
machine's measured matrix-multiply peak, and peak memory of a training step.

Run by hand (never by the test suite); every comparison is made within one run, on the same
inputs and configuration:

    .venv/bin/python benchmarks/performance.py                   # everything, writes results/performance.json
    .venv/bin/python benchmarks/performance.py --quick           # small sizes, a smoke test
    .venv/bin/python benchmarks/performance.py --with-build-time # also time the docs build and the tests

The results page of the documentation plots the committed JSON; it never reruns this script.
"""

from __future__ import annotations

import argparse
import datetime as _dt
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

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "performance.json"

BASE = dict(N=6, d_model=512, d_ff=2048, h=8)
VOCAB = 1000
IMPLEMENTATIONS = ("fast", "reference", "torch")


# --------------------------------------------------------------------------- models under test


class TorchTransformerModel(nn.Module):
    """`nn.Transformer` between the package's embeddings and generator.

    The embeddings, positional encodings and generator are the very modules of a `make_model`
    model, so the two implementations differ only in the encoder and decoder stacks.
    """

    def __init__(self, model: nn.Module, dropout: float) -> None:
        super().__init__()
        cfg = model.config
        self.src_embed, self.tgt_embed, self.generator = model.src_embed, model.tgt_embed, model.generator
        self.core = nn.Transformer(
            d_model=cfg.d_model, nhead=cfg.h, num_encoder_layers=cfg.N, num_decoder_layers=cfg.N,
            dim_feedforward=cfg.d_ff, dropout=dropout, batch_first=True, norm_first=True,
        )

    def forward(self, src, tgt, src_mask, tgt_mask):
        # PyTorch's masks: True = blocked (the opposite of the package's keep-masks)
        return self.core(
            self.src_embed(src), self.tgt_embed(tgt),
            tgt_mask=~tgt_mask[0], src_key_padding_mask=~src_mask[:, 0],
            memory_key_padding_mask=~src_mask[:, 0],
        )


def build(impl: str, dropout: float = 0.1) -> nn.Module:
    from vanilla_transformer import make_model

    torch.manual_seed(0)
    model = make_model(VOCAB, VOCAB, dropout=dropout, **BASE)
    if impl == "torch":
        return TorchTransformerModel(model, dropout)
    if impl == "reference":
        for m in model.modules():
            if hasattr(m, "fast"):
                m.fast = False
    return model


def make_inputs(batch: int, length: int):
    from vanilla_transformer import Batch

    g = torch.Generator().manual_seed(1)
    data = torch.randint(1, VOCAB, (batch, length + 1), generator=g)
    return Batch(data[:, :length], data, pad=0)


def train_step(model: nn.Module, batch, opt) -> None:
    out = model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
    logp = model.generator(out)
    loss = nn.functional.nll_loss(logp.reshape(-1, logp.size(-1)), batch.tgt_y.reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def time_it(fn, repeats: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def summary(times: list[float]) -> dict:
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "times_s": times,
    }


# --------------------------------------------------------------------------- measurements


def matmul_peak(n: int = 2048, repeats: int = 10) -> dict:
    a, b = torch.randn(n, n), torch.randn(n, n)
    times = time_it(lambda: torch.mm(a, b), repeats, warmup=3)
    flops = 2 * n**3
    return {"n": n, "flops": flops, **summary(times), "peak_flop_s": flops / min(times)}


def training_steps(lengths, tokens_per_batch: int, repeats: int) -> list[dict]:
    """Median step time of each implementation at each length.

    The three implementations take turns, one step each per round, so that a slow spell of the
    machine hits all three alike instead of whichever happened to be running.
    """
    rows = []
    for length in lengths:
        batch_size = max(1, tokens_per_batch // length)
        batch = make_inputs(batch_size, length)
        runs = {}
        for impl in IMPLEMENTATIONS:
            model = build(impl).train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-4)
            train_step(model, batch, opt)  # warm-up: allocates gradients and Adam state
            runs[impl] = (model, opt, [])
        for _ in range(repeats):
            for impl, (model, opt, times) in runs.items():
                t0 = time.perf_counter()
                train_step(model, batch, opt)
                times.append(time.perf_counter() - t0)
        for impl, (_, _, times) in runs.items():
            rows.append({"impl": impl, "length": length, "batch": batch_size, **summary(times)})
            print(f"train step  len={length:5d} batch={batch_size:3d} {impl:9s} "
                  f"median {statistics.median(times):.3f} s", flush=True)
        del runs
    return rows


def decoding(token_counts, repeats: int) -> list[dict]:
    """Greedy decoding time with and without the key/value cache, alternating the two."""
    from vanilla_transformer import greedy_decode

    model = build("fast").eval()
    g = torch.Generator().manual_seed(2)
    src = torch.randint(1, VOCAB, (1, 32), generator=g)
    mask = torch.ones(1, 1, 32, dtype=torch.bool)
    rows = []
    for n in token_counts:
        times = {True: [], False: []}
        outputs = {}
        for rep in range(repeats + 1):
            for cached in (True, False):
                t0 = time.perf_counter()
                outputs[cached] = greedy_decode(model, src, mask, max_len=n + 1, start_symbol=1,
                                                use_cache=cached)
                if rep:  # the first round is a warm-up
                    times[cached].append(time.perf_counter() - t0)
        assert torch.equal(outputs[True], outputs[False]), "cached decoding changed the tokens"
        for cached in (True, False):
            rows.append({"tokens": n, "cached": cached, **summary(times[cached])})
            print(f"greedy decode {n:4d} tokens cached={cached!s:5s} "
                  f"median {statistics.median(times[cached]):.3f} s", flush=True)
    return rows


PEAK_MEMORY_CHILD = """
import ctypes, gc, sys, torch
sys.path.insert(0, {bench!r})
import performance as p

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

torch.manual_seed(0)
model = p.build({impl!r}).train()
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
batch = p.make_inputs({batch}, {length})
p.train_step(model, batch, opt)  # first step: Adam state and gradients come to exist
gc.collect()
ctypes.CDLL("libc.so.6").malloc_trim(0)
base = rss("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # reset the peak-RSS high-water mark
p.train_step(model, batch, opt)
print(base, rss("VmHWM"))
"""


def peak_memory(length: int, batch: int) -> list[dict]:
    """Peak resident memory of a training step, each implementation in a fresh process.

    After one warm-up step (so gradients and Adam state exist), the process's peak-RSS mark is
    reset and a second step runs. `peak_bytes` is the peak resident memory during that step and
    `step_bytes` the part above the resident memory before it (activations and temporaries).
    """
    rows = []
    for impl in IMPLEMENTATIONS:
        code = PEAK_MEMORY_CHILD.format(bench=str(ROOT / "benchmarks"), impl=impl, batch=batch, length=length)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        base, peak = map(int, out.stdout.split()[-2:])
        rows.append({"impl": impl, "length": length, "batch": batch, "peak_bytes": peak,
                     "step_bytes": peak - base})
        print(f"peak memory len={length} {impl:9s} peak {peak / 2**20:.0f} MiB, "
              f"step {(peak - base) / 2**20:.0f} MiB", flush=True)
    return rows


def achieved_flops(train_rows: list[dict], peak: dict) -> list[dict]:
    from vanilla_transformer.analysis import forward_flops

    rows = []
    for r in train_rows:
        f = forward_flops(VOCAB, VOCAB, **BASE, batch=r["batch"], src_len=r["length"], tgt_len=r["length"])
        flops = f.training_total
        rate = flops / r["median_s"]
        rows.append({"impl": r["impl"], "length": r["length"], "training_flops": flops,
                     "flop_s": rate, "fraction_of_peak": rate / peak["peak_flop_s"]})
    return rows


def profile_step(length: int, tokens_per_batch: int, top: int = 12) -> dict:
    """Where the time of one fast-path training step goes, by operator (torch profiler).

    Operators are grouped by name; `self_s` is the time spent in the operator itself, so the
    shares add up to the whole step.
    """
    from torch.profiler import ProfilerActivity, profile

    batch = make_inputs(max(1, tokens_per_batch // length), length)
    model = build("fast").train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    train_step(model, batch, opt)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_step(model, batch, opt)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    ops = [{"op": e.key, "self_s": e.self_cpu_time_total / 1e6, "share": e.self_cpu_time_total / total,
            "calls": e.count} for e in events[:top]]
    matmul = sum(e.self_cpu_time_total for e in events if e.key in ("aten::mm", "aten::addmm", "aten::bmm"))
    return {"length": length, "batch": batch.src.size(0), "total_self_s": total / 1e6,
            "matmul_share": matmul / total, "top_ops": ops}


def command_time(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def build_and_test_times() -> dict:
    """Wall time of a strict docs build (notebooks executed) and of the whole pytest run, which
    includes the browser tests against the site that build produced."""
    py = str(ROOT / ".venv" / "bin" / "python")
    env_build = [py, "-m", "mkdocs", "build", "--strict", "--site-dir", "site"]
    # The performance page prints these very times; its block cannot check them before they
    # exist, so the timed run leaves that one block out.
    page = ROOT / "docs" / "guides" / "performance.md"
    lines = page.read_text().splitlines()
    uses = next(i for i, line in enumerate(lines) if "docs_build_s" in line)
    fence = max(i for i in range(uses) if lines[i].strip() == "```python") + 1
    pytest = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
              "--deselect", f"docs/guides/performance.md::line {fence}"]
    return {"docs_build_s": command_time(env_build), "tests_s": command_time(pytest)}


def machine() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
    }


def targets(res: dict) -> dict:
    t = {(r["impl"], r["length"]): r["median_s"] for r in res["training_step"]}
    lengths = sorted({r["length"] for r in res["training_step"]})
    longest = max(lengths)
    dec = {(r["tokens"], r["cached"]): r["median_s"] for r in res["decoding"]}
    dec_n = 128 if (128, True) in dec else max(n for n, _ in dec)
    fl = {(r["impl"], r["length"]): r["fraction_of_peak"] for r in res["achieved_flops"]}
    mem = {r["impl"]: r["peak_bytes"] for r in res["peak_memory"]}
    out = {
        "fast_over_torch_time": {str(n): t[("fast", n)] / t[("torch", n)] for n in lengths},
        "reference_over_fast_time_longest": t[("reference", longest)] / t[("fast", longest)],
        "cached_decoding_speedup": dec[(dec_n, False)] / dec[(dec_n, True)],
        "cached_decoding_tokens": dec_n,
        "fast_fraction_of_peak": {str(n): fl[("fast", n)] for n in lengths},
        "fast_over_torch_peak_memory": mem["fast"] / mem["torch"],
    }
    out["met"] = {
        "fast_le_torch_every_length": all(v <= 1.0 for v in out["fast_over_torch_time"].values()),
        "fast_1.3x_reference_at_longest": out["reference_over_fast_time_longest"] >= 1.3,
        "cached_4x_at_128": out["cached_decoding_speedup"] >= 4.0,
        "fast_60pct_of_peak": max(out["fast_fraction_of_peak"].values()) >= 0.6,
        "memory_le_torch": out["fast_over_torch_peak_memory"] <= 1.0,
    }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: check the script runs")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--with-build-time", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--build-time-only", action="store_true",
                        help="add the docs build time and the test time to an existing results file")
    parser.add_argument("--profile-only", action="store_true",
                        help="add an operator profile of one training step to an existing results file")
    args = parser.parse_args(argv)

    if args.build_time_only:
        res = json.loads(args.out.read_text())
        res.update(build_and_test_times())
        print(f"docs build {res['docs_build_s']:.0f} s, tests {res['tests_s']:.0f} s")
        args.out.write_text(json.dumps(res, indent=2) + "\n")
        return 0
    if args.profile_only:
        res = json.loads(args.out.read_text())
        res["profile"] = [profile_step(n, res["config"]["tokens_per_batch"]) for n in (64, 1024)]
        for prof in res["profile"]:
            print(f"length {prof['length']}: matmul share {prof['matmul_share']:.0%}")
            for op in prof["top_ops"][:6]:
                print(f"  {op['op']:32s} {op['share']:6.1%}")
        args.out.write_text(json.dumps(res, indent=2) + "\n")
        return 0

    lengths = (16, 32) if args.quick else (64, 256, 1024)
    tokens = 64 if args.quick else 2048
    decode_counts = (4, 8) if args.quick else (16, 32, 64, 128, 256)
    repeats = 2 if args.quick else args.repeats

    res: dict = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                 "machine": machine(), "config": {**BASE, "vocab": VOCAB, "tokens_per_batch": tokens},
                 "repeats": repeats}
    res["matmul_peak"] = matmul_peak(512 if args.quick else 2048)
    print(f"matmul peak {res['matmul_peak']['peak_flop_s'] / 1e9:.1f} GFLOP/s", flush=True)
    res["training_step"] = training_steps(lengths, tokens, repeats)
    res["achieved_flops"] = achieved_flops(res["training_step"], res["matmul_peak"])
    res["decoding"] = decoding(decode_counts, repeats)
    res["peak_memory"] = peak_memory(max(lengths), max(1, tokens // max(lengths)))
    if args.with_build_time:
        res.update(build_and_test_times())
    res["profile"] = [profile_step(n, tokens) for n in (min(lengths), max(lengths))]
    res["targets"] = targets(res)
    print(json.dumps(res["targets"], indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
