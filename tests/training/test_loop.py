"""run_epoch: gradient accumulation equals one combined batch; counts, modes and errors."""

from __future__ import annotations

import copy
import inspect

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from vanilla_transformer import Batch, data_gen, make_model, pad_sequences
from vanilla_transformer.training import (
    LabelSmoothing,
    SimpleLossCompute,
    TrainState,
    rate,
    run_epoch,
)

V = 7


def tiny_model(seed: int = 0, vocab: int = V) -> nn.Module:
    torch.manual_seed(seed)
    return make_model(vocab, vocab, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)


# --------------------------------------------------------------------------- run_epoch


def make_compute(model, smoothing=0.0):
    return SimpleLossCompute(model.generator, LabelSmoothing(V, padding_idx=0, smoothing=smoothing))


def padded_batches(seed: int = 0) -> list[Batch]:
    """Three batches with different numbers of target tokens (right padding)."""
    g = torch.Generator().manual_seed(seed)
    batches = []
    for lengths in ([6, 4, 5], [3, 6], [6, 6, 2, 5]):
        seqs = [[1] + torch.randint(1, V, (n - 1,), generator=g).tolist() for n in lengths]
        ids = pad_sequences(seqs, pad=0)
        batches.append(Batch(ids, ids.clone(), pad=0))
    return batches


def combine(batches: list[Batch]) -> Batch:
    width = max(b.src.size(1) for b in batches)
    ids = torch.cat([F.pad(b.src, (0, width - b.src.size(1))) for b in batches])
    return Batch(ids, ids.clone(), pad=0)


def one_sgd_update(model, batches, accum_iter):
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    before = [p.detach().clone() for p in model.parameters()]
    loss, state = run_epoch(batches, model, make_compute(model, 0.1), opt, accum_iter=accum_iter,
                            progress=False)
    return loss, state, [b - p.detach() for b, p in zip(before, model.parameters(), strict=False)]


@pytest.mark.parametrize("batches", [padded_batches(), list(data_gen(V, 4, 3, seq_len=6, seed=1))],
                         ids=["unequal-token-counts", "equal-token-counts"])
def test_gradient_accumulation_equals_one_combined_batch(batches):
    model = tiny_model()
    twin = copy.deepcopy(model)
    loss_acc, state, grads_acc = one_sgd_update(model, batches, accum_iter=len(batches))
    loss_one, _, grads_one = one_sgd_update(twin, [combine(batches)], accum_iter=1)
    assert state.accum_step == 1 and state.step == len(batches)
    assert loss_acc == pytest.approx(loss_one, rel=1e-5)
    for g_acc, g_one in zip(grads_acc, grads_one, strict=False):
        torch.testing.assert_close(g_acc, g_one, rtol=1e-4, atol=1e-6)


def test_equal_token_batches_are_scaled_by_one_over_accum_iter():
    batches = list(data_gen(V, 3, 2, seq_len=5, seed=2))
    model = tiny_model()
    twin = copy.deepcopy(model)
    _, _, grads = one_sgd_update(model, batches, accum_iter=2)
    compute = make_compute(twin, 0.1)
    for b in batches:
        _, node = compute(twin(b.src, b.tgt, b.src_mask, b.tgt_mask), b.tgt_y, b.ntokens)
        (node / 2).backward()
    for g, p in zip(grads, twin.parameters(), strict=False):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-6)


def test_train_state_counts_and_last_partial_window_is_stepped():
    model = tiny_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: rate(s, 16, 1.0, 5))
    seen = []
    loss, state = run_epoch(data_gen(V, 2, 7, seq_len=5, seed=0), model, make_compute(model), opt,
                            sched, accum_iter=3, progress=False,
                            on_step=lambda st, loss: seen.append((st.accum_step, loss)))
    assert state == TrainState(step=7, accum_step=3, samples=14, tokens=7 * 2 * 4)
    assert sched.last_epoch == 3  # the scheduler steps once per optimizer step
    assert [s for s, _ in seen] == [1, 2, 3]
    assert all(p.grad is None for p in model.parameters())  # nothing left over
    assert isinstance(loss, float) and loss > 0
    # a second epoch continues the counts it is given
    _, again = run_epoch(data_gen(V, 2, 2, seq_len=5, seed=1), model, make_compute(model), opt,
                         accum_iter=1, train_state=state, progress=False)
    assert again is state and state.step == 9 and state.accum_step == 5


