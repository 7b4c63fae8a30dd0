"""The `translate` subcommand: make a number corpus, train a translator, score it, use it.

```console
vanilla-transformer translate numbers --lang de --out DATA
vanilla-transformer translate train --train DATA/train.tsv --valid DATA/valid.tsv --out RUN
vanilla-transformer translate eval RUN --data DATA/test.tsv
vanilla-transformer translate RUN "four hundred and twenty-one"
```

Every failure is one line on stderr and an exit status: 2 for bad input (an argument, a file,
a run folder that does not fit), 1 when the work itself fails (training diverged, a disk
error), 130 when interrupted. PyTorch and the optional packages are imported only when an
action runs.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .options import CommandFailed, OneLineParser, add_config_arguments, config_values

__all__ = ["ACTIONS", "register", "run_translate", "build_translate_parser"]

PROG = "vanilla-transformer translate"

ACTIONS = ("numbers", "train", "eval", "export")
"""The words `translate` takes as its first argument; anything else is a run folder."""

# TranslationConfig's defaults, repeated here so that --help needs no PyTorch (a test checks
# that they agree)
TRAINING_DEFAULTS: dict[str, Any] = dict(
    vocab_size=250, max_tokens=1500, accum_iter=1, warmup=400, factor=1.0, smoothing=0.1,
    max_steps=1200, max_minutes=None, save_every=100, average=5, eval_size=200, seed=0)
RUN_OPTIONS: dict[str, Any] = dict(log_every=10, keep_best=False, best_metric="exact",
                                   patience=None, tensorboard=False)
TRAINING_HELP = dict(
    vocab_size="size of the shared byte-pair vocabulary",
    max_tokens="padded tokens per batch",
    accum_iter="batches per optimizer step (per process when distributed)",
    warmup="warm-up steps of the learning-rate schedule",
    factor="scale of the learning-rate schedule",
    smoothing="label smoothing epsilon",
    max_steps="optimizer steps in all, resumed ones included",
    max_minutes="stop after this many minutes of this call, with a checkpoint",
    save_every="steps between checkpoints; each one validates",
    average="how many of the last checkpoints are averaged into model.pt",
    eval_size="validation sentences decoded at each checkpoint",
    seed="seed of the initial weights, the dropout and the batch order",
    log_every="steps between the lines of RUN/metrics.jsonl",
    patience="stop after this many validations without a better --best-metric",
)
DEFAULT_PRESET = "paper-small"
PAPER_SMALL = dict(N=2, d_model=64, d_ff=256, h=4, dropout=0.1, tie_weights=True,
                   norm_first=False, layer_norm="torch", generator_bias=False, attn_dropout=0.0,
                   ff_dropout=0.0)
"""`paper-small`'s sizes, shown in `train --help` (a test checks them against the preset)."""
PRESET_NAMES = ("base", "big", "paper-base", "paper-big", "paper-small")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `translate` subcommand to a command line.

    Its first argument is `numbers`, `train`, `eval`, `export`, or a run folder to translate
    with; the rest is parsed by that action's parser (see
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
        usage=f"{PROG} {{numbers,train,eval,export}} ...\n       {PROG} RUN [TEXT ...]",
        description=(
            "numbers: write a number-words corpus (train/valid/test TSV). "
            "train: train a translator on source<TAB>target files. "
            "eval: print BLEU, chrF and exact match of a trained run on a TSV file. "
            "export: write a trained run as ONNX graphs and its tokenizer. "
            "RUN [TEXT ...]: translate TEXT (or each line of stdin, or --input) with a "
            "trained run. Run 'translate ACTION --help' for an action's options."
        ),
    )
    parser.add_argument("words", nargs=argparse.REMAINDER, help="an action and its arguments")
    parser.set_defaults(handler=run_translate)
    return parser


def _add_numbers(parser: argparse.ArgumentParser) -> None:
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


def _add_device(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where to compute: auto (default) is cuda when PyTorch sees a "
                             "GPU, else cpu")
    parser.add_argument("--amp", choices=("off", "bf16", "fp16"), default="off",
                        help="mixed precision (default off); fp16 needs cuda")


