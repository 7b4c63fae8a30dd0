"""Settings sized from the data: the vocabulary, the preset and the validation sample of a run.

A translator's defaults cannot suit number words and real text at once: the number corpus
needs a few hundred byte-pair pieces, a corpus of program messages thousands. So the settings
a user does not give are read off the corpus, by three rules stated in `size_run`, and
`translate train` prints what it chose and why on its first line. On the number corpus the
rules give the sizes that corpus was tuned with (250 pieces, `paper-small`, 200 validation
sentences).

Pure Python, no PyTorch: the command line sizes a run before it imports the model.

Explained on the [Train on your own text][own-text-guide] page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["SAMPLE", "MIN_VOCAB", "MAX_VOCAB", "WORDS_PER_PIECE", "PRESET_LIMITS",
           "VALID_CHARACTERS", "MIN_EVAL", "CorpusStats", "Choice", "corpus_stats", "size_run",
           "describe"]

SAMPLE = 100_000
"""Training pairs whose words are counted; a larger file's running words are extrapolated."""

MIN_VOCAB, MAX_VOCAB, STEP = 250, 32_000, 250
"""The vocabulary's bounds, and the multiple it is rounded to."""

WORDS_PER_PIECE = 64
"""Running words per vocabulary piece at most: a piece is seen often enough to be learned."""

PRESET_LIMITS: tuple[tuple[int, str], ...] = ((500_000, "paper-small"), (10_000_000, "paper-base"))
"""`(pairs, preset)`: a corpus of fewer pairs than a limit gets its preset; a larger one
`paper-big`. The paper's English-German data held 4.5 million pairs, its English-French data 36 million."""

VALID_CHARACTERS = 10_000
"""Characters of reference text decoded at each validation, about."""

MIN_EVAL = 100
"""The smallest validation sample chosen (unless the validation file is smaller)."""


