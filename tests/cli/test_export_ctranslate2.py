"""`translate export RUN --format ctranslate2`: a folder CTranslate2 loads and that translates as
the run does; `--format onnx` (the default) is unchanged; bad combinations are refused before
anything is written."""

from __future__ import annotations

import pytest

from vanilla_transformer.cli import main
from vanilla_transformer.data.numbers import read_tsv

ctranslate2 = pytest.importorskip("ctranslate2")

TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "3", "--average", "1",
        "--eval-size", "3", "--no-progress"]


@pytest.fixture(scope="module")
def data(make_numbers):
    return make_numbers(seed=2, train_size=60)


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), "--max-steps", "6", *TINY]) == 0
    return out


def test_the_folder_loads_in_ctranslate2_and_translates_like_the_run(data, run, tmp_path,
                                                                      capsys):
    from vanilla_transformer.inference.evaluate import translate_sentences
    from vanilla_transformer.interop.ctranslate2 import translate_ctranslate2
    from vanilla_transformer.training.run_folder import load_translator

    out = tmp_path / "ct2"
    assert main(["translate", "export", str(run), "--out", str(out), "--format",
                 "ctranslate2"]) == 0
    printed = capsys.readouterr().out
    names = ("model.bin", "config.json", "shared_vocabulary.json", "tokenizer.json")
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    assert all(name in printed for name in names)
    model, tokenizer = load_translator(run)
    sources = [s for s, _ in read_tsv(data / "test.tsv") + read_tsv(data / "valid.tsv")]
    translator = ctranslate2.Translator(str(out), intra_threads=1)
    want = translate_sentences(model, tokenizer, sources, beam_size=1, max_extra=8)
    got = translate_ctranslate2(translator, tokenizer, sources, beam_size=1, max_extra=8)
    assert got == want


def test_int8_weights_are_stored_smaller(run, tmp_path, capsys):
    for name, extra in (("float32", []), ("int8", ["--quantization", "int8"])):
        # --max-len trims the positional table, which stays float32, to 64 rows
        assert main(["translate", "export", str(run), "--out", str(tmp_path / name),
                     "--format", "ctranslate2", "--max-len", "64", *extra]) == 0
    sizes = {name: (tmp_path / name / "model.bin").stat().st_size for name in ("float32", "int8")}
    assert sizes["int8"] < 0.6 * sizes["float32"]
    ctranslate2.Translator(str(tmp_path / "int8"))  # loads


def test_onnx_stays_the_default(run, tmp_path, capsys):
    assert main(["translate", "export", str(run), "--out", str(tmp_path / "a")]) == 0
    assert main(["translate", "export", str(run), "--out", str(tmp_path / "b"), "--format",
                 "onnx"]) == 0
    for folder in ("a", "b"):
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == [
            "decoder.onnx", "encoder.onnx", "tokenizer.json"]


@pytest.mark.parametrize("argv, message", [
    (["--format", "onnx", "--quantization", "int8"], "--quantization int8 needs --format "
                                                      "ctranslate2"),
    (["--format", "tflite"], "invalid choice: 'tflite'"),
    (["--format", "ctranslate2", "--max-len", "0"], "--max-len must be positive, got 0"),
])
def test_bad_options_are_refused_and_nothing_is_written(argv, message, run, tmp_path, capsys):
    out = tmp_path / "new"
    assert main(["translate", "export", str(run), "--out", str(out), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_file_of_the_same_name_needs_overwrite(run, tmp_path, capsys):
    (tmp_path / "model.bin").write_bytes(b"someone else's")
    argv = ["translate", "export", str(run), "--out", str(tmp_path), "--format", "ctranslate2"]
    assert main(argv) == 2
    assert "already holds model.bin; give --overwrite" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]
    assert main([*argv, "--overwrite"]) == 0
    ctranslate2.Translator(str(tmp_path))  # the new model.bin