def _add_train(parser: argparse.ArgumentParser) -> None:
    files = parser.add_argument_group("files")
    files.add_argument("--train", required=True, metavar="FILE", help="training pairs (TSV)")
    files.add_argument("--valid", required=True, metavar="FILE", help="validation pairs (TSV)")
    files.add_argument("--out", required=True, metavar="RUN", help="the run folder to write")
    mode = files.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help="continue the run in RUN from its newest checkpoint, with its saved "
                           "settings unless an option is given again")
    mode.add_argument("--overwrite", action="store_true",
                      help="replace the run in RUN (its checkpoints and model are deleted)")
    files.add_argument("--new-data", action="store_true",
                       help="with --resume: continue on a training file that differs from the "
                            "run's")
    run = parser.add_argument_group("training")
    run.add_argument("--preset", choices=PRESET_NAMES, default=None, metavar="PRESET",
                     help=f"model sizes: {', '.join(PRESET_NAMES)} (default {DEFAULT_PRESET}; "
                          "with --resume, the run's)")
    for name, kind in (("max_steps", int), ("max_minutes", float), ("vocab_size", int),
                       ("max_tokens", int), ("accum_iter", int), ("warmup", int),
                       ("factor", float), ("smoothing", float), ("save_every", int),
                       ("average", int), ("eval_size", int), ("seed", int), ("log_every", int)):
        default = {**TRAINING_DEFAULTS, **RUN_OPTIONS}[name]
        shown = "none" if default is None else default
        run.add_argument("--" + name.replace("_", "-"), type=kind, default=None,
                         help=f"{TRAINING_HELP[name]} (default {shown})")
    run.add_argument("--keep-best", action=argparse.BooleanOptionalAction, default=None,
                     help="make model.pt the checkpoint with the best validation score instead "
                          "of the average of the last ones (--no-keep-best: the average; "
                          "default: no, or the run's with --resume)")
    run.add_argument("--best-metric", choices=("exact", "bleu", "chrf"), default=None,
                     help="the validation score of --keep-best and --patience (default exact)")
    run.add_argument("--patience", type=int, default=None, help=TRAINING_HELP["patience"]
                     + " (default: never)")
    run.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=None,
                     help="also write metrics.jsonl's numbers as TensorBoard scalars in "
                          "RUN/tensorboard/ (needs the tensorboard extra; default: no, or the "
                          "run's with --resume)")
    run.add_argument("--threads", type=int, default=1,
                     help="CPU threads for PyTorch (default %(default)s: the default model is "
                          "small, and a second thread on a busy machine slows it down)")
    _add_device(run)
    run.add_argument("--distributed", action="store_true",
                     help="train as one process of a torchrun job, with "
                          "DistributedDataParallel: 'torchrun --standalone --nproc-per-node K "
                          "-m vanilla_transformer translate train --distributed ...' (NCCL "
                          "with cuda, else gloo); each step takes accum-iter batches per "
                          "process")
    run.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS",
                     help="with --distributed: how long a process waits for the others, "
                          "e.g. while process 0 validates (default %(default)s)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_arguments(
        parser.add_argument_group(f"model (overrides the preset; defaults: {DEFAULT_PRESET})"),
        exclude={"src_vocab", "tgt_vocab"}, shown=PAPER_SMALL)


