"""Train the number translator of the docs' "Try it" page and write it to docs/assets/translator/.

The page runs the model in the reader's browser with onnxruntime-web, so its files are part of the
site's sources and kept in git; the docs build trains nothing. This script makes them again, from
scratch and with fixed seeds:

1. the English-to-German number corpus (`number_corpus`, default sizes, split seed 0);
2. a translator trained with the default settings of `translate train` (`paper-small`,
   `TranslationConfig()`, seed 0, one CPU thread), its last checkpoints averaged (section 6.1);
3. greedy exact match on the 1000 test numbers, none of which was seen in training;
4. into docs/assets/translator/: `encoder.onnx` and `decoder.onnx` (`export_onnx`), the
   `tokenizer.json` that `tokenizers` writes, `model.pt` (a `save_checkpoint` file, readable with
   `torch.load(weights_only=True)`), and `manifest.json`: settings, scores, and the size and
   SHA-256 of every file. Every file is written atomically.

The positional-encoding table is a constant of both graphs, so the model is built with
`max_len=128` rows instead of 5000: the longest number of the corpus is about 20 tokens, the
sinusoids of the first 128 positions are the same, and each graph is 1.2 MB smaller.

    .venv/bin/python scripts/build_translator_demo.py            # about 3 minutes on one core

tests/docs/test_translator_assets.py checks that the committed files match the package's code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from vanilla_transformer._io import atomic_write
from vanilla_transformer.data.numbers import (
    DEFAULT_ALWAYS_FIRST,
    DEFAULT_LIMIT,
    DEFAULT_SIZES,
    number_corpus,
)
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, UNK
from vanilla_transformer.inference.evaluate import (
    MAX_EXTRA,
    score_translations,
    translate_sentences,
)
from vanilla_transformer.interop.onnx import export_onnx
from vanilla_transformer.training.checkpoints import save_checkpoint
from vanilla_transformer.training.translation import (
    DEFAULT_PRESET,
    TranslationConfig,
    train_translation,
)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "assets" / "translator"
FORMAT = "vanilla-transformer-translator-demo"
LANG, CORPUS_SEED, MAX_LEN, OPSET = "de", 0, 128, 18
FILES = ("encoder.onnx", "decoder.onnx", "tokenizer.json", "model.pt")


def file_facts(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_json(path: Path, data: object) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def build(out: Path, threads: int) -> dict[str, object]:
    torch.set_num_threads(threads)
    corpus = number_corpus(LANG, seed=CORPUS_SEED)
    config = TranslationConfig()
    with tempfile.TemporaryDirectory() as run_dir:
        run = train_translation(corpus["train"], corpus["valid"], run_dir, preset=DEFAULT_PRESET,
                                model_options={"max_len": MAX_LEN}, config=config,
                                log=lambda line: print(line, flush=True))
    model, tokenizer = run.model.eval(), run.tokenizer
    sources, references = zip(*corpus["test"])
    hyps = translate_sentences(model, tokenizer, list(sources), beam_size=1)
    exact = score_translations(hyps, list(references)).exact_match
    print(f"greedy exact match on {len(hyps)} unseen test numbers: {exact:.1f} %", flush=True)

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as graphs:  # export_onnx writes in place; move whole files
        for path in export_onnx(model, graphs, opset=OPSET, attention_weights=True).values():
            data = path.read_bytes()
            atomic_write(out / path.name, lambda f, data=data: f.write(data))
    tokenizer.save(out / "tokenizer.json")
    save_checkpoint(out / "model.pt", model, steps=run.step, averaged=run.averaged,
                    tokenizer=tokenizer.tokenizer.to_str())
    manifest = {
        "format": FORMAT,
        "version": 1,
        "source_language": "en",
        "target_language": LANG,
        "corpus": {"sizes": dict(DEFAULT_SIZES), "seed": CORPUS_SEED, "limit": DEFAULT_LIMIT,
                   "always_train_below": DEFAULT_ALWAYS_FIRST},
        "preset": DEFAULT_PRESET,
        "model": model.config.to_dict(),
        "training": config.to_dict(),
        "steps": run.step,
        "averaged": run.averaged,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": tokenizer.vocab_size,
        "test_exact_match": round(exact, 2),
        "test_size": len(hyps),
        "decoding": {"start_symbol": BOS, "end_symbol": EOS, "pad_symbol": PAD,
                     "unk_symbol": UNK, "max_extra": MAX_EXTRA,
                     "max_src_tokens": MAX_LEN - MAX_EXTRA},
        "onnx": {"opset": OPSET, "encoder_inputs": ["src", "src_mask"],
                 "decoder_inputs": ["memory", "src_mask", "ys"],
                 "decoder_outputs": ["log_probs", "cross_attention"]},
        "files": {name: file_facts(out / name) for name in FILES},
    }
    write_json(out / "manifest.json", manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (default %(default)s)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    manifest = build(args.out, args.threads)
    for name, facts in manifest["files"].items():
        print(f"wrote {args.out / name}: {facts['bytes']:,} bytes")
    print(f"{manifest['parameters']:,} parameters, {manifest['test_exact_match']} % exact match; "
          f"{time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
