"""`translate train --config FILE`: a run started from a JSON file of settings, a run's own
`config.json` included; options given override the file; a bad file is refused in one line
that names the key, before anything is written."""

from __future__ import annotations

import json

import pytest

from vanilla_transformer.cli import main

TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "2", "--average", "1",
        "--eval-size", "2", "--seed", "3", "--best-metric", "chrf", "--no-progress"]


@pytest.fixture(scope="module")
def data(make_numbers):
    return make_numbers(seed=1, train_size=40)


def _train(data, out, *extra):
    return main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), *extra])


@pytest.fixture(scope="module")
def first(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("first") / "run"
    assert _train(data, out, "--max-steps", "2", "--post-norm", *TINY) == 0
    return out


def _settings(run):
    saved = json.loads((run / "config.json").read_text())
    return {key: saved[key] for key in ("preset", "model", "training", "options")}


def _metrics(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_runs_own_config_starts_the_same_run(data, first, tmp_path, capsys):
    capsys.readouterr()
    again = tmp_path / "again"
    assert _train(data, again, "--config", str(first / "config.json"), "--no-progress") == 0
    assert f"settings of {first / 'config.json'}" in capsys.readouterr().out
    assert _settings(again) == _settings(first)
    assert _settings(again)["model"]["norm_first"] is False
    losses = [m["loss"] for m in _metrics(again)]
    assert losses and losses == [m["loss"] for m in _metrics(first)]  # same seed, same batches


def test_options_given_override_the_file(data, first, tmp_path):
    out = tmp_path / "changed"
    assert _train(data, out, "--config", str(first / "config.json"), "--max-steps", "3",
                  "--d-model", "8", "--no-keep-best", "--best-metric", "loss",
                  "--no-progress") == 0
    mine, theirs = _settings(out), _settings(first)
    assert (mine["training"]["max_steps"], mine["model"]["d_model"]) == (3, 8)
    assert mine["options"]["best_metric"] == "loss" and mine["options"]["keep_best"] is False
    assert mine["model"]["norm_first"] is False and mine["training"]["seed"] == 3  # the file's
    assert mine["model"]["d_ff"] == theirs["model"]["d_ff"]


def test_a_hand_written_file_with_settings_at_the_top(data, tmp_path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"preset": "paper-small", "N": 1, "d_model": 16, "d_ff": 32,
                                "h": 2, "vocab_size": 60, "max_steps": 2, "save_every": 2,
                                "eval_size": 2, "options": {"log_every": 1}}))
    out = tmp_path / "run"
    assert _train(data, out, "--config", str(path), "--no-progress") == 0
    saved = _settings(out)
    assert (saved["model"]["d_model"], saved["training"]["max_steps"]) == (16, 2)
    assert saved["options"]["log_every"] == 1 and saved["preset"] == "paper-small"
    assert [m["step"] for m in _metrics(out) if "lr" in m] == [1, 2]


BAD = {
    "unknown top-level key": ({"max_step": 5}, "unknown setting 'max_step'"),
    "unknown key in a section": ({"training": {"max_step": 5}},
                                 "unknown setting 'training.max_step'"),
    "unknown model key": ({"model": {"d_modle": 5}}, "unknown setting 'model.d_modle'"),
    "a string for an int": ({"training": {"max_steps": "100"}},
                            "'training.max_steps' must be an int, got \"100\""),
    "a bool for an int": ({"max_steps": True}, "'training.max_steps' must be an int, got true"),
    "a number for a bool": ({"options": {"keep_best": 1}},
                            "'options.keep_best' must be a bool, got 1"),
    "null where none is allowed": ({"model": {"dropout": None}},
                                   "'model.dropout' must be a number, got null"),
    "a float for an int": ({"h": 2.0}, "'model.h' must be an int, got 2.0"),
    "an unknown preset": ({"preset": "huge"}, "'preset' must be one of"),
    "a section that is not an object": ({"training": [1]}, "'training' must be an object"),
    "a key given twice": ({"max_steps": 3, "training": {"max_steps": 4}},
                          "'training.max_steps' is given twice"),
    "a list": ([1, 2], "expected a JSON object of settings, got list"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_file_is_refused_in_one_line_before_anything_is_written(case, data, tmp_path,
                                                                      capsys):
    content, message = BAD[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    out = tmp_path / "run"
    assert _train(data, out, "--config", str(path), "--no-progress") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--config {path}: " in err[0] and message in err[0], err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


def test_a_file_that_is_not_json_or_missing_and_config_with_resume(data, first, tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{'max_steps': 5}")
    for path, message in ((tmp_path / "bad.json", "not JSON"),
                          (tmp_path / "none.json", "no such file"),
                          (first, "is a folder; give a file")):
        assert _train(data, tmp_path / "run", "--config", str(path)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert _train(data, first, "--config", str(first / "config.json"), "--resume") == 2
    assert "--config starts a new run" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
