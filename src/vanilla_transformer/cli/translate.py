"""The `translate` subcommand: make a number corpus, train a translator, score it, use it.

```console
vanilla-transformer translate numbers --lang de --out DATA
vanilla-transformer translate train --train DATA/train.tsv --valid DATA/valid.tsv --out RUN
vanilla-transformer translate eval RUN --data DATA/test.tsv
vanilla-transformer translate RUN "four hundred and twenty-one"
```

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.numbers import (
    DEFAULT_ALWAYS_FIRST,
    DEFAULT_LIMIT,
    DEFAULT_SIZES,
    LANGUAGES,
    number_corpus,
    read_tsv,
    write_tsv,
)
from ..inference.evaluate import score_translations, translate_sentences
from ..training.translation import (
    DEFAULT_PRESET,
    TRANSLATION_PRESETS,
    TranslationConfig,
    load_translator,
    train_translation,
)
from .options import OneLineParser, add_config_arguments, config_values

__all__ = ["ACTIONS", "register", "run_translate", "build_translate_parser"]

PROG = "vanilla-transformer translate"

ACTIONS = ("numbers", "train", "eval", "export")
"""The words `translate` takes as its first argument; anything else is a run folder."""



def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `translate` subcommand to a command line.

    Its first argument is `numbers`, `train`, `eval`, or a run folder to translate with; the
    rest is parsed by that action's parser (see
    [`build_translate_parser`][vanilla_transformer.cli.translate.build_translate_parser]).

    Args:
        subparsers: the object returned by `parser.add_subparsers()`.

    Returns:
        The subcommand's parser; its `handler` is
        [`run_translate`][vanilla_transformer.cli.translate.run_translate].

    Examples:
        >>> import argparse
        >>> from vanilla_transformer.cli.translate import register
        >>> parser = argparse.ArgumentParser(prog="vanilla-transformer")
        >>> _ = register(parser.add_subparsers(dest="command"))
        >>> parser.parse_args(["translate", "eval", "RUN", "--data", "t.tsv"]).words
        ['eval', 'RUN', '--data', 't.tsv']
    """
    parser = subparsers.add_parser(
        "translate",
        help="train and use a translator (English number words to German or French)",
        usage=f"{PROG} {{numbers,train,eval,export}} ... | {PROG} RUN [TEXT ...]",
        description=(
            "numbers: write a number-words corpus (train/valid/test TSV). "
            "train: train a translator on source<TAB>target files. "
            "eval: print BLEU, chrF and exact match of a trained run on a TSV file. "
            "export: write a trained run as ONNX graphs and its tokenizer. "
            "RUN [TEXT ...]: translate TEXT (or each line of stdin) with a trained run. "
            "Run 'translate ACTION --help' for an action's options."
        ),
    )
    parser.add_argument("words", nargs=argparse.REMAINDER, help="an action and its arguments")
    parser.set_defaults(handler=run_translate)
    return parser


def _add_numbers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lang", choices=LANGUAGES, default="de",
                        help="target language (default %(default)s); the source is English")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder for train.tsv, valid.tsv and test.tsv")
    parser.add_argument("--seed", type=int, default=0, help="split seed (default %(default)s)")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                        help="numbers come from range(LIMIT) (default %(default)s)")
    parser.add_argument("--always-train", type=int, default=DEFAULT_ALWAYS_FIRST,
                        help="every number below this goes to train.tsv (default %(default)s)")
    for name, size in DEFAULT_SIZES.items():
        parser.add_argument(f"--{name}-size", type=int, default=size,
                            help=f"numbers in {name}.tsv (default %(default)s)")


def _add_train(parser: argparse.ArgumentParser) -> None:
    d = TranslationConfig()
    files = parser.add_argument_group("files")
    files.add_argument("--train", required=True, metavar="FILE", help="training pairs (TSV)")
    files.add_argument("--valid", required=True, metavar="FILE", help="validation pairs (TSV)")
    files.add_argument("--out", required=True, metavar="RUN", help="the run folder to write")
    files.add_argument("--resume", action="store_true",
                       help="continue the run in RUN from its newest checkpoint")
    run = parser.add_argument_group("training")
    run.add_argument("--preset", choices=sorted(TRANSLATION_PRESETS), default=DEFAULT_PRESET,
                     help="model sizes (default %(default)s)")
    run.add_argument("--max-steps", type=int, default=d.max_steps,
                     help="optimizer steps in all (default %(default)s)")
    run.add_argument("--max-minutes", type=float, default=None,
                     help="stop after this many minutes (a checkpoint is written)")
    for name, kind in (("vocab_size", int), ("max_tokens", int), ("warmup", int),
                       ("factor", float), ("smoothing", float), ("save_every", int),
                       ("average", int), ("eval_size", int), ("seed", int)):
        run.add_argument("--" + name.replace("_", "-"), type=kind, default=getattr(d, name),
                         help="(default %(default)s)")
    run.add_argument("--threads", type=int, default=1,
                     help="CPU threads for PyTorch (default %(default)s: the default model is "
                          "small, and a second thread on a busy machine slows it down)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_arguments(parser.add_argument_group("model (overrides the preset)"),
                         exclude={"src_vocab", "tgt_vocab"})


