"""A command whose optional package is missing: exit status 2, one line naming the extra's pip
command, and nothing written. The package is hidden as Python marks a module that cannot be
imported (`sys.modules[name] = None`)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from vanilla_transformer.cli import main
from vanilla_transformer.cli.options import EXTRAS, MissingExtra, require_modules

TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "2", "--average", "1",
        "--eval-size", "2", "--no-progress"]


@pytest.fixture(scope="module")
def data(make_numbers):
    return make_numbers(seed=1, train_size=40)


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "run"
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), "--max-steps", "2", *TINY]) == 0
    return out


def _train(data, out):
    return ["translate", "train", "--train", str(data / "train.tsv"), "--valid",
            str(data / "valid.tsv"), "--out", str(out), "--max-steps", "2", *TINY]


# each case: (the missing package, its extra, the command given the data, a run and a new path)
CASES = {
    "export without onnx": ("onnx", "onnx", lambda d, r, new: [
        "translate", "export", str(r), "--out", str(new)]),
    "export without tokenizers": ("tokenizers", "translate", lambda d, r, new: [
        "translate", "export", str(r), "--out", str(new)]),
    "export --format ctranslate2 without ctranslate2": ("ctranslate2", "ctranslate2",
                                                        lambda d, r, new: [
        "translate", "export", str(r), "--out", str(new), "--format", "ctranslate2"]),
    "train without tokenizers": ("tokenizers", "translate", lambda d, r, new: _train(d, new)),
    "train without sacrebleu": ("sacrebleu", "translate", lambda d, r, new: _train(d, new)),
    "train --tensorboard without tensorboard": ("tensorboard", "tensorboard",
                                                lambda d, r, new: [*_train(d, new),
                                                                   "--tensorboard"]),
    "numbers without num2words": ("num2words", "translate", lambda d, r, new: [
        "translate", "numbers", "--out", str(new)]),
    "eval without sacrebleu": ("sacrebleu", "translate", lambda d, r, new: [
        "translate", "eval", str(r), "--data", str(d / "test.tsv"), "--output",
        str(new / "hyps.txt"), "--json", str(new.with_suffix(".json"))]),
    "translate without tokenizers": ("tokenizers", "translate", lambda d, r, new: [
        "translate", str(r), "one", "--output", str(new.with_suffix(".txt"))]),
}


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", list(CASES))
def test_a_missing_extra_exits_2_naming_it_and_writes_nothing(case, data, run, tmp_path,
                                                               monkeypatch, capsys):
    module, extra, argv = CASES[case]
    (tmp_path / "work").mkdir()
    new = tmp_path / "work" / "new"
    before = _snapshot(run), _snapshot(data)
    monkeypatch.setitem(sys.modules, module, None)
    status = main(argv(data, run, new))
    monkeypatch.undo()
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err == [f"vanilla-transformer translate: error: this needs the optional package "
                   f"{module!r}: pip install 'vanilla-transformer[{extra}]'"]
    assert not list((tmp_path / "work").iterdir())  # no folder, no file
    assert (_snapshot(run), _snapshot(data)) == before


def test_an_action_runs_without_the_extras_it_does_not_need(data, run, monkeypatch, capsys):
    for module in ("onnx", "onnxruntime", "onnxscript", "num2words", "tensorboard"):
        monkeypatch.setitem(sys.modules, module, None)
    assert main(["translate", str(run), "one", "two", "--beam", "1"]) == 0
    out = capsys.readouterr()
    assert out.out.count("\n") == 2 and not out.err  # a line per input (two steps: any text)


def test_require_modules_finds_what_is_installed_and_names_what_is_not(monkeypatch):
    require_modules(["tokenizers", "sacrebleu"])  # installed for the tests: no error
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MissingExtra) as caught:
        require_modules(["tokenizers", "onnx"])
    assert (caught.value.module, caught.value.status) == ("onnx", 2)
    assert set(EXTRAS.values()) == {"translate", "onnx", "ctranslate2", "tensorboard"}
