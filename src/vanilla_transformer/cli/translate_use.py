"""The `translate` actions that read or use a run: `numbers` (a corpus), `RUN [TEXT ...]`
(translate) and `eval` (score); `export` is in `cli.translate_export`.

None writes over a file it reads, a file of a run folder, or a file it did not create, unless
`--overwrite` is given (a file it reads, or a run's own file, never): `cli.outputs` checks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..config import AMP_MODES, DEVICES
from ..pretrained import TRANSLATORS
from .outputs import OVERWRITE_HELP, check_folder_outputs, check_output, make_folder

__all__ = ["RUN_HELP", "MAX_BEAM", "add_numbers_arguments", "add_run_arguments", "add_eval_arguments",
           "run_numbers", "run_run", "run_eval"]

RUN_HELP = ("a folder written by 'translate train', or the name of a trained translator "
            "that ships with the package: " + ", ".join(TRANSLATORS))
"""What RUN may be, in every action's `--help`."""

MAX_BEAM = 1024
"""The widest beam `--beam` accepts."""

MAX_BATCH = 1_000_000
"""The largest `--batch-size` and `--max-tokens` accepted."""

_CHUNK = 64
"""Lines of TEXT or --input above which `RUN` shows a progress bar."""



def add_numbers_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lang", choices=("de", "fr"), default="de",
                        help="target language (default %(default)s); the source is English")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder for train.tsv, valid.tsv and test.tsv")
    parser.add_argument("--seed", type=int, default=0, help="split seed (default %(default)s)")
    parser.add_argument("--limit", type=int, default=1_000_000,
                        help="numbers come from range(LIMIT) (default %(default)s)")
    parser.add_argument("--always-train", type=int, default=1000,
                        help="every number below this goes to train.tsv (default %(default)s)")
    for name, size in (("train", 20_000), ("valid", 500), ("test", 1_000)):
        parser.add_argument(f"--{name}-size", type=int, default=size,
                            help=f"numbers in {name}.tsv (default %(default)s)")
    parser.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)


