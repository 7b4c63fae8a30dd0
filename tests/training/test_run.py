"""The run object: a replacing run staged beside the old one until its first checkpoint, and
the refusals of a resume from a damaged checkpoint, each naming its file."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest
import torch

from vanilla_transformer.data.numbers import number_corpus
from vanilla_transformer.training import run as run_module
from vanilla_transformer.training.checkpoints import STAGING, checkpoint_paths
from vanilla_transformer.training.translation import TranslationConfig, train_translation

TINY = dict(N=1, d_model=16, d_ff=32, h=2, dropout=0.1)


@pytest.fixture(scope="module")
def corpus():
    return number_corpus("de", {"train": 60, "valid": 4}, limit=1000, seed=0, always_first=0)


def _config(**changes):
    base = dict(vocab_size=60, max_tokens=120, warmup=5, save_every=2, average=2, eval_size=2,
                max_steps=4, seed=0)
    return TranslationConfig(**{**base, **changes})


def _train(corpus, out, **options):
    return train_translation(corpus["train"], corpus["valid"], out, model_options=TINY,
                             config=options.pop("config", _config()), **options)


def _files(folder):
    """Every file under `folder` with its bytes, the lock and staging excluded."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock" and STAGING not in p.parts}


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "run"
    _train(corpus, out)
    return out


@pytest.fixture
def old_run(trained, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    (out / "notes.txt").write_text("mine")
    return out


def test_overwrite_stages_the_new_run_and_swaps_at_its_first_checkpoint(corpus, old_run,
                                                                         monkeypatch):
    before = _files(old_run)
    seen = []
    real_saved = run_module.RunFolder.saved

    def saved(folder):
        if folder.staging is not None:  # the first checkpoint, before the swap
            seen.append((_files(old_run) == before, sorted(os.listdir(folder.staging))))
        real_saved(folder)

    monkeypatch.setattr(run_module.RunFolder, "saved", saved)
    run = _train(corpus, old_run, overwrite=True, config=_config(max_steps=3, save_every=3))
    assert seen == [(True, ["checkpoints", "config.json", "metrics.jsonl", "tokenizer.json"])]
    assert run.step == 3 and (old_run / "notes.txt").read_text() == "mine"
    assert [p.name for p in checkpoint_paths(old_run)] == ["step-0000003.pt"]
    assert not (old_run / STAGING).exists()
    steps = [json.loads(line)["step"] for line in (old_run / "metrics.jsonl").open()]
    assert max(steps) == 3


def test_a_replacing_run_stopped_before_its_first_checkpoint_leaves_the_old_one(
        corpus, old_run, monkeypatch):
    before = _files(old_run)

    def interrupted(config):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "make_model_from_config", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _train(corpus, old_run, overwrite=True)
    assert _files(old_run) == before
    assert not (old_run / STAGING).exists()


SLOW_BUILD = """
import json, sys, time
from vanilla_transformer.training import run
from vanilla_transformer.training.translation import TranslationConfig, train_translation

def slow(config):
    print("building", flush=True)
    time.sleep(600)

run.make_model_from_config = slow
pairs = [tuple(p) for p in json.loads(sys.argv[2])]
train_translation(pairs, pairs[:4], sys.argv[1], overwrite=True,
                  model_options=dict(N=1, d_model=16, d_ff=32, h=2),
                  config=TranslationConfig(vocab_size=60, max_steps=4, save_every=2,
                                           eval_size=2))
"""


def test_a_replacing_run_killed_while_its_model_builds_leaves_the_old_one(corpus, old_run):
    before = _files(old_run)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", SLOW_BUILD, str(old_run),
                              json.dumps(corpus["train"])], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "building\n", child.stderr.read()
        assert (old_run / STAGING).is_dir()  # the new run's files are staged beside the old
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
    assert _files(old_run) == before  # model.pt, checkpoints and log intact
    lines = []
    again = _train(corpus, old_run, resume=True, config=_config(max_steps=6), log=lines.append)
    assert again.step == 6 and not (old_run / STAGING).exists()
    assert any("removed" in line and STAGING in line for line in lines), lines


def test_a_swap_cut_short_is_finished_by_the_next_run(corpus, old_run, tmp_path):
    new = tmp_path / "new"
    _train(corpus, new, config=_config(max_steps=2))
    staged = old_run / STAGING
    staged.mkdir()
    names = sorted(n for n in os.listdir(new) if n not in (".lock", "model.pt"))
    for name in names:
        os.replace(new / name, staged / name)
    (staged / "SWAP").write_text(json.dumps(names))
    os.replace(staged / "checkpoints", old_run / "checkpoints.moved")  # half moved: a kill
    shutil.rmtree(old_run / "checkpoints")
    os.replace(old_run / "checkpoints.moved", old_run / "checkpoints")
    lines = []
    again = _train(corpus, old_run, resume=True, config=_config(max_steps=4), log=lines.append)
    assert "finished replacing" in lines[0] and "resuming from step 2" in lines[1]
    assert again.step == 4 and not staged.exists() and (old_run / "notes.txt").exists()


