"""Does each fast path earn its lines? A training step with and without it, in one run.

The model's code is the paper's equations; a fast path stays in `model/fast.py` only if it makes
a training step measurably faster. This script times a forward and backward pass of the base
configuration (N=6, d_model=512, d_ff=2048, h=8, dropout 0.1, about 2048 tokens per batch) at
source and target lengths 64, 256 and 1024, for:

- `reference`: every attention module on the explicit `attention` function (`fast=False`);
- `reference-layernorm`: every Annotated LayerNorm on its three-line reference (`fast=False`)
  instead of `fast_layer_norm`;
- `package`: the package as it is (`fast_attention`, `fast_layer_norm`);
- `sdpa-only`: `fast_attention` without its CPU branch for dropout on the weights, so that
  PyTorch's own fallback runs;
- `cheap-dropout`: `nn.Dropout` drawing its CPU mask as `rand_like(x) >= p` instead of with
  `bernoulli_` (half the cost on a large tensor, measured alone); in the package until a run of
  this script showed `nn.Dropout` as fast or faster over a whole step (recorded as
  `torch-dropout`, the package's ratio the other way round);
- `fill-all-true`: `fast_attention`'s CPU branch filling a mask that blocks nothing, as it did
  before it learnt to skip one (earlier runs measured the same idea from the caller's side as
  `no-mask`: an all-true source mask replaced by `None`);
- a candidate that is *not* in the package, kept here to show why: `fused-qkv` (the three
  input projections of self-attention as one matrix multiply).

Variants are run in interleaved rounds and compared as the ratio of median times to `package`,
so drift of the machine hits them all alike.

    .venv/bin/python benchmarks/fast_paths.py                 # about 10 minutes on 2 cores
    .venv/bin/python benchmarks/fast_paths.py --lengths 64 --rounds 2   # a smoke test

Results: `benchmarks/results/fast_paths_cpu.json` and `fast_paths_cuda.json`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from vanilla_transformer import make_model, subsequent_mask
from vanilla_transformer.model import LayerNorm, MultiHeadedAttention
from vanilla_transformer.model.masks import mask_fill_value

attention_module = importlib.import_module("vanilla_transformer.model.attention")

RESULTS = Path(__file__).resolve().parent / "results" / "fast_paths_cpu.json"
BASE = dict(N=6, d_model=512, d_ff=2048, h=8, dropout=0.1)
VOCAB = 1000
TOKENS = 2048


# --------------------------------------------------------------------------- candidates


def _sdpa_only(query, key, value, mask, dropout):
    if mask is not None and mask.dtype != torch.bool:
        mask = mask != 0
    p = dropout.p if dropout.training else 0.0
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=p)


def _fill_all_true(query, key, value, mask, dropout):
    """`fast_attention` as it was before it skipped a mask that blocks nothing."""
    if mask is not None and mask.dtype != torch.bool:
        mask = mask != 0
    p = dropout.p if dropout.training else 0.0
    if p > 0 and query.device.type == "cpu":
        scores = torch.matmul(query * (1.0 / math.sqrt(query.size(-1))), key.transpose(-2, -1))
        if mask is not None:
            scores.masked_fill_(~mask, mask_fill_value(scores.dtype))
        return torch.matmul(dropout(scores.softmax(dim=-1)), value)
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=p)


def _fused_forward(self, query, key, value, mask=None, cache=None):
    """MultiHeadedAttention.forward with self-attention's three projections fused."""
    if mask is not None:
        mask = mask.unsqueeze(1)
    d_model = self.h * self.d_k
    if query is key and key is value:
        weight = torch.cat([lin.weight for lin in self.linears[:3]])
        bias = torch.cat([lin.bias for lin in self.linears[:3]])
        q, k, v = (self.split_heads(t) for t in F.linear(query, weight, bias).chunk(3, dim=-1))
    else:
        q = self.split_heads(self.linears[0](query))
        weight = torch.cat([lin.weight for lin in self.linears[1:3]])
        bias = torch.cat([lin.bias for lin in self.linears[1:3]])
        k, v = (self.split_heads(t) for t in F.linear(key, weight, bias).chunk(2, dim=-1))
    x = attention_module.fast_attention(q, k, v, mask, self.dropout)
    return self.linears[3](x.transpose(1, 2).reshape(query.size(0), -1, d_model))