def _add_decoding(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--beam", type=int, default=4, help="beam size; 1 is greedy (default 4)")
    parser.add_argument("--alpha", type=float, default=0.6,
                        help="length penalty exponent (default %(default)s)")
    parser.add_argument("--checkpoint", choices=("averaged", "last"), default="averaged",
                        help="the averaged final model or the last checkpoint (default averaged)")
    parser.add_argument("--device", choices=DEVICES, default="auto",
                        help="where to decode: auto (default) is cuda when PyTorch sees a "
                             "GPU, else cpu")
    parser.add_argument("--amp", choices=AMP_MODES, default="off",
                        help="mixed precision of decoding (default off); fp16 needs cuda")
    parser.add_argument("--batch-size", type=int, default=None, metavar="N",
                        help="at most N sentences decoded together (default 512); sentences "
                             "are sorted by length first")
    parser.add_argument("--max-tokens", type=int, default=None, metavar="N",
                        help="at most N source tokens, padding included, decoded together "
                             "(default 8192)")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="PyTorch's intra-op threads on the CPU (default: PyTorch's "
                             "choice, the machine's cores)")
    parser.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help=RUN_HELP)
    parser.add_argument("text", nargs="*", help="sentences to translate (default: stdin)")
    parser.add_argument("--input", metavar="FILE",
                        help="translate each line of FILE instead of stdin")
    parser.add_argument("--output", metavar="FILE",
                        help="write the translations to FILE instead of stdout")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar on stderr (shown for more than 64 lines of "
                             "TEXT or --input)")
    parser.add_argument("--nbest", type=int, default=1, metavar="K",
                        help="print the K best translations of each line, best first "
                             "(K at most --beam; default 1)")
    parser.add_argument("--scores", action="store_true",
                        help="print 'score<TAB>translation': the log-probability divided by "
                             "the length penalty, as beam search ranks them")
    parser.add_argument("--verbose", action="store_true",
                        help="for each line print S-i (the source), then for each translation "
                             "H-i (score, pieces), D-i (score, text) and P-i (the "
                             "log-probability of each piece); i counts lines from 0")
    _add_decoding(parser)


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help=RUN_HELP)
    parser.add_argument("--data", required=True, metavar="FILE", help="pairs to score (TSV)")
    _add_decoding(parser)
    parser.add_argument("--bleu-tokenize", default="13a", metavar="NAME",
                        help="sacrebleu's BLEU tokenizer (default 13a, its standard for words; "
                             "char for text without spaces); the signature names it")
    parser.add_argument("--output", metavar="FILE",
                        help="also write the translations to FILE, one a line")
    parser.add_argument("--json", metavar="FILE", dest="json_path",
                        help="also write the scores and their signatures to FILE as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def run_numbers(args: argparse.Namespace) -> int:
    from ..data.numbers import number_corpus, write_tsv

    sizes = {name: getattr(args, f"{name}_size") for name in ("train", "valid", "test")}
    if args.seed < 0:  # Python's random.seed(-n) is seed(n): two seeds, one corpus
        raise ValueError(f"--seed must be an int >= 0, got {args.seed}")
    folder = make_folder(check_folder_outputs(args.out, [f"{n}.tsv" for n in sizes],
                                                args.overwrite))
    corpus = number_corpus(args.lang, sizes, limit=args.limit, seed=args.seed,
                           always_first=args.always_train)
    for name, pairs in corpus.items():
        path = write_tsv(folder / f"{name}.tsv", pairs)
        print(f"wrote {path}: {len(pairs)} pairs")
    return 0


def _check_decoding(args: argparse.Namespace) -> None:
    """Refuse a decoding option out of its range, before anything is loaded."""
    if not 0 < args.beam <= MAX_BEAM:
        raise ValueError(f"--beam must be positive and at most {MAX_BEAM}, got {args.beam}")
    if not 0 <= args.alpha < float("inf"):  # NaN included
        raise ValueError(f"--alpha must be a finite number >= 0, got {args.alpha}")
    for option, value in (("--batch-size", args.batch_size), ("--max-tokens", args.max_tokens)):
        if value is not None and not 0 < value <= MAX_BATCH:
            raise ValueError(f"{option} must be between 1 and {MAX_BATCH:,}, got {value}")
    cpus = os.cpu_count() or 1
    if args.threads is not None and not 0 < args.threads <= cpus:
        raise ValueError(f"--threads must be between 1 and {cpus} (this machine's CPUs), "
                         f"got {args.threads}")
    nbest = getattr(args, "nbest", 1)
    if not 0 < nbest <= args.beam:
        raise ValueError(f"--nbest must be between 1 and --beam ({args.beam}), got {nbest}")


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    _check_decoding(args)
    import torch

    from ..training.ranks import amp_context, resolve_device
    from ..training.run_folder import load_translator

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    amp_context(resolve_device(args.device), args.amp)  # fp16 without CUDA: refused here
    return load_translator(args.run, args.checkpoint, device=args.device)


def _write_lines(path: str, lines: Iterable[str]) -> None:
    from .._io import atomic_write

    text = "".join(line + "\n" for line in lines).encode("utf-8")
    atomic_write(path, lambda f: f.write(text))


def _translate(model: Any, tokenizer: Any, texts: Sequence[str], args: argparse.Namespace,
               *, progress: bool = False) -> list[list[Any]]:
    """The `--nbest` best translations of each text, best first; none for a blank text.

    All texts are sorted by length and decoded in batches, with a progress bar on stderr."""
    import torch
    from tqdm.auto import tqdm

    from ..inference.evaluate import translate_nbest
    from ..training.ranks import amp_context

    kept = [i for i, t in enumerate(texts) if t.strip()]
    out: list[list[Any]] = [[] for _ in texts]
    if not kept:
        return out
    sizes = {name: value for name, value in (("batch_size", args.batch_size),
                                             ("max_tokens", args.max_tokens)) if value}
    device = next(model.parameters()).device
    with tqdm(total=len(kept), desc="translate", unit="sent", file=sys.stderr,
              disable=not progress, leave=False) as bar, \
            torch.inference_mode(), amp_context(device, args.amp):
        found = translate_nbest(model, tokenizer, [texts[i].strip() for i in kept],
                                nbest=getattr(args, "nbest", 1), beam_size=args.beam,
                                alpha=args.alpha, progress=lambda done: bar.update(done - bar.n),
                                **sizes)
    for i, hyps in zip(kept, found, strict=True):
        out[i] = hyps
    return out


def _lines_of(number: int, text: str, hyps: Sequence[Any], args: argparse.Namespace) -> list[str]:
    """What `RUN` prints for the input line `number` (from 0): one line per translation,
    `score<TAB>text` with `--scores`, fairseq's S-, H-, D- and P- lines with `--verbose`."""
    if args.verbose:
        lines = [f"S-{number}\t{text}"]
        for h in hyps:
            lines += [f"H-{number}\t{h.score:.4f}\t{' '.join(h.pieces)}",
                      f"D-{number}\t{h.score:.4f}\t{h.text}",
                      f"P-{number}\t{' '.join(f'{p:.4f}' for p in h.log_probs)}"]
        return lines
    if not hyps:  # a blank line
        return [""] * args.nbest
    if args.scores:
        return [f"{h.score:.4f}\t{h.text}" for h in hyps]
    return [h.text for h in hyps]


def run_eval(args: argparse.Namespace) -> int:
    import sacrebleu

    from ..data.numbers import read_tsv

    _check_decoding(args)
    if args.bleu_tokenize not in sacrebleu.BLEU.TOKENIZERS:
        raise ValueError(f"--bleu-tokenize must be one of {sorted(sacrebleu.BLEU.TOKENIZERS)}, "
                         f"got {args.bleu_tokenize!r}")
    for option, path in (("--output", args.output), ("--json", args.json_path)):
        if path:
            check_output(path, option, reads=[args.data], overwrite=args.overwrite)
    if args.output and args.json_path and Path(args.output).resolve() == Path(
            args.json_path).resolve():
        raise ValueError("--output and --json name the same file; choose two")
    pairs = read_tsv(args.data)
    model, tokenizer = _load(args)
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    found = _translate(model, tokenizer, sources, args, progress=not args.no_progress)
    hyps = [row[0].text if row else "" for row in found]
    bleu, chrf = sacrebleu.BLEU(tokenize=args.bleu_tokenize), sacrebleu.CHRF()
    hyps_clean, refs_clean = [h.strip() for h in hyps], [r.strip() for r in refs]
    bleu_score = bleu.corpus_score(hyps_clean, [refs_clean]).score
    chrf_score = chrf.corpus_score(hyps_clean, [refs_clean]).score
    hits = sum(h == r for h, r in zip(hyps_clean, refs_clean, strict=True))
    exact = 100.0 * hits / len(pairs)
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}, alpha {args.alpha}"
    signatures = {"bleu": str(bleu.get_signature()), "chrf": str(chrf.get_signature())}
    words = sum(len(r.split()) for r in refs_clean) / len(refs_clean)
    if args.bleu_tokenize == "13a" and words < 4:
        print(f"note: the references average {words:.1f} words, so word 4-grams are rare and "
              "BLEU on words is near 0 whatever the quality; --bleu-tokenize char scores "
              "characters", file=sys.stderr)
    print(f"BLEU {bleu_score:.2f} (sacrebleu {signatures['bleu']})")
    print(f"chrF {chrf_score:.2f} (sacrebleu {signatures['chrf']})")
    print(f"exact match {exact:.2f} % ({hits}/{len(pairs)}); {args.checkpoint} model, "
          f"{decoding}, {args.data}")
    if args.output:
        _write_lines(args.output, hyps)
    if args.json_path:
        data = {"bleu": bleu_score, "chrf": chrf_score, "exact_match": exact,
                "sentences": len(pairs), "signatures": signatures, "run": str(args.run),
                "checkpoint": args.checkpoint, "data": str(args.data),
                "decoding": {"beam": args.beam, "alpha": args.alpha},
                "bleu_tokenize": args.bleu_tokenize}
        _write_lines(args.json_path, [json.dumps(data, indent=2, ensure_ascii=False)])
    return 0


