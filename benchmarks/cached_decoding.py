"""Greedy decoding with the key/value cache against recomputing the whole prefix at every step.

Run by hand (never by the test suite):

    .venv/bin/python benchmarks/cached_decoding.py                  # 16..256 tokens, base model
    .venv/bin/python benchmarks/cached_decoding.py --lengths 16 32  # fewer lengths

The model is the paper's base size (`make_model(1000, 1000)`: N=6, d_model=512, h=8, d_ff=2048)
with random weights, in eval mode. For each number of generated tokens it decodes the same
sources both ways, checks that the tokens are identical, and keeps the best of `--repeat` timings.
Without an end symbol every step runs, so both ways generate exactly that many tokens.

Recomputing costs a sum over the prefix lengths, so it grows with the square of the number of
tokens; the cached decoder feeds one position per step (its attention still reads the whole
cache), so it grows about linearly. It prints the speed-up at 128 tokens and writes the
results to `benchmarks/results/cached_decoding.json`.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from vanilla_transformer import greedy_decode, make_model

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cached_decoding.json"


def best_time(fn, repeat: int) -> tuple[float, torch.Tensor]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256],
                        help="numbers of generated tokens")
    parser.add_argument("--batch", type=int, default=1, help="sequences decoded together")
    parser.add_argument("--src-len", type=int, default=32, help="source length")
    parser.add_argument("--repeat", type=int, default=1, help="timings per case; the best is kept")
    parser.add_argument("--threads", type=int, default=None, help="PyTorch threads (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(args.seed)
    model = make_model(1000, 1000).eval()
    src = torch.randint(3, 1000, (args.batch, args.src_len))
    src[:, 0] = 1
    mask = src != 0
    greedy_decode(model, src, mask, 4, 1, use_cache=True)  # warm-up

    rows = []
    print(f"base model, batch {args.batch}, source length {args.src_len}, "
          f"{torch.get_num_threads()} threads")
    print(f"{'tokens':>6}  {'recompute s':>11}  {'cached s':>9}  {'speed-up':>8}  tokens equal")
    for n in args.lengths:
        t_full, full = best_time(lambda: greedy_decode(model, src, mask, n + 1, 1), args.repeat)
        t_cached, cached = best_time(
            lambda: greedy_decode(model, src, mask, n + 1, 1, use_cache=True), args.repeat)
        equal = torch.equal(full, cached)
        rows.append(dict(tokens=n, recompute_s=t_full, cached_s=t_cached,
                         speedup=t_full / t_cached, tokens_equal=equal))
        print(f"{n:6d}  {t_full:11.3f}  {t_cached:9.3f}  {t_full / t_cached:7.1f}x  {equal}",
              flush=True)
        if not equal:
            raise SystemExit(f"cached and recomputed decoding disagree at {n} tokens")

    at_128 = next((r for r in rows if r["tokens"] == 128), None)
    if at_128:
        print(f"speed-up at 128 tokens: {at_128['speedup']:.1f}x")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(
        benchmark="cached_decoding", model="make_model(1000, 1000)", batch=args.batch,
        src_len=args.src_len, threads=torch.get_num_threads(), torch=torch.__version__,
        machine=platform.machine(), processor=platform.processor(),
        time=time.strftime("%Y-%m-%dT%H:%M:%S"), rows=rows,
        speedup_at_128=at_128["speedup"] if at_128 else None,
    ), indent=2) + "\n")
    print(f"wrote {args.json.relative_to(ROOT) if args.json.is_relative_to(ROOT) else args.json}")


if __name__ == "__main__":
    main()
