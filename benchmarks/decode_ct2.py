"""Decoding speed against CTranslate2, on the same weights: the shipped number translator.

The translator in `docs/assets/translator` (English number words to German) translates the
English words of its own test split (the first `--sentences` numbers of
`split_numbers(DEFAULT_SIZES, seed=0)["test"]`) on `--threads` threads, greedy and with a
beam of 4, in three ways:

- `before`: `translate_sentences(..., fast=False, batch_size=64, max_tokens=None)`, the
  readable `greedy_decode` (with the cache) and `beam_search` on batches of 64 sentences, as
  `translate_sentences` decoded before the batched decoders;
- `after`: `translate_sentences` with its defaults (the batched decoders of
  `inference/fast.py`);
- `ct2`: CTranslate2's `Translator.translate_batch` on the same weights (float32), one
  thread, strings to strings through the package's tokenizer like the two above;
  `ct2_decode` is the same call on pieces tokenised beforehand (CTranslate2's own time).

The model is converted with `vanilla_transformer.interop.ctranslate2` when the package has
it, else with CTranslate2's spec API here. Variants take turns, one call each per round, and
the report gives medians over the rounds and the ratios of medians; `agree` counts the
sentences whose translations are equal. `--cli` also times the command line on a file of the
same sentences, start-up included (a fresh process each time).

    .venv/bin/python benchmarks/decode_ct2.py --threads 1 --rounds 7 --cli
    .venv/bin/python benchmarks/decode_ct2.py --sentences 100 --rounds 1 --out /tmp/d.json

Results: `benchmarks/results/decode_ct2.json`. `ctranslate2` is a benchmark-only dependency
(`pip install ctranslate2`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from vanilla_transformer.data.numbers import DEFAULT_SIZES, number_pairs, split_numbers
from vanilla_transformer.data.tokenizer import EOS
from vanilla_transformer.inference.evaluate import MAX_EXTRA, translate_sentences
from vanilla_transformer.training.run_folder import load_translator

ROOT = Path(__file__).resolve().parents[1]
TRANSLATOR = ROOT / "docs" / "assets" / "translator"
RESULTS = ROOT / "benchmarks" / "results" / "decode_ct2.json"
ALPHA = 0.6


def convert_with_specs(model: Any, tokenizer: Any, out: Path) -> Path:
    """The package's model as a CTranslate2 folder, written with CTranslate2's spec API."""
    import numpy as np
    from ctranslate2.specs import transformer_spec

    def arr(t: torch.Tensor) -> Any:
        return t.detach().float().cpu().numpy()

    def linear(spec: Any, lin: torch.nn.Linear) -> None:
        spec.weight = arr(lin.weight)
        if lin.bias is not None:
            spec.bias = arr(lin.bias)

    def fused(spec: Any, lins: Any) -> None:
        spec.weight = np.concatenate([arr(m.weight) for m in lins])
        spec.bias = np.concatenate([arr(m.bias) for m in lins])

    def norm(spec: Any, ln: Any) -> None:
        spec.gamma, spec.beta = arr(ln.weight), arr(ln.bias)

    c = model.config
    if c.layer_norm != "torch" or c.norm_first or c.final_norm:
        raise SystemExit("this converter handles post-norm models with torch's LayerNorm only")
    enc = transformer_spec.TransformerEncoderSpec(c.N, c.h, pre_norm=False)
    dec = transformer_spec.TransformerDecoderSpec(c.N, c.h, pre_norm=False)
    enc.embeddings[0].weight = arr(model.src_embed[0].lut.weight)
    dec.embeddings.weight = arr(model.tgt_embed[0].lut.weight)
    enc.position_encodings.encodings = arr(model.src_embed[1].pe[0])
    dec.position_encodings.encodings = arr(model.tgt_embed[1].pe[0])
    for spec, layer in zip(enc.layer, model.encoder.layers, strict=True):
        fused(spec.self_attention.linear[0], layer.self_attn.linears[:3])
        linear(spec.self_attention.linear[1], layer.self_attn.linears[3])
        norm(spec.self_attention.layer_norm, layer.sublayer[0].norm)
        linear(spec.ffn.linear_0, layer.feed_forward.w_1)
        linear(spec.ffn.linear_1, layer.feed_forward.w_2)
        norm(spec.ffn.layer_norm, layer.sublayer[1].norm)
    for spec, layer in zip(dec.layer, model.decoder.layers, strict=True):
        fused(spec.self_attention.linear[0], layer.self_attn.linears[:3])
        linear(spec.self_attention.linear[1], layer.self_attn.linears[3])
        norm(spec.self_attention.layer_norm, layer.sublayer[0].norm)
        linear(spec.attention.linear[0], layer.src_attn.linears[0])
        fused(spec.attention.linear[1], layer.src_attn.linears[1:3])
        linear(spec.attention.linear[2], layer.src_attn.linears[3])
        norm(spec.attention.layer_norm, layer.sublayer[1].norm)
        linear(spec.ffn.linear_0, layer.feed_forward.w_1)
        linear(spec.ffn.linear_1, layer.feed_forward.w_2)
        norm(spec.ffn.layer_norm, layer.sublayer[2].norm)
    linear(dec.projection, model.generator.proj)
    spec = transformer_spec.TransformerSpec(enc, dec)
    spec.config.layer_norm_epsilon = model.encoder.layers[0].sublayer[0].norm.eps
    vocab = [tokenizer.tokenizer.id_to_token(i) or f"<unused{i}>" for i in range(c.tgt_vocab)]
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.validate()
    spec.optimize(quantization=None)
    out.mkdir(parents=True, exist_ok=True)
    spec.save(str(out))
    return out


def convert(model: Any, tokenizer: Any, out: Path) -> tuple[Path, str]:
    """The CTranslate2 folder, written by the package's converter where it has one."""
    out.mkdir(parents=True, exist_ok=True)
    try:
        from vanilla_transformer.interop.ctranslate2 import export_ctranslate2
    except ImportError:
        return convert_with_specs(model, tokenizer, out), "the spec API, in this script"
    export_ctranslate2(model, tokenizer, out)
    return out, "vanilla_transformer.interop.ctranslate2.export_ctranslate2"


