"""`translate train --tensorboard`: the numbers of metrics.jsonl as TensorBoard scalars."""

from __future__ import annotations

import json
import sys

import pytest

from vanilla_transformer.cli import main

pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "2", "--average", "2",
        "--eval-size", "2", "--log-every", "1", "--no-progress", "--device", "cpu"]


@pytest.fixture(scope="module")
def data(make_numbers):
    return make_numbers(seed=1, train_size=40)


def _train(data, out, *extra):
    return main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), *TINY, *extra])


def _scalars(run):
    board = EventAccumulator(str(run / "tensorboard"))
    board.Reload()
    return {tag: [(e.step, e.value) for e in board.Scalars(tag)]
            for tag in board.Tags()["scalars"]}


def test_scalars_repeat_metrics_jsonl_and_survive_a_resume(data, tmp_path):
    out = tmp_path / "run"
    assert _train(data, out, "--max-steps", "4", "--tensorboard") == 0
    # a resume keeps the option, and drops nothing it wrote before its checkpoint
    assert _train(data, out, "--resume", "--max-steps", "6") == 0
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    scalars = _scalars(out)
    assert {"loss", "lr", "tokens_per_s", "valid_exact", "valid_bleu"} <= set(scalars)
    logged = {e["step"]: e for e in lines if "lr" in e}
    assert [step for step, _ in scalars["lr"]] == sorted(logged) == list(range(1, 7))
    for step, lr in scalars["lr"]:  # TensorBoard keeps float32
        assert lr == pytest.approx(logged[step]["lr"], rel=1e-6)
    assert [s for s, _ in scalars["valid_exact"]] == [2, 4, 6]
    valid = {e["step"]: e for e in lines if "valid_loss" in e}
    for key in ("valid_loss", "valid_ppl"):
        assert [s for s, _ in scalars[key]] == sorted(valid) == [2, 4, 6]
        assert all(v == pytest.approx(valid[s][key], rel=1e-6) for s, v in scalars[key])


def test_a_resume_drops_events_after_its_checkpoint(data, tmp_path):
    out = tmp_path / "run"
    assert _train(data, out, "--max-steps", "3", "--tensorboard") == 0  # checkpoints 2 and 3
    (out / "checkpoints" / "step-0000003.pt").unlink()  # as if stopped between saves
    assert _train(data, out, "--resume", "--max-steps", "4") == 0
    steps = [s for s, _ in _scalars(out)["lr"]]
    assert steps == [1, 2, 3, 4]  # step 3 once, from the resumed run


def test_without_the_package_one_line_names_the_extra(data, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    monkeypatch.delitem(sys.modules, "torch.utils.tensorboard", raising=False)
    assert _train(data, tmp_path / "run", "--max-steps", "2", "--tensorboard") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("pip install 'vanilla-transformer[tensorboard]'")
    assert not (tmp_path / "run").exists()


def test_each_scalar_once_per_step(data, tmp_path):
    out = tmp_path / "run"
    assert _train(data, out, "--max-steps", "2", "--tensorboard") == 0
    steps = [s for s, _ in _scalars(out)["loss"]]
    assert steps == [1, 2]
