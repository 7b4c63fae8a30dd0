"""The `translate` subcommand: corpus, training, scoring and translating; bad input in one line."""

from __future__ import annotations

import io
import json
import math

import pytest

from vanilla_transformer.cli import main
from vanilla_transformer.data.numbers import read_tsv

TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "3", "--average", "2",
        "--eval-size", "3", "--log-every", "2", "--no-progress"]


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


def test_train_streams_the_file_into_ids_reused_on_resume(data, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["translate", "train", "--train", str(data / "train.tsv"), "--valid",
            str(data / "valid.tsv"), "--out", str(out), *TINY]
    assert main([*args, "--max-steps", "4"]) == 0
    meta = json.loads((out / "ids" / "corpus.json").read_text())
    assert meta["pairs"] == 60 and meta["tsv"] == str((data / "train.tsv").resolve())
    written = {p.name: p.stat().st_mtime_ns for p in (out / "ids").iterdir()}
    assert main([*args, "--max-steps", "6", "--resume"]) == 0
    assert "trained 6 steps" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in (out / "ids").iterdir()} == written
    assert main([*args, "--max-steps", "2", "--overwrite"]) == 0  # a new run, new ids
    assert (out / "ids" / "corpus.json").stat().st_mtime_ns > written["corpus.json"]


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
    for source, want in zip(sources, expected, strict=False):
        ids = np.array([again.encode(source) + [EOS]], dtype=np.int64)
        ys = greedy_decode_onnx(tmp_path / "encoder.onnx", tmp_path / "decoder.onnx", ids,
                                None, ids.shape[1] + 51, BOS, end_symbol=EOS)
        assert again.decode(ys[0].tolist()) == want


def test_translate_a_file_line_by_line(run, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_bytes("one\r\n\ntwo hundred\u2028three\nQ€\n".encode())
    out = tmp_path / "out.txt"
    assert main(["translate", str(run), "--input", str(source), "--output", str(out),
                 "--beam", "1"]) == 0
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 5 and lines[1] == "" and lines[4] == ""  # 4 input lines, 4 outputs
    err = capsys.readouterr().err
    assert "line 4: characters outside the vocabulary" in err and "€" in err


def test_a_long_file_gets_a_progress_bar_and_keeps_its_order(run, tmp_path, capsys):
    from vanilla_transformer.data.numbers import number_words

    words = [number_words(n, "en") for n in range(70)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(words) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["translate", str(run), "--input", str(source), "--output", str(out),
                 "--beam", "1"]) == 0
    err = capsys.readouterr().err  # 70 lines, more than one chunk: a bar of 70
    assert "translate:" in err and "/70 [" in err
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 70
    assert main(["translate", str(run), *words[65:], "--beam", "1", "--no-progress"]) == 0
    shown = capsys.readouterr()
    assert shown.out.splitlines() == lines[65:] and "translate:" not in shown.err


def test_stdin_is_translated_as_it_arrives(run):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-m", "vanilla_transformer", "translate", str(run), "--beam", "1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    child.stdin.write("one\n")
    child.stdin.flush()
    first = child.stdout.readline()  # answered before the input ends
    child.stdin.write("\ntwo\n")
    child.stdin.close()
    rest = child.stdout.read().split("\n")
    assert child.wait() == 0 and first.endswith("\n")
    assert rest[0] == "" and len(rest) == 3


def test_eval_writes_hypotheses_json_and_the_signature(data, run, tmp_path, capsys):
    import json

    hyps, results = tmp_path / "hyps.txt", tmp_path / "results.json"
    assert main(["translate", "eval", str(run), "--data", str(data / "test.tsv"), "--beam", "1",
                 "--output", str(hyps), "--json", str(results)]) == 0
    out = capsys.readouterr().out
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in out
    assert len(hyps.read_text(encoding="utf-8").splitlines()) == 5
    data_ = json.loads(results.read_text())
    assert data_["sentences"] == 5 and data_["signatures"]["bleu"].startswith("nrefs:1")
    assert f"BLEU {data_['bleu']:.2f}" in out


def test_metrics_log_steps_and_validations(run):
    import json

    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in lines if "lr" in m]
    checks = [m for m in lines if "valid_exact" in m]
    assert steps and {"step", "loss", "lr", "tokens_per_s"} <= set(steps[0])
    assert {"valid_bleu", "valid_chrf", "valid_loss", "valid_ppl"} <= set(checks[0])
    assert [m["step"] for m in checks][:2] == [3, 6]
    assert all(m["valid_ppl"] == pytest.approx(math.exp(m["valid_loss"]), rel=1e-4)
               for m in checks)


def test_the_validation_loss_is_the_last_checkpoints_own(data, run):
    from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
    from vanilla_transformer.training.loss import teacher_forced_nll
    from vanilla_transformer.training.run_folder import load_translator

    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    last = [m for m in lines if "valid_loss" in m][-1]
    model, tokenizer = load_translator(run, "last")
    pairs = read_tsv(data / "valid.tsv")[:3]  # --eval-size 3
    ids = [(tokenizer.encode(s), tokenizer.encode(t)) for s, t in pairs]
    direct = teacher_forced_nll(model, ids, pad=PAD, bos=BOS, eos=EOS, batch_size=1)
    assert last["valid_loss"] == pytest.approx(direct, abs=1e-5)


