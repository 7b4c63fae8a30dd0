"""The loop's callbacks, each on its own: fit's stop, the metrics log, the stop, the validator,
the checkpoint keeper and early stopping."""

from __future__ import annotations

import json
import math

import pytest
import torch

from vanilla_transformer import data_gen, make_model
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, train_tokenizer
from vanilla_transformer.training import LabelSmoothing, SimpleLossCompute
from vanilla_transformer.training.callbacks import (
    CheckpointKeeper,
    EarlyStopping,
    MetricsLog,
    Policy,
    ProgressBar,
    StopWhen,
)
from vanilla_transformer.training.checkpoints import (
    TrainCheckpoint,
    checkpoint_paths,
    load_train_state,
)
from vanilla_transformer.training.fit_loop import FitProgress, check_order, fit
from vanilla_transformer.training.loss import teacher_forced_nll
from vanilla_transformer.training.ranks import Ranks
from vanilla_transformer.training.run_folder import RunFolder
from vanilla_transformer.training.validation import Validator, best_entry


def _tiny(vocab=5):
    torch.manual_seed(0)
    model = make_model(vocab, vocab, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


class _StopAt:
    def __init__(self, step):
        self.step, self.ends = step, 0

    def on_step(self, progress):
        if progress.step == self.step:
            progress.stop = "asked"

    def on_end(self, progress):
        self.ends += 1


def test_fit_draws_no_batch_after_a_stop_and_ends_every_callback():
    model, optimizer = _tiny()
    drawn = []
    batches = (drawn.append(b) or b for b in data_gen(5, 2, 20, seq_len=4, seed=0))
    stop = _StopAt(3)
    done = fit(batches, model, SimpleLossCompute(model.generator, LabelSmoothing(5, 0)),
               optimizer, callbacks=[stop], accum_iter=2)
    assert (done.step, done.stop, len(done.losses), stop.ends) == (3, "asked", 3, 1)
    assert len(drawn) == 6  # three windows of two: the seventh batch was never drawn


def test_the_metrics_log_writes_every_few_steps(tmp_path):
    _, optimizer = _tiny()
    log = MetricsLog(tmp_path, Ranks(), optimizer, every=2, resumed_at=None, tensorboard=False)
    progress = FitProgress()
    for step in range(1, 6):
        progress.step, progress.losses = step, [*progress.losses, float(step)]
        progress.counts.tokens = 10 * step
        log.on_step(progress)
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [2, 4]
    assert [line["loss"] for line in lines] == [1.5, 3.5]  # the mean since the last line


def test_stop_when_asked_or_late():
    progress = FitProgress(step=1)
    StopWhen(Ranks(), None, lambda: True, print).on_step(progress)
    assert progress.stop == "interrupted"
    lines = []
    progress = FitProgress(step=1)
    StopWhen(Ranks(), 0.0, lambda: False, lines.append).on_step(progress)
    assert progress.stop == "time" and "at step 1" in lines[0]


def test_the_validator_decodes_where_the_model_is():
    pairs = [("one", "eins"), ("two", "zwei")]
    tokenizer = train_tokenizer([s for p in pairs for s in p], vocab_size=30)
    model, _ = _tiny(tokenizer.vocab_size)

    def refuse(*args, **kwargs):
        raise AssertionError("the model was moved")

    model.to = model.cpu = model.cuda = refuse
    scores = Validator(model, tokenizer, pairs).scores()
    assert set(scores) == {"valid_loss", "valid_ppl", "valid_exact", "valid_bleu", "valid_chrf"}
    assert scores["valid_ppl"] == pytest.approx(math.exp(scores["valid_loss"]), rel=1e-4)
    ids = [(tokenizer.encode(s), tokenizer.encode(t)) for s, t in pairs]
    direct = teacher_forced_nll(model, ids, pad=PAD, bos=BOS, eos=EOS, batch_size=1)
    assert scores["valid_loss"] == pytest.approx(direct, abs=1e-6)
    assert model.training  # back to training mode after decoding
    assert Validator(model, tokenizer, []).scores() == {}


def _keeper(tmp_path, model, optimizer, listeners=(), **kwargs):
    (tmp_path / "checkpoints").mkdir(exist_ok=True)
    metrics = MetricsLog(tmp_path, Ranks(), optimizer, every=100, resumed_at=None,
                         tensorboard=False)
    policy = Policy(**{**dict(save_every=2, max_steps=6, average=2, keep_best=None), **kwargs})
    listeners = [metrics, *listeners]

    def snapshot(progress, rng):
        return TrainCheckpoint(
            step=progress.step, seconds=progress.seconds,
            losses=torch.tensor(progress.losses, dtype=torch.float64),
            config=model.config.to_dict(), model=model.state_dict(),
            optimizer={"state": {}, "param_groups": []}, scheduler={}, epoch=0, position=0,
            rng=rng, callbacks={c.state_key: c.state_dict() for c in [keeper, *listeners]})

    keeper = CheckpointKeeper(RunFolder(tmp_path), model, Ranks(), policy,
                              Validator(model, None, []), listeners, snapshot,
                              lambda line: None)
    return keeper


def test_the_checkpoint_keeper_keeps_the_last_saves_and_drops_a_stop_between_them(tmp_path):
    model, optimizer = _tiny()
    keeper = _keeper(tmp_path, model, optimizer)
    for step, stop in ((1, ""), (2, ""), (3, "interrupted"), (4, ""), (5, ""), (6, "")):
        progress = FitProgress(step=step, losses=[1.0] * step, stop=stop)
        assert keeper.due(progress) == (step % 2 == 0 or step == 6 or bool(stop))
        keeper.on_step(progress)
    assert [p.name for p in checkpoint_paths(tmp_path)] == ["step-0000004.pt", "step-0000006.pt"]
    state = load_train_state(checkpoint_paths(tmp_path)[-1])
    history = state["callbacks"]["checkpoints"]["history"]
    assert state["step"] == 6 and [h["step"] for h in history] == [2, 3, 4, 6]


def _validate(callback, step, **scores):
    entry = {"step": step, **scores}
    callback.on_validation(FitProgress(step=step), entry)
    return entry


@pytest.mark.parametrize("scores, patience, stops_at", [
    ([50, 80, 60, 70], 2, 8), ([50, 80, 60, 90], 2, None), ([50, 80, 60, 70], None, None)])
def test_early_stopping_after_patience_validations_without_a_better_score(scores, patience,
                                                                          stops_at):
    stopping = EarlyStopping(Ranks(), metric="exact", patience=patience, save_every=2,
                             log=lambda line: None)
    stopped = None
    for i, score in enumerate(scores, 1):
        _validate(stopping, 2 * i, valid_exact=score)
        progress = FitProgress(step=2 * i)
        stopping.on_step(progress)
        if progress.stop and stopped is None:
            stopped = progress.step
    assert stopped == stops_at


def test_early_stopping_and_the_best_entry_follow_the_lowest_loss():
    history = []
    stopping = EarlyStopping(Ranks(), metric="loss", patience=2, save_every=2,
                             log=lambda line: None)
    stopped = []
    for i, loss in enumerate([3.0, 2.0, 2.5, 2.0, 2.2], 1):  # a tie is not better
        history.append(_validate(stopping, 2 * i, valid_loss=loss, valid_exact=10.0 * i))
        progress = FitProgress(step=2 * i)
        stopping.on_step(progress)
        stopped.append(progress.stop)
    assert stopped == ["", "", "", "patience", "patience"]
    assert best_entry(history, "valid_loss")["step"] == 4
    assert best_entry(history, "valid_exact")["step"] == 10


def test_early_stopping_resumed_from_its_state_decides_as_the_uninterrupted_one():
    def stopping():
        return EarlyStopping(Ranks(), metric="loss", patience=2, save_every=2,
                             log=lambda line: None)

    whole, first = stopping(), stopping()
    for step, loss in ((2, 3.0), (4, 2.0), (6, 2.5)):
        _validate(whole, step, valid_loss=loss)
        _validate(first, step, valid_loss=loss)
    resumed = stopping()
    resumed.load_state_dict(first.state_dict())
    assert resumed.state_dict() == whole.state_dict() == {"best": 2.0, "best_step": 4,
                                                          "since": 1}
    for callback in (whole, resumed):
        _validate(callback, 8, valid_loss=2.1)
        progress = FitProgress(step=8)
        callback.on_step(progress)
        assert progress.stop == "patience"


def test_the_keeper_keeps_the_checkpoint_of_the_lowest_validation_loss(tmp_path):
    from vanilla_transformer.training.checkpoints import load_checkpoint

    model, optimizer = _tiny()
    keeper = _keeper(tmp_path, model, optimizer, keep_best="loss")
    scores = dict(valid_exact=0.0, valid_bleu=0.0, valid_chrf=0.0)
    losses = iter([dict(scores, valid_loss=x, valid_ppl=math.exp(x)) for x in (2.0, 1.0, 1.5)])
    keeper.validator.scores = lambda: next(losses)
    for step in (2, 4, 6):
        keeper.on_step(FitProgress(step=step, losses=[1.0] * step))
    _, meta = load_checkpoint(tmp_path / "checkpoints" / "best.pt")
    assert meta["steps"] == 4 and meta["score"] == {"loss": 1.0}
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["valid_loss"] for m in lines] == [2.0, 1.0, 1.5]
    assert {"valid_ppl", "valid_exact", "valid_bleu", "valid_chrf"} <= set(lines[0])


