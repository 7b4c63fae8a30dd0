"""Training a translator: exact resumption, atomic checkpoints, averaging, time limits."""

from __future__ import annotations

import json
import math

import pytest
import torch

from vanilla_transformer.data.numbers import number_corpus
from vanilla_transformer.training.translation import (
    TranslationConfig,
    average_checkpoints,
    checkpoint_paths,
    load_train_state,
    load_translator,
    train_translation,
)

TINY = dict(N=1, d_model=16, d_ff=32, h=2, dropout=0.1)


@pytest.fixture(scope="module")
def corpus():
    return number_corpus("de", {"train": 120, "valid": 8}, limit=1000, seed=0, always_first=0)


def _config(**changes):
    base = dict(vocab_size=60, max_tokens=120, warmup=5, save_every=5, average=3, eval_size=4,
                max_steps=20, seed=0)
    return TranslationConfig(**{**base, **changes})


def test_resumed_run_matches_the_uninterrupted_one(corpus, tmp_path):
    k = 12  # not a multiple of save_every: the stop itself writes the checkpoint
    full = train_translation(corpus["train"], corpus["valid"], tmp_path / "full",
                             model_options=TINY, config=_config(max_steps=2 * k), progress=False)
    first = train_translation(corpus["train"], corpus["valid"], tmp_path / "split",
                              model_options=TINY, config=_config(max_steps=k), progress=False)
    assert first.step == k
    torch.manual_seed(12345)  # the resumed run restores the random state it saved
    resumed = train_translation(corpus["train"], corpus["valid"], tmp_path / "split",
                                model_options=TINY, config=_config(max_steps=2 * k),
                                resume=True, progress=False)
    assert resumed.step == full.step == 2 * k
    # dropout is on (0.1), so this holds only if the random state and the data position resume
    assert resumed.losses == full.losses
    assert max(abs(a - b) for a, b in zip(resumed.losses, full.losses, strict=False)) == 0.0
    last_full = load_train_state(checkpoint_paths(tmp_path / "full")[-1])
    last_split = load_train_state(checkpoint_paths(tmp_path / "split")[-1])
    for name, tensor in last_full["model"].items():
        assert torch.equal(tensor, last_split["model"][name]), name


def test_checkpoints_hold_the_whole_training_state(corpus, tmp_path):
    run = train_translation(corpus["train"], corpus["valid"], tmp_path, model_options=TINY,
                            config=_config(max_steps=11), progress=False)
    paths = checkpoint_paths(tmp_path)
    assert [p.name for p in paths] == ["step-0000005.pt", "step-0000010.pt", "step-0000011.pt"]
    assert not list(tmp_path.glob("**/*.tmp"))  # atomic writes leave no temporary files
    state = load_train_state(paths[-1])  # torch.load(weights_only=True)
    assert {"model", "optimizer", "scheduler", "rng", "step", "epoch", "position"} <= set(state)
    assert state["step"] == 11 and state["scheduler"]["last_epoch"] == 11
    assert isinstance(state["rng"]["torch"], torch.Tensor)
    assert state["losses"].tolist() == run.losses
    assert [h["step"] for h in state["callbacks"]["checkpoints"]["history"]] == [5, 10, 11]
    assert all(0 <= h["valid_exact"] <= 100 for h in state["callbacks"]["checkpoints"]["history"])
    assert (tmp_path / "tokenizer.json").is_file() and (tmp_path / "config.json").is_file()


def test_final_model_is_the_average_of_the_last_checkpoints(corpus, tmp_path):
    lines = []
    run = train_translation(corpus["train"], corpus["valid"], tmp_path, model_options=TINY,
                            config=_config(max_steps=15, save_every=3, average=2),
                            progress=False, log=lines.append)
    paths = checkpoint_paths(tmp_path)
    assert run.averaged == [12, 15] and len(paths) == 2
    assert lines[-1] == ("model.pt: the average of the checkpoints of steps 12, 15, the last "
                         "20% of the run (from step 12)")
    a, b = (load_train_state(p)["model"] for p in paths)
    averaged, _ = load_translator(tmp_path)
    assert not any(name.endswith(".pe") for name in a)  # the sinusoids are recomputed
    for name, tensor in averaged.state_dict().items():
        if name in a:
            assert torch.allclose(tensor, (a[name] + b[name]) / 2, atol=1e-7), name
    last, _ = load_translator(tmp_path, "last")
    assert torch.equal(last.state_dict()["generator.proj.weight"], b["generator.proj.weight"])


