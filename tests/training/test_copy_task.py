"""Tests of vanilla_transformer.copy_task: training, evaluation, saving and the subcommand."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re

import pytest
import torch

from vanilla_transformer import data_gen
from vanilla_transformer.cli.copy_task import main, register, run_copy_task
from vanilla_transformer.data import START_SYMBOL, heldout_sequences
from vanilla_transformer.model import make_model_from_config
from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig, exact_match, train_copy_model

TINY = CopyTaskConfig(model=COPY_MODEL.replace(d_model=16, d_ff=32, h=2), batch_size=8,
                      steps=12, warmup=4)
TINY_ARGS = ["--N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--batch-size", "8",
             "--steps", "12", "--warmup", "4", "--eval-size", "6", "--examples", "2",
             "--no-progress"]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vanilla-transformer")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["copy-task", *argv])


# --------------------------------------------------------------------------- config


def test_defaults_match_the_documented_task():
    c = CopyTaskConfig()
    assert (c.vocab, c.seq_len) == (11, 10)
    assert c.model == COPY_MODEL and make_model_from_config(c.model).config == COPY_MODEL


def test_the_constructor_is_the_dataclass_one():
    names = [f.name for f in dataclasses.fields(CopyTaskConfig)]
    assert list(inspect.signature(CopyTaskConfig).parameters) == names
    assert "model" in names and "d_model" not in names
    with pytest.raises(TypeError, match="d_model"):
        CopyTaskConfig(d_model=16)  # a model keyword goes through replace() or model=
    with pytest.raises(TypeError, match="src_vocab"):
        CopyTaskConfig(src_vocab=5)


def test_the_models_vocabularies_follow_vocab():
    c = CopyTaskConfig(vocab=13, model=COPY_MODEL.replace(src_vocab=5, tgt_vocab=7))
    assert (c.model.src_vocab, c.model.tgt_vocab) == (13, 13)
    assert c.replace(vocab=5).model.tgt_vocab == 5
    assert make_model_from_config(c.model).generator.proj.out_features == 13
    with pytest.raises(TypeError, match=r"\['src_vocab'\]"):
        c.replace(src_vocab=5)  # the vocabulary is set once, by vocab


def test_replace_routes_model_keywords_into_the_model():
    c = CopyTaskConfig(vocab=13).replace(d_model=32, h=8, tie_weights=True, steps=7)
    assert c == CopyTaskConfig(
        vocab=13, model=COPY_MODEL.replace(d_model=32, h=8, tie_weights=True), steps=7)
    assert c.model == COPY_MODEL.replace(src_vocab=13, tgt_vocab=13, d_model=32, h=8,
                                         tie_weights=True)
    assert (c.d_model, c.h, c.N) == (32, 8, COPY_MODEL.N)  # read through to the model
    assert c.replace(N=3).model.N == 3 and c.replace(N=3).steps == 7
    # keywords apply on top of a model given in the same call
    assert c.replace(model=COPY_MODEL, N=2).model == COPY_MODEL.replace(
        src_vocab=13, tgt_vocab=13, N=2)
    with pytest.raises(ValueError, match="divisible"):
        c.replace(d_model=30)  # checked again
    with pytest.raises(ValueError, match="max_len"):
        c.replace(max_len=5)
    with pytest.raises(TypeError, match=r"\['d_models'\].*'d_model'"):
        c.replace(d_models=16)
    with pytest.raises(AttributeError, match="d_models"):
        _ = c.d_models


def test_from_dict_reads_nested_and_flat_dicts():
    c = CopyTaskConfig(vocab=13, model=COPY_MODEL.replace(d_model=32, h=8))
    assert CopyTaskConfig.from_dict(c.to_dict()) == c
    # the flat dict that 0.1.0's `copy-task --save` stored
    flat = dict(vocab=13, seq_len=10, N=1, d_model=32, d_ff=256, h=8, dropout=0.0,
                batch_size=64, steps=400, accum_iter=1, warmup=100, factor=1.0, smoothing=0.1,
                seed=0)
    assert CopyTaskConfig.from_dict(flat) == c
    with pytest.raises(ValueError, match=r"unknown CopyTaskConfig settings \['src_vocab'\]"):
        CopyTaskConfig.from_dict({"src_vocab": 5})


@pytest.mark.parametrize(
    "change, error, word",
    [
        (dict(vocab=2), ValueError, "vocab"),
        (dict(seq_len=1), ValueError, "seq_len"),
        (dict(steps=0), ValueError, "steps"),
        (dict(batch_size=2.5), TypeError, "batch_size"),
        (dict(smoothing=-0.1), ValueError, "smoothing"),
        (dict(factor=0), ValueError, "factor"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(seq_len=20, model=COPY_MODEL.replace(max_len=10)), ValueError, "max_len"),
        (dict(model="big"), TypeError, "ModelConfig"),
    ],
)
def test_config_rejects_bad_values(change, error, word):
    with pytest.raises(error, match=word):
        CopyTaskConfig(**change)
    with pytest.raises(error, match=word):
        CopyTaskConfig().replace(**change)


@pytest.mark.parametrize(
    "change, error, word",
    [
        (dict(d_model=30, h=4), ValueError, "divisible"),
        (dict(dropout=1.0), ValueError, "dropout"),
        (dict(seq_len=20, max_len=10), ValueError, "max_len"),
    ],
)
def test_replace_rejects_bad_model_values(change, error, word):
    with pytest.raises(error, match=word):
        CopyTaskConfig().replace(**change)


# --------------------------------------------------------------------------- training


def test_training_is_deterministic_and_learns():
    first = train_copy_model(TINY)
    second = train_copy_model(TINY)
    assert first.losses == second.losses  # bit for bit
    for (name, a), b in zip(first.model.state_dict().items(), second.model.state_dict().values(),
                            strict=True):
        assert torch.equal(a, b), name
    other = train_copy_model(TINY.replace(seed=1))
    assert other.losses != first.losses
    assert len(first.losses) == 12 and first.final_loss == first.losses[-1]
    assert first.train_state.samples == 12 * 8 and first.train_state.tokens == 12 * 8 * 9
    assert sum(first.losses[-3:]) < sum(first.losses[:3])
    assert not first.model.training and first.seconds > 0


def test_training_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    train_copy_model(TINY.replace(steps=2))
    assert torch.equal(torch.rand(3), expected)


def test_training_reports_each_step():
    seen = []
    train_copy_model(TINY.replace(steps=3, accum_iter=2),
                     on_step=lambda state, loss: seen.append((state.accum_step, state.step)))
    assert seen == [(1, 2), (2, 4), (3, 6)]


# --------------------------------------------------------------------------- evaluation


def test_heldout_sequences_come_from_another_stream():
    held = heldout_sequences(100, seed=1)
    assert held.shape == (100, 10)
    assert torch.all(held[:, 0] == START_SYMBOL) and torch.all(held[:, 1:] >= 1)
    train = torch.cat([b.src for b in data_gen(11, 64, 20, seed=0)])
    assert not any(torch.equal(h, t) for h in held[:10] for t in train)
    assert torch.equal(heldout_sequences(100, seed=1), held)  # reproducible


def test_exact_match_counts_whole_rows():
    run = train_copy_model(TINY)
    src = heldout_sequences(20, seed=5)
    accuracy, decoded = exact_match(run.model, src)
    assert decoded.shape == src.shape and torch.all(decoded[:, 0] == START_SYMBOL)
    assert accuracy == pytest.approx((decoded == src).all(1).float().mean().item())
    # the cached and the recomputing decoders agree
    assert torch.equal(exact_match(run.model, src, use_cache=False)[1], decoded)


# --------------------------------------------------------------------------- command line


def run_command(argv: list[str], capsys) -> str:
    args = parse(argv)
    assert args.handler(args) == 0
    return capsys.readouterr().out


def test_subcommand_reports_loss_and_exact_match(capsys):
    out = run_command(TINY_ARGS, capsys)
    assert re.search(r"^final loss: \d+\.\d{6}", out, re.M)
    assert re.search(r"^exact match: \d+\.\d%", out, re.M)
    assert re.search(r"^step +1/12 +loss", out, re.M)  # --no-progress prints loss lines
    assert len(re.findall(r"^  \[1, ", out, re.M)) == 2  # two decoded examples


def test_subcommand_is_deterministic_with_a_seed(capsys):
    def stable(out: str) -> list[str]:  # everything but the timing
        return [re.sub(r"in \d+\.\d s", "", line) for line in out.splitlines()]

    first = run_command([*TINY_ARGS, "--seed", "4"], capsys)
    second = run_command([*TINY_ARGS, "--seed", "4"], capsys)
    assert stable(first) == stable(second)
    other = run_command([*TINY_ARGS, "--seed", "5"], capsys)
    assert stable(other) != stable(first)


def test_save_and_load_reproduce_the_decoded_outputs(tmp_path, capsys):
    path = tmp_path / "copy.pt"
    trained = run_command([*TINY_ARGS, "--seed", "2", "--save", str(path), "--examples", "6"],
                          capsys)
    assert f"saved model to {path}" in trained
    loaded = run_command(["--load", str(path), "--eval-size", "6", "--examples", "6",
                          "--no-progress"], capsys)
    assert "loaded" in loaded and "trained 12 steps with seed 2" in loaded

    def results(out: str) -> list[str]:
        return [line for line in out.splitlines() if line.startswith(("  [", "exact match"))]

    assert results(loaded) == results(trained) and len(results(loaded)) == 7


def test_handler_restores_the_thread_count(capsys):
    torch.set_num_threads(1)
    run_command([*TINY_ARGS, "--steps", "1", "--threads", "2"], capsys)
    assert torch.get_num_threads() == 1


def test_main_runs_on_its_own(capsys):
    assert main([*TINY_ARGS, "--steps", "2"]) == 0
    assert "exact match:" in capsys.readouterr().out


def test_bad_options_are_refused(capsys):
    with pytest.raises(ValueError, match="steps"):
        run_copy_task(parse([*TINY_ARGS, "--steps", "0"]))
    with pytest.raises(ValueError, match="--eval-size"):
        run_copy_task(parse([*TINY_ARGS, "--eval-size", "0"]))
    with pytest.raises(SystemExit):
        parse(["--steps", "many"])


# --------------------------------------------------------------------------- bad input, at once


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if the subcommand starts training."""
    import vanilla_transformer.training.copy_task as cli  # the handler imports it from here

    def refuse(*args, **kwargs):
        raise AssertionError("trained before the bad option was refused")

    monkeypatch.setattr(cli, "train_copy_model", refuse)


