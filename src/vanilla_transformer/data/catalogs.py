"""Real parallel text from the machine: the gettext catalogs its programs are translated with.

Every program translated with GNU gettext installs a compiled catalog,
`/usr/share/locale/<lang>/LC_MESSAGES/<program>.mo`, that pairs each English message of its
interface ("Permission denied", "Show hidden files") with a translator's version. Together the
catalogs of a Debian machine hold tens of thousands of such pairs, written by people for
people: a corpus nobody here made, of the short technical sentences these programs print.

`catalog_corpus` reads them (a small reader of the `.mo` format, `read_mo`), keeps the entries
a sentence-level translator can learn from (`drop_reason` says why the others go), keeps one
translation per English message, and splits the messages by a seeded shuffle into train,
valid and test sets, so no test message is seen in training.

Explained on the [Train on your own text][own-text-guide] page.
"""

from __future__ import annotations

import os
import random
import re
import struct
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._checks import check_non_negative_int, check_positive_int

__all__ = ["LOCALE_DIR", "MAX_CHARS", "DROP_REASONS", "CatalogCorpus", "read_mo", "write_mo", "drop_reason",
           "catalog_files", "catalog_corpus", "summary"]

LOCALE_DIR = Path("/usr/share/locale")
"""Where Debian (and most Linux systems) install the compiled gettext catalogs."""

MAX_CHARS = 100
"""The longest message kept, in characters, on either side: longer ones are mostly help texts
that a sentence-level model of a few minutes' training cannot use."""

DROP_REASONS = ("plural", "untranslated", "multi-line", "markup", "over-long", "duplicate")
"""Why an entry of a catalog is left out, in the order `drop_reason` asks (`duplicate` is
decided once all catalogs are read)."""

_MAGIC = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}  # 0x950412de, either byte order
_LANG = re.compile(r"[A-Za-z]{2,3}(_[A-Za-z]{2})?(@[A-Za-z]+)?")
_TAG = re.compile(r"<[A-Za-z/!?][^<>]*>|&[A-Za-z#][A-Za-z0-9]*;")  # HTML/XML tags, entities
_MNEMONIC = re.compile(r"(?<!\S)_(?=\w)")  # GTK's keyboard accelerator: "_Open"


@dataclass(frozen=True)
class CatalogCorpus:
    """The pairs of a language's catalogs, split, with what was read and left out.

    Attributes:
        splits: `{"train", "valid", "test"}` to `(source, target)` pairs; each English source
            is in one split only.
        catalogs: the `.mo` files read, by name.
        messages: the entries read (translated messages, the catalogs' headers left out).
        dropped: how many entries each of `DROP_REASONS` left out.
        unreadable: files that are not `.mo` catalogs (skipped), by name.
    """

    splits: dict[str, list[tuple[str, str]]]
    catalogs: tuple[str, ...]
    messages: int
    dropped: dict[str, int]
    unreadable: tuple[str, ...] = ()