def _damage(path, **fields):
    state = torch.load(path, weights_only=True)
    state.update(fields)
    torch.save(state, path)


@pytest.mark.parametrize("fields, says", [
    (dict(losses="1.0, 2.0"), "holds a bad 'losses': a str where a 1-D float tensor"),
    (dict(losses=torch.zeros(3, dtype=torch.float64)), "3 losses for 4 steps"),
    (dict(rng={"torch": torch.zeros(3)}), "holds a bad 'rng'"),
    (dict(rng=[1, 2]), "holds a bad 'rng': a list"),
    (dict(step=-4), "holds a bad 'step'"),
    (dict(epoch="0"), "holds a bad 'epoch'"),
    (dict(callbacks=None), "holds a bad 'callbacks'"),
    (dict(optimizer={"state": {}}), "holds a bad 'optimizer'"),
    (dict(optimizer={"state": {}, "param_groups": []}), "'optimizer' does not fit the model"),
    (dict(callbacks={"checkpoints": {"history": [{"step": "4"}]}}),
     "state 'checkpoints' is bad: its 'history' is not a list of validations"),
    (dict(callbacks={"early_stopping": {"best": "high"}}), "its 'best' is not a score"),
    (dict(callbacks={"metrics": {"losses": [None]}}), "its 'losses' are not a list"),
])
def test_a_tampered_checkpoint_field_is_refused_naming_its_file(corpus, old_run, fields,
                                                                says):
    out = old_run
    newest = checkpoint_paths(out)[-1]
    _damage(newest, **fields)
    with pytest.raises(ValueError, match=says) as error:
        _train(corpus, out, resume=True, config=_config(max_steps=6))
    assert str(newest) in str(error.value)
    assert "Traceback" not in str(error.value)


def test_a_truncated_newest_checkpoint_is_refused_naming_its_file(corpus, old_run):
    out = old_run
    newest = checkpoint_paths(out)[-1]
    for cut in (30, newest.stat().st_size // 2):
        data = newest.read_bytes()
        newest.write_bytes(data[:-cut])
        with pytest.raises(ValueError, match="not a training checkpoint") as error:
            _train(corpus, out, resume=True, config=_config(max_steps=6))
        assert str(error.value).startswith(f"{str(newest)!r} is not a training checkpoint: ")
        newest.write_bytes(data)


def test_the_random_state_of_every_device_in_use_is_saved(corpus, tmp_path):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out = tmp_path / "run"
    _train(corpus, out, device=device)
    rng = torch.load(checkpoint_paths(out)[-1], weights_only=True)["rng"]
    assert set(rng) == ({"torch", "cuda"} if device == "cuda" else {"torch"})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_resumed_run_on_a_gpu_matches_the_uninterrupted_one(corpus, tmp_path):
    full = _train(corpus, tmp_path / "full", device="cuda", config=_config(max_steps=8))
    _train(corpus, tmp_path / "split", device="cuda", config=_config(max_steps=5))
    torch.cuda.manual_seed(1234)  # the resumed run restores the GPU's random state it saved
    resumed = _train(corpus, tmp_path / "split", device="cuda", resume=True,
                     config=_config(max_steps=8))
    assert resumed.losses == full.losses


def test_an_unknown_keyword_is_a_type_error(corpus, tmp_path):
    with pytest.raises(TypeError, match="'overwrit'"):
        _train(corpus, tmp_path / "run", overwrit=True)
    assert not (tmp_path / "run").exists()


def test_resume_writes_again_the_validation_line_a_kill_lost(corpus, old_run):
    # a SIGKILL after the checkpoint of step 4 and before its line in metrics.jsonl
    path = old_run / "metrics.jsonl"
    lines = path.read_text().splitlines()
    lost = [line for line in lines if '"step": 4,' in line and "valid_loss" in line]
    assert len(lost) == 1
    path.write_text("".join(line + "\n" for line in lines if line != lost[0]))
    _train(corpus, old_run, resume=True, config=_config(max_steps=5))
    again = [json.loads(line) for line in path.read_text().splitlines()]
    assert [m for m in again if m["step"] == 4 and "valid_loss" in m] == [json.loads(lost[0])]
    assert [m["step"] for m in again] == sorted(m["step"] for m in again)


def test_a_checkpoint_of_the_previous_version_resumes(corpus, old_run):
    newest = checkpoint_paths(old_run)[-1]
    state = torch.load(newest, weights_only=True)
    history = state["callbacks"].pop("checkpoints")["history"]
    del state["callbacks"]
    torch.save({**state, "version": 2, "history": history}, newest)
    again = _train(corpus, old_run, resume=True, config=_config(max_steps=6))
    assert [h["step"] for h in again.history] == [2, 4, 6]
