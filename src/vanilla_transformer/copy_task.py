"""The copy task: train a small Transformer to output its input, and check it with greedy decoding.

The task is the Annotated Transformer's first experiment and the quickest end-to-end test of a
Transformer implementation: random sequences from
[`data_gen`][vanilla_transformer.batching.data_gen] (start symbol `1`, tokens `1..vocab-1`,
padding `0`), the target equal to the source. Training uses the paper's optimizer settings
(section 5.3: Adam with $\\beta_1 = 0.9$, $\\beta_2 = 0.98$, $\\epsilon = 10^{-9}$ and the warm-up
schedule [`rate`][vanilla_transformer.training.rate]), scaled down to a model that trains in
well under a minute on a laptop CPU.

The trained model is judged by **exact match**: the share of 100 held-out sequences (drawn with
a different seed from the training data) that greedy decoding, started from the start symbol
`1`, reproduces token for token.

The command line's `copy-task` subcommand (see [`register`][vanilla_transformer.copy_task.register])
trains, reports the loss and the exact match, and saves or loads the model.

Explained on the *Training the copy task* page.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ._checks import check_dropout, check_heads, check_non_negative_int, check_positive_int
from .batching import data_gen
from .decoding import greedy_decode
from .model import EncoderDecoder, make_model
from .training import (
    LabelSmoothing,
    SimpleLossCompute,
    TrainState,
    load_checkpoint,
    make_optimizer,
    run_epoch,
    save_checkpoint,
)

__all__ = [
    "CopyTaskConfig",
    "CopyTaskRun",
    "START_SYMBOL",
    "PAD",
    "train_copy_model",
    "heldout_sequences",
    "exact_match",
    "register",
    "run_copy_task",
    "main",
]

START_SYMBOL = 1
"""The first token of every copy-task sequence, and so the first decoder input."""
PAD = 0
"""The padding id of the copy task (no generated sequence contains it)."""


@dataclass(frozen=True)
class CopyTaskConfig:
    """Everything that determines a copy-task run; the defaults reach 100% exact match.

    The defaults were tuned for a 2-core CPU: one layer per stack learns this task in fewer
    steps than two, 400 steps of 64 sequences take a few seconds to a few tens of seconds, and
    the paper's label smoothing of 0.1 keeps the gradients from vanishing once the model is
    sure of itself (without it, late spikes in the loss sometimes cost a sequence or two of
    the held-out set).

    Args:
        vocab: vocabulary size, padding and start symbol included.
        seq_len: sequence length, start symbol included.
        N: layers per stack.
        d_model: model width.
        d_ff: feed-forward width.
        h: attention heads.
        dropout: dropout probability (none by default: the data is unlimited, so the model
            cannot over-fit, and it learns faster without).
        batch_size: sequences per batch.
        steps: optimizer steps.
        accum_iter: batches per optimizer step.
        warmup: warm-up steps of the learning-rate schedule.
        factor: scale of the learning-rate schedule.
        smoothing: label smoothing $\\epsilon_{ls}$ (paper section 5.4).
        seed: seed of the weights, the dropout and the training data.

    Raises:
        ValueError: for a value out of range. TypeError: for a value of the wrong type.

    Example:
        >>> from vanilla_transformer.copy_task import CopyTaskConfig
        >>> CopyTaskConfig(steps=10).replace(seed=3).seed
        3
    """

    vocab: int = 11
    seq_len: int = 10
    N: int = 1
    d_model: int = 64
    d_ff: int = 256
    h: int = 4
    dropout: float = 0.0
    batch_size: int = 64
    steps: int = 400
    accum_iter: int = 1
    warmup: int = 100
    factor: float = 1.0
    smoothing: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        check_positive_int("vocab", self.vocab)
        if self.vocab < 3:
            raise ValueError(
                f"vocab must be at least 3 (padding, start symbol, one token), got {self.vocab}"
            )
        check_positive_int("seq_len", self.seq_len)
        if self.seq_len < 2:
            raise ValueError(
                f"seq_len must be at least 2 (start symbol and one token), got {self.seq_len}"
            )
        for name in ("N", "d_ff", "batch_size", "steps", "accum_iter", "warmup"):
            check_positive_int(name, getattr(self, name))
        check_heads(self.h, self.d_model)
        check_dropout(self.dropout)
        check_dropout(self.smoothing, "smoothing")
        check_non_negative_int("seed", self.seed)
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)):
            raise TypeError(f"factor must be a positive number, got {self.factor!r}")
        if not self.factor > 0:
            raise ValueError(f"factor must be a positive number, got {self.factor}")

    def replace(self, **changes: Any) -> CopyTaskConfig:
        """A copy with some fields changed (and checked again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The configuration as a plain dict."""
        return dataclasses.asdict(self)

    def make_model(self) -> EncoderDecoder:
        """A freshly initialised model of this size (uses the global random generator)."""
        return make_model(
            self.vocab, self.vocab, N=self.N, d_model=self.d_model, d_ff=self.d_ff, h=self.h,
            dropout=self.dropout,
        )


@dataclass
class CopyTaskRun:
    """The result of [`train_copy_model`][vanilla_transformer.copy_task.train_copy_model].

    Attributes:
        model: the trained model, in eval mode.
        config: the configuration it was trained with.
        losses: the mean loss per token of every optimizer step.
        train_state: the training counts.
        seconds: wall time of the training (model building included).

    Example:
        >>> from vanilla_transformer.copy_task import CopyTaskConfig, train_copy_model
        >>> run = train_copy_model(CopyTaskConfig(d_model=16, d_ff=32, N=1, steps=2, batch_size=4))
        >>> run.final_loss == run.losses[-1], run.model.training
        (True, False)
    """

    model: EncoderDecoder
    config: CopyTaskConfig
    losses: list[float] = field(default_factory=list)
    train_state: TrainState = field(default_factory=TrainState)
    seconds: float = 0.0

    @property
    def final_loss(self) -> float:
        """The mean loss per token of the last optimizer step."""
        return self.losses[-1]


def train_copy_model(
    config: CopyTaskConfig | None = None,
    *,
    progress: bool = False,
    on_step: Callable[[TrainState, float], None] | None = None,
) -> CopyTaskRun:
    """Train a model on the copy task.

    The run is reproducible: the weights and the dropout draw from the global generator seeded
    with `config.seed` (its previous state is restored afterwards), and the data from a private
    generator with the same seed. The same seed on the same machine and thread count gives the
    same losses and weights.

    Args:
        config: the run's settings; the defaults if `None`.
        progress: show a progress bar.
        on_step: called after every optimizer step with the counts and the step's loss.

    Returns:
        A [`CopyTaskRun`][vanilla_transformer.copy_task.CopyTaskRun] with the model in eval
        mode and the loss of every step.

    Example:
        >>> from vanilla_transformer.copy_task import CopyTaskConfig, train_copy_model
        >>> run = train_copy_model(CopyTaskConfig(d_model=16, d_ff=32, N=1, steps=3, batch_size=4))
        >>> len(run.losses), run.train_state.samples
        (3, 12)
    """
    config = CopyTaskConfig() if config is None else config
    start = time.perf_counter()
    losses: list[float] = []

    def record(state: TrainState, loss: float) -> None:
        losses.append(loss)
        if on_step is not None:
            on_step(state, loss)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = config.make_model()
        optimizer, scheduler = make_optimizer(model, config.d_model, factor=config.factor,
                                              warmup=config.warmup)
        criterion = LabelSmoothing(config.vocab, padding_idx=PAD, smoothing=config.smoothing)
        nbatches = config.steps * config.accum_iter
        data = data_gen(config.vocab, config.batch_size, nbatches, seq_len=config.seq_len,
                        seed=config.seed)
        model.train()
        _, state = run_epoch(
            data, model, SimpleLossCompute(model.generator, criterion), optimizer, scheduler,
            mode="train", accum_iter=config.accum_iter, progress=progress, total=nbatches,
            on_step=record, desc="copy task",
        )
    model.eval()
    return CopyTaskRun(model, config, losses, state, time.perf_counter() - start)


def heldout_sequences(
    n: int = 100, *, vocab: int = 11, seq_len: int = 10, seed: int = 1
) -> torch.Tensor:
    """Copy-task sequences for evaluation, drawn with their own seed.

    Pick a `seed` different from the training seed (the command line uses the training seed
    plus one) so the held-out sequences come from a different random stream.

    Args:
        n: number of sequences.
        vocab: vocabulary size.
        seq_len: sequence length, start symbol included.
        seed: seed of the private random generator.

    Returns:
        Token ids `(n, seq_len)`, each row starting with the start symbol `1`.

    Raises:
        ValueError: if `n`, `vocab` or `seq_len` is out of range.

    Example:
        >>> from vanilla_transformer.copy_task import heldout_sequences
        >>> heldout_sequences(3, seq_len=5).shape
        torch.Size([3, 5])
    """
    check_positive_int("n", n)
    return next(data_gen(vocab, n, 1, seq_len=seq_len, seed=seed)).src


def exact_match(
    model: EncoderDecoder, src: torch.Tensor, *, use_cache: bool = True
) -> tuple[float, torch.Tensor]:
    """Greedy-decode `src` and count the rows copied exactly.

    Decoding starts from the start symbol `1` (not from the padding id `0`, as some versions
    of the source code do) and produces `seq_len` tokens, the start symbol included. The model
    is put in eval mode.

    Args:
        model: the trained model.
        src: sequences `(n, seq_len)` from
            [`heldout_sequences`][vanilla_transformer.copy_task.heldout_sequences].
        use_cache: decode with the key/value cache (same tokens, faster).

    Returns:
        `(accuracy, decoded)`: the fraction of rows decoded exactly, in [0, 1], and the decoded
        ids `(n, seq_len)`.

    Example:
        >>> from vanilla_transformer.copy_task import exact_match, heldout_sequences
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2)
        >>> accuracy, decoded = exact_match(model, heldout_sequences(4))
        >>> decoded.shape, 0.0 <= accuracy <= 1.0
        (torch.Size([4, 10]), True)
    """
    model.eval()
    decoded = greedy_decode(model, src, src != PAD, max_len=src.size(1),
                            start_symbol=START_SYMBOL, use_cache=use_cache)
    accuracy = float((decoded == src).all(dim=1).float().mean())
    return accuracy, decoded


# ---------------------------------------------------------------------------------------------
# command line


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    d = CopyTaskConfig()
    model = parser.add_argument_group("model")
    model.add_argument("--N", type=int, default=d.N,
                       help="layers per stack (default %(default)s)")
    model.add_argument("--d-model", type=int, default=d.d_model,
                       help="model width (default %(default)s)")
    model.add_argument("--d-ff", type=int, default=d.d_ff,
                       help="feed-forward width (default %(default)s)")
    model.add_argument("--h", type=int, default=d.h, help="attention heads (default %(default)s)")
    model.add_argument("--dropout", type=float, default=d.dropout,
                       help="dropout (default %(default)s)")
    data = parser.add_argument_group("data")
    data.add_argument("--vocab", type=int, default=d.vocab,
                      help="vocabulary size (default %(default)s)")
    data.add_argument("--seq-len", type=int, default=d.seq_len,
                      help="sequence length, start symbol included (default %(default)s)")
    train = parser.add_argument_group("training")
    train.add_argument("--seed", type=int, default=d.seed, help="random seed (default %(default)s)")
    train.add_argument("--steps", type=int, default=d.steps, help="optimizer steps (default %(default)s)")
    train.add_argument("--batch-size", type=int, default=d.batch_size,
                       help="sequences per batch (default %(default)s)")
    train.add_argument("--accum-iter", type=int, default=d.accum_iter,
                       help="batches per optimizer step (default %(default)s)")
    train.add_argument("--warmup", type=int, default=d.warmup,
                       help="learning-rate warm-up steps (default %(default)s)")
    train.add_argument("--factor", type=float, default=d.factor,
                       help="learning-rate scale (default %(default)s)")
    train.add_argument("--smoothing", type=float, default=d.smoothing,
                       help="label smoothing (default %(default)s)")
    train.add_argument("--threads", type=int, default=1,
                       help="CPU threads for PyTorch (default %(default)s: the model is small, so "
                       "more threads mostly add overhead)")
    run = parser.add_argument_group("evaluation and files")
    run.add_argument("--eval-size", type=int, default=100,
                     help="held-out sequences to decode (default %(default)s)")
    run.add_argument("--eval-seed", type=int, default=None,
                     help="seed of the held-out sequences (default: --seed plus 1)")
    run.add_argument("--examples", type=int, default=3,
                     help="decoded examples to print (default %(default)s)")
    run.add_argument("--save", metavar="PATH", help="save the trained model to PATH")
    run.add_argument("--load", metavar="PATH",
                     help="load a model saved with --save instead of training one")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `copy-task` subcommand to a command line.

    The subcommand's handler is stored as the parser default `handler` (the convention of
    [`cli`][vanilla_transformer.cli]): after `args = parser.parse_args()`, call
    `args.handler(args)`; it returns the exit status.

    Args:
        subparsers: the object returned by `parser.add_subparsers()`.

    Returns:
        The subcommand's parser.

    Example:
        >>> import argparse
        >>> from vanilla_transformer.copy_task import register
        >>> parser = argparse.ArgumentParser(prog="vanilla-transformer")
        >>> _ = register(parser.add_subparsers(dest="command"))
        >>> args = parser.parse_args(["copy-task", "--seed", "3", "--no-progress"])
        >>> args.seed, args.steps, args.handler.__name__
        (3, 400, 'run_copy_task')
    """
    parser = subparsers.add_parser(
        "copy-task",
        help="train a small model to copy random sequences and report its exact match",
        description=(
            "Train a small Transformer on the copy task (random sequences, start symbol 1, "
            "padding 0), report the loss, and greedy-decode held-out sequences drawn with "
            "another seed. Prints 'exact match: X%%' at the end."
        ),
    )
    _add_arguments(parser)
    parser.set_defaults(handler=run_copy_task)
    return parser


