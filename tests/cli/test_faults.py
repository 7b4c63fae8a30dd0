"""Faults a practitioner meets, one table: each case's exit status and one-line message, and
afterwards a run folder that still loads and translates (nothing lost, nothing silently wrong).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from vanilla_transformer.cli import main
from vanilla_transformer.training import loop, translation
from vanilla_transformer.training.translation import load_translator

TINY = ["-N", "1", "--d-model", "16", "--d-ff", "32", "--h", "2", "--vocab-size", "60",
        "--max-tokens", "150", "--warmup", "5", "--save-every", "2", "--average", "2",
        "--eval-size", "2", "--no-progress"]


@pytest.fixture(scope="module")
def data(make_numbers):
    return make_numbers(seed=1, train_size=40)


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "run"
    assert main(["translate", "train", "--train", str(data / "train.tsv"), "--valid",
                 str(data / "valid.tsv"), "--out", str(out), "--max-steps", "4", *TINY]) == 0
    return out


@pytest.fixture
def run(trained, tmp_path):
    """A fresh copy of the trained run folder for each case."""
    return Path(shutil.copytree(trained, tmp_path / "run"))


def _train(data, run, *extra, train=None):
    return ["translate", "train", "--train", str(train or data / "train.tsv"), "--valid",
            str(data / "valid.tsv"), "--out", str(run), *extra]


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _still_works(run: Path) -> None:
    """The run folder loads, holds finite weights, and translates."""
    assert not (run / ".lock").exists()
    assert not list(run.rglob("*.tmp"))
    model, _tokenizer = load_translator(run)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert main(["translate", str(run), "--beam", "1", "one"]) == 0


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# ---- the cases: (name, how to set it up and what to run, exit status, message) ----

def case_train_into_a_run(data, run, tmp_path):
    return _train(data, run, "--max-steps", "6", *TINY)


def case_live_lock(data, run, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (run / ".lock").write_text(str(holder.pid))
    case_live_lock.cleanup = lambda: (holder.kill(), holder.wait(), (run / ".lock").unlink())
    case_live_lock.message = f"process {holder.pid}"
    return _train(data, run, "--resume", "--max-steps", "6", *TINY)


def case_export_into_the_run(data, run, tmp_path):
    return ["translate", "export", str(run), "--out", str(run)]


def case_export_into_another_run(data, run, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(run, other)
    return ["translate", "export", str(run), "--out", str(other)]


def case_foreign_tokenizer(data, run, tmp_path):
    from vanilla_transformer.data.tokenizer import train_tokenizer

    train_tokenizer(["ganz andere", "Wörter hier"] * 3, 40).save(run / "tokenizer.json")
    case_foreign_tokenizer.cleanup = lambda: shutil.copy(
        run.parent / "saved-tokenizer.json", run / "tokenizer.json")
    return ["translate", str(run), "one"]


def case_resume_without_checkpoint(data, run, tmp_path):
    shutil.rmtree(run / "checkpoints")
    (run / "model.pt").unlink()
    case_resume_without_checkpoint.still_works = False  # nothing trained to translate with
    return _train(data, run, "--resume", *TINY)


def case_resume_other_shape(data, run, tmp_path):
    return _train(data, run, "--resume", *TINY, "--d-model", "32")


def case_resume_other_data(data, run, tmp_path):
    return _train(data, run, "--resume", "--max-steps", "6", *TINY, train=data / "test.tsv")


def case_resume_without_config(data, run, tmp_path):
    (run / "config.json").unlink()
    return _train(data, run, "--resume", *TINY)


def case_special_token(data, run, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("one\teins\ntwo <s>\tzwei\n", encoding="utf-8")
    return _train(data, tmp_path / "new", *TINY, train=bad)


def case_huge_config(data, run, tmp_path):
    state = torch.load(run / "model.pt", weights_only=True)
    state["config"]["N"] = 10_000
    torch.save(state, run / "model.pt")
    case_huge_config.still_works = False
    return ["translate", str(run), "one"]


def case_code_in_checkpoint(data, run, tmp_path):
    torch.save({"format": "x", "call": os.getcwd}, run / "model.pt")  # a pickled function
    case_code_in_checkpoint.still_works = False
    return ["translate", str(run), "one"]


def case_truncated_checkpoint(data, run, tmp_path):
    (run / "model.pt").write_bytes((run / "model.pt").read_bytes()[:500])
    case_truncated_checkpoint.still_works = False
    return ["translate", str(run), "one"]


def case_diverged(data, run, tmp_path, monkeypatch):
    calls = []

    def finite_twice(parameters):
        calls.append(1)
        return len(calls) != 1

    monkeypatch.setattr(loop, "gradients_are_finite", finite_twice)
    return _train(data, run, "--resume", "--max-steps", "10", *TINY)


def case_missing_extra(data, run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sacrebleu", None)
    return ["translate", "eval", str(run), "--data", str(data / "test.tsv")]


def case_bad_beam(data, run, tmp_path):
    return ["translate", str(run), "--beam", "0", "one"]


def case_unknown_option(data, run, tmp_path):
    return ["translate", "train", "--train", "x", "--valid", "y", "--out", "z", "--bogus"]


# ---- refuse before destroying: one case per rule of the engine ----

def case_overwrite_with_a_bad_last_line(data, run, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text((data / "train.tsv").read_text(encoding="utf-8") + "no tab\n",
                   encoding="utf-8")
    return _train(data, run, "--overwrite", *TINY, train=bad)


def case_overwrite_with_a_model_too_big(data, run, tmp_path):
    return _train(data, run, "--overwrite", *TINY, "--d-ff", "99999999999999999999")


def case_new_run_with_layers_that_cannot_fit(data, run, tmp_path):
    return _train(data, tmp_path / "new", *TINY, "-N", "99999999999999999999")


def case_a_positional_table_that_cannot_fit(data, run, tmp_path):
    return _train(data, tmp_path / "new", *TINY, "--max-len", "99999999999999999999")


def case_an_accumulation_that_overflows(data, run, tmp_path):
    return _train(data, tmp_path / "new", *TINY, "--accum-iter", "99999999999999999999")


def case_a_negative_seed(data, run, tmp_path):
    return _train(data, tmp_path / "new", *TINY, "--seed", "-1")


def case_a_negative_timeout(data, run, tmp_path):
    return _train(data, tmp_path / "new", *TINY, "--timeout", "-1")


def case_an_infinite_timeout(data, run, tmp_path):
    return _train(data, tmp_path / "new", *TINY, "--timeout", "inf")


def case_too_many_threads(data, run, tmp_path):
    return _train(data, tmp_path / "new", *TINY, "--threads", "99999999999999999999")


def case_a_beam_too_wide(data, run, tmp_path):
    return ["translate", str(run), "--beam", "99999999999999999999", "one"]


def case_output_over_the_model(data, run, tmp_path):
    return ["translate", str(run), "--beam", "1", "seven", "--output", str(run / "model.pt")]


def case_output_over_a_checkpoint(data, run, tmp_path):
    newest = sorted((run / "checkpoints").glob("step-*.pt"))[-1]
    return ["translate", str(run), "--beam", "1", "seven", "--output", str(newest),
            "--overwrite"]


def case_output_over_its_input(data, run, tmp_path):
    (run / "input.txt").write_text("one\n", encoding="utf-8")
    return ["translate", str(run), "--input", str(run / "input.txt"), "--output",
            str(run / "input.txt"), "--overwrite"]


def case_output_over_a_file_it_did_not_create(data, run, tmp_path):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    return ["translate", str(run), "--beam", "1", "one", "--output", str(tmp_path / "notes.txt")]


def case_eval_json_over_a_file(data, run, tmp_path):
    (tmp_path / "scores.json").write_text("{}", encoding="utf-8")
    return ["translate", "eval", str(run), "--data", str(data / "test.tsv"), "--json",
            str(tmp_path / "scores.json")]


def case_eval_output_over_its_data(data, run, tmp_path):
    shutil.copy(data / "test.tsv", tmp_path / "test.tsv")
    return ["translate", "eval", str(run), "--data", str(tmp_path / "test.tsv"), "--output",
            str(tmp_path / "test.tsv"), "--overwrite"]


def case_numbers_over_a_corpus(data, run, tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "train.tsv").write_text("one\teins\n", encoding="utf-8")
    return ["translate", "numbers", "--out", str(tmp_path / "corpus")]


def case_numbers_with_a_negative_seed(data, run, tmp_path):
    return ["translate", "numbers", "--out", str(tmp_path / "new"), "--seed", "-1"]


def case_numbers_into_a_run(data, run, tmp_path):
    return ["translate", "numbers", "--out", str(run), "--overwrite"]


def case_export_over_a_graph(data, run, tmp_path):
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "encoder.onnx").write_bytes(b"mine")
    return ["translate", "export", str(run), "--out", str(tmp_path / "onnx")]


def case_model_without_its_tokenizer(data, run, tmp_path):
    state = torch.load(run / "model.pt", weights_only=True)
    del state["metadata"]["tokenizer"]
    torch.save(state, run / "model.pt")
    case_model_without_its_tokenizer.still_works = False
    return ["translate", str(run), "one"]


def case_tokenizer_with_a_normalizer(data, run, tmp_path):
    tokenizer = json.loads((run / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["normalizer"] = {"type": "Replace", "pattern": {"Regex": "(a+)+$"},
                               "content": "b"}
    (run / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    case_tokenizer_with_a_normalizer.cleanup = lambda: shutil.copy(
        run.parent / "saved-tokenizer.json", run / "tokenizer.json")
    return ["translate", str(run), "one"]


def _edit_config(run, **changes):
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            config.pop(key)
        else:
            config[key] = value
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")


def case_resume_without_a_data_fingerprint(data, run, tmp_path):
    _edit_config(run, data=None)
    return _train(data, run, "--resume", "--max-steps", "6", *TINY)


def case_resume_with_a_data_fingerprint_of_another_shape(data, run, tmp_path):
    _edit_config(run, data="x")
    return _train(data, run, "--resume", "--max-steps", "6", *TINY)


def case_resume_with_options_of_another_shape(data, run, tmp_path):
    _edit_config(run, options=["log_every"])
    return _train(data, run, "--resume", "--max-steps", "6", *TINY)


def case_resume_with_settings_of_the_wrong_type(data, run, tmp_path):
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    _edit_config(run, training={**config["training"], "max_steps": "six"})
    return _train(data, run, "--resume", *TINY)


def case_resume_with_an_unknown_option(data, run, tmp_path):
    _edit_config(run, options={"log_every": 2, "bogus": 1})
    return _train(data, run, "--resume", "--max-steps", "6", *TINY)


def case_an_alpha_that_is_not_a_number(data, run, tmp_path):
    return ["translate", str(run), "--alpha", "nan", "one"]


def case_a_renamed_checkpoint(data, run, tmp_path):
    newest = sorted((run / "checkpoints").glob("step-*.pt"))[-1]
    newest.rename(run / "checkpoints" / "step-0000009.pt")
    case_a_renamed_checkpoint.still_works = False
    return ["translate", str(run), "--checkpoint", "last", "one"]


def case_a_full_disk(data, run, tmp_path, monkeypatch):
    real = torch.save

    def full(obj, f, *args, **kwargs):
        if isinstance(obj, dict) and obj.get("format") == "vanilla-transformer-train-state":
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64")
        return real(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full)
    case_a_full_disk.message = "step-0000006.pt"
    return _train(data, run, "--resume", "--max-steps", "6", *TINY)


def case_a_checkpoint_that_does_not_read_back(data, run, tmp_path, monkeypatch):
    real = torch.save

    def garbled(obj, f, *args, **kwargs):
        if isinstance(obj, dict) and obj.get("format") == "vanilla-transformer-train-state":
            return f.write(b"not a checkpoint")
        return real(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", garbled)
    case_a_checkpoint_that_does_not_read_back.message = "step-0000006.pt"
    return _train(data, run, "--resume", "--max-steps", "6", *TINY)


CASES = [
    (case_train_into_a_run, 2, "is not empty"),
    (case_live_lock, 2, "is in use"),
    (case_export_into_the_run, 2, "is a run folder"),
    (case_export_into_another_run, 2, "is a run folder"),
    (case_foreign_tokenizer, 2, "is not the tokenizer"),
    (case_resume_without_checkpoint, 2, "holds no training checkpoint"),
    (case_resume_other_shape, 2, "--d-model 32 differs from the run's 16"),
    (case_resume_other_data, 2, "pass --new-data"),
    (case_resume_without_config, 2, "lacks config.json"),
    (case_special_token, 2, "bad.tsv line 2: holds the special token '<s>'"),
    (case_huge_config, 2, "N=10000"),
    (case_code_in_checkpoint, 2, "arbitrary code execution"),
    (case_truncated_checkpoint, 2, "is not a model checkpoint"),
    (case_diverged, 1, "training diverged at step 5: a gradient is not finite"),
    (case_missing_extra, 2, "pip install 'vanilla-transformer[translate]'"),
    (case_bad_beam, 2, "--beam must be positive"),
    (case_unknown_option, 2, "unrecognized arguments: --bogus"),
    (case_overwrite_with_a_bad_last_line, 2, "bad.tsv line 41: expected exactly one tab"),
    (case_overwrite_with_a_model_too_big, 2, "needs at least"),
    (case_new_run_with_layers_that_cannot_fit, 2, "N=99999999999999999999"),
    (case_a_positional_table_that_cannot_fit, 2, "max_len=99999999999999999999"),
    (case_an_accumulation_that_overflows, 2, "accum_iter must be at most 2147483647"),
    (case_a_negative_seed, 2, "seed must be an int >= 0, got -1"),
    (case_a_negative_timeout, 2, "timeout must be a positive, finite number"),
    (case_an_infinite_timeout, 2, "timeout must be a positive, finite number"),
    (case_too_many_threads, 2, "--threads must be in [1, 1024]"),
    (case_a_beam_too_wide, 2, "--beam must be positive and at most 1024"),
    (case_output_over_the_model, 2, "is in the run folder"),
    (case_output_over_a_checkpoint, 2, "is in the run folder"),
    (case_output_over_its_input, 2, "is the file this command reads as --input"),
    (case_output_over_a_file_it_did_not_create, 2, "exists; give --overwrite"),
    (case_eval_json_over_a_file, 2, "exists; give --overwrite"),
    (case_eval_output_over_its_data, 2, "is the file this command reads as --data"),
    (case_numbers_over_a_corpus, 2, "already holds train.tsv"),
    (case_numbers_into_a_run, 2, "is a run folder"),
    (case_numbers_with_a_negative_seed, 2, "--seed must be an int >= 0, got -1"),
    (case_export_over_a_graph, 2, "already holds encoder.onnx"),
    (case_model_without_its_tokenizer, 2, "does not hold the tokenizer it was trained with"),
    (case_tokenizer_with_a_normalizer, 2, "has a normalizer that training never writes"),
    (case_resume_without_a_data_fingerprint, 2, "holds no fingerprint of them; pass --new-data"),
    (case_resume_with_a_data_fingerprint_of_another_shape, 2, "holds a str as its 'data'"),
    (case_resume_with_options_of_another_shape, 2, "holds a list as its 'options'"),
    (case_resume_with_settings_of_the_wrong_type, 2, "holds bad training settings"),
    (case_resume_with_an_unknown_option, 2, "unknown RunOptions settings ['bogus']"),
    (case_an_alpha_that_is_not_a_number, 2, "--alpha must be a finite number >= 0, got nan"),
    (case_a_renamed_checkpoint, 2, "not the step its name says"),
    (case_a_full_disk, 1, "No space left on device"),
    (case_a_checkpoint_that_does_not_read_back, 1, "does not read back"),
]


@pytest.mark.parametrize("case, status, message", CASES, ids=[c.__name__[5:] for c, *_ in CASES])
def test_fault(case, status, message, data, run, tmp_path, capsys, monkeypatch):
    shutil.copy(run / "tokenizer.json", run.parent / "saved-tokenizer.json")
    for name in ("cleanup", "message", "still_works"):
        if hasattr(case, name):
            delattr(case, name)
    kwargs = {"monkeypatch": monkeypatch} if "monkeypatch" in case.__code__.co_varnames else {}
    argv = case(data, run, tmp_path, **kwargs)
    before = _snapshot(run)
    start = time.perf_counter()
    assert main(argv) == status
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]
    assert getattr(case, "message", "") in lines[0]
    assert seconds < 30
    if status == 2 or case in (case_diverged, case_a_full_disk,
                               case_a_checkpoint_that_does_not_read_back):
        # refused or failed: the run is as it was, and no file was added to it
        after = _snapshot(run)
        changed = {k for k in before if after.get(k) != before[k]} | (set(after) - set(before))
        assert not changed or (status == 1 and changed <= {"metrics.jsonl", "config.json"}), changed
    if (tmp_path / "new").exists():  # a refused new run leaves no folder behind
        assert not any((tmp_path / "new").iterdir())
    if hasattr(case, "cleanup"):
        case.cleanup()
    monkeypatch.undo()
    if getattr(case, "still_works", True):
        _still_works(run)


# ---- cases that succeed where they used to fail or clobber ----

def test_stale_lock_and_temporary_files_are_taken_over(data, run, capsys):
    (run / ".lock").write_text(str(_dead_pid()))
    (run / ".model.pt.a1b2.tmp").write_bytes(b"half a model")
    (run / "checkpoints" / ".step-0000006.pt.c3d4.tmp").write_bytes(b"half a checkpoint")
    assert main(_train(data, run, "--resume", "--max-steps", "6", *TINY)) == 0
    out = capsys.readouterr().out
    assert "removed" in out and "resuming from step 4 of 6" in out
    _still_works(run)


def test_overwrite_replaces_the_run(data, run, capsys):
    (run / "notes.txt").write_text("mine")
    assert main(_train(data, run, "--overwrite", "--max-steps", "2", *TINY)) == 0
    assert "trained 2 steps" in capsys.readouterr().out
    assert (run / "notes.txt").read_text() == "mine"
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["step-0000002.pt"]
    _still_works(run)


def test_resume_keeps_the_saved_settings(data, run, capsys):
    assert main(_train(data, run, "--resume", "--no-progress")) == 0
    out = capsys.readouterr().out
    assert "resuming from step 4 of 4" in out and "trained 4 steps" in out
    assert main(_train(data, run, "--resume", "--max-steps", "6", "--no-progress")) == 0
    assert "resuming from step 4 of 6" in capsys.readouterr().out
    saved = json.loads((run / "config.json").read_text())["training"]
    assert saved["max_steps"] == 6 and saved["save_every"] == 2 and saved["vocab_size"] == 60
    _still_works(run)


def test_resume_on_new_smaller_data(data, run, tmp_path, capsys):
    small = tmp_path / "small.tsv"
    small.write_text("one\teins\ntwo\tzwei\n", encoding="utf-8")
    assert main(_train(data, run, "--resume", "--new-data", "--max-steps", "8", "--no-progress",
                       train=small)) == 0
    assert "trained 8 steps" in capsys.readouterr().out
    _still_works(run)


def test_data_is_checked_before_the_first_step(data, tmp_path, capsys):
    text = (data / "train.tsv").read_text(encoding="utf-8")
    odd = tmp_path / "odd.tsv"
    long = " ".join(["seven"] * 100)
    # a byte-order mark, Windows line ends, U+2028 inside a sentence, and one long pair
    odd.write_bytes(b"\xef\xbb\xbf" + (text.replace("\n", "\r\n")
                    + f"one\u2028two\teins\u2028zwei\r\n{long}\tsieben\n").encode("utf-8"))
    from vanilla_transformer.data.numbers import read_tsv

    pairs = read_tsv(odd)
    assert pairs[0][0] == read_tsv(data / "train.tsv")[0][0]  # no BOM left
    assert ("one\u2028two", "eins\u2028zwei") in pairs
    assert main(_train(data, tmp_path / "run", "--max-steps", "2", "--max-len", "60", *TINY,
                       train=odd)) == 0
    assert "skipped 1 of 42 training pairs" in capsys.readouterr().out
    _still_works(tmp_path / "run")


def test_an_error_on_line_one_of_a_big_file_comes_at_once(data, tmp_path, capsys):
    big = tmp_path / "big.tsv"
    with open(big, "wb") as f:
        f.write(b"no tab here\n")
        f.write(b"one\teins\n" * 1_000_000)  # about 9 MB
    start = time.perf_counter()
    assert main(_train(data, tmp_path / "run", *TINY, train=big)) == 2
    assert time.perf_counter() - start < 5
    assert "big.tsv line 1: expected exactly one tab" in capsys.readouterr().err


def test_options_anywhere(run, capsys):
    assert main(["translate", str(run), "--beam", "1", "one", "--alpha", "0.5", "two"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_a_nan_loss_stops_the_run(data, run, monkeypatch, capsys):
    real = translation.SimpleLossCompute

    class NanOnThirdStep(real):
        calls = 0

        def __call__(self, x, y, norm):
            NanOnThirdStep.calls += 1
            loss_sum, node = super().__call__(x, y, norm)
            return (loss_sum * float("nan"), node) if NanOnThirdStep.calls == 3 else (
                loss_sum, node)

    monkeypatch.setattr(translation, "SimpleLossCompute", NanOnThirdStep)
    before = _snapshot(run)
    assert main(_train(data, run, "--resume", "--max-steps", "10", *TINY)) == 1
    assert "diverged at step 7: the loss is nan" in capsys.readouterr().err
    assert _snapshot(run)["model.pt"] == before["model.pt"]
    monkeypatch.undo()
    _still_works(run)


SCRIPT = ("import sys; from vanilla_transformer.cli import main; sys.exit(main(sys.argv[1:]))")


def _start(data, run, *extra):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *_train(data, run, "--max-steps", "100000",
                                               *TINY, *extra)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for_steps(run: Path, child: subprocess.Popen, steps: int = 2) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if len(list((run / "checkpoints").glob("step-*.pt"))) >= 1:
            return
        time.sleep(0.2)
    raise AssertionError(f"no checkpoint appeared: {child.communicate()}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_after_the_step_with_a_checkpoint(data, tmp_path, signum):
    run = tmp_path / "run"
    child = _start(data, run)
    _wait_for_steps(run, child)
    child.send_signal(signum)
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    step = int(err.split("interrupted at step ")[1].split(":")[0])
    assert err.strip().endswith(f"interrupted at step {step}: continue with --resume")
    assert (run / "checkpoints" / f"step-{step:07d}.pt").is_file()
    _still_works(run)
    assert main(_train(data, run, "--resume", "--max-steps", str(step + 1), *TINY)) == 0


def test_a_second_signal_stops_at_once_and_corrupts_nothing(data, tmp_path):
    run = tmp_path / "run"
    child = _start(data, run, "--save-every", "1")
    _wait_for_steps(run, child)
    child.send_signal(signal.SIGINT)
    time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert "Traceback" not in err
    assert not (run / ".lock").exists() and not list(run.rglob("*.tmp"))
    newest = sorted((run / "checkpoints").glob("step-*.pt"))[-1]
    step = int(newest.stem.split("-")[1])
    assert main(_train(data, run, "--resume", "--max-steps", str(step + 1), *TINY)) == 0
    _still_works(run)


# ---- rules of the engine that a table row cannot show ----

@pytest.mark.parametrize("text", ["99999999999999999999", "0", "-1", "", "12x"])
def test_a_lock_that_names_no_live_process_is_taken_over(data, run, text, capsys):
    (run / ".lock").write_text(text)
    assert main(_train(data, run, "--resume", "--max-steps", "5", *TINY)) == 0
    assert "resuming from step 4 of 5" in capsys.readouterr().out
    _still_works(run)


def test_a_refused_run_leaves_its_folder_as_it_found_it(data, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    # what a tokeniser killed with -9 leaves: a temporary folder, as big as the corpus
    (out / f".ids.tmp-{_dead_pid()}").mkdir()
    for argv in (["--seed", "-1"], ["--accum-iter", str(10**20)], ["--max-len", str(10**20)],
                 ["-N", str(10**20)]):
        assert main(_train(data, out, *TINY, *argv)) == 2
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".ids.tmp")) == []
    capsys.readouterr()
    assert main(_train(data, out, "--max-steps", "2", *TINY)) == 0  # the corrected retry
    assert not [p for p in out.iterdir() if ".tmp" in p.name]  # and the leftovers are gone
    _still_works(out)


def test_checkpoints_are_ordered_by_their_step(tmp_path):
    from vanilla_transformer.training.checkpoints import checkpoint_paths

    (tmp_path / "checkpoints").mkdir()
    for step in (10_000_000, 9_999_999, 20, 3):
        (tmp_path / "checkpoints" / f"step-{step:07d}.pt").write_bytes(b"")
    (tmp_path / "checkpoints" / "best.pt").write_bytes(b"")
    assert [p.name for p in checkpoint_paths(tmp_path)] == [
        "step-0000003.pt", "step-0000020.pt", "step-9999999.pt", "step-10000000.pt"]


def test_a_stop_while_tokenising_is_at_once_and_leaves_nothing(data, tmp_path):
    big = tmp_path / "big.tsv"
    line = (data / "train.tsv").read_text(encoding="utf-8")
    with open(big, "w", encoding="utf-8") as f:
        for _ in range(30_000):  # about 1.2 million pairs
            f.write(line)
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, *_train(data, run, *TINY,
                                                                     train=big)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(run.glob(".ids.tmp-*")):
        time.sleep(0.05)
    assert list(run.glob(".ids.tmp-*")), child.communicate()
    start = time.monotonic()
    child.send_signal(signal.SIGINT)
    said = child.stderr.readline()  # the command's one line, before the interpreter's teardown
    assert time.monotonic() - start < 1.0, said
    _out, err = child.communicate(timeout=60)
    assert child.returncode == 130 and said.strip().endswith("error: interrupted"), said + err
    assert not run.exists() or not list(run.iterdir())


def test_averaging_keeps_to_the_end_of_the_run_and_says_so(data, tmp_path, capsys):
    # checkpoints of steps 2, 4, 6, 8 and 9; the last fifth of 9 steps starts at step 8
    out = tmp_path / "avg"
    assert main(_train(data, out, "--max-steps", "9", *TINY, "--average", "5")) == 0
    printed = capsys.readouterr().out
    assert ("model.pt: the average of the checkpoints of steps 8, 9, the last 20% of the run "
            "(from step 8)") in printed
    assert printed.rstrip().endswith("the average of the checkpoints of steps 8, 9")
    from vanilla_transformer.training.checkpoints import load_checkpoint

    assert load_checkpoint(out / "model.pt")[1]["averaged"] == [8, 9]
    # a run too short for two checkpoints in its last fifth keeps its last one alone
    out = tmp_path / "short"
    assert main(_train(data, out, "--max-steps", "3", *TINY, "--average", "5")) == 0
    printed = capsys.readouterr().out
    assert ("model.pt: averaging skipped, the checkpoint of step 3 alone (step 2 is before "
            "step 3, where the last 20% of the run starts)") in printed
    assert printed.rstrip().endswith("the checkpoint of step 3")