def _cheap_dropout_forward(self, x):
    if not self.training or self.p == 0 or x.device.type != "cpu":
        return F.dropout(x, self.p, self.training)
    return x * (torch.rand_like(x) >= self.p) * (1.0 / (1.0 - self.p))


@contextlib.contextmanager
def patched(obj, name, value):
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, saved)


VARIANTS = {
    "package": contextlib.nullcontext,
    "reference": None,  # set per model: fast=False
    "sdpa-only": lambda: patched(attention_module, "fast_attention", _sdpa_only),
    "fused-qkv": lambda: patched(MultiHeadedAttention, "forward", _fused_forward),
    "reference-layernorm": None,  # set per model: LayerNorm.fast=False
    "fill-all-true": lambda: patched(attention_module, "fast_attention", _fill_all_true),
    "cheap-dropout": lambda: patched(nn.Dropout, "forward", _cheap_dropout_forward),
}


# --------------------------------------------------------------------------- timing


def make_batch(length: int, device: str, tokens: int = TOKENS):
    g = torch.Generator().manual_seed(length)
    batch = max(1, tokens // length)
    src = torch.randint(1, VOCAB, (batch, length), generator=g)
    tgt = torch.randint(1, VOCAB, (batch, length), generator=g)
    masks = torch.ones(batch, 1, length, dtype=torch.bool), subsequent_mask(length)
    return tuple(t.to(device) for t in (src, tgt, *masks))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_time(model, batch, variant: str) -> float:
    src, tgt, src_mask, tgt_mask = batch
    for m in model.modules():
        if isinstance(m, MultiHeadedAttention):
            m.fast = variant != "reference"
        if isinstance(m, LayerNorm):
            m.fast = variant != "reference-layernorm"
    context = VARIANTS[variant]() if VARIANTS[variant] is not None else contextlib.nullcontext()
    with context:
        _sync(src.device)
        start = time.perf_counter()
        out = model.generator(model(src, tgt, src_mask, tgt_mask))
        out.mean().backward()
        _sync(src.device)
        elapsed = time.perf_counter() - start
    model.zero_grad(set_to_none=True)
    return elapsed


def run(lengths, rounds: int, variants, device: str, tokens: int = TOKENS) -> dict:
    torch.manual_seed(0)
    model = make_model(VOCAB, VOCAB, **BASE).train().to(device)
    results = {}
    for length in lengths:
        batch = make_batch(length, device, tokens)
        for v in variants:  # warm-up
            step_time(model, batch, v)
        times = {v: [] for v in variants}
        load_before = os.getloadavg()
        for r in range(rounds):
            order = variants if r % 2 == 0 else variants[::-1]
            for v in order:
                times[v].append(step_time(model, batch, v))
        med = {v: statistics.median(t) for v, t in times.items()}
        results[str(length)] = {
            "batch": batch[0].size(0),
            "loadavg_before_after": [load_before, os.getloadavg()],  # 2 cores, shared
            "median_s": med,
            "ratio_to_package": {v: med[v] / med["package"] for v in variants},
        }
        print(f"length {length:5d}  load {os.getloadavg()[0]:.1f}  " + "  ".join(
            f"{v} {med[v]:.3f}s ({med[v] / med['package']:.3f})" for v in variants), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--tokens", type=int, default=TOKENS, help="tokens per batch")
    parser.add_argument("--out", type=Path, default=None,
                        help="default: results/fast_paths_cpu.json (cpu) or fast_paths_cuda.json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    out = args.out or RESULTS.with_name("fast_paths_cpu.json" if args.device == "cpu" else "fast_paths_cuda.json")
    variants = ["package"] + [v for v in args.variants if v != "package"]
    results = run(args.lengths, args.rounds, variants, args.device, args.tokens)
    record = {
        "config": {**BASE, "vocab": VOCAB, "tokens_per_batch": args.tokens, "rounds": args.rounds},
        "machine": {"platform": platform.platform(), "device": args.device,
                    "threads": torch.get_num_threads(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None},
        "date": time.strftime("%Y-%m-%d"),
        "lengths": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=2)
    os.replace(tmp, out)  # atomic: a killed run leaves the old results
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