def test_average_of_one_checkpoint_is_itself(tmp_path):
    state = {"w": torch.randn(3, 3), "n": torch.tensor([4])}
    torch.save({"model": state}, tmp_path / "a.pt")
    averaged = average_checkpoints([tmp_path / "a.pt"])
    assert torch.equal(averaged["w"], state["w"]) and torch.equal(averaged["n"], state["n"])
    with pytest.raises(ValueError, match="at least one"):
        average_checkpoints([])


def test_time_limit_stops_with_a_checkpoint(corpus, tmp_path):
    run = train_translation(corpus["train"], corpus["valid"], tmp_path, model_options=TINY,
                            config=_config(max_steps=10_000, max_minutes=1e-4), progress=False)
    assert 1 <= run.step < 10_000
    assert load_train_state(checkpoint_paths(tmp_path)[-1])["step"] == run.step


def test_bad_input_is_refused_before_training(corpus, tmp_path):
    pairs = corpus["train"]
    with pytest.raises(ValueError, match="preset"):
        train_translation(pairs, pairs, tmp_path / "a", preset="tiny")
    with pytest.raises(ValueError, match="cannot resume"):
        train_translation(pairs, pairs, tmp_path / "b", resume=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="cannot create output folder"):
        train_translation(pairs, pairs, tmp_path / "file" / "run")
    with pytest.raises(ValueError, match="at least one pair"):
        train_translation([], pairs, tmp_path / "c")
    with pytest.raises(ValueError, match="max_minutes"):
        TranslationConfig(max_minutes=0)
    with pytest.raises(ValueError, match="not a trained model"):
        load_translator(tmp_path)


def test_a_checkpoint_between_saves_leaves_the_average_once_training_goes_on(corpus, tmp_path):
    calls = []

    def stop_at_step_7():
        calls.append(1)
        return len(calls) == 7

    first = train_translation(corpus["train"], corpus["valid"], tmp_path, model_options=TINY,
                              config=_config(max_steps=20), should_stop=stop_at_step_7,
                              progress=False)
    # step 5 is before the last fifth of the run: averaging it in would mix in a weaker model
    assert first.stopped == "interrupted" and first.step == 7 and first.averaged == [7]
    lines = []
    again = train_translation(corpus["train"], corpus["valid"], tmp_path, model_options=TINY,
                              config=_config(max_steps=20), resume=True, progress=False,
                              log=lines.append)
    assert again.averaged == [20]
    assert lines[-1] == ("model.pt: averaging skipped, the checkpoint of step 20 alone (step 15 "
                         "is before step 16, where the last 20% of the run starts)")
    assert [p.name for p in checkpoint_paths(tmp_path)] == [
        "step-0000010.pt", "step-0000015.pt", "step-0000020.pt"]


def _final_weights(folder):
    return load_train_state(checkpoint_paths(folder)[-1])["model"]


@pytest.mark.parametrize("max_len", [5000, 9])
def test_a_run_fed_a_file_equals_a_run_fed_its_pairs(corpus, tmp_path, max_len):
    from vanilla_transformer.data import write_tsv

    tsv = write_tsv(tmp_path / "train.tsv", corpus["train"])
    options = {**TINY, "max_len": max_len}  # 9 positions leave the longest pairs out
    pairs = train_translation(corpus["train"], corpus["valid"], tmp_path / "pairs",
                              model_options=options, config=_config(max_steps=16), progress=False)
    streamed = train_translation(tsv, corpus["valid"], tmp_path / "file", model_options=options,
                                 config=_config(max_steps=16), progress=False)
    assert (tmp_path / "file" / "ids" / "corpus.json").is_file()
    assert not (tmp_path / "pairs" / "ids").exists()
    assert streamed.tokenizer.tokenizer.to_str() == pairs.tokenizer.tokenizer.to_str()
    assert streamed.skipped == pairs.skipped
    assert (streamed.skipped > 0) == (max_len == 9)
    # the same batches in the same order (16 steps cross an epoch), so the same losses
    assert streamed.losses == pairs.losses
    expected = _final_weights(tmp_path / "pairs")
    for name, tensor in _final_weights(tmp_path / "file").items():
        assert torch.equal(tensor, expected[name]), name