def _add_decoding(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--beam", type=int, default=4, help="beam size; 1 is greedy (default 4)")
    parser.add_argument("--alpha", type=float, default=0.6,
                        help="length penalty exponent (default %(default)s)")
    parser.add_argument("--checkpoint", choices=("averaged", "last"), default="averaged",
                        help="the averaged final model or the last checkpoint (default averaged)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where to decode: auto (default) is cuda when PyTorch sees a "
                             "GPU, else cpu")
    parser.add_argument("--amp", choices=("off", "bf16", "fp16"), default="off",
                        help="mixed precision of decoding (default off); fp16 needs cuda")


def build_translate_parser(action: str) -> argparse.ArgumentParser:
    """The parser of one `translate` action: `numbers`, `train`, `eval`, `export` or `run`.

    Raises:
        ValueError: for another action.

    Examples:
        >>> from vanilla_transformer.cli.translate import build_translate_parser
        >>> args = build_translate_parser("train").parse_args(
        ...     ["--train", "a.tsv", "--valid", "b.tsv", "--out", "RUN", "--d-model", "32"])
        >>> args.preset, args.max_steps, args.d_model  # None: not given
        (None, None, 32)
    """
    if action == "run":
        parser = OneLineParser(prog=PROG, usage=f"{PROG} RUN [TEXT ...] [options]",
                               description="Translate each TEXT, or each line of --input or "
                                           "stdin (one output line per input line).")
        parser.add_argument("run", metavar="RUN", help="a folder written by 'translate train'")
        parser.add_argument("text", nargs="*", help="sentences to translate (default: stdin)")
        parser.add_argument("--input", metavar="FILE",
                            help="translate each line of FILE instead of stdin")
        parser.add_argument("--output", metavar="FILE",
                            help="write the translations to FILE instead of stdout")
        parser.add_argument("--no-progress", action="store_true",
                            help="no progress bar on stderr (shown for more than 64 lines of "
                                 "TEXT or --input)")
        _add_decoding(parser)
        return parser
    parser = OneLineParser(prog=f"{PROG} {action}")
    if action == "numbers":
        parser.description = "Write English-to-LANG number words as train/valid/test TSV files."
        _add_numbers(parser)
    elif action == "train":
        parser.description = (
            "Train a translator on source<TAB>target files. RUN must be new or empty unless "
            "--resume or --overwrite is given. Ctrl-C (or SIGTERM) stops after the current "
            "step with a checkpoint; a second one stops at once.")
        _add_train(parser)
    elif action == "eval":
        parser.description = "Print BLEU, chrF and exact match of RUN on a TSV file."
        parser.add_argument("run", metavar="RUN", help="a folder written by 'translate train'")
        parser.add_argument("--data", required=True, metavar="FILE", help="pairs to score (TSV)")
        _add_decoding(parser)
        parser.add_argument("--bleu-tokenize", default="auto",
                            help="sacrebleu's BLEU tokenizer; 'auto' (default) is 13a, or char "
                                 "when the references average fewer than four words")
        parser.add_argument("--output", metavar="FILE",
                            help="also write the translations to FILE, one a line")
        parser.add_argument("--json", metavar="FILE", dest="json_path",
                            help="also write the scores and their signatures to FILE as JSON")
        parser.add_argument("--no-progress", action="store_true",
                            help="no progress bar on stderr")
    elif action == "export":
        parser.description = ("Export RUN to ONNX: encoder.onnx, a one-step decoder.onnx with "
                              "the cross-attention weights, and the tokenizer, in DIR.")
        parser.add_argument("run", metavar="RUN", help="a folder written by 'translate train'")
        parser.add_argument("--out", required=True, metavar="DIR",
                            help="the folder to write (not a run folder)")
        parser.add_argument("--checkpoint", choices=("averaged", "last"), default="averaged",
                            help="the averaged final model or the last checkpoint "
                                 "(default averaged)")
        parser.add_argument("--max-len", type=int, default=None,
                            help="longest sequence the graphs accept: trims the positional "
                                 "table (default: the model's)")
    else:
        raise ValueError(f"unknown translate action {action!r}; expected one of {ACTIONS}")
    return parser


def run_translate(args: argparse.Namespace) -> int:
    """Dispatch `translate ...` to its action.

    Returns:
        The exit status: 0, 2 for bad arguments, 1 for a failure of the work, 130 when
        interrupted.

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
        parser = build_translate_parser(action)
        options = parser.parse_intermixed_args(rest)
    except SystemExit as exit_:  # --help, or a parse error already printed
        return exit_.code if isinstance(exit_.code, int) else 1
    actions = {"numbers": _numbers, "train": _train, "eval": _eval, "export": _export, "run": _run}
    return actions[action](options)


def _numbers(args: argparse.Namespace) -> int:
    from ..data.numbers import number_corpus, write_tsv

    sizes = {name: getattr(args, f"{name}_size") for name in ("train", "valid", "test")}
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


class _StopOnSignal:
    """SIGINT and SIGTERM ask training to stop after the current step; a second one stops it
    at once (KeyboardInterrupt). Checkpoints and settings are written atomically either way;
    `metrics.jsonl` can lose its last line, which `--resume` drops."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.signal: int | None = None
        self.previous: dict[int, Any] = {}

    def __call__(self) -> bool:
        return self.signal is not None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signal is not None:
            raise KeyboardInterrupt
        self.signal = signum
        if not self.quiet:
            print(f"\n{signal.Signals(signum).name}: stopping after this step (again to stop at "
                  "once)", file=sys.stderr, flush=True)

    def __enter__(self) -> _StopOnSignal:
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[signum] = signal.signal(signum, self._handle)
            except ValueError:  # not the main thread: no handlers, Ctrl-C stops at once
                pass
        return self

    def __exit__(self, *exc: Any) -> None:
        # after a stop the command only reports and exits with 130: a second signal that comes
        # now has nothing left to stop, and must not turn that exit into death by signal
        for signum, handler in self.previous.items():
            signal.signal(signum, signal.SIG_IGN if self.signal is not None else handler)


def _train(args: argparse.Namespace) -> int:
    import torch

    from ..data.corpus import iter_tsv
    from ..data.numbers import read_tsv
    from ..training._ranks import ProcessZeroError
    from ..training.loop import TrainingDiverged
    from ..training.run_folder import file_fingerprint
    from ..training.translation import train_translation

    if args.new_data and not args.resume:
        raise ValueError("--new-data goes with --resume (a new run trains on what it is given)")
    if args.threads <= 0:
        raise ValueError(f"--threads must be positive, got {args.threads}")
    # the training file is streamed (tokenised once into RUN/ids/), never read whole
    next(iter_tsv(args.train))  # a missing or malformed first line: fail before anything else
    valid_pairs = read_tsv(args.valid)
    fingerprint = {"path": str(Path(args.train).resolve()), **file_fingerprint(args.train)}
    changes = {name: getattr(args, name) for name in (*TRAINING_DEFAULTS, *RUN_OPTIONS)
               if getattr(args, name, None) is not None}
    torch.set_num_threads(args.threads)
    log = _print if args.no_progress else _tqdm_write
    follower = args.distributed and os.environ.get("RANK", "0") != "0"
    if follower:  # process 0 speaks for the job
        log, args.no_progress = (lambda line: None), True
    else:
        print(f"training on {args.train}, validating on {len(valid_pairs)} pairs "
              f"({args.valid}); preset {args.preset or DEFAULT_PRESET}"
              if not args.resume else f"continuing {args.out} on {args.train}", flush=True)
    with _StopOnSignal(quiet=follower) as stop:
        try:
            run = train_translation(
                args.train, valid_pairs, args.out, preset=args.preset,
                model_options=config_values(args), changes=changes, resume=args.resume,
                overwrite=args.overwrite, new_data=args.new_data, data_fingerprint=fingerprint,
                should_stop=stop, device=args.device, amp=args.amp,
                progress=not args.no_progress, log=log, distributed=args.distributed,
                timeout=args.timeout)
        except TrainingDiverged as error:
            raise CommandFailed(str(error), 1) from None
        except ProcessZeroError:  # process 0 refused the run and says why
            return 2
    if follower:
        return 130 if run.stopped == "interrupted" else 0
    params = sum(p.numel() for p in run.model.parameters())
    how = ("the best checkpoint, of step" if len(run.averaged) == 1 and args.keep_best
           else "the average of the checkpoints of steps")
    print(f"trained {run.step} steps in {run.seconds:.1f} s; {params:,} parameters; "
          f"vocabulary {run.tokenizer.vocab_size}")
    print(f"wrote {run.out / 'model.pt'}: {how} {', '.join(map(str, run.averaged))}")
    if run.stopped == "interrupted":
        print(f"interrupted at step {run.step}: continue with --resume", file=sys.stderr)
        return 130
    return 0


def _print(line: str) -> None:
    print(line, flush=True)


def _tqdm_write(line: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stdout)


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from ..training.translation import load_translator

    if args.beam <= 0:
        raise ValueError(f"--beam must be positive, got {args.beam}")
    from ..training.translation import amp_context, resolve_device

    amp_context(resolve_device(args.device), args.amp)  # fp16 without CUDA: refused here
    return load_translator(args.run, args.checkpoint, device=args.device)


def _eval(args: argparse.Namespace) -> int:
    import sacrebleu

    from ..data.numbers import read_tsv
    from ..training.translation import auto_bleu_tokenize

    pairs = read_tsv(args.data)
    model, tokenizer = _load(args)
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    tokenize = (auto_bleu_tokenize(refs) if args.bleu_tokenize == "auto"
                else args.bleu_tokenize)
    if tokenize not in sacrebleu.BLEU.TOKENIZERS:
        raise ValueError(f"--bleu-tokenize must be auto or one of "
                         f"{sorted(sacrebleu.BLEU.TOKENIZERS)}, got {tokenize!r}")
    hyps = _translate_all(model, tokenizer, sources, args, progress=not args.no_progress)
    bleu, chrf = sacrebleu.BLEU(tokenize=tokenize), sacrebleu.CHRF()
    hyps_clean, refs_clean = [h.strip() for h in hyps], [r.strip() for r in refs]
    bleu_score = bleu.corpus_score(hyps_clean, [refs_clean]).score
    chrf_score = chrf.corpus_score(hyps_clean, [refs_clean]).score
    hits = sum(h == r for h, r in zip(hyps_clean, refs_clean))
    exact = 100.0 * hits / len(pairs)
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}, alpha {args.alpha}"
    signatures = {"bleu": str(bleu.get_signature()), "chrf": str(chrf.get_signature())}
    print(f"BLEU {bleu_score:.2f} (sacrebleu {signatures['bleu']})")
    print(f"chrF {chrf_score:.2f} (sacrebleu {signatures['chrf']})")
    print(f"exact match {exact:.2f} % ({hits}/{len(pairs)}); {args.checkpoint} model, "
          f"{decoding}, {args.data}")
    if args.output:
        _write_lines(args.output, hyps)
    if args.json_path:
        from .._io import atomic_write

        data = {"bleu": bleu_score, "chrf": chrf_score, "exact_match": exact,
                "sentences": len(pairs), "signatures": signatures, "run": str(args.run),
                "checkpoint": args.checkpoint, "data": str(args.data),
                "decoding": {"beam": args.beam, "alpha": args.alpha}}
        text = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        _check_parent(args.json_path)
        atomic_write(args.json_path, lambda f: f.write(text))
    return 0


