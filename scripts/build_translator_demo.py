"""Train the number translator of the docs' "Try it" page and write it to docs/assets/translator/.

The page runs the model in the reader's browser with onnxruntime-web, so its files are part of the
site's sources and kept in git; the docs build trains nothing. This script makes them again, from
scratch and with fixed seeds. Its parts (`--only`, all but `graphs` by default):
- `main`: the English-to-German number corpus (`number_corpus`, default sizes, split seed 0); a
  translator trained with the default settings of `translate train` (`paper-small`,
  `TranslationConfig()`, seed 0, one CPU thread), its last checkpoints averaged (section 6.1);
  greedy exact match on the 1000 test numbers, none of which was seen in training; written into
  docs/assets/translator/ as `encoder.onnx` and `decoder.onnx` (`export_onnx` with every
  attention map as an output), the `tokenizer.json` that `tokenizers` writes and `model.pt` (a
  `save_checkpoint` file, readable with `torch.load(weights_only=True)`);
- `graphs`: the two graphs of the committed `model.pt` exported again, without training;
- `replay`: for the page's training slider, a second run of the same recipe with its
  checkpoints kept: the untrained model (step 0), steps 100, 200, 400 and 800, and the run's
  final average, each as `steps/NNNN/` with its two graphs and its `model.pt`;
- `fr`: the same recipe for English to French, into `fr/`.
Every build also writes `train_numbers.json` (the training split's numbers at or above 1000;
every number below 1000 is in it) for the page's "seen in training" badge, and `manifest.json`:
settings, scores, and the size and SHA-256 of every file, keeping what it said of the parts
not built. Every file is written atomically.

The positional-encoding table is a constant of both graphs, so the model is built with
`max_len=128` rows instead of 5000: the longest number of the corpus is about 20 tokens, the
sinusoids of the first 128 positions are the same, and each graph is 1.2 MB smaller.

    .venv/bin/python scripts/build_translator_demo.py            # about 10 minutes on one core

The trained models ship inside the package as the translators `numbers-de` and `numbers-fr`:
their `model.pt` and `tokenizer.json` (and the German one's `manifest.json` and
`train_numbers.json`) are stored once, in src/vanilla_transformer/pretrained/numbers-de/ and
numbers-fr/, and the files of the same names in docs/assets/translator/ and its fr/ are
symbolic links to them, so the site serves the very bytes the wheel ships. The script writes
through those links.

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
    split_numbers,
)
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, UNK
from vanilla_transformer.inference.evaluate import (
    MAX_EXTRA,
    score_translations,
    translate_sentences,
)
from vanilla_transformer.interop.onnx import ALL_ATTENTION_OUTPUTS, export_onnx
from vanilla_transformer.model.encoder_decoder import make_model_from_config
from vanilla_transformer.training.checkpoints import load_checkpoint, save_checkpoint
from vanilla_transformer.training.translation import (
    DEFAULT_PRESET,
    TranslationConfig,
    load_train_state,
    train_translation,
)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "assets" / "translator"
FORMAT = "vanilla-transformer-translator-demo"
LANG, CORPUS_SEED, MAX_LEN, OPSET = "de", 0, 128, 18
SECOND_LANG = "fr"
FILES = ("encoder.onnx", "decoder.onnx", "tokenizer.json", "model.pt")
STEP_FILES = ("encoder.onnx", "decoder.onnx", "model.pt")
EARLY_STEPS = (0, 100, 200, 400, 800)  # the training slider's points before the final average


def file_facts(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def real(path: Path) -> Path:
    """The file a link of the site's folder points to: the package's own copy of the weights,
    tokenizers, manifest and seen numbers (src/vanilla_transformer/pretrained/), which the site
    serves through links instead of a second copy; a write goes to it, not over the link."""
    return path.resolve() if path.is_symlink() else path


def write_json(path: Path, data: object) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(real(path), lambda f: f.write(text.encode("utf-8")))


def export_graphs(model: torch.nn.Module, out: Path) -> None:
    """`encoder.onnx` and `decoder.onnx` with every attention map, written whole into `out`."""
    with tempfile.TemporaryDirectory() as graphs:  # export_onnx writes in place; move whole files
        for path in export_onnx(model, graphs, opset=OPSET, attention_weights="all").values():
            data = path.read_bytes()
            atomic_write(out / path.name, lambda f, data=data: f.write(data))


def train(lang: str, run_dir: str, keep: Path | None) -> tuple[object, TranslationConfig]:
    """Train on `lang`'s corpus; copy the checkpoints of `EARLY_STEPS` into `keep` as they come."""
    corpus = number_corpus(lang, seed=CORPUS_SEED)
    config = TranslationConfig()

    def log(line: str) -> None:
        print(f"[{lang}] {line}", flush=True)
        step = int(line.split(":")[0].removeprefix("step "))
        if keep is not None and step in EARLY_STEPS:
            src = Path(run_dir) / "checkpoints" / f"step-{step:07d}.pt"
            (keep / src.name).write_bytes(src.read_bytes())

    run = train_translation(corpus["train"], corpus["valid"], run_dir, preset=DEFAULT_PRESET,
                            model_options={"max_len": MAX_LEN}, config=config, log=log)
    return run, config


