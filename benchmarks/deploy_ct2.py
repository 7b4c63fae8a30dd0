"""The shipped number translator in CTranslate2: float32 against int8, and parity with the package.

Run by hand (never by the test suite), ideally on an otherwise idle machine:

    nice .venv/bin/python benchmarks/deploy_ct2.py

It exports `docs/assets/translator` with `export_ctranslate2` (float32, and int8 weights), and on
the 1000 test phrases of the translator's corpus (`number_corpus("de", seed=0)["test"]`), on one
CPU thread, records:

- for each compute type (`float32`, `int8`) and beam (1, 4): the best and the median of seven
  wall times (the four settings interleaved) of one `Translator.translate_batch` call over all
  phrases (batches of 64, CTranslate2's `length_penalty=0.6` at beam 4), and the BLEU
  (sacrebleu, character tokenisation: most German numbers are one word), chrF and exact match
  of its outputs;
- the size of `model.bin` for each;
- parity with the package's `translate_sentences` (its defaults: beam 4, alpha 0.6, batches of
  64): how many of the 1000 outputs are equal, greedy, at beam 4 with alpha 0 on both sides, at
  beam 4 with alpha 0.6 under CTranslate2's own penalty, and with
  `translate_ctranslate2(..., rescore=True)`.

Results go to `benchmarks/results/deploy_ct2.json`; the Deployment page reads them through
`docs/numbers/deployment.py`.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import ctranslate2
import torch

from vanilla_transformer.data.numbers import number_corpus
from vanilla_transformer.inference.evaluate import score_translations, translate_sentences
from vanilla_transformer.interop.ctranslate2 import export_ctranslate2, translate_ctranslate2
from vanilla_transformer.training.run_folder import load_translator

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "deploy_ct2.json"
REPEATS = 7


def main() -> None:
    torch.set_num_threads(1)
    load = os.getloadavg()[0]  # a busy machine slows every setting: recorded with the times
    model, tokenizer = load_translator(ROOT / "docs" / "assets" / "translator")
    test = number_corpus("de", seed=0)["test"]
    sources, references = [s for s, _ in test], [t for _, t in test]
    pieces = [tokenizer.tokens(s) for s in sources]
    folder = Path(tempfile.mkdtemp())
    sizes = {}
    for name, quantization in (("float32", None), ("int8", "int8")):
        (folder / name).mkdir()
        paths = export_ctranslate2(model, tokenizer, folder / name, quantization=quantization)
        sizes[name] = paths["model"].stat().st_size

    translators = {name: ctranslate2.Translator(str(folder / name), device="cpu",
                                                compute_type=name, inter_threads=1,
                                                intra_threads=1)
                   for name in ("float32", "int8")}
    settings = [(name, beam) for name in translators for beam in (1, 4)]
    times: dict[tuple[str, int], list[float]] = {key: [] for key in settings}
    outputs: dict[tuple[str, int], list[str]] = {}
    for _ in range(REPEATS):  # interleaved, so that a slow spell of the machine hits all four
        for name, beam in settings:
            start = time.perf_counter()
            results = translators[name].translate_batch(pieces, beam_size=beam,
                                                        max_batch_size=64, length_penalty=0.6)
            outputs[name, beam] = [tokenizer.tokenizer.decode(
                [tokenizer.tokenizer.token_to_id(t) for t in r.hypotheses[0]]) for r in results]
            times[name, beam].append(time.perf_counter() - start)
    runs = []
    for name, beam in settings:
        scores = score_translations(outputs[name, beam], references, bleu_tokenize="char")
        runs.append({"compute_type": name, "beam": beam, "seconds": min(times[name, beam]),
                     "median_seconds": statistics.median(times[name, beam]),
                     "bleu": round(scores.bleu, 2), "chrf": round(scores.chrf, 2),
                     "exact_match": scores.exact_match})
        print(runs[-1], flush=True)

    translator = translators["float32"]
    package = {(beam, alpha): translate_sentences(model, tokenizer, sources, beam_size=beam,
                                                  alpha=alpha)
               for beam, alpha in ((1, 0.6), (4, 0.0), (4, 0.6))}

    def equal(a: list[str], b: list[str]) -> int:
        return sum(x == y for x, y in zip(a, b, strict=True))

    parity = {
        "greedy": equal(package[1, 0.6], translate_ctranslate2(
            translator, tokenizer, sources, beam_size=1)),
        "beam_alpha_0": equal(package[4, 0.0], translate_ctranslate2(
            translator, tokenizer, sources, beam_size=4, alpha=0.0, rescore=False)),
        "beam_ctranslate2_penalty": equal(package[4, 0.6], translate_ctranslate2(
            translator, tokenizer, sources, beam_size=4, alpha=0.6, rescore=False)),
        "beam_rescored": equal(package[4, 0.6], translate_ctranslate2(
            translator, tokenizer, sources, beam_size=4, alpha=0.6, rescore=True)),
        "int8_greedy_same_as_float32": equal(outputs["int8", 1], outputs["float32", 1]),
        "int8_beam_same_as_float32": equal(outputs["int8", 4], outputs["float32", 4]),
        "total": len(sources),
    }
    print(parity)
    RESULTS.write_text(json.dumps({
        "what": "docs/assets/translator in CTranslate2, 1000 test phrases, one CPU thread",
        "command": "nice .venv/bin/python benchmarks/deploy_ct2.py",
        "ctranslate2": ctranslate2.__version__,
        "torch": torch.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_at_start": round(load, 2),
        "repeats": REPEATS,
        "model_bin_bytes": sizes,
        "runs": runs,
        "parity": parity,
    }, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