def _add_decoding(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--beam", type=int, default=4, help="beam size; 1 is greedy (default 4)")
    parser.add_argument("--alpha", type=float, default=0.6,
                        help="length penalty exponent (default %(default)s)")
    parser.add_argument("--checkpoint", choices=("averaged", "last"), default="averaged",
                        help="the averaged final model or the last checkpoint (default averaged)")


def build_translate_parser(action: str) -> argparse.ArgumentParser:
    """The parser of one `translate` action: `numbers`, `train`, `eval` or `run` (a folder).

    Examples:
        >>> from vanilla_transformer.cli.translate import build_translate_parser
        >>> args = build_translate_parser("train").parse_args(
        ...     ["--train", "a.tsv", "--valid", "b.tsv", "--out", "RUN", "--d-model", "32"])
        >>> args.preset, args.max_steps, args.d_model
        ('paper-small', 1200, 32)
    """
    if action == "run":
        parser = OneLineParser(prog=PROG, usage=f"{PROG} RUN [TEXT ...]",
                         description="Translate each TEXT, or each line of stdin.")
        parser.add_argument("run", metavar="RUN", help="a folder written by 'translate train'")
        parser.add_argument("text", nargs="*", help="sentences to translate (default: stdin)")
        _add_decoding(parser)
        return parser
    parser = OneLineParser(prog=f"{PROG} {action}")
    if action == "numbers":
        parser.description = "Write English-to-LANG number words as train/valid/test TSV files."
        _add_numbers(parser)
    elif action == "train":
        parser.description = "Train a translator on source<TAB>target files."
        _add_train(parser)
    elif action == "eval":
        parser.description = "Print BLEU, chrF and exact match of RUN on a TSV file."
        parser.add_argument("run", metavar="RUN", help="a folder written by 'translate train'")
        parser.add_argument("--data", required=True, metavar="FILE", help="pairs to score (TSV)")
        _add_decoding(parser)
        parser.add_argument("--bleu-tokenize", default="auto",
                            help="sacrebleu's BLEU tokenizer; 'auto' (default) is 13a, or char "
                                 "when the references average fewer than four words")
    elif action == "export":
        parser.description = ("Export RUN to ONNX: encoder.onnx, a one-step decoder.onnx with "
                              "the cross-attention weights, and the tokenizer, in DIR.")
        parser.add_argument("run", metavar="RUN", help="a folder written by 'translate train'")
        parser.add_argument("--out", required=True, metavar="DIR", help="the folder to write")
        parser.add_argument("--checkpoint", choices=("averaged", "last"), default="averaged",
                            help="the averaged final model or the last checkpoint "
                                 "(default averaged)")
    else:
        raise ValueError(f"unknown translate action {action!r}; expected one of {ACTIONS}")
    return parser


def run_translate(args: argparse.Namespace) -> int:
    """Dispatch `translate ...` to its action.

    Returns:
        The exit status: 0, or 2 for bad arguments (one line on stderr).

    Raises:
        ValueError: for bad input (a missing or malformed file, a folder that cannot be
            written, a run folder without a trained model); the `cli.main` wrapper prints it
            as one line and exits with status 2.

    Examples:
        >>> import argparse, tempfile, os
        >>> from vanilla_transformer.cli.translate import run_translate
        >>> out = tempfile.mkdtemp()
        >>> words = ["numbers", "--out", out, "--train-size", "5", "--valid-size", "2",
        ...          "--test-size", "2", "--limit", "100", "--always-train", "3"]
        >>> run_translate(argparse.Namespace(words=words))  # doctest: +ELLIPSIS
        wrote .../train.tsv: 5 pairs
        wrote .../valid.tsv: 2 pairs
        wrote .../test.tsv: 2 pairs
        0
    """
    words = list(args.words)
    if not words:
        print(f"{PROG}: error: expected one of {', '.join(ACTIONS)} or a run folder "
              f"(see '{PROG} --help')", file=sys.stderr)
        return 2
    action = words[0] if words[0] in ACTIONS else "run"
    rest = words[1:] if action != "run" else words
    try:
        options = build_translate_parser(action).parse_args(rest)
    except SystemExit as exit_:  # --help, or a parse error already printed
        return exit_.code if isinstance(exit_.code, int) else 1
    actions = {"numbers": _numbers, "train": _train, "eval": _eval, "export": _export, "run": _run}
    return actions[action](options)


def _numbers(args: argparse.Namespace) -> int:
    sizes = {name: getattr(args, f"{name}_size") for name in DEFAULT_SIZES}
    folder = _writable_folder(args.out)
    corpus = number_corpus(args.lang, sizes, limit=args.limit, seed=args.seed,
                           always_first=args.always_train)
    for name, pairs in corpus.items():
        path = write_tsv(folder / f"{name}.tsv", pairs)
        print(f"wrote {path}: {len(pairs)} pairs")
    return 0


def _writable_folder(out: str) -> Path:
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create output folder {out!r}: {error.strerror or error}") from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"output folder {out!r} is not writable")
    return path


def _train(args: argparse.Namespace) -> int:
    import torch

    train_pairs, valid_pairs = read_tsv(args.train), read_tsv(args.valid)
    _writable_folder(args.out)
    config = TranslationConfig(
        max_steps=args.max_steps, max_minutes=args.max_minutes,
        **{name: getattr(args, name) for name in (
            "vocab_size", "max_tokens", "warmup", "factor", "smoothing", "save_every",
            "average", "eval_size", "seed")})
    if args.threads <= 0:
        raise ValueError(f"--threads must be positive, got {args.threads}")
    torch.set_num_threads(args.threads)
    log = print if args.no_progress else _tqdm_write
    print(f"training on {len(train_pairs)} pairs ({args.train}), validating on "
          f"{len(valid_pairs)} ({args.valid}); preset {args.preset}", flush=True)
    run = train_translation(train_pairs, valid_pairs, args.out, preset=args.preset,
                            model_options=config_values(args), config=config,
                            resume=args.resume, progress=not args.no_progress, log=log)
    params = sum(p.numel() for p in run.model.parameters())
    print(f"trained {run.step} steps in {run.seconds:.1f} s; {params:,} parameters; "
          f"vocabulary {run.tokenizer.vocab_size}")
    print(f"wrote {run.out / 'model.pt'}: the average of the checkpoints of steps "
          f"{', '.join(map(str, run.averaged))}")
    return 0


def _tqdm_write(line: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stdout)


def _bleu_tokenize(choice: str, references: Sequence[str]) -> str:
    if choice != "auto":
        return choice
    words = sum(len(r.split()) for r in references) / len(references)
    return "char" if words < 4 else "13a"


def _eval(args: argparse.Namespace) -> int:
    model, tokenizer = load_translator(args.run, args.checkpoint)
    pairs = read_tsv(args.data)
    refs = [t for _, t in pairs]
    hyps = translate_sentences(model, tokenizer, [s for s, _ in pairs], beam_size=args.beam,
                               alpha=args.alpha)
    tokenize = _bleu_tokenize(args.bleu_tokenize, refs)
    scores = score_translations(hyps, refs, bleu_tokenize=tokenize)
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}, alpha {args.alpha}"
    bleu, chrf, exact = scores.lines()
    print(f"{bleu} (sacrebleu, tokenize={tokenize})")
    print(chrf)
    print(f"{exact}; {args.checkpoint} model, {decoding}, {args.data}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from ..interop.onnx import export_onnx

    model, tokenizer = load_translator(args.run, args.checkpoint)
    folder = _writable_folder(args.out)
    paths = export_onnx(model, folder, attention_weights=True)
    paths["tokenizer"] = tokenizer.save(folder / "tokenizer.json")
    for name, path in paths.items():
        print(f"wrote {path}: {Path(path).stat().st_size:,} bytes ({name})")
    return 0


def _run(args: argparse.Namespace) -> int:
    model, tokenizer = load_translator(args.run, args.checkpoint)
    texts = args.text or [line.strip() for line in sys.stdin if line.strip()]
    for line in translate_sentences(model, tokenizer, texts, beam_size=args.beam,
                                    alpha=args.alpha):
        print(line)
    return 0