def exact_match_on_test(model: torch.nn.Module, tokenizer: object, lang: str) -> float:
    sources, references = zip(*number_corpus(lang, seed=CORPUS_SEED)["test"])
    hyps = translate_sentences(model, tokenizer, list(sources), beam_size=1)
    exact = score_translations(hyps, list(references)).exact_match
    print(f"[{lang}] greedy exact match on {len(hyps)} unseen test numbers: {exact:.1f} %",
          flush=True)
    return exact


def write_early_steps(run: object, config: TranslationConfig, kept: Path, out: Path) -> list:
    """`steps/NNNN/`: the graphs and `model.pt` of the model at each of `EARLY_STEPS`."""
    tokenizer = run.tokenizer
    entries = []
    for step in EARLY_STEPS:
        if step == 0:  # the model train_translation built, before its first step
            torch.manual_seed(config.seed)
            model = make_model_from_config(run.model.config)
        else:
            model = make_model_from_config(run.model.config)
            model.load_state_dict(load_train_state(kept / f"step-{step:07d}.pt")["model"])
        model.eval()
        folder = out / "steps" / f"{step:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        export_graphs(model, folder)
        save_checkpoint(folder / "model.pt", model, steps=step, averaged=[step],
                        tokenizer=tokenizer.tokenizer.to_str())
        example = translate_sentences(model, tokenizer, ["four hundred and forty-one"],
                                      beam_size=1)[0]
        print(f"step {step}: four hundred and forty-one -> {example!r}", flush=True)
        entries.append({"step": step, "folder": f"steps/{step:04d}/",
                        "files": {name: file_facts(folder / name) for name in STEP_FILES}})
    return entries


def write_model(model: torch.nn.Module, tokenizer: object, folder: Path, **metadata) -> dict:
    """The graphs, `tokenizer.json` and `model.pt` of one model; their sizes and hashes."""
    folder.mkdir(parents=True, exist_ok=True)
    export_graphs(model, folder)
    tokenizer.save(real(folder / "tokenizer.json"))
    save_checkpoint(real(folder / "model.pt"), model, tokenizer=tokenizer.tokenizer.to_str(),
                    **metadata)
    return {name: file_facts(folder / name) for name in FILES}


def build_main(out: Path, manifest: dict) -> None:
    """Train the German translator and write it at the top of `out`."""
    with tempfile.TemporaryDirectory() as run_dir:
        run, config = train(LANG, run_dir, None)
    model, tokenizer = run.model.eval(), run.tokenizer
    exact = exact_match_on_test(model, tokenizer, LANG)
    write_model(model, tokenizer, out, steps=run.step, averaged=run.averaged)
    manifest.update({
        "model": model.config.to_dict(), "training": config.to_dict(), "steps": run.step,
        "averaged": run.averaged, "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": tokenizer.vocab_size, "test_exact_match": round(exact, 2),
        "test_size": DEFAULT_SIZES["test"]})


def build_graphs(out: Path, manifest: dict) -> None:
    """Export the graphs of the committed German model again, without training."""
    model, _ = load_checkpoint(out / "model.pt")
    export_graphs(model.eval(), out)