@dataclass(frozen=True)
class CorpusStats:
    """What the sizing rules read from a corpus.

    Attributes:
        pairs: training pairs in all.
        sampled: training pairs counted below (the first `SAMPLE`).
        words: running words (split at white space) of both sides of the sampled pairs.
        repeated: distinct words seen at least twice in them.
        characters: distinct characters in them.
        valid_pairs: validation pairs.
        valid_chars: characters of the validation targets, on average.
    """

    pairs: int
    sampled: int
    words: int
    repeated: int
    characters: int
    valid_pairs: int
    valid_chars: float

    def __post_init__(self) -> None:
        for name in ("pairs", "sampled", "words", "repeated", "characters", "valid_pairs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if not 0 < self.sampled <= self.pairs:
            raise ValueError(f"sampled must be in [1, pairs={self.pairs}], got {self.sampled}")
        if not self.valid_chars >= 0:  # NaN included
            raise ValueError(f"valid_chars must be a number >= 0, got {self.valid_chars!r}")

    @property
    def all_words(self) -> int:
        """The running words of every pair, extrapolated from the sample."""
        return round(self.words * self.pairs / self.sampled)


@dataclass(frozen=True)
class Choice:
    """One sized setting: its `value` and `why`, a few words for the first line of a run."""

    value: int | str
    why: str


def corpus_stats(train: Iterable[tuple[str, str]], valid: Sequence[tuple[str, str]], *,
                 pairs: int | None = None, sample: int = SAMPLE) -> CorpusStats:
    """Count what `size_run` needs: the first `sample` training pairs, and the validation set.

    Args:
        train: the training pairs, such as `iter_tsv(path)`; at most `sample` are read.
        valid: the validation pairs.
        pairs: the number of training pairs, when `train` holds more than `sample`
            (default: those read).
        sample: how many training pairs to count.

    Raises:
        ValueError: for no training pairs, or `pairs` smaller than the pairs read.

    Examples:
        >>> from vanilla_transformer.config.sizing import corpus_stats
        >>> stats = corpus_stats([("one file", "eine Datei"), ("two files", "zwei Dateien")],
        ...                      [("no file", "keine Datei")])
        >>> stats.pairs, stats.words, stats.repeated, stats.valid_chars
        (2, 8, 0, 11.0)
    """
    words: Counter[str] = Counter()
    characters: set[str] = set()
    read = running = 0
    for source, target in train:
        if read == sample:
            break
        read += 1
        for text in (source, target):
            split = text.split()
            running += len(split)
            words.update(split)
            characters.update(text)
    if read == 0:
        raise ValueError("no training pairs to size the run from")
    if pairs is not None and pairs < read:
        raise ValueError(f"pairs must be at least the {read} pairs read, got {pairs}")
    chars = sum(len(target) for _, target in valid) / len(valid) if valid else 0.0
    return CorpusStats(pairs=read if pairs is None else pairs, sampled=read, words=running,
                       repeated=sum(1 for n in words.values() if n >= 2),
                       characters=len(characters - {" "}), valid_pairs=len(valid),
                       valid_chars=chars)


def size_run(stats: CorpusStats) -> dict[str, Choice]:
    """The vocabulary, preset and validation sample for a corpus, each with its reason.

    - `vocab_size`: a piece for each word seen at least twice, but no more than one piece per
      `WORDS_PER_PIECE` running words, so that every piece is seen often enough to be
      learned; rounded down to a multiple of 250, within `[MIN_VOCAB, MAX_VOCAB]`, and at
      least twice the characters seen, so that pieces go beyond single characters.
    - `preset`: by the number of training pairs (`PRESET_LIMITS`).
    - `eval_size`: enough validation sentences for about `VALID_CHARACTERS` characters of
      reference text, rounded to 50, at least `MIN_EVAL`, at most the validation file.

    Returns:
        `{"vocab_size", "preset", "eval_size"}` to their `Choice`.

    Examples:
        >>> from vanilla_transformer.config.sizing import CorpusStats, size_run
        >>> stats = CorpusStats(pairs=32_402, sampled=32_402, words=320_101, repeated=20_088,
        ...                     characters=182, valid_pairs=1000, valid_chars=38.5)
        >>> {name: choice.value for name, choice in size_run(stats).items()}
        {'vocab_size': 5000, 'preset': 'paper-small', 'eval_size': 250}
    """
    per_piece = stats.all_words // WORDS_PER_PIECE
    if stats.repeated <= per_piece:
        vocab, why = stats.repeated, f"{stats.repeated:,} words seen twice"
    else:
        vocab, why = per_piece, f"one piece per {WORDS_PER_PIECE} of {stats.all_words:,} words"
    if vocab < MIN_VOCAB:
        why += f", at least {MIN_VOCAB}"
    elif vocab > MAX_VOCAB:
        why += f", at most {MAX_VOCAB:,}"
    vocab = min(max(vocab // STEP * STEP, MIN_VOCAB), MAX_VOCAB)
    if vocab < 2 * stats.characters:
        vocab, why = -(-2 * stats.characters // STEP) * STEP, f"{stats.characters:,} characters"
    preset = next((name for limit, name in PRESET_LIMITS if stats.pairs < limit), "paper-big")
    below = next((limit for limit, name in PRESET_LIMITS if name == preset), None)
    preset_why = (f"{stats.pairs:,} pairs, under {below:,}" if below is not None
                  else f"{stats.pairs:,} pairs, {PRESET_LIMITS[-1][0]:,} or more")
    # a reference holds at least one character (read_tsv refuses an empty side)
    wanted = max(MIN_EVAL, round(VALID_CHARACTERS / max(stats.valid_chars, 1.0) / 50) * 50)
    eval_size = min(wanted, stats.valid_pairs)
    eval_why = (f"all {stats.valid_pairs:,} validation pairs" if eval_size == stats.valid_pairs
                else f"about {VALID_CHARACTERS:,} characters of references")
    return {"vocab_size": Choice(vocab, why), "preset": Choice(preset, preset_why),
            "eval_size": Choice(eval_size, eval_why)}


_LABELS = {"vocab_size": "vocabulary", "preset": "preset", "eval_size": "validation sample"}


def describe(choices: dict[str, Choice]) -> str:
    """The line that says what was sized and why.

    Examples:
        >>> from vanilla_transformer.config.sizing import Choice, describe
        >>> describe({"preset": Choice("paper-small", "32,402 pairs, under 500,000")})
        'sized from the data: preset paper-small (32,402 pairs, under 500,000)'
    """
    parts = [f"{_LABELS.get(name, name)} {choice.value:,}" if isinstance(choice.value, int)
             else f"{_LABELS.get(name, name)} {choice.value}" for name, choice in choices.items()]
    return "sized from the data: " + ", ".join(
        f"{part} ({choice.why})" for part, choice in zip(parts, choices.values(), strict=True))