def test_keep_best_follows_the_validation_loss_by_default(data, tmp_path, capsys):
    out = tmp_path / "best"
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), "--max-steps", "8", *TINY[:-11],
                 "--save-every", "2", "--eval-size", "3", "--average", "5", "--keep-best",
                 "--no-progress"]) == 0
    assert "valid loss" in capsys.readouterr().out
    from vanilla_transformer.training.checkpoints import load_checkpoint

    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    checks = [m for m in lines if "valid_loss" in m]
    lowest = min(checks, key=lambda m: (m["valid_loss"], m["step"]))
    _, meta = load_checkpoint(out / "model.pt")
    assert meta["averaged"] == [lowest["step"]]
    assert json.loads((out / "config.json").read_text())["options"]["best_metric"] == "loss"


def test_keep_best_and_patience(data, tmp_path, capsys, monkeypatch):
    from vanilla_transformer.training import translation

    scores = iter([50.0, 80.0, 60.0, 70.0, 90.0])
    real = translation.score_translations

    def scripted(hyps, refs, **kw):
        return real(hyps, refs, **kw).__class__(0.0, 0.0, next(scores), len(hyps))

    monkeypatch.setattr(translation, "score_translations", scripted)
    out = tmp_path / "best"
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), "--max-steps", "30", *TINY[:-11],
                 "--save-every", "2", "--eval-size", "2", "--average", "5", "--keep-best",
                 "--best-metric", "exact", "--patience", "2", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "stopping at step 8 (best: step 4)" in printed
    assert "the best checkpoint, of step 4" in printed
    from vanilla_transformer.training.checkpoints import load_checkpoint

    _, meta = load_checkpoint(out / "model.pt")
    assert meta["averaged"] == [4]


def test_device_and_amp_on_the_cpu(data, tmp_path, capsys):
    out = tmp_path / "bf16"
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), "--max-steps", "2", "--device",
                 "cpu", "--amp", "bf16", *TINY]) == 0
    assert main(["translate", str(out), "--device", "auto", "--amp", "bf16", "one"]) == 0
    assert main(["translate", "eval", str(out), "--data", str(data / "test.tsv"), "--device",
                 "cpu", "--amp", "bf16", "--beam", "1"]) == 0
    capsys.readouterr()
    import torch

    if not torch.cuda.is_available():  # decoding on cuda is refused only for want of a GPU
        assert main(["translate", str(out), "--device", "cuda", "one"]) == 2
        assert "no CUDA GPU" in capsys.readouterr().err
        assert main(["translate", "eval", str(out), "--data", str(data / "test.tsv"),
                     "--device", "cuda"]) == 2
        assert "no CUDA GPU" in capsys.readouterr().err
        assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                     str(data / "valid.tsv"), "--out", str(tmp_path / "gpu"), "--device",
                     "cuda", *TINY]) == 2
        assert "no CUDA GPU" in capsys.readouterr().err
        assert not (tmp_path / "gpu").exists()
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(tmp_path / "fp16"), "--device", "cpu",
                 "--amp", "fp16", *TINY]) == 2
    assert "fp16' needs a CUDA device" in capsys.readouterr().err
    assert main(["translate", str(out), "--device", "cpu", "--amp", "fp16", "one"]) == 2
    assert "fp16' needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "fp16").exists()


def test_help_documents_every_option(capsys):

    from vanilla_transformer.cli import translate as cli
    from vanilla_transformer.cli.translate import PAPER_SMALL, TRAINING_DEFAULTS
    from vanilla_transformer.training import translation
    from vanilla_transformer.training.translation import TRANSLATION_PRESETS, TranslationConfig

    assert TranslationConfig().to_dict() == TRAINING_DEFAULTS
    assert cli.RUN_OPTIONS == translation.RUN_OPTIONS
    assert {k: v for k, v in TRANSLATION_PRESETS["paper-small"].items()
                           if k in PAPER_SMALL} == PAPER_SMALL and len(PAPER_SMALL) >= 5
    from vanilla_transformer.cli.translate import build_translate_parser

    for action in ("train", "eval", "export", "numbers", "run"):
        for option in build_translate_parser(action)._actions:
            assert option.help and len(option.help.split()) >= 3, (action, option.dest)
        assert main(["translate", action if action != "run" else "RUN", "--help"]) == 0
        assert "%%" not in capsys.readouterr().out
    assert main(["translate", "train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 64)" in text and "(default: 256)" in text
    assert main(["copy-task", "--help"]) == 0
    assert "%%" not in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("vanilla-transformer ")


def test_export_trims_the_positional_table(run, tmp_path, capsys):
    out = tmp_path / "small"
    assert main(["translate", "export", str(run), "--out", str(out), "--max-len", "64"]) == 0
    small = (out / "encoder.onnx").stat().st_size
    assert main(["translate", "export", str(run), "--out", str(tmp_path / "full")]) == 0
    assert small < (tmp_path / "full" / "encoder.onnx").stat().st_size
    assert main(["translate", "export", str(run), "--out", str(tmp_path / "x"),
                 "--max-len", "999999"]) == 2