def test_the_keeper_tells_its_listeners_each_validation_before_it_saves(tmp_path):
    model, optimizer = _tiny()
    stopping = EarlyStopping(Ranks(), metric="loss", patience=1, save_every=2,
                             log=lambda line: None)
    keeper = _keeper(tmp_path, model, optimizer, [stopping])
    losses = iter([dict(valid_loss=x, valid_ppl=math.exp(x), valid_exact=0.0, valid_bleu=0.0,
                        valid_chrf=0.0) for x in (2.0, 1.0)])
    keeper.validator.scores = lambda: next(losses)
    for step in (2, 4):
        keeper.on_step(FitProgress(step=step, losses=[1.0] * step))
    saved = load_train_state(checkpoint_paths(tmp_path)[-1])["callbacks"]
    # the checkpoint of step 4 holds the state after its own validation
    assert saved["early_stopping"] == {"best": 1.0, "best_step": 4, "since": 0}
    assert saved["metrics"]["validation"]["step"] == 4
    assert [h["step"] for h in saved["checkpoints"]["history"]] == [2, 4]


def test_a_missing_validation_line_is_written_again_on_resume(tmp_path):
    # a run killed between its checkpoint and the validation's line in metrics.jsonl
    _, optimizer = _tiny()
    (tmp_path / "metrics.jsonl").write_text('{"step": 4, "loss": 1.5}\n')
    log = MetricsLog(tmp_path, Ranks(), optimizer, every=4, resumed_at=4, tensorboard=False)
    validation = {"step": 4, "loss": 1.5, "valid_loss": 2.0}
    log.load_state_dict({"losses": [], "validation": validation})
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert lines == [{"step": 4, "loss": 1.5}, validation]
    log.load_state_dict({"losses": [], "validation": validation})  # present: not twice
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 2


def test_the_order_of_callbacks_is_stated_and_checked(tmp_path):
    model, optimizer = _tiny()
    keeper = _keeper(tmp_path, model, optimizer)
    stop = StopWhen(Ranks(), None, None, print)
    stopping = EarlyStopping(Ranks(), metric="loss", patience=1, save_every=2, log=print)
    check_order([keeper.listeners[0], stop, keeper, stopping])
    for wrong, message in (([keeper, stop], "CheckpointKeeper must come after StopWhen"),
                           ([stopping, keeper], "EarlyStopping must come after Checkpoint"),
                           ([keeper, keeper.listeners[0]], "after MetricsLog")):
        with pytest.raises(ValueError, match=message):
            check_order(wrong)
        with pytest.raises(ValueError, match=message):
            fit(data_gen(5, 2, 2, seq_len=4, seed=0), model,
                SimpleLossCompute(model.generator, LabelSmoothing(5, 0)), optimizer,
                callbacks=wrong)
    assert ProgressBar.__name__ in CheckpointKeeper.after