def test_a_resumed_run_fed_a_file_is_exact_and_reuses_its_ids(corpus, tmp_path):
    from vanilla_transformer.data import write_tsv

    tsv = write_tsv(tmp_path / "train.tsv", corpus["train"])
    k = 12
    full = train_translation(tsv, corpus["valid"], tmp_path / "full", model_options=TINY,
                             config=_config(max_steps=2 * k), progress=False)
    first = train_translation(tsv, corpus["valid"], tmp_path / "split", model_options=TINY,
                              config=_config(max_steps=k), progress=False)
    assert first.step == k
    ids = tmp_path / "split" / "ids"
    written = {p.name: p.stat().st_mtime_ns for p in ids.iterdir()}
    torch.manual_seed(12345)
    resumed = train_translation(tsv, corpus["valid"], tmp_path / "split", model_options=TINY,
                                config=_config(max_steps=2 * k), resume=True, progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in ids.iterdir()} == written  # not re-tokenised
    assert resumed.step == full.step == 2 * k
    assert resumed.losses == full.losses
    expected = _final_weights(tmp_path / "full")
    for name, tensor in _final_weights(tmp_path / "split").items():
        assert torch.equal(tensor, expected[name]), name


def test_a_run_fed_a_file_checks_the_file_on_resume(corpus, tmp_path):
    from vanilla_transformer.data import write_tsv

    tsv = write_tsv(tmp_path / "train.tsv", corpus["train"])
    train_translation(tsv, corpus["valid"], tmp_path / "run", model_options=TINY,
                      config=_config(max_steps=5), progress=False)
    write_tsv(tsv, corpus["train"][:60])
    with pytest.raises(ValueError, match="pass new_data=True"):
        train_translation(tsv, corpus["valid"], tmp_path / "run", model_options=TINY,
                          config=_config(max_steps=8), resume=True, progress=False)
    run = train_translation(tsv, corpus["valid"], tmp_path / "run", model_options=TINY,
                            config=_config(max_steps=8), resume=True, new_data=True,
                            progress=False)
    assert run.step == 8
    assert json.loads((tmp_path / "run" / "ids" / "corpus.json").read_text())["pairs"] == 60


def test_a_missing_training_file_is_refused_before_anything_is_written(corpus, tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        train_translation(tmp_path / "absent.tsv", corpus["valid"], tmp_path / "run",
                          model_options=TINY, config=_config(), progress=False)
    assert not (tmp_path / "run").exists()


def test_each_validation_records_the_teacher_forced_loss_of_its_checkpoint(corpus, tmp_path):
    from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
    from vanilla_transformer.training.loss import teacher_forced_nll

    run = train_translation(corpus["train"], corpus["valid"], tmp_path, model_options=TINY,
                            config=_config(max_steps=10, average=1), progress=False)
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    checks = [m for m in lines if "valid_loss" in m]
    assert [m["step"] for m in checks] == [h["step"] for h in run.history] == [5, 10]
    # model.pt is the last checkpoint (average=1): score it again, a sentence at a time
    model, tokenizer = load_translator(tmp_path)
    ids = [(tokenizer.encode(s), tokenizer.encode(t)) for s, t in corpus["valid"][:4]]
    direct = teacher_forced_nll(model, ids, pad=PAD, bos=BOS, eos=EOS, batch_size=1)
    assert checks[-1]["valid_loss"] == pytest.approx(direct, abs=1e-5)
    assert checks[-1]["valid_ppl"] == pytest.approx(math.exp(direct), rel=1e-4)
    assert checks[0]["valid_loss"] != pytest.approx(direct)  # the steps' losses differ
    assert run.history[-1]["valid_loss"] == checks[-1]["valid_loss"]