def _check_parent(path: str) -> None:
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise ValueError(f"cannot write {path!r}: folder {str(parent)!r} does not exist")
    if Path(path).is_dir():
        raise ValueError(f"cannot write {path!r}: it is a folder")


def _write_lines(path: str, lines: Iterable[str]) -> None:
    from .._io import atomic_write

    _check_parent(path)
    text = "".join(line + "\n" for line in lines).encode("utf-8")
    atomic_write(path, lambda f: f.write(text))


_CHUNK = 64
"""Sentences decoded together by `eval` and by `RUN` with TEXT or --input."""


def _translate_all(model: Any, tokenizer: Any, sources: Sequence[str],
                   args: argparse.Namespace, *, progress: bool) -> list[str]:
    """Translate in chunks, with a progress bar on stderr."""
    from tqdm.auto import tqdm

    from ..inference.evaluate import translate_sentences

    out: list[str] = []
    with tqdm(total=len(sources), desc="translate", unit="sent", file=sys.stderr,
              disable=not progress, leave=False) as bar:
        for start in range(0, len(sources), _CHUNK):
            part = list(sources[start:start + _CHUNK])
            out += _decode(model, tokenizer, part, args, translate_sentences)
            bar.update(len(part))
    return out


def _decode(model: Any, tokenizer: Any, texts: list[str], args: argparse.Namespace,
            translate: Callable[..., list[str]]) -> list[str]:
    """Translations of `texts`; a blank text gives a blank line."""
    import torch

    kept = [i for i, t in enumerate(texts) if t.strip()]
    out = [""] * len(texts)
    if not kept:
        return out
    from ..training.translation import amp_context

    device = next(model.parameters()).device
    with torch.inference_mode(), amp_context(device, args.amp):
        done = translate(model, tokenizer, [texts[i].strip() for i in kept],
                         beam_size=args.beam, alpha=args.alpha)
    for i, text in zip(kept, done):
        out[i] = text
    return out


