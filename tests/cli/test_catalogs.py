"""`translate catalogs` on small catalogs written by the test, and the sizes `translate train`
chooses from the data for the settings it is not given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vanilla_transformer.cli import main
from vanilla_transformer.cli import translate as translate_cli
from vanilla_transformer.data import catalogs
from vanilla_transformer.data.catalogs import write_mo
from vanilla_transformer.data.numbers import read_tsv

WORDS = ["file", "folder", "window", "printer", "user", "group", "disk", "key", "page", "line"]
GERMAN = ["Datei", "Ordner", "Fenster", "Drucker", "Benutzer", "Gruppe", "Platte", "Schlüssel",
          "Seite", "Zeile"]
VERBS = [("Open", "öffnen"), ("Close", "schließen"), ("Delete", "löschen"), ("Copy", "kopieren")]


@pytest.fixture(scope="module")
def locale(tmp_path_factory) -> Path:
    """A locale folder with two German catalogs of 40 messages, and the entries to drop."""
    root = tmp_path_factory.mktemp("locale")
    folder = root / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    pairs = [(f"{v} {w}", f"{g} {gv}") for v, gv in VERBS for w, g in zip(WORDS, GERMAN,
                                                                         strict=True)]
    write_mo(folder / "one.mo", [*pairs[:25], ("%d file\x00%d files", "%d Datei\x00%d Dateien")])
    write_mo(folder / "two.mo", [*pairs[20:], ("Name", "Name"), ("a\nb", "c\nd")])
    return root


def _catalogs(locale: Path, out: Path, *extra: str) -> list[str]:
    return ["translate", "catalogs", "--lang", "de", "--out", str(out), "--locale-dir",
            str(locale), "--valid-size", "4", "--test-size", "4", *extra]


def test_catalogs_writes_three_disjoint_splits(locale, tmp_path, capsys):
    assert main(_catalogs(locale, tmp_path / "data")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"read 2 catalogs in {locale}/de/LC_MESSAGES: 48 messages; kept 40 pairs, "
                      "left out 1 plural, 1 untranslated, 1 multi-line, 0 markup, 0 over-long, "
                      "5 duplicate")
    splits = {n: read_tsv(tmp_path / "data" / f"{n}.tsv") for n in ("train", "valid", "test")}
    assert [len(p) for p in splits.values()] == [32, 4, 4]
    assert out[1:] == [f"wrote {tmp_path / 'data' / n}.tsv: {len(splits[n])} pairs"
                       for n in ("train", "valid", "test")]
    sources = [s for pairs in splits.values() for s, _ in pairs]
    assert len(set(sources)) == 40
    assert ("Open file", "Datei öffnen") in [p for pairs in splits.values() for p in pairs]


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_no_catalogs_for_the_language_is_refused_in_one_line(locale, tmp_path, capsys):
    out = tmp_path / "data"
    line = _error(capsys, ["translate", "catalogs", "--lang", "fr", "--out", str(out),
                           "--locale-dir", str(locale)])
    assert "no gettext catalogs for --lang fr" in line and "de (2)" in line
    assert not out.exists()  # nothing created


def test_existing_files_and_run_folders_are_not_written_over(locale, tmp_path, capsys):
    data = tmp_path / "data"
    assert main(_catalogs(locale, data)) == 0
    capsys.readouterr()
    (data / "valid.tsv").write_text("mine\tmeins\n", encoding="utf-8")
    line = _error(capsys, _catalogs(locale, data))
    assert "already holds train.tsv, valid.tsv, test.tsv; give --overwrite" in line
    assert (data / "valid.tsv").read_text(encoding="utf-8") == "mine\tmeins\n"
    assert main(_catalogs(locale, data, "--overwrite", "--seed", "1")) == 0
    assert len(read_tsv(data / "valid.tsv")) == 4
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"model": {}, "training": {}}')  # a run's shape
    (run / "tokenizer.json").write_text("{}")
    capsys.readouterr()
    assert "is a run folder" in _error(capsys, _catalogs(locale, run, "--overwrite"))
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "tokenizer.json"]


@pytest.mark.parametrize("extra, message", [
    (["--valid-size", "-1"], "--valid-size must be an int >= 0, got -1"),
    (["--max-chars", "0"], "--max-chars must be an int >= 1, got 0"),
    (["--valid-size", "30", "--test-size", "10"], "hold 40 usable pairs: too few"),
    (["--lang", "../de"], "--lang must be a locale name"),
])
def test_bad_options_are_refused_before_anything_is_written(locale, tmp_path, capsys, extra,
                                                            message):
    out = tmp_path / "data"
    assert message in _error(capsys, [*_catalogs(locale, out), *extra])
    assert not out.exists()


def test_the_command_line_defaults_are_the_readers():
    args = translate_cli.build_translate_parser("catalogs").parse_args(
        ["--lang", "de", "--out", "x"])
    assert args.locale_dir == str(catalogs.LOCALE_DIR) and args.max_chars == catalogs.MAX_CHARS


TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--max-tokens", "150",
        "--warmup", "2", "--save-every", "2", "--max-steps", "2", "--log-every", "1",
        "--no-progress"]


def test_train_says_on_its_first_line_what_it_sized_and_keeps_what_is_given(
        locale, tmp_path, capsys):
    data = tmp_path / "data"
    assert main(_catalogs(locale, data)) == 0
    files = ["--train", str(data / "train.tsv"), "--valid", str(data / "valid.tsv")]
    capsys.readouterr()
    assert main(["translate", "train", *files, "--out", str(tmp_path / "a"), *TINY]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == ("sized from the data: vocabulary 250 (one piece per 64 of 128 words, at least 250), "
                     "preset paper-small (32 pairs, under 500,000), validation sample 4 (all 4 "
                     "validation pairs)")
    saved = json.loads((tmp_path / "a" / "config.json").read_text())
    assert saved["preset"] == "paper-small"
    assert (saved["training"]["vocab_size"], saved["training"]["eval_size"]) == (250, 4)
    # given on the command line or in a config file: kept, and not named on the first line
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"training": {"vocab_size": 90}}))
    assert main(["translate", "train", *files, "--out", str(tmp_path / "b"), *TINY,
                 "--config", str(config), "--eval-size", "3", "--preset", "paper-small"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("training on ") and "sized" not in first
    saved = json.loads((tmp_path / "b" / "config.json").read_text())
    assert (saved["training"]["vocab_size"], saved["training"]["eval_size"]) == (90, 3)
    # a resumed run keeps its own settings: nothing is sized again
    assert main(["translate", "train", *files, "--out", str(tmp_path / "a"), "--resume",
                 "--max-steps", "4", "--no-progress"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("continuing ")
    assert json.loads((tmp_path / "a" / "config.json").read_text())["training"]["eval_size"] == 4


def test_catalogs_help_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys\nfrom vanilla_transformer.cli import main\n"
            "assert main(['translate', 'catalogs', '--help']) == 0\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True)
    assert done.returncode == 0 and "--locale-dir" in done.stdout, done.stderr


def test_a_file_longer_than_the_sample_is_counted_by_its_lines(locale, tmp_path, capsys,
                                                               monkeypatch):
    from vanilla_transformer.cli import translate_train

    with_end, without_end = tmp_path / "a.tsv", tmp_path / "b.tsv"
    with_end.write_bytes(b"a\tb\n" * 3)
    without_end.write_bytes(b"a\tb\n" * 2 + b"a\tb")
    assert translate_train._count_pairs(str(with_end)) == 3
    assert translate_train._count_pairs(str(without_end)) == 3
    data = tmp_path / "data"
    assert main(_catalogs(locale, data)) == 0
    monkeypatch.setattr(translate_train, "SAMPLE", 5)  # 32 training pairs: more than the sample
    capsys.readouterr()
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(tmp_path / "run"), *TINY]) == 0
    assert "preset paper-small (32 pairs, under 500,000)" in capsys.readouterr().out
