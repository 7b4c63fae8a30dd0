"""The translators that ship with the package: their names work wherever a run folder does."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from vanilla_transformer.cli import main
from vanilla_transformer.pretrained import TRANSLATORS, resolve_run, translator_folder

pytest.importorskip("tokenizers", reason="loading a translator needs the translate extra")

GERMAN, FRENCH = "vierhunderteinundzwanzig", "quatre cent vingt et un"


def test_every_name_is_a_trained_run_folder() -> None:
    from vanilla_transformer.training.run_folder import is_run_folder

    for name in TRANSLATORS:
        folder = translator_folder(name)
        assert is_run_folder(folder) and (folder / "model.pt").stat().st_size > 500_000
    with pytest.raises(ValueError, match="no packaged translator named 'numbers-xx'"):
        translator_folder("numbers-xx")


def test_a_folder_of_that_name_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_run("numbers-de") == translator_folder("numbers-de")
    (tmp_path / "numbers-de").mkdir()
    assert resolve_run("numbers-de") == Path("numbers-de")
    assert resolve_run(Path("elsewhere")) == Path("elsewhere")


def test_the_loader_takes_a_name() -> None:
    from vanilla_transformer.inference.evaluate import translate_sentences
    from vanilla_transformer.training.run_folder import load_translator

    for name, expected in (("numbers-de", GERMAN), ("numbers-fr", FRENCH)):
        model, tokenizer = load_translator(name)
        got = translate_sentences(model, tokenizer, ["four hundred and twenty-one"],
                                  beam_size=1)
        assert got == [expected]


def test_translate_takes_a_name_from_any_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["translate", "numbers-de", "four hundred and twenty-one"]) == 0
    assert main(["translate", "numbers-fr", "four hundred and twenty-one", "--beam", "1"]) == 0
    assert capsys.readouterr().out.split("\n")[:2] == [GERMAN, FRENCH]


def test_eval_and_export_take_a_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "test.tsv"
    data.write_text("four hundred and twenty-one\tvierhunderteinundzwanzig\n"
                    "seven\tsieben\n", encoding="utf-8")
    report = tmp_path / "scores.json"
    assert main(["translate", "eval", "numbers-de", "--data", str(data), "--beam", "1",
                 "--json", str(report)]) == 0
    assert json.loads(report.read_text())["exact_match"] == 100.0
    assert main(["translate", "export", "numbers-de", "--out", str(tmp_path / "onnx")]) == 0
    assert {p.name for p in (tmp_path / "onnx").iterdir()} >= {"encoder.onnx", "tokenizer.json"}


def test_help_lists_the_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["translate", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(name in help_text for name in TRANSLATORS)


def test_practice_check_uses_the_packaged_weights_or_another_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = Path(__file__).parent / "practice" / "solutions" / "translator.py"
    sys.modules.pop("translator", None)
    assert main(["practice", "check", "translator", str(answers)]) == 0
    assert "translator: passed." in capsys.readouterr().out
    copy = tmp_path / "run"
    shutil.copytree(translator_folder("numbers-de"), copy)
    assert main(["practice", "check", "translator", str(answers), "--weights", str(copy)]) == 0
    (copy / "manifest.json").unlink()
    assert main(["practice", "check", "translator", str(answers), "--weights", str(copy)]) == 2
    assert "lacks manifest.json" in capsys.readouterr().err


def test_the_wheel_holds_the_translators_and_the_starters(tmp_path: Path) -> None:
    import subprocess
    import zipfile

    from vanilla_transformer.practice import STARTERS

    root, source = Path(__file__).resolve().parent.parent, tmp_path / "source"
    for name in ("pyproject.toml", "README.md", "LICENSE"):  # a copy: no build/ left behind
        source.mkdir(exist_ok=True)
        shutil.copy(root / name, source / name)
    shutil.copytree(root / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(tmp_path)], check=True,
                   capture_output=True)
    (wheel,) = tmp_path.glob("vanilla_transformer-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    package = "vanilla_transformer/"
    for name in TRANSLATORS:
        assert {f"{package}pretrained/{name}/{f}" for f in ("model.pt", "tokenizer.json")} <= names
    assert {f"{package}practice/starters/{f}" for f in STARTERS} <= names
    assert not any(n.endswith("ruff.toml") or n.startswith("docs/") for n in names)
