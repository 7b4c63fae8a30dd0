"""The command line: the figures it prints are the API's, and bad input is one line on stderr."""

import json
import subprocess
import sys

import pytest

from vanilla_transformer import PRESETS, ModelConfig
from vanilla_transformer.analysis import (
    forward_flops_for,
    memory_estimate_for,
    parameter_count,
    parameter_count_for,
)
from vanilla_transformer.cli import PRESET_VOCAB, build_parser, main


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_text_output_is_the_apis_tables(capsys):
    status, out, err = run(capsys, "params", "--src-vocab", "11", "--tgt-vocab", "11", "-N", "2")
    assert status == 0 and err == ""
    config = ModelConfig(11, 11, N=2)
    assert parameter_count_for(config).table() in out
    assert memory_estimate_for(config).table() in out
    assert "14,731,787" in out
    assert f"formula: {parameter_count_for(config).formula}" in out


def test_text_output_with_lengths_adds_flops_and_activations(capsys):
    status, out, _ = run(capsys, "params", "--preset", "base", "--batch", "2", "--src-len", "9",
                         "--tgt-len", "7", "--dtype", "bf16")
    config = ModelConfig(PRESET_VOCAB, PRESET_VOCAB, **PRESETS["base"])
    assert status == 0
    assert forward_flops_for(config, batch=2, src_len=9, tgt_len=7).table() in out
    memory = memory_estimate_for(config, batch=2, src_len=9, tgt_len=7, dtype="bf16")
    assert memory.table() in out


def test_json_preset_base(capsys):
    status, out, _ = run(capsys, "params", "--preset", "base", "--json")
    data = json.loads(out)
    config = ModelConfig(PRESET_VOCAB, PRESET_VOCAB, **PRESETS["base"])
    assert status == 0
    assert data["config"] == config.to_dict()
    assert data["parameters"] == parameter_count_for(config).to_dict()
    assert data["parameters"]["total"] == 101_009_544
    assert data["memory"]["weights"] == 4 * data["parameters"]["total"]
    assert "flops" not in data


def test_json_with_one_length_uses_it_for_both(capsys):
    _, out, _ = run(capsys, "params", "--preset", "big", "-N", "2", "--src-vocab", "100",
                    "--tgt-vocab", "120", "--tgt-len", "12", "--json")
    data = json.loads(out)
    config = ModelConfig(100, 120, **{**PRESETS["big"], "N": 2})
    flops = forward_flops_for(config, batch=1, src_len=12, tgt_len=12)
    assert data["config"] == config.to_dict()
    assert data["flops"]["total"] == flops.total
    assert data["flops"]["training_total"] == 3 * flops.total
    memory = memory_estimate_for(config, src_len=12, tgt_len=12)
    assert data["memory"]["activations"] == memory.activations
    assert data["memory"]["kv_cache_cross"] == memory.kv_cache_cross


@pytest.mark.parametrize("flags, expected", [
    (["--tie-weights", "--no-generator-bias"], dict(tie_weights=True, generator_bias=False)),
    (["--post-norm"], dict(norm_first=False)),
    (["--no-norm-first", "--final-norm"], dict(norm_first=False, final_norm=True)),
    (["--norm-first", "--no-final-norm"], dict(norm_first=True, final_norm=False)),
    (["--layer-norm", "torch", "--max-len", "64", "--dropout", "0.2", "--h", "4", "--d-ff", "96",
      "--d-model", "32", "--N", "3"],
     dict(layer_norm="torch", max_len=64, dropout=0.2, h=4, d_ff=96, d_model=32, N=3)),
])
def test_every_make_model_option(capsys, flags, expected):
    _, out, _ = run(capsys, "params", "--src-vocab", "50", "--tgt-vocab", "50", *flags, "--json")
    data = json.loads(out)
    assert data["config"] == ModelConfig(50, 50, **expected).to_dict()
    assert data["parameters"]["total"] == parameter_count(50, 50, **expected).total


@pytest.mark.parametrize("argv, says", [
    (["params", "--preset", "huge"], "invalid choice"),
    (["params", "--preset", "base", "-N", "-1"], "N must be a positive int"),
    (["params", "--preset", "base", "--d-model", "500"], "divisible by h"),
    (["params", "--src-vocab", "-3", "--tgt-vocab", "5"], "src_vocab must be an int >= 0"),
    (["params", "--src-vocab", "11"], "--tgt-vocab are required"),
    (["params", "--preset", "base", "--d-model", "abc"], "invalid int value"),
    (["params", "--preset", "base", "--dtype", "int3"], "unknown dtype"),
    (["params", "--preset", "base", "--tie-weights", "--tgt-vocab", "5"], "vocabularies"),
    (["params", "--preset", "base", "--batch", "4"], "--batch needs"),
    (["params", "--preset", "base", "--src-len", "0"], "src_len must be a positive int"),
    (["params", "--preset", "base", "--src-len", "6000"], "max_len"),
    ([], "required"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, argv, says):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and says in err
    assert err.startswith("vanilla-transformer") and "Traceback" not in err


def test_params_is_registered():
    args = build_parser().parse_args(["params", "--preset", "base"])
    assert args.command == "params" and callable(args.handler)


def test_python_dash_m_runs_the_command_line():
    result = subprocess.run(
        [sys.executable, "-m", "vanilla_transformer", "params", "--preset", "base", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["parameters"]["total"] == parameter_count(
        PRESET_VOCAB, PRESET_VOCAB, **PRESETS["base"]).total


def test_the_core_needs_torch_alone():
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert [d.split(">")[0] for d in project["dependencies"]] == ["torch", "tqdm"]
    extras = project["optional-dependencies"]
    assert {"tokenizers", "sacrebleu", "num2words"} <= {
        d.split(">")[0] for d in extras["translate"]}
    assert [d.split(">")[0] for d in extras["tensorboard"]] == ["tensorboard"]
    assert [d.split(">")[0] for d in extras["ctranslate2"]] == ["ctranslate2"]
    for needs_all in ("test", "docs"):  # the tests and the site use every extra
        assert "vanilla-transformer[translate,onnx,ctranslate2,tensorboard]" in extras[needs_all]
    assert (Path(__file__).parents[2] / "src" / "vanilla_transformer" / "py.typed").is_file()


def test_a_missing_optional_package_names_its_extra(monkeypatch, capsys, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "num2words", None)
    assert main(["translate", "numbers", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("pip install 'vanilla-transformer[translate]'") and "\n" not in err