def _unknown_characters(tokenizer: Any, text: str) -> list[str]:
    from ..data.tokenizer import UNK

    if UNK not in tokenizer.encode(text):
        return []
    return sorted({c for c in text if not c.isspace() and UNK in tokenizer.encode(c)})


def _lines(stream: Any) -> Iterator[str]:
    """Lines of a text stream split at \\n (or \\r\\n) only, as they arrive."""
    for line in iter(stream.readline, ""):
        yield line.removesuffix("\n").removesuffix("\r")


def _run(args: argparse.Namespace) -> int:
    from ..inference.evaluate import translate_sentences

    if args.text and args.input:
        raise ValueError("give TEXT or --input FILE, not both")
    if args.input:
        try:
            with open(args.input, encoding="utf-8-sig", newline="") as f:
                texts = list(_lines(f))
        except FileNotFoundError:
            raise ValueError(f"{args.input}: no such file") from None
        except IsADirectoryError:
            raise ValueError(f"{args.input}: is a folder, not a file") from None
        except UnicodeDecodeError:
            raise ValueError(f"{args.input}: not UTF-8 text") from None
    if args.output:
        _check_parent(args.output)
    model, tokenizer = _load(args)

    def warn(number: int, text: str) -> None:
        unknown = _unknown_characters(tokenizer, text)
        if unknown:
            print(f"warning: line {number}: characters outside the vocabulary: "
                  f"{' '.join(unknown)} (translated as unknown)", file=sys.stderr, flush=True)

    if args.text or args.input:
        texts = args.text or texts
        for number, text in enumerate(texts, 1):
            warn(number, text)
        hyps = _translate_all(model, tokenizer, texts, args,
                              progress=not args.no_progress and len(texts) > _CHUNK)
        if args.output:
            _write_lines(args.output, hyps)
        else:
            for line in hyps:
                print(line)
        return 0
    stdin = sys.stdin
    with _OutputLines(args.output) as out:
        for number, text in enumerate(_lines(stdin), 1):
            warn(number, text)
            print(_decode(model, tokenizer, [text], args, translate_sentences)[0], file=out,
                  flush=True)
    return 0


