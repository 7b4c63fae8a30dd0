"""A real language pair made at run time: English number words to German (or French) ones.

`num2words` spells every number in each language, so "four hundred and twenty-one" pairs with
"vierhunderteinundzwanzig". The numbers are split into train, valid and test sets by a seeded
permutation, so no test number is ever seen in training. Parallel corpora are kept as UTF-8
TSV files, one `source<TAB>target` pair a line.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from .._checks import check_non_negative_int, check_positive_int
from .._io import atomic_write
from .tokenizer import SPECIAL_TOKENS

__all__ = [
    "MAX_LINE_CHARS",
    "check_line_length",
    "LANGUAGES",
    "DEFAULT_LIMIT",
    "DEFAULT_SIZES",
    "DEFAULT_ALWAYS_FIRST",
    "number_words",
    "number_pairs",
    "split_numbers",
    "number_corpus",
    "write_tsv",
    "read_tsv",
]

LANGUAGES = ("de", "fr")
"""Target languages of the number corpus (the source is always English)."""

DEFAULT_LIMIT = 1_000_000
"""Numbers are drawn from `range(DEFAULT_LIMIT)` unless told otherwise."""

DEFAULT_SIZES = {"train": 20_000, "valid": 500, "test": 1_000}
"""How many numbers each split holds by default."""

MAX_LINE_CHARS = 10_000
"""The most characters a line of text to read may hold, tabs included. The tokenizer's time
grows fast with a line's length (one line of 5 MB takes minutes), and no sentence is that
long, so a longer line is refused by its length before anything is tokenised."""

DEFAULT_ALWAYS_FIRST = 1000
"""Every number below this is in the training split (see `split_numbers`)."""


def _check_lang(lang: object) -> str:
    if not isinstance(lang, str) or lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    return lang


def number_words(n: int, lang: str = "en") -> str:
    """Spell the number `n` in words (`lang` is `"en"` or one of `LANGUAGES`).

    Args:
        n: an int >= 0.
        lang: `"en"`, `"de"` or `"fr"`.

    Returns:
        The words, as `num2words` writes them.

    Raises:
        ValueError: for a negative `n` or an unknown language. TypeError: for a non-int `n`.

    Examples:
        >>> from vanilla_transformer.data.numbers import number_words
        >>> number_words(421), number_words(421, "de"), number_words(421, "fr")
        ('four hundred and twenty-one', 'vierhunderteinundzwanzig', 'quatre cent vingt et un')
    """
    from num2words import num2words

    check_non_negative_int("n", n)
    if lang != "en":
        _check_lang(lang)
    return num2words(n, lang=lang)


def number_pairs(numbers: Iterable[int], lang: str = "de") -> list[tuple[str, str]]:
    """`(English words, words in lang)` for each number.

    Examples:
        >>> from vanilla_transformer.data.numbers import number_pairs
        >>> number_pairs([21, 1000], "de")
        [('twenty-one', 'einundzwanzig'), ('one thousand', 'eintausend')]
    """
    _check_lang(lang)
    return [(number_words(n, "en"), number_words(n, lang)) for n in numbers]


def split_numbers(
    sizes: dict[str, int] | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    seed: int = 0,
    always_first: int = DEFAULT_ALWAYS_FIRST,
) -> dict[str, list[int]]:
    """Disjoint sets of numbers from `range(limit)`, one per split, drawn by a seeded permutation.

    Drawn uniformly, numbers below 1000 would be one in a thousand, and a model would never
    learn "four hundred and twenty-one" on its own. So the first split (the training set)
    always holds every number below `always_first`, the building blocks of all the others; the
    rest of it and the other splits are drawn from a permutation of
    `range(always_first, limit)`. Every number of the other splits is unseen in the first.

    Args:
        sizes: how many numbers each split gets, the training split first (default
            `DEFAULT_SIZES`).
        limit: numbers are drawn from `range(limit)`.
        seed: the permutation's seed.
        always_first: the numbers below this all go to the first split (0 for none).

    Returns:
        `{split name: numbers}`; no number is in two splits.

    Raises:
        ValueError: if the sizes add up to more than `limit`, or the first split is smaller
            than `always_first`.

    Examples:
        >>> from vanilla_transformer.data.numbers import split_numbers
        >>> s = split_numbers({"train": 6, "test": 3}, limit=10, seed=1, always_first=2)
        >>> len(s["train"]), len(s["test"]), set(s["train"]) & set(s["test"]), s["train"][:2]
        (6, 3, set(), [0, 1])
    """
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    check_positive_int("limit", limit)
    check_non_negative_int("always_first", always_first)
    for name, size in sizes.items():
        check_non_negative_int(f"size of {name!r}", size)
    if sum(sizes.values()) > limit:
        raise ValueError(f"the splits need {sum(sizes.values())} distinct numbers but "
                         f"range({limit}) has only {limit}")
    always_first = min(always_first, limit)
    first = next(iter(sizes), None)
    if always_first and (first is None or sizes[first] < always_first):
        raise ValueError(f"the first split must hold at least the {always_first} numbers below "
                         f"always_first={always_first}; got sizes {sizes}")
    order = always_first + torch.randperm(limit - always_first,
                                          generator=torch.Generator().manual_seed(seed))
    out, start = {}, 0
    for name, size in sizes.items():
        fixed = list(range(always_first)) if name == first else []
        take = size - len(fixed)
        out[name] = fixed + order[start:start + take].tolist()
        start += take
    return out


def number_corpus(
    lang: str = "de",
    sizes: dict[str, int] | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    seed: int = 0,
    always_first: int = DEFAULT_ALWAYS_FIRST,
) -> dict[str, list[tuple[str, str]]]:
    """The number-translation corpus: `{split: [(English, target), ...]}`.

    Args:
        lang: the target language, one of `LANGUAGES`.
        sizes: numbers per split (default `DEFAULT_SIZES`).
        limit: numbers are drawn from `range(limit)`.
        seed: the split's seed.
        always_first: every number below it goes to the first split (see `split_numbers`).

    Returns:
        The pairs of each split (the first starts with the numbers below `always_first`).

    Examples:
        >>> from vanilla_transformer.data.numbers import number_corpus
        >>> corpus = number_corpus("de", {"train": 3, "test": 1}, limit=100, seed=0,
        ...                        always_first=2)
        >>> corpus["train"][:2], len(corpus["test"])
        ([('zero', 'null'), ('one', 'eins')], 1)
    """
    _check_lang(lang)
    splits = split_numbers(sizes, limit=limit, seed=seed, always_first=always_first)
    return {name: number_pairs(numbers, lang) for name, numbers in splits.items()}


def write_tsv(path: str | os.PathLike[str], pairs: Sequence[tuple[str, str]]) -> Path:
    """Write `source<TAB>target` lines (UTF-8), atomically.

    Raises:
        ValueError: if a sentence holds a tab or a newline.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.data.numbers import read_tsv, write_tsv
        >>> path = write_tsv(os.path.join(tempfile.mkdtemp(), "a.tsv"), [("one", "eins")])
        >>> read_tsv(path)
        [('one', 'eins')]
    """
    for i, pair in enumerate(pairs):
        if any(("\t" in s or "\n" in s) for s in pair):
            raise ValueError(f"pair {i} {pair!r} holds a tab or a newline")
    text = "".join(f"{src}\t{tgt}\n" for src, tgt in pairs)
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def read_tsv(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Read a parallel corpus: UTF-8, one `source<TAB>target` pair a line.

    The file is read as a stream, so a bad line is reported as soon as it is reached, however
    large the file. Lines end at `\\n` or `\\r\\n` only (other Unicode line separators, such as
    U+2028, are text); a UTF-8 byte-order mark at the start is dropped; blank lines are skipped.

    Args:
        path: the file.

    Returns:
        The `(source, target)` pairs.

    Raises:
        ValueError: if the file is missing, unreadable, not UTF-8 or empty, or a line does not
            hold exactly one tab, has an empty side, or holds a special token (`<s>`, `</s>`,
            `<pad>`, `<unk>`); the message names the file and line.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.data.numbers import read_tsv
        >>> path = os.path.join(tempfile.mkdtemp(), "bad.tsv")
        >>> _ = open(path, "w").write("one\\teins\\ntwo zwei\\n")
        >>> read_tsv(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: ...bad.tsv line 2: expected exactly one tab (source<TAB>target), found 0
    """
    name = os.fspath(path)
    try:
        file = open(name, "rb")  # noqa: SIM115 - closed below; binary, so only b"\n" ends a line
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: is a folder, not a file") from None
    except OSError as error:
        raise ValueError(f"{name}: cannot read it ({error.strerror or error})") from None
    pairs = []
    with file:
        try:
            for i, raw in enumerate(file, 1):
                pair = _parse_tsv_line(name, i, raw)
                if pair is not None:
                    pairs.append(pair)
        except OSError as error:
            raise ValueError(f"{name}: cannot read it ({error.strerror or error})") from None
    if not pairs:
        raise ValueError(f"{name}: empty file, no source<TAB>target lines")
    return pairs


