"""Time to the first batch and peak memory: a corpus streamed from disk against one held in memory.

For a parallel corpus of N pairs (English number words to German, several numbers to a line so
the lengths vary), each variant runs in a fresh process that reports the time of each phase and
its peak resident memory (`VmHWM`):

- `in-memory`: what `translate train` does today: `read_tsv`, `train_tokenizer` on every
  sentence, `encode_batch` of the whole corpus, `make_token_batches` (every batch collated up
  front) and `epoch_order`;
- `streaming`: `train_tokenizer` on `sample_tsv`'s 100,000 pairs (all of them with
  `--tokenizer-sample 0`, fed from `iter_tsv` one line at a time), `tokenize_corpus`
  into a folder of memory-mapped ids, `StreamingTokenBatches` (lengths sorted, nothing
  collated) and its first batch;
- `streaming-reuse`: the same with the folder already written (a resumed or repeated run).

Both then build the `paper-small` model and take one optimizer step on the first batch, the
moment `translate train` starts learning. The streaming variant also collates 200 batches to give
the cost of a batch on demand. Each phase is reported in wall seconds and in CPU seconds (all
threads): on a machine shared with other work the second says what an idle one would take.

    .venv/bin/python benchmarks/streaming.py                        # 20,000 and 2,000,000 pairs
    .venv/bin/python benchmarks/streaming.py --pairs 20000 --variants streaming   # a smoke test

Results: `benchmarks/results/streaming.json`, one entry of `runs` per invocation (appended; the
Performance page reads the last result of each variant and size).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results" / "streaming.json"
VARIANTS = ("in-memory", "streaming", "streaming-reuse")
MAX_TOKENS = 1500  # TranslationConfig's default
VOCAB = 250


def peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_corpus(path: Path, pairs: int, seed: int = 0) -> None:
    """`pairs` lines, each one to three numbers (from a pool of 20,000 spelled ones) joined by
    commas in both languages, written a chunk at a time."""
    from vanilla_transformer.data import number_pairs

    rng = random.Random(seed)
    base = number_pairs(rng.sample(range(1_000_000), 20_000), "de")
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for start in range(0, pairs, 100_000):
            lines = []
            for _ in range(min(100_000, pairs - start)):
                picked = [base[rng.randrange(len(base))] for _ in range(rng.choice((1, 1, 2, 3)))]
                lines.append(" , ".join(s for s, _ in picked) + "\t"
                             + " , ".join(t for _, t in picked) + "\n")
            f.write("".join(lines))
    os.replace(tmp, path)


def first_step(batch, vocab: int) -> float:
    """Build the `paper-small` model and take one optimizer step on `batch`; seconds."""
    import functools

    from vanilla_transformer.model.config import ModelConfig
    from vanilla_transformer.model.encoder_decoder import make_model_from_config
    from vanilla_transformer.training import TRANSLATION_PRESETS, make_optimizer
    from vanilla_transformer.training.loss import SimpleLossCompute, label_smoothed_kl

    start = time.perf_counter()
    torch.manual_seed(0)
    model = make_model_from_config(ModelConfig(src_vocab=vocab, tgt_vocab=vocab,
                                               **TRANSLATION_PRESETS["paper-small"]))
    optimizer, scheduler = make_optimizer(model, model.config.d_model, factor=1.0, warmup=400)
    compute = SimpleLossCompute(model.generator, functools.partial(
        label_smoothed_kl, padding_idx=0, smoothing=0.1))
    out = model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
    _, loss = compute(out, batch.tgt_y, batch.ntokens)
    loss.backward()
    optimizer.step()
    scheduler.step()
    return time.perf_counter() - start


def child(variant: str, tsv: Path, work: Path, tokenizer_sample: int) -> dict:
    from vanilla_transformer.data.numbers import read_tsv
    from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, train_tokenizer

    phases: dict[str, float] = {}
    cpu: dict[str, float] = {}  # CPU seconds of every thread: what an idle machine would take
    start = time.perf_counter()
    mark, cpu_mark = start, time.process_time()

    def phase(name: str) -> None:
        nonlocal mark, cpu_mark
        now, cpu_now = time.perf_counter(), time.process_time()
        phases[name], cpu[name] = now - mark, cpu_now - cpu_mark
        mark, cpu_mark = now, cpu_now

    if variant == "in-memory":
        from vanilla_transformer.data.token_batches import (
            epoch_order,
            make_token_batches,
        )

        pairs = read_tsv(tsv)
        phase("read_s")
        tok = train_tokenizer([s for pair in pairs for s in pair], VOCAB)
        phase("train_tokenizer_s")
        src = tok.encode_batch([s for s, _ in pairs])
        tgt = tok.encode_batch([t for _, t in pairs])
        ids = list(zip(src, tgt))
        del pairs, src, tgt
        phase("tokenize_s")
        batches = make_token_batches(ids, MAX_TOKENS, pad=PAD, bos=BOS, eos=EOS)
        phase("make_batches_s")
        first = batches[epoch_order(len(batches), 0, 0)[0]]
        phase("first_batch_s")
        n_batches = len(batches)
    else:
        from vanilla_transformer.data.corpus import (
            iter_tsv,
            sample_tsv,
            tokenize_corpus,
        )
        from vanilla_transformer.data.streaming import StreamingTokenBatches

        folder = work / "ids"
        if variant == "streaming":
            shutil.rmtree(folder, ignore_errors=True)
        tok_file = work / "tokenizer.json"
        if variant == "streaming-reuse" and tok_file.is_file():
            from vanilla_transformer.data import SharedTokenizer

            tok = SharedTokenizer.load(tok_file)
        else:
            pairs = sample_tsv(tsv, tokenizer_sample) if tokenizer_sample else iter_tsv(tsv)
            tok = train_tokenizer((s for pair in pairs for s in pair), VOCAB)
            tok.save(tok_file)
        phase("train_tokenizer_s")
        corpus = tokenize_corpus(tsv, tok, folder)
        phase("tokenize_s")
        stream = StreamingTokenBatches(corpus, MAX_TOKENS, pad=PAD, bos=BOS, eos=EOS, seed=0)
        n_batches = stream.batches_in_epoch(0)
        phase("make_batches_s")
        batches = stream.iterate(0, 0)
        _, _, first = next(batches)
        phase("first_batch_s")
    ready = time.perf_counter() - start
    first_step(first, tok.vocab_size)
    phase("first_step_s")
    result = {"phases": phases, "cpu_phases": cpu, "first_batch_ready_s": ready,
              "first_optimizer_step_s": time.perf_counter() - start,
              "peak_mb": peak_mb(), "batches_per_epoch": n_batches}
    if variant != "in-memory":
        t = time.perf_counter()
        for _ in itertools.islice(batches, 200):
            pass
        result["collate_ms_per_batch"] = (time.perf_counter() - t) / 200 * 1e3
        result["peak_mb_after_200_batches"] = peak_mb()
    return result


def run(variant: str, tsv: Path, work: Path, threads: int, timeout: int,
        tokenizer_sample: int) -> dict:
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", variant, "--tsv", str(tsv), "--work", str(work),
             "--threads", str(threads), "--tokenizer-sample", str(tokenizer_sample)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout} s"}
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else
                f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[20_000, 2_000_000])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("/tmp/streaming-benchmark"))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per variant")
    parser.add_argument("--tokenizer-sample", type=int, default=100_000,
                        help="streaming: train the tokenizer on this many sampled pairs (0: all)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--fresh", action="store_true",
                        help="start the results file over instead of appending this run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tsv", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(child(args.child, args.tsv, args.work, args.tokenizer_sample)))
        return
    load_before = os.getloadavg()
    results: dict = {}
    for n in args.pairs:
        work = args.work / str(n)
        work.mkdir(parents=True, exist_ok=True)
        tsv = work / "train.tsv"
        if not tsv.is_file():
            t = time.perf_counter()
            make_corpus(tsv, n)
            print(f"{n} pairs written in {time.perf_counter() - t:.0f} s")
        results[str(n)] = row = {"tsv_mb": tsv.stat().st_size / 2**20}
        for variant in args.variants:
            row[variant] = r = run(variant, tsv, work, args.threads, args.timeout,
                                   args.tokenizer_sample)
            print(n, variant, json.dumps(r))
    report = {
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "torch": torch.__version__, "threads": args.threads,
                    "load_before": load_before, "load_after": os.getloadavg()},
        "max_tokens": MAX_TOKENS, "vocab_size": VOCAB,
        "streaming_tokenizer_sample_pairs": args.tokenizer_sample,
        "command": "benchmarks/streaming.py " + " ".join(sys.argv[1:]),
        "pairs": results,
    }
    # each run is appended: the wall times of a shared machine are worth comparing across runs
    previous = json.loads(args.out.read_text()) if args.out.is_file() and not args.fresh else {}
    runs = previous.get("runs", [])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**previous, "runs": [*runs, report]}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
