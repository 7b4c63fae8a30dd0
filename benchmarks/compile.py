"""`torch.compile` and bf16 autocast on a training step of the paper's base model.

Times a forward and backward pass plus an Adam step of `make_model(..., **PRESETS["paper-base"])`
(post-norm, tied weights, dropout 0.1 on sublayer outputs and embeddings, none on the attention
weights, so attention runs in PyTorch's fused kernel) at source and target lengths 64, 256 and
1024 with about 2048 tokens per batch: eager, compiled, and on a GPU also eager and compiled under
bf16 autocast. Compilation time is reported apart from the step time. Ratios are to eager float32
in the same run.

    .venv/bin/python benchmarks/compile.py --threads 2            # CPU
    .venv/bin/python benchmarks/compile.py --device cuda          # GPU: adds bf16 autocast

Results: `benchmarks/results/compile_{cpu,cuda}.json`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import time
from pathlib import Path

import torch
from torch import nn

from vanilla_transformer import PRESETS, Batch, make_model
from vanilla_transformer._io import atomic_write

RESULTS = Path(__file__).resolve().parent / "results"
VOCAB = 1000
TOKENS = 2048


def step_fn(model, batch, opt, autocast: bool, device: torch.device):
    def step():
        ctx = (torch.autocast(device.type, dtype=torch.bfloat16) if autocast
               else contextlib.nullcontext())
        with ctx:
            logp = model.generator(model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask))
            loss = nn.functional.nll_loss(logp.reshape(-1, logp.size(-1)).float(),
                                          batch.tgt_y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def timed(step, device, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    variants = ["eager", "compiled"] + (["eager-bf16", "compiled-bf16"] if device.type == "cuda"
                                        else [])
    rows = {}
    for length in args.lengths:
        g = torch.Generator().manual_seed(length)
        data = torch.randint(1, VOCAB, (max(1, TOKENS // length), length + 1), generator=g)
        batch = Batch(data[:, :length].to(device), data.to(device), pad=0)
        row = {}
        for variant in variants:
            torch.manual_seed(0)
            model = make_model(VOCAB, VOCAB, **PRESETS["paper-base"]).to(device).train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
            run = torch.compile(model) if variant.startswith("compiled") else model
            step = step_fn(run, batch, opt, variant.endswith("bf16"), device)
            t0 = time.perf_counter()
            step()  # the first step compiles
            first = time.perf_counter() - t0
            step()
            times = timed(step, device, args.repeats)
            row[variant] = {"median_s": statistics.median(times), "first_step_s": first}
        for variant in variants:
            row[variant]["ratio_to_eager"] = row[variant]["median_s"] / row["eager"]["median_s"]
        rows[str(length)] = row
        print(f"length {length:5d}  " + "  ".join(
            f"{v} {row[v]['median_s'] * 1e3:.1f} ms ({row[v]['ratio_to_eager']:.2f}, first "
            f"{row[v]['first_step_s']:.1f} s)" for v in variants), flush=True)
    record = {
        "machine": {"platform": platform.platform(), "device": device.type,
                    "threads": torch.get_num_threads(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None},
        "config": {"preset": "paper-base", "vocab": VOCAB, "tokens_per_batch": TOKENS},
        "date": time.strftime("%Y-%m-%d"),
        "lengths": rows,
    }
    out = args.out or RESULTS / f"compile_{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, lambda f: f.write(json.dumps(record, indent=2).encode()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