class _OutputLines:
    """stdout, or a file written line by line as the input arrives."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.file: Any = None

    def __enter__(self) -> Any:
        if self.path is None:
            return sys.stdout
        self.file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        return self.file

    def __exit__(self, *exc: Any) -> None:
        if self.file is not None:
            self.file.close()


def _export(args: argparse.Namespace) -> int:
    from ..training.run_folder import TOKENIZER_FILE, is_run_folder

    out, run = Path(args.out), Path(args.run)
    if is_run_folder(out) or (out.resolve() == run.resolve()):
        raise ValueError(f"--out {args.out!r} is a run folder; export writes its own "
                         f"{TOKENIZER_FILE} and would replace the run's: choose another folder")
    if args.max_len is not None and args.max_len <= 0:
        raise ValueError(f"--max-len must be positive, got {args.max_len}")
    from ..interop.onnx import export_onnx
    from ..training.translation import load_translator

    model, tokenizer = load_translator(args.run, args.checkpoint)
    if args.max_len is not None:
        from ..interop.onnx import trim_positions

        model = trim_positions(model, args.max_len)
    folder = _writable_folder(args.out)
    paths = export_onnx(model, folder, attention_weights=True)
    paths["tokenizer"] = tokenizer.save(folder / TOKENIZER_FILE)
    for name, path in paths.items():
        print(f"wrote {path}: {Path(path).stat().st_size:,} bytes ({name})")
    return 0