@pytest.mark.parametrize("extra, says", [
    (["--save", "/missing/dir/model.pt"], r"--save '/missing/dir/model.pt': the folder "
                                          r"'/missing/dir' does not exist"),
    (["--eval-size", "1000000000"], r"--eval-size must be at most 1000000, got 1000000000"),
    (["--seed", str(10**20)], r"--seed must be at most .* got 100000000000000000000"),
    (["--eval-seed", "-1"], r"--eval-seed must be an int >= 0, got -1"),
    (["--load", "/missing/model.pt"], r"--load '/missing/model.pt': no such file"),
])
def test_bad_options_are_refused_before_training(extra, says, no_training):
    with pytest.raises(ValueError, match=says):
        run_copy_task(parse([*TINY_ARGS, *extra]))


def test_save_to_a_folder_is_refused_before_training(tmp_path, no_training):
    with pytest.raises(ValueError, match="is a folder"):
        run_copy_task(parse([*TINY_ARGS, "--save", str(tmp_path)]))


@pytest.mark.parametrize("content", [b"hello\n", b""])
def test_loading_a_bad_file_is_one_line(tmp_path, capsys, content):
    from vanilla_transformer.cli import main as cli_main

    bad = tmp_path / "bad.pt"
    bad.write_bytes(content)
    assert cli_main(["copy-task", "--load", str(bad), "--no-progress"]) == 2
    _out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "is not a checkpoint written by save_checkpoint" in err and str(bad) in err
    assert main(["--load", str(bad), "--no-progress"]) == 2  # on its own, too
    assert capsys.readouterr().err.count("\n") == 1


