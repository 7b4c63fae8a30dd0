"""The gettext catalog reader: what it reads agrees with Python's own `gettext`, and each kind
of entry that a sentence translator cannot use is left out, counted by its reason."""

from __future__ import annotations

import gettext
from pathlib import Path

import pytest

from vanilla_transformer.data.catalogs import (
    DROP_REASONS,
    LOCALE_DIR,
    catalog_corpus,
    catalog_files,
    drop_reason,
    read_mo,
    write_mo,
)

ENTRIES = [("Open file", "Datei öffnen"), ("menu\x04Quit", "Beenden"),
           ("%d file\x00%d files", "%d Datei\x00%d Dateien"), ("Größe", "Size")]


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_python_gettext_reads_what_write_mo_writes(tmp_path, byteorder):
    path = write_mo(tmp_path / "x.mo", ENTRIES, byteorder=byteorder)
    with open(path, "rb") as f:
        catalog = gettext.GNUTranslations(f)
    assert catalog.gettext("Open file") == "Datei öffnen"
    assert catalog.pgettext("menu", "Quit") == "Beenden"
    assert catalog.ngettext("%d file", "%d files", 2) == "%d Dateien"
    assert catalog.gettext("Größe") == "Size"


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_read_mo_gives_back_what_was_written(tmp_path, byteorder):
    path = write_mo(tmp_path / "x.mo", ENTRIES, byteorder=byteorder)
    assert sorted(read_mo(path)) == sorted((m.split("\x04")[-1], t) for m, t in ENTRIES)


def test_a_latin_1_catalog_is_decoded_by_its_charset(tmp_path):
    path = write_mo(tmp_path / "x.mo", [("Size", "Größe")], charset="ISO-8859-1")
    assert "Größe".encode("latin-1") in path.read_bytes()
    assert read_mo(path) == [("Size", "Größe")]


def _installed() -> list[Path]:
    return sorted(LOCALE_DIR.glob("de/LC_MESSAGES/*.mo"))[:5]


@pytest.mark.skipif(not _installed(), reason="no German gettext catalogs on this machine")
def test_installed_catalogs_read_as_python_gettext_reads_them():
    for path in _installed():
        with open(path, "rb") as f:
            theirs = gettext.GNUTranslations(f)._catalog
        singular = sorted((k.split("\x04")[-1], v) for k, v in theirs.items()
                          if isinstance(k, str) and k)
        ours = sorted((m, t) for m, t in read_mo(path) if "\x00" not in m)
        assert ours and ours == singular, path


@pytest.mark.parametrize("data, message", [
    (b"", "no magic number"), (b"hello, not a catalog", "no magic number"),
    (b"\xde\x12\x04\x95" + bytes(4) + (5).to_bytes(4, "little") + (28).to_bytes(4, "little")
     + (68).to_bytes(4, "little"), "a table runs past the end")])
def test_a_file_that_is_not_a_catalog_is_refused(tmp_path, data, message):
    path = tmp_path / "bad.mo"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=f"bad.mo: not a gettext .mo catalog \\({message}"):
        read_mo(path)


@pytest.mark.parametrize("source, target, reason", [
    ("Open", "Öffnen", None),
    ("_Open", "Ö_ffnen", None),
    ("%d file\x00%d files", "%d Datei\x00%d Dateien", "plural"),
    ("Name", "Name", "untranslated"),
    ("_Name", "Name", "untranslated"),
    ("Name", "", "untranslated"),
    ("first\nsecond", "erste\nzweite", "multi-line"),
    ("a\tb", "a b c", "multi-line"),
    ("<b>Size</b>", "<b>Größe</b>", "markup"),
    ("Fish &amp; chips", "Fisch und Pommes", "markup"),
    ("%s: %s (%d)", "%s: %s (%d) x", "markup"),
    ("a " * 60, "b " * 60, "over-long"),
])
def test_drop_reason(source, target, reason):
    assert drop_reason(source, target) == reason
    assert reason is None or reason in DROP_REASONS


def _catalogs(root: Path) -> Path:
    folder = root / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    words = [(f"message {i}", f"Nachricht {i}") for i in range(30)]
    write_mo(folder / "a.mo", [*words[:20], ("Open", "Öffnen"), ("Name", "Name"),
                               ("%d x\x00%d xs", "%d y\x00%d ys")])
    write_mo(folder / "b.mo", [*words[20:], ("Open", "Aufmachen"), ("ctx\x04Open", "Öffnen"),
                               ("<i>Open</i>", "<i>Öffnen</i>")])
    (folder / "c.mo").write_bytes(b"not a catalog")
    return root


def test_catalog_corpus_splits_by_message_and_counts_what_it_drops(tmp_path):
    corpus = catalog_corpus("de", valid_size=5, test_size=4, seed=3,
                            locale_dir=_catalogs(tmp_path))
    sizes = {name: len(pairs) for name, pairs in corpus.splits.items()}
    assert sizes == {"train": 22, "valid": 5, "test": 4}
    sources = [s for pairs in corpus.splits.values() for s, _ in pairs]
    assert len(sources) == len(set(sources)) == 31
    everything = dict(p for pairs in corpus.splits.values() for p in pairs)
    assert everything["Open"] == "Öffnen"  # two of its three entries say so
    assert corpus.catalogs == ("a.mo", "b.mo", "c.mo") and corpus.unreadable == ("c.mo",)
    assert corpus.messages == 23 + 13
    assert corpus.dropped == {"plural": 1, "untranslated": 1, "multi-line": 0, "markup": 1,
                              "over-long": 0, "duplicate": 2}
    again = catalog_corpus("de", valid_size=5, test_size=4, seed=3, locale_dir=tmp_path)
    assert again.splits == corpus.splits
    other = catalog_corpus("de", valid_size=5, test_size=4, seed=4, locale_dir=tmp_path)
    assert other.splits["test"] != corpus.splits["test"]


def test_too_few_pairs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="hold 31 usable pairs: too few for --valid-size 20"):
        catalog_corpus("de", valid_size=20, test_size=11, locale_dir=_catalogs(tmp_path))


def test_no_catalogs_names_the_folder_and_the_languages_that_have_some(tmp_path):
    _catalogs(tmp_path)
    with pytest.raises(ValueError, match=r"no gettext catalogs for --lang fr: .*fr/LC_MESSAGES/ "
                                         r"holds no .mo file; languages with the most here: de \(3\)"):
        catalog_files("fr", tmp_path)
    with pytest.raises(ValueError, match="must be a locale name"):
        catalog_files("de/../../etc", tmp_path)


def test_a_corpus_from_some_programs_only(tmp_path):
    corpus = catalog_corpus("de", valid_size=2, test_size=2, locale_dir=_catalogs(tmp_path),
                            programs=["a"])
    assert corpus.catalogs == ("a.mo",) and corpus.messages == 23
    with pytest.raises(ValueError, match="no catalog named zz for --lang de; it has a, b, c"):
        catalog_corpus("de", locale_dir=tmp_path, programs=["a", "zz"])