def test_no_mutable_defaults_and_fresh_state_per_call():
    for name, param in inspect.signature(run_epoch).parameters.items():
        assert not isinstance(param.default, (list, dict, set, TrainState)), name
    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    _, first = run_epoch(data_gen(V, 2, 2, seq_len=4, seed=0), model, make_compute(model), opt,
                         progress=False)
    _, second = run_epoch(data_gen(V, 2, 3, seq_len=4, seed=0), model, make_compute(model), opt,
                          progress=False)
    assert first is not second and first.step == 2 and second.step == 3


def test_eval_mode_updates_nothing_and_returns_mean_loss_per_token():
    model = tiny_model().eval()
    batches = padded_batches()
    before = copy.deepcopy(model.state_dict())
    loss, state = run_epoch(batches, model, make_compute(model, 0.1), mode="eval", progress=False)
    assert state == TrainState()
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
    compute = make_compute(model, 0.1)
    with torch.no_grad():
        total = sum(float(compute(model(b.src, b.tgt, b.src_mask, b.tgt_mask), b.tgt_y, 1)[0])
                    for b in batches)
    assert loss == pytest.approx(total / sum(int(b.ntokens) for b in batches), rel=1e-5)


def test_training_reduces_the_loss():
    model = tiny_model()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    run_epoch(data_gen(V, 16, 40, seq_len=5, seed=0), model, make_compute(model), opt,
              progress=False, on_step=lambda s, loss: losses.append(loss))
    assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5


def test_progress_bar_can_be_switched_off(capsys):
    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    run_epoch(data_gen(V, 2, 3, seq_len=4, seed=0), model, make_compute(model), opt, progress=False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    run_epoch(data_gen(V, 2, 3, seq_len=4, seed=0), model, make_compute(model), opt, progress=True,
              total=3, desc="demo")
    assert "demo" in capsys.readouterr().err


def test_run_epoch_rejects_bad_arguments():
    model = tiny_model()
    compute = make_compute(model)
    data = list(data_gen(V, 2, 2, seq_len=4, seed=0))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(ValueError, match="optimizer"):
        run_epoch(data, model, compute, progress=False)
    with pytest.raises(ValueError, match="mode"):
        run_epoch(data, model, compute, opt, mode="training", progress=False)
    with pytest.raises(ValueError, match="accum_iter"):
        run_epoch(data, model, compute, opt, accum_iter=0, progress=False)
    with pytest.raises(ValueError, match="no batches"):
        run_epoch([], model, compute, opt, progress=False)




def test_a_nan_loss_stops_the_epoch_before_any_update():
    torch.manual_seed(0)
    model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    before = copy.deepcopy(model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    calls = []

    def nan_on_the_second_batch(out, y, norm):
        calls.append(1)
        loss = out.pow(2).sum() * (float("nan") if len(calls) == 2 else 0.0)
        return loss.detach(), loss / norm

    state = None
    with pytest.raises(ValueError, match=r"loss is nan at batch 2 .*training step 2, optimizer "
                                         r"step 1; no update was made"):
        _, state = run_epoch(data_gen(5, 2, 4, seq_len=4, seed=0), model,
                             nan_on_the_second_batch, optimizer, accum_iter=2, progress=False)
    assert state is None and len(calls) == 2
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_gradient_that_is_not_finite_stops_the_step_before_the_update():
    from vanilla_transformer.training.loop import TrainingDiverged

    torch.manual_seed(0)
    model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    before = copy.deepcopy(model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)

    def finite_loss_infinite_gradient(out, y, norm):
        loss = out.sum() * 0.0
        out.register_hook(lambda g: torch.full_like(g, float("inf")))
        return loss.detach(), loss / norm

    with pytest.raises(TrainingDiverged, match="a gradient is not finite at training step 1"
                       ) as caught:
        run_epoch(data_gen(5, 2, 2, seq_len=4, seed=0), model, finite_loss_infinite_gradient,
                  optimizer, progress=False)
    assert caught.value.reason == "a gradient is not finite"
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_grad_scaler_skips_an_overflowing_step_instead_of_stopping():
    torch.manual_seed(0)
    model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    before = copy.deepcopy(model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16)
    calls = []

    def overflow_first(out, y, norm):
        calls.append(1)
        loss = out.pow(2).sum()
        if len(calls) == 1:
            out.register_hook(lambda g: torch.full_like(g, float("inf")))
        return loss.detach(), loss / norm

    _, state = run_epoch(data_gen(5, 2, 2, seq_len=4, seed=0), model, overflow_first,
                         optimizer, scheduler, scaler=scaler, progress=False)
    assert state.accum_step == 2 and scheduler.last_epoch == 1  # one step skipped, one made
    assert scaler.get_scale() < 2.0 ** 16  # the scaler backed off
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