def test_a_loss_that_becomes_nan_stops_training_with_one_line(capsys):
    from vanilla_transformer.cli import main as cli_main

    argv = ["copy-task", *TINY_ARGS, "--steps", "20", "--warmup", "1", "--factor", "1e6"]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    # the gradient overflows first (checked before the update), or the loss itself
    assert err.count("\n") == 1 and re.search(
        r"the loss is nan at batch \d+|a gradient is not finite at training step \d+", err)


def test_a_diverged_finite_loss_is_reported(monkeypatch, capsys):
    import vanilla_transformer.cli.copy_task as cli_copy_task
    import vanilla_transformer.training.copy_task as cli  # the handler imports it from here

    real = cli.train_copy_model

    def diverging(config, **kwargs):
        run = real(config, **kwargs)
        run.losses[-1] = 3e8  # what --factor 1e6 gave with the default sizes
        return run

    monkeypatch.setattr(cli, "train_copy_model", diverging)
    assert run_copy_task(parse([*TINY_ARGS, "--steps", "2"])) == 0
    out, err = capsys.readouterr()
    assert "exact match:" in out  # evaluation still runs ...
    assert "training diverged" in err and "--factor" in err  # ... with a warning on stderr
    assert cli_copy_task._diverged([2.4, 0.1], 11) is False
    assert cli_copy_task._diverged([2.4, float("nan")], 11) is True