def _unknown_characters(tokenizer: Any, text: str) -> list[str]:
    from ..data.tokenizer import UNK

    if UNK not in tokenizer.encode(text):
        return []
    return sorted({c for c in text if not c.isspace() and UNK in tokenizer.encode(c)})


def _lines(stream: Any) -> Iterator[str]:
    """Lines of a text stream split at \\n (or \\r\\n) only, as they arrive."""
    for line in iter(stream.readline, ""):
        yield line.removesuffix("\n").removesuffix("\r")


def _read_input(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return list(_lines(f))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None


def run_run(args: argparse.Namespace) -> int:
    """`translate RUN [TEXT ...]`: translate TEXT, --input's lines, or stdin's as they come."""
    if args.text and args.input:
        raise ValueError("give TEXT or --input FILE, not both")
    _check_decoding(args)
    texts = _read_input(args.input) if args.input else list(args.text)
    if args.output:
        check_output(args.output, "--output", reads=[args.input], overwrite=args.overwrite)
    model, tokenizer = _load(args)

    def warn(number: int, text: str) -> None:
        unknown = _unknown_characters(tokenizer, text)
        if unknown:
            print(f"warning: line {number}: characters outside the vocabulary: "
                  f"{' '.join(unknown)} (translated as unknown)", file=sys.stderr, flush=True)

    if args.text or args.input:
        for number, text in enumerate(texts, 1):
            warn(number, text)
        found = _translate(model, tokenizer, texts, args,
                           progress=not args.no_progress and len(texts) > _CHUNK)
        lines = [line for i, (text, hyps) in enumerate(zip(texts, found, strict=True))
                 for line in _lines_of(i, text, hyps, args)]
        if args.output:
            _write_lines(args.output, lines)
        else:
            for line in lines:
                print(line)
        return 0
    out = sys.stdout if args.output is None else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for number, text in enumerate(_lines(sys.stdin), 1):
            warn(number, text)
            hyps = _translate(model, tokenizer, [text], args)[0]
            print("\n".join(_lines_of(number - 1, text, hyps, args)), file=out, flush=True)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0