def _config_from_args(args: argparse.Namespace) -> CopyTaskConfig:
    return CopyTaskConfig(
        vocab=args.vocab, seq_len=args.seq_len, N=args.N, d_model=args.d_model, d_ff=args.d_ff,
        h=args.h, dropout=args.dropout, batch_size=args.batch_size, steps=args.steps,
        accum_iter=args.accum_iter, warmup=args.warmup, factor=args.factor,
        smoothing=args.smoothing, seed=args.seed,
    )


def run_copy_task(args: argparse.Namespace) -> int:
    """The `copy-task` subcommand: train (or load), evaluate, report, and optionally save.

    Args:
        args: the parsed options of the subcommand (see
            [`register`][vanilla_transformer.copy_task.register]).

    Returns:
        The exit status, `0`.

    Raises:
        ValueError: for an invalid option value.

    Example:
        >>> import argparse
        >>> from vanilla_transformer.copy_task import register, run_copy_task
        >>> parser = argparse.ArgumentParser()
        >>> _ = register(parser.add_subparsers())
        >>> args = parser.parse_args(["copy-task", "--steps", "2", "--N", "1", "--d-model", "16",
        ...                           "--d-ff", "32", "--examples", "0", "--no-progress"])
        >>> run_copy_task(args)  # doctest: +ELLIPSIS
        copy task: vocab 11, seq_len 10; model N=1 d_model=16 h=4 d_ff=32; 2 steps of 64 ...
        step     1/2  loss ...
        step     2/2  loss ...
        final loss: ...
        exact match: ...% (.../100 held-out sequences, seed 1, greedy decoding from start symbol 1)
        0
    """
    check_positive_int("--threads", args.threads)
    check_positive_int("--eval-size", args.eval_size)
    check_non_negative_int("--examples", args.examples)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _run(args)
    finally:
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace) -> int:
    if args.load:
        model, meta = load_checkpoint(args.load)
        # the task's sizes come from the file when it has them, else from the options
        config = CopyTaskConfig(**meta["task"]) if "task" in meta else _config_from_args(args)
        print(f"loaded {args.load}: N={config.N} d_model={config.d_model} h={config.h} "
              f"d_ff={config.d_ff}, trained {meta.get('steps', '?')} steps with seed "
              f"{meta.get('seed', '?')}")
        seed = meta.get("seed", config.seed)
    else:
        config = _config_from_args(args)
        print(f"copy task: vocab {config.vocab}, seq_len {config.seq_len}; model N={config.N} "
              f"d_model={config.d_model} h={config.h} d_ff={config.d_ff}; {config.steps} steps "
              f"of {config.batch_size * config.accum_iter} sequences; seed {config.seed}",
              flush=True)
        every = max(1, config.steps // 5)

        def report(state: TrainState, loss: float) -> None:
            if args.no_progress and (state.accum_step % every == 0 or state.accum_step == 1):
                print(f"step {state.accum_step:5d}/{config.steps}  loss {loss:.4f}", flush=True)

        run = train_copy_model(config, progress=not args.no_progress, on_step=report)
        model, seed = run.model, config.seed
        n_params = sum(p.numel() for p in model.parameters())
        print(f"final loss: {run.final_loss:.6f} (mean per token, last step); "
              f"{n_params:,} parameters trained in {run.seconds:.1f} s")
        if args.save:
            save_checkpoint(args.save, model, task=config.to_dict(), seed=config.seed,
                            steps=config.steps, final_loss=run.final_loss)
            print(f"saved model to {args.save}")
    eval_seed = seed + 1 if args.eval_seed is None else args.eval_seed
    src = heldout_sequences(args.eval_size, vocab=config.vocab, seq_len=config.seq_len,
                            seed=eval_seed)
    accuracy, decoded = exact_match(model, src)
    for i in range(min(args.examples, src.size(0))):
        mark = "ok" if torch.equal(decoded[i], src[i]) else "WRONG"
        print(f"  {src[i].tolist()} -> {decoded[i].tolist()}  {mark}")
    hits = int(round(accuracy * src.size(0)))
    print(f"exact match: {100 * accuracy:.1f}% ({hits}/{src.size(0)} held-out sequences, "
          f"seed {eval_seed}, greedy decoding from start symbol {START_SYMBOL})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the `copy-task` subcommand on its own: `python -m vanilla_transformer.copy_task`.

    Args:
        argv: the options (default: `sys.argv[1:]`).

    Returns:
        The exit status of [`run_copy_task`][vanilla_transformer.copy_task.run_copy_task].

    Example:
        ```console
        python -m vanilla_transformer.copy_task --seed 1 --save copy.pt
        python -m vanilla_transformer.copy_task --load copy.pt
        ```
    """
    parser = argparse.ArgumentParser(prog="python -m vanilla_transformer.copy_task",
                                     description="Train and evaluate the copy task.")
    _add_arguments(parser)
    args = parser.parse_args(argv)
    return run_copy_task(args)


if __name__ == "__main__":
    raise SystemExit(main())