def read_mo(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """The `(msgid, msgstr)` entries of a compiled gettext catalog (a `.mo` file).

    The format is GNU gettext's: a magic number, then two tables of `(length, offset)` pairs
    that locate the original strings and their translations. A message with a context
    (`msgctxt`) comes back without it; a plural entry keeps its forms joined by NUL
    characters, as the file stores them. Strings are decoded with the charset the catalog's
    header names (UTF-8 when it names none). The header itself (the empty `msgid`) is left out.

    Args:
        path: the `.mo` file.

    Returns:
        The entries, in the file's order (sorted by `msgid`).

    Raises:
        ValueError: if the file cannot be read, or is not a `.mo` catalog (its magic number,
            a table or a string lies outside the file, or a string does not decode); the
            message names the file.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.data.catalogs import read_mo, write_mo
        >>> path = write_mo(os.path.join(tempfile.mkdtemp(), "x.mo"),
        ...                 [("File", "Datei"), ("menu\x04Open", "Öffnen")])
        >>> read_mo(path)
        [('File', 'Datei'), ('Open', 'Öffnen')]
    """
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except OSError as error:
        raise ValueError(f"{name}: cannot read it ({error.strerror or error})") from None
    order = _MAGIC.get(data[:4])
    if order is None or len(data) < 20:
        raise ValueError(f"{name}: not a gettext .mo catalog (no magic number)")
    count, originals, translations = struct.unpack(f"{order}3I", data[8:20])

    def string(table: int, i: int) -> bytes:
        start = table + 8 * i
        if start + 8 > len(data):
            raise ValueError(f"{name}: not a gettext .mo catalog (a table runs past the end)")
        length, offset = struct.unpack(f"{order}2I", data[start:start + 8])
        if offset + length > len(data):
            raise ValueError(f"{name}: not a gettext .mo catalog (a string runs past the end)")
        return data[offset:offset + length]

    raw = [(string(originals, i), string(translations, i)) for i in range(count)]
    charset = "utf-8"
    for msgid, msgstr in raw:
        if msgid == b"":
            found = re.search(rb"charset=([-\w]+)", msgstr)
            charset = found.group(1).decode("ascii") if found else charset
    entries = []
    try:
        for msgid, msgstr in raw:
            if msgid == b"":
                continue
            source = msgid.decode(charset)
            entries.append((source.split("\x04", 1)[-1], msgstr.decode(charset)))
    except (LookupError, UnicodeDecodeError) as error:
        raise ValueError(f"{name}: not a gettext .mo catalog ({error})") from None
    return entries


def write_mo(path: str | os.PathLike[str], entries: Sequence[tuple[str, str]], *,
             charset: str = "UTF-8", byteorder: str = "<") -> Path:
    """Write `(msgid, msgstr)` entries as a `.mo` catalog, as `msgfmt` would (no hash table).

    A `msgid` may carry a context (`"context\x04msgid"`) or plural forms joined by NUL
    characters, as in the file. The header (the empty `msgid`) names `charset`; the entries are
    sorted by `msgid`, as gettext's lookup expects. Python's `gettext.GNUTranslations` reads
    the result.

    Args:
        path: the file to write (atomically).
        entries: the messages and their translations.
        charset: the encoding of the strings.
        byteorder: `"<"` (little-endian, as on x86) or `">"`.

    Returns:
        `path` as a `Path`.
    """
    from .._io import atomic_write

    header = f"Content-Type: text/plain; charset={charset}\n"
    strings = sorted((m.encode(charset), t.encode(charset)) for m, t in [("", header), *entries])
    n = len(strings)
    start = 28 + 16 * n  # the header's seven numbers, then both tables
    blob, table = b"", []
    for column in (0, 1):
        for pair in strings:
            table.append(struct.pack(f"{byteorder}2I", len(pair[column]), start + len(blob)))
            blob += pair[column] + b"\0"
    head = struct.pack(f"{byteorder}7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, start)
    data = head + b"".join(table) + blob
    return atomic_write(path, lambda f: f.write(data))


def drop_reason(source: str, target: str, *, max_chars: int = MAX_CHARS) -> str | None:
    """Why a catalog entry is left out of the corpus, or `None` to keep it.

    In order: `plural` (its forms are joined by NUL characters), `untranslated` (an empty
    translation, or one equal to the English), `multi-line` (a line break or a tab on either
    side), `markup` (an HTML or XML tag, an entity, or fewer letters than other characters,
    as in `"%s: %s"`), `over-long` (more than `max_chars` characters on either side).

    Examples:
        >>> from vanilla_transformer.data.catalogs import drop_reason
        >>> drop_reason("Permission denied", "Keine Berechtigung") is None
        True
        >>> drop_reason("<b>Name</b>", "<b>Name</b>"), drop_reason("%s: %s", "%s: %s")
        ('untranslated', 'untranslated')
        >>> drop_reason("<b>Size</b>", "<b>Größe</b>"), drop_reason("line\\nbreak", "Zeile")
        ('markup', 'multi-line')
    """
    if "\x00" in source or "\x00" in target:
        return "plural"
    if not target.strip() or _normal(target) == _normal(source):
        return "untranslated"
    if any(c in text for text in (source, target) for c in "\n\r\t"):
        return "multi-line"
    for text in (source, target):
        letters = sum(c.isalpha() for c in text)
        if _TAG.search(text) or letters < sum(not c.isspace() for c in text) - letters:
            return "markup"
    if max(len(_normal(source)), len(_normal(target))) > max_chars:
        return "over-long"
    return None


def _normal(text: str) -> str:
    """A message as the corpus keeps it: no accelerator underscores, single spaces."""
    return " ".join(_MNEMONIC.sub("", text).split())


def catalog_files(lang: str, locale_dir: str | os.PathLike[str] = LOCALE_DIR) -> list[Path]:
    """The `.mo` catalogs installed for `lang`, sorted by name.

    Raises:
        ValueError: for a `lang` that is not a locale name (`de`, `pt_BR`, `sr@latin`), or
            when no catalog is installed for it (the message names the folder, and the
            languages that have the most catalogs).

    Examples:
        >>> from vanilla_transformer.data.catalogs import catalog_files
        >>> catalog_files("../de")
        Traceback (most recent call last):
        ...
        ValueError: --lang must be a locale name such as de, pt_BR or sr@latin, got '../de'
    """
    if not isinstance(lang, str) or not _LANG.fullmatch(lang):
        raise ValueError(f"--lang must be a locale name such as de, pt_BR or sr@latin, got {lang!r}")
    folder = Path(locale_dir) / lang / "LC_MESSAGES"
    files = sorted(p for p in folder.glob("*.mo") if p.is_file())
    if not files:
        others = Counter({p.name: len(list((p / "LC_MESSAGES").glob("*.mo")))
                          for p in Path(locale_dir).glob("*") if p.is_dir()})
        found = ", ".join(f"{name} ({n})" for name, n in others.most_common(5) if n)
        raise ValueError(f"no gettext catalogs for --lang {lang}: {folder}/ holds no .mo file; "
                         + (f"languages with the most here: {found}" if found else
                            f"{locale_dir} holds none for any language"))
    return files


def catalog_corpus(
    lang: str,
    *,
    valid_size: int = 1000,
    test_size: int = 1000,
    seed: int = 0,
    max_chars: int = MAX_CHARS,
    locale_dir: str | os.PathLike[str] = LOCALE_DIR,
    programs: Sequence[str] | None = None,
) -> CatalogCorpus:
    """English-to-`lang` pairs from the installed gettext catalogs, split by source.

    Each catalog is read with `read_mo`, in the order of the file names; every entry that
    `drop_reason` names is left out. A message is kept as `_normal` writes it (accelerator
    underscores removed, runs of spaces made one). An English message found more than once
    (in several catalogs, or with several contexts) keeps its most frequent translation, the
    first read on a tie; its other entries count as `duplicate`. The unique messages are
    sorted, shuffled with `seed`, and dealt out: `valid_size` to valid, `test_size` to test,
    the rest to train.

    Args:
        lang: the locale folder's name: `de`, `fr`, `pt_BR`, ...
        valid_size: pairs in the validation split.
        test_size: pairs in the test split.
        seed: seeds the shuffle.
        max_chars: the longest message kept, on either side.
        locale_dir: the folder that holds `<lang>/LC_MESSAGES/*.mo`.
        programs: read only these catalogs, by name without `.mo` (`["git", "tar"]`); all
            by default.

    Returns:
        The [`CatalogCorpus`][vanilla_transformer.data.catalogs.CatalogCorpus].

    Raises:
        ValueError: for a bad argument, no catalogs for `lang` (see `catalog_files`), or too
            few pairs to leave at least one for training once valid and test are dealt out.
    """
    check_non_negative_int("valid_size", valid_size)
    check_non_negative_int("test_size", test_size)
    check_non_negative_int("seed", seed)
    check_positive_int("max_chars", max_chars)
    files = catalog_files(lang, locale_dir)
    if programs is not None:
        missing = sorted(set(programs) - {p.stem for p in files})
        if missing:
            raise ValueError(f"no catalog named {', '.join(missing)} for --lang {lang}; it has "
                             f"{', '.join(p.stem for p in files)}")
        files = [p for p in files if p.stem in set(programs)]
    dropped = dict.fromkeys(DROP_REASONS, 0)
    translations: dict[str, Counter[str]] = {}
    messages, unreadable = 0, []
    for path in files:
        try:
            entries = read_mo(path)
        except ValueError:
            unreadable.append(path.name)
            continue
        for source, target in entries:
            messages += 1
            reason = drop_reason(source, target, max_chars=max_chars)
            if reason is not None:
                dropped[reason] += 1
                continue
            translations.setdefault(_normal(source), Counter())[_normal(target)] += 1
    kept = sum(sum(c.values()) for c in translations.values())
    dropped["duplicate"] = kept - len(translations)
    pairs = sorted((source, c.most_common(1)[0][0]) for source, c in translations.items())
    if len(pairs) <= valid_size + test_size:
        raise ValueError(f"the {len(files)} catalogs for --lang {lang} hold {len(pairs)} usable "
                         f"pairs: too few for --valid-size {valid_size} and --test-size "
                         f"{test_size} and a training set; give smaller sizes")
    random.Random(seed).shuffle(pairs)
    splits = {"train": pairs[valid_size + test_size:], "valid": pairs[:valid_size],
              "test": pairs[valid_size:valid_size + test_size]}
    return CatalogCorpus(splits, tuple(p.name for p in files), messages, dropped,
                         tuple(unreadable))


def summary(corpus: CatalogCorpus, folder: str | os.PathLike[str]) -> list[str]:
    """The lines `translate catalogs` prints about what it read and left out."""
    kept = sum(len(pairs) for pairs in corpus.splits.values())
    reasons = ", ".join(f"{n:,} {reason}" for reason, n in corpus.dropped.items())
    lines = [f"read {len(corpus.catalogs)} catalogs in {folder}: {corpus.messages:,} messages; "
             f"kept {kept:,} pairs, left out {reasons}"]
    if corpus.unreadable:
        lines.append(f"skipped {len(corpus.unreadable)} files that are not .mo catalogs: "
                     f"{', '.join(corpus.unreadable)}")
    return lines