def build_replay(out: Path, manifest: dict) -> None:
    """Train the German translator again, keeping the checkpoints of `EARLY_STEPS`, and write
    them and the run's final average as `steps/NNNN/` (the tokenizer is the main model's)."""
    with tempfile.TemporaryDirectory() as run_dir, tempfile.TemporaryDirectory() as kept:
        run, config = train(LANG, run_dir, Path(kept))
        exact = exact_match_on_test(run.model.eval(), run.tokenizer, LANG)
        entries = write_early_steps(run, config, Path(kept), out)
    folder = out / "steps" / f"{run.step:04d}"
    folder.mkdir(parents=True, exist_ok=True)
    export_graphs(run.model, folder)
    save_checkpoint(folder / "model.pt", run.model, steps=run.step, averaged=run.averaged,
                    tokenizer=run.tokenizer.tokenizer.to_str())
    entries.append({"step": run.step, "averaged": run.averaged, "folder": f"steps/{run.step:04d}/",
                    "test_exact_match": round(exact, 2),
                    "files": {name: file_facts(folder / name) for name in STEP_FILES}})
    manifest["training_steps"] = entries


def build_second_language(out: Path, manifest: dict) -> None:
    """The English-to-French translator, trained the same way, in `fr/`."""
    with tempfile.TemporaryDirectory() as run_dir:
        run, _ = train(SECOND_LANG, run_dir, None)
    model, tokenizer = run.model.eval(), run.tokenizer
    exact = exact_match_on_test(model, tokenizer, SECOND_LANG)
    files = write_model(model, tokenizer, out / SECOND_LANG, steps=run.step,
                        averaged=run.averaged)
    manifest.setdefault("languages", {})[SECOND_LANG] = {
        "folder": f"{SECOND_LANG}/", "test_exact_match": round(exact, 2), "steps": run.step,
        "averaged": run.averaged, "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": tokenizer.vocab_size, "files": files}


PARTS = {"main": build_main, "graphs": build_graphs, "replay": build_replay,
         "fr": build_second_language}


def build(out: Path, threads: int, parts: list[str]) -> dict[str, object]:
    """Build `parts` into `out`, keeping what the manifest says of the others."""
    torch.set_num_threads(threads)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for part in parts:
        PARTS[part](out, manifest)
    split = split_numbers(DEFAULT_SIZES, seed=CORPUS_SEED)
    seen = sorted(n for n in split["train"] if n >= DEFAULT_ALWAYS_FIRST)
    text = json.dumps({"below": DEFAULT_ALWAYS_FIRST, "numbers": seen}, separators=(",", ":"))
    atomic_write(real(out / "train_numbers.json"), lambda f: f.write(text.encode("utf-8") + b"\n"))
    manifest.update({
        "format": FORMAT,
        "version": 2,
        "source_language": "en",
        "target_language": LANG,
        "corpus": {"sizes": dict(DEFAULT_SIZES), "seed": CORPUS_SEED, "limit": DEFAULT_LIMIT,
                   "always_train_below": DEFAULT_ALWAYS_FIRST},
        "preset": DEFAULT_PRESET,
        "decoding": {"start_symbol": BOS, "end_symbol": EOS, "pad_symbol": PAD,
                     "unk_symbol": UNK, "max_extra": MAX_EXTRA,
                     "max_src_tokens": MAX_LEN - MAX_EXTRA},
        "onnx": {"opset": OPSET, "encoder_inputs": ["src", "src_mask"],
                 "encoder_outputs": ["memory", *ALL_ATTENTION_OUTPUTS["encoder"]],
                 "decoder_inputs": ["memory", "src_mask", "ys"],
                 "decoder_outputs": ["log_probs", "cross_attention",
                                     *ALL_ATTENTION_OUTPUTS["decoder"]]},
        "files": {name: file_facts(out / name) for name in FILES},
        "seen": {"file": "train_numbers.json", **file_facts(out / "train_numbers.json")},
    })
    languages = manifest.setdefault("languages", {})
    languages[LANG] = {"folder": "", "test_exact_match": manifest["test_exact_match"]}
    manifest["languages"] = {LANG: languages.pop(LANG), **languages}
    write_json(out / "manifest.json", manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (default %(default)s)")
    parser.add_argument("--only", default="main,replay,fr",
                        help="comma-separated parts to build: main (train the German model), "
                             "graphs (export the committed German model's graphs again), "
                             "replay (a second German run with its checkpoints), fr "
                             "(default %(default)s)")
    args = parser.parse_args(argv)
    parts = [p for p in args.only.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; choose from {sorted(PARTS)}")
    start = time.perf_counter()
    manifest = build(args.out, args.threads, parts)
    for name, facts in manifest["files"].items():
        print(f"wrote {args.out / name}: {facts['bytes']:,} bytes")
    print(f"{manifest['parameters']:,} parameters, {manifest['test_exact_match']} % exact match; "
          f"{time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
