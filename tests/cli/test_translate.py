"""The `translate` subcommand: corpus, training, scoring and translating; bad input in one line."""

from __future__ import annotations

import io

import pytest

from vanilla_transformer.cli import main
from vanilla_transformer.data.numbers import read_tsv

TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "3", "--average", "2",
        "--eval-size", "3", "--no-progress"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("numbers")
    status = main(["translate", "numbers", "--lang", "de", "--out", str(out), "--seed", "1",
                   "--train-size", "60", "--valid-size", "5", "--test-size", "5",
                   "--always-train", "0"])
    assert status == 0
    return out


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    status = main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                   str(data / "valid.tsv"), "--out", str(out), "--max-steps", "6", *TINY])
    assert status == 0
    return out


def test_numbers_writes_disjoint_splits(data):
    splits = {name: read_tsv(data / f"{name}.tsv") for name in ("train", "valid", "test")}
    assert [len(v) for v in splits.values()] == [60, 5, 5]
    sources = {name: {s for s, _ in pairs} for name, pairs in splits.items()}
    assert not sources["train"] & sources["test"] and not sources["train"] & sources["valid"]


def test_numbers_in_french(tmp_path):
    assert main(["translate", "numbers", "--lang", "fr", "--out", str(tmp_path),
                 "--train-size", "3", "--valid-size", "1", "--test-size", "1",
                 "--always-train", "0"]) == 0
    assert all(" " in t or "-" in t or t.isalpha() for _, t in read_tsv(tmp_path / "train.tsv"))


def test_train_writes_the_run(run, capsys):
    assert {p.name for p in run.iterdir()} >= {"tokenizer.json", "config.json", "model.pt",
                                                "checkpoints"}


def test_resume_continues(data, run, capsys):
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(run), "--max-steps", "8", "--resume",
                 *TINY]) == 0
    assert "trained 8 steps" in capsys.readouterr().out


def test_eval_prints_the_three_scores(data, run, capsys):
    assert main(["translate", "eval", str(run), "--data", str(data / "test.tsv"),
                 "--beam", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["BLEU", "chrF", "exact"]
    assert lines[2].startswith("exact match ")
    for line in lines:
        float(line.split()[1] if not line.startswith("exact") else line.split()[2])


def test_translate_text_and_stdin(run, capsys, monkeypatch):
    assert main(["translate", str(run), "one", "two hundred"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("one\n\nthree\nfour\n"))
    assert main(["translate", str(run), "--beam", "1"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert len(lines) == 5 and lines[1] == "" and lines[4] == ""  # one line per input line


def _error(capsys, argv):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_bad_input_is_one_line(data, run, tmp_path, capsys):
    train, valid = str(data / "train.tsv"), str(data / "valid.tsv")
    bad = tmp_path / "bad.tsv"
    bad.write_text("one\teins\ntwo zwei\n", encoding="utf-8")
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = str(tmp_path / "out")
    cases = [
        (["--train", str(tmp_path / "missing.tsv"), "--valid", valid, "--out", out],
         "missing.tsv: no such file"),
        (["--train", str(bad), "--valid", valid, "--out", out], "line 2: expected exactly one tab"),
        (["--train", train, "--valid", str(empty), "--out", out], "empty file"),
        (["--train", train, "--valid", valid, "--out", str(blocker / "run")],
         "cannot create output folder"),
    ]
    for args, message in cases:
        assert message in _error(capsys, ["translate", "train", *args, *TINY])
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert "not a trained model" in _error(capsys, ["translate", str(tmp_path), "one"])
    assert "not a trained model" in _error(
        capsys, ["translate", "eval", str(tmp_path), "--data", train])
    assert "no such file" in _error(capsys, ["translate", "eval", str(run), "--data", "nope.tsv"])
    assert "--out" in _error(capsys, ["translate", "numbers"])
    assert "expected one of" in _error(capsys, ["translate"])
    assert "cannot create" in _error(capsys, ["translate", "numbers", "--out", str(blocker / "d")])


def test_help(capsys):
    assert main(["translate", "--help"]) == 0
    assert "RUN [TEXT ...]" in capsys.readouterr().out
    assert main(["translate", "train", "--help"]) == 0
    assert "--max-minutes" in capsys.readouterr().out


def test_export_writes_graphs_that_translate_like_the_run(data, run, tmp_path, capsys):
    import numpy as np

    from vanilla_transformer.data.tokenizer import BOS, EOS, SharedTokenizer
    from vanilla_transformer.inference.evaluate import translate_sentences
    from vanilla_transformer.interop.onnx import greedy_decode_onnx
    from vanilla_transformer.training.translation import load_translator

    assert main(["translate", "export", str(run), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("encoder.onnx", "decoder.onnx", "tokenizer.json"):
        assert (tmp_path / name).stat().st_size > 0 and name in out
    model, tokenizer = load_translator(run, "averaged")
    again = SharedTokenizer.load(tmp_path / "tokenizer.json")
    sources = [s for s, _ in read_tsv(data / "test.tsv")]
    expected = translate_sentences(model, tokenizer, sources, beam_size=1)
    for source, want in zip(sources, expected):
        ids = np.array([again.encode(source) + [EOS]], dtype=np.int64)
        ys = greedy_decode_onnx(tmp_path / "encoder.onnx", tmp_path / "decoder.onnx", ids,
                                None, ids.shape[1] + 51, BOS, end_symbol=EOS)
        assert again.decode(ys[0].tolist()) == want