def check_line_length(name: str, i: int, line: str) -> str:
    """Return `line`, line `i` of `name`, unless it holds more than `MAX_LINE_CHARS`
    characters.

    Raises:
        ValueError: naming the file, the line and its length.

    Examples:
        >>> check_line_length("a.tsv", 3, "x" * (MAX_LINE_CHARS + 1))
        Traceback (most recent call last):
        ...
        ValueError: a.tsv line 3: 10,001 characters, more than the 10,000 a line may hold; split or remove it
    """
    if len(line) > MAX_LINE_CHARS:
        raise ValueError(f"{name} line {i}: {len(line):,} characters, more than the "
                         f"{MAX_LINE_CHARS:,} a line may hold; split or remove it")
    return line


def _parse_tsv_line(name: str, i: int, raw: bytes) -> tuple[str, str] | None:
    """The pair on line `i` of a TSV file, or `None` for a blank line."""
    if i == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        line = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
    except UnicodeDecodeError:
        raise ValueError(f"{name} line {i}: not UTF-8 text") from None
    check_line_length(name, i, line)
    if not line.strip():
        return None
    tabs = line.count("\t")
    if tabs != 1:
        raise ValueError(f"{name} line {i}: expected exactly one tab (source<TAB>target), "
                         f"found {tabs}")
    src, tgt = (s.strip() for s in line.split("\t"))
    if not src or not tgt:
        raise ValueError(f"{name} line {i}: empty {'source' if not src else 'target'}")
    for token in SPECIAL_TOKENS:
        if token in line:
            raise ValueError(f"{name} line {i}: holds the special token {token!r}, which the "
                             "tokenizer reserves; remove it from the text")
    return src, tgt