def phrases(count: int) -> list[str]:
    return [s for s, _ in number_pairs(split_numbers(DEFAULT_SIZES, seed=0)["test"][:count], "de")]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def cpu_timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall seconds and CPU seconds of this process (all its threads) for `fn()`."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def cli_seconds(sentences: list[str], beam: int, threads: int, repeats: int) -> dict[str, Any]:
    """Wall time of `vanilla-transformer translate RUN --input FILE`, a fresh process each
    time, and of the same command on one line (start-up and loading)."""
    exe = str(Path(sys.executable).parent / "vanilla-transformer")
    with tempfile.TemporaryDirectory() as tmp:
        many, one = Path(tmp, "in.txt"), Path(tmp, "one.txt")
        many.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        one.write_text(sentences[0] + "\n", encoding="utf-8")
        times: dict[str, list[float]] = {"all": [], "one_line": []}
        cpu: dict[str, list[float]] = {"all": [], "one_line": []}
        for _ in range(repeats):
            for name, path in (("all", many), ("one_line", one)):
                out = Path(tmp, f"out-{name}.txt")
                out.unlink(missing_ok=True)
                cmd = [exe, "translate", str(TRANSLATOR), "--input", str(path), "--output",
                       str(out), "--beam", str(beam), "--threads", str(threads),
                       "--no-progress"]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                seconds, done = timed(lambda cmd=cmd: subprocess.run(cmd, capture_output=True))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if done.returncode != 0:
                    raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode()}")
                times[name].append(seconds)
                cpu[name].append(after.ru_utime + after.ru_stime
                                 - before.ru_utime - before.ru_stime)
    return {"command": (f"vanilla-transformer translate docs/assets/translator --input FILE "
                        f"--output OUT --beam {beam} --threads {threads} --no-progress"),
            "seconds_all": statistics.median(times["all"]),
            "seconds_one_line": statistics.median(times["one_line"]),
            "cpu_seconds_all": statistics.median(cpu["all"]),
            "cpu_seconds_one_line": statistics.median(cpu["one_line"]), "runs": times,
            "cpu_runs": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--cli", action="store_true", help="also time the command line")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    import ctranslate2

    torch.set_num_threads(args.threads)
    model, tokenizer = load_translator(TRANSLATOR)
    sources = phrases(args.sentences)
    longest = max(len(tokenizer.encode(s)) + 1 for s in sources)
    with tempfile.TemporaryDirectory() as tmp:
        folder, converter = convert(model, tokenizer, Path(tmp) / "ct2")
        translator = ctranslate2.Translator(str(folder), device="cpu", intra_threads=args.threads,
                                            inter_threads=1)
        adds_eos = json.loads((folder / "config.json").read_text()).get("add_source_eos", False)

    piece, index = tokenizer.tokenizer.id_to_token, tokenizer.tokenizer.token_to_id

    def ct2_pieces(texts: list[str]) -> list[list[str]]:
        end = [] if adds_eos else [piece(EOS)]
        return [[piece(i) for i in tokenizer.encode(s)] + end for s in texts]

    def ct2_translate(pieces: list[list[str]], beam: int) -> list[str]:
        results = translator.translate_batch(
            pieces, beam_size=beam, length_penalty=ALPHA,
            max_decoding_length=longest + MAX_EXTRA)
        return [tokenizer.decode([index(p) for p in r.hypotheses[0]]) for r in results]

    pre_tokenised = ct2_pieces(sources)
    report: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "threads": args.threads, "torch": torch.__version__,
                    "ctranslate2": ctranslate2.__version__, "cpus": os.cpu_count()},
        "date": datetime.date.today().isoformat(),
        "translator": "docs/assets/translator", "converter": converter,
        "sentences": len(sources), "rounds": args.rounds,
        "command": "  ".join(["python", *sys.argv]).replace("  ", " "),
        "decoding": {},
    }
    with torch.inference_mode():
        for beam in args.beams:
            variants: dict[str, Callable[[], list[str]]] = {
                "before": lambda beam=beam: translate_sentences(
                    model, tokenizer, sources, beam_size=beam, fast=False, batch_size=64,
                    max_tokens=None),
                "after": lambda beam=beam: translate_sentences(model, tokenizer, sources,
                                                               beam_size=beam),
                "ct2": lambda beam=beam: ct2_translate(ct2_pieces(sources), beam),
                "ct2_decode": lambda beam=beam: ct2_translate(pre_tokenised, beam),
            }
            outputs = {name: fn() for name, fn in variants.items()}  # warm-up
            times: dict[str, list[float]] = {name: [] for name in variants}
            cpu: dict[str, list[float]] = {name: [] for name in variants}
            load = [os.getloadavg()[0]]
            for _ in range(args.rounds):
                for name, fn in variants.items():
                    seconds, cpu_seconds = cpu_timed(fn)
                    times[name].append(seconds)
                    cpu[name].append(cpu_seconds)
            load.append(os.getloadavg()[0])
            median = {name: statistics.median(t) for name, t in times.items()}
            cpu_median = {name: statistics.median(t) for name, t in cpu.items()}
            entry = {
                "median_seconds": median,
                "ratio_to_ct2": {name: median[name] / median["ct2"] for name in ("before", "after")},
                "ratio_to_ct2_decode": {name: median[name] / median["ct2_decode"]
                                        for name in ("before", "after")},
                "median_cpu_seconds": cpu_median,
                "cpu_ratio_to_ct2": {name: cpu_median[name] / cpu_median["ct2"]
                                     for name in ("before", "after")},
                "speedup_after_over_before": median["before"] / median["after"],
                "agree": {"after_vs_before": sum(a == b for a, b in zip(
                              outputs["after"], outputs["before"], strict=True)),
                          "after_vs_ct2": sum(a == b for a, b in zip(
                              outputs["after"], outputs["ct2"], strict=True))},
                "loadavg_before_after": load, "runs": times, "cpu_runs": cpu,
            }
            report["decoding"]["greedy" if beam == 1 else f"beam{beam}"] = entry
            print(f"beam {beam}: " + ", ".join(f"{k} {v:.3f} s" for k, v in median.items())
                  + f"; before/ct2 {entry['ratio_to_ct2']['before']:.2f}, after/ct2 "
                  f"{entry['ratio_to_ct2']['after']:.2f} (CPU time: "
                  f"{entry['cpu_ratio_to_ct2']['before']:.2f}, "
                  f"{entry['cpu_ratio_to_ct2']['after']:.2f}); agree {entry['agree']}", flush=True)
    if args.cli:
        report["cli"] = {f"beam{beam}": cli_seconds(sources, beam, args.threads,
                                                    max(1, args.rounds // 2))
                         for beam in args.beams}
        for name, entry in report["cli"].items():
            print(f"cli {name}: {entry['seconds_all']:.2f} s for {len(sources)} lines, "
                  f"{entry['seconds_one_line']:.2f} s for one (CPU time "
                  f"{entry['cpu_seconds_all']:.2f} s and {entry['cpu_seconds_one_line']:.2f} s)",
                  flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
