"""Tests of vanilla_transformer.training: schedule, label smoothing, loss, epochs, checkpoints."""

from __future__ import annotations

import copy
import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer import Batch, data_gen, make_model, pad_sequences
from vanilla_transformer.training import (
    LabelSmoothing,
    SimpleLossCompute,
    TrainState,
    load_checkpoint,
    rate,
    run_epoch,
    save_checkpoint,
)

V = 7


def tiny_model(seed: int = 0, vocab: int = V) -> nn.Module:
    torch.manual_seed(seed)
    return make_model(vocab, vocab, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)


# --------------------------------------------------------------------------- rate


@settings(max_examples=50, deadline=None)
@given(
    step=st.integers(1, 100_000),
    d_model=st.integers(1, 4096),
    factor=st.floats(0.01, 10.0),
    warmup=st.integers(1, 10_000),
)
def test_rate_matches_the_paper_formula(step, d_model, factor, warmup):
    expected = factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
    assert rate(step, d_model, factor, warmup) == pytest.approx(expected, rel=1e-12)


def test_rate_warms_up_linearly_peaks_at_warmup_then_decays():
    lrs = [rate(s, 512, 1.0, 400) for s in range(1, 2000)]
    peak = max(range(len(lrs)), key=lrs.__getitem__) + 1
    assert peak == 400
    assert lrs[399] == pytest.approx(1 / math.sqrt(512 * 400))
    assert all(a < b for a, b in zip(lrs[:399], lrs[1:400]))  # increasing
    assert all(a > b for a, b in zip(lrs[400:], lrs[401:]))  # decreasing
    assert lrs[9] == pytest.approx(10 * lrs[0])  # linear warm-up
    assert lrs[1599] == pytest.approx(lrs[399] / 2)  # inverse square root: 4x steps, half rate


def test_rate_step_zero_is_step_one_and_drives_lambdalr():
    assert rate(0, 64, 1.0, 10) == rate(1, 64, 1.0, 10)
    opt = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: rate(s, 64, 2.0, 10))
    seen = []
    for _ in range(30):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([rate(s, 64, 2.0, 10) for s in range(30)])


@pytest.mark.parametrize(
    "args, error, word",
    [
        ((-1, 512, 1.0, 4000), ValueError, "step"),
        ((1.5, 512, 1.0, 4000), TypeError, "step"),
        ((True, 512, 1.0, 4000), TypeError, "step"),
        ((1, 0, 1.0, 4000), ValueError, "model_size"),
        ((1, 512, 0.0, 4000), ValueError, "factor"),
        ((1, 512, float("nan"), 4000), ValueError, "factor"),
        ((1, 512, "1", 4000), TypeError, "factor"),
        ((1, 512, 1.0, 0), ValueError, "warmup"),
    ],
)
def test_rate_rejects_bad_arguments(args, error, word):
    with pytest.raises(error, match=word):
        rate(*args)


# --------------------------------------------------------------------------- label smoothing


def reference_smoothed_target(target, size, padding_idx, smoothing):
    rows = []
    for t in target.tolist():
        row = [0.0] * size
        if t != padding_idx:
            for c in range(size):
                if c not in (t, padding_idx):
                    row[c] = smoothing / (size - 2)
            row[t] = 1.0 - smoothing
        rows.append(row)
    return torch.tensor(rows)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.4])
@pytest.mark.parametrize("target", [[1, 2, 3, 4], [0, 2, 0, 5], [3, 0, 6, 1], [0, 0, 0, 0]])
def test_label_smoothing_target_distribution(smoothing, target):
    target = torch.tensor(target)
    crit = LabelSmoothing(V, padding_idx=0, smoothing=smoothing)
    x = torch.randn(len(target), V).log_softmax(-1)
    loss = crit(x, target)
    expected = reference_smoothed_target(target, V, 0, smoothing)
    torch.testing.assert_close(crit.true_dist, expected)
    sums = crit.true_dist.sum(-1)
    torch.testing.assert_close(sums, (target != 0).float())  # each real row is a distribution
    assert torch.all(crit.true_dist[:, 0] == 0)
    # the same number as PyTorch's KL divergence against that target
    torch.testing.assert_close(loss, nn.KLDivLoss(reduction="sum")(x, expected))


def test_label_smoothing_without_padding_rows_and_with_exactly_one():
    # the squeezed index of torch.nonzero(...) is 1-D, empty, or 0-D in these cases
    crit = LabelSmoothing(5, padding_idx=0, smoothing=0.3)
    x = torch.randn(3, 5).log_softmax(-1)
    crit(x, torch.tensor([1, 2, 3]))
    assert torch.all(crit.true_dist.sum(-1) > 0.999)
    crit(x, torch.tensor([1, 0, 3]))
    assert crit.true_dist[1].sum() == 0 and crit.true_dist[0].sum() > 0.999


def test_label_smoothing_with_zero_smoothing_is_nll_over_non_padding():
    target = torch.tensor([3, 0, 2, 6, 0])
    x = torch.randn(5, V).log_softmax(-1)
    loss = LabelSmoothing(V, padding_idx=0)(x, target)
    torch.testing.assert_close(loss, F.nll_loss(x, target, ignore_index=0, reduction="sum"))


def test_kldivloss_gives_nan_where_label_smoothing_gives_a_number():
    x = torch.tensor([[float("-inf"), 0.0, float("-inf")]])  # all mass on token 1
    crit = LabelSmoothing(3, padding_idx=0)
    loss = crit(x, torch.tensor([1]))
    assert loss.item() == 0.0
    assert torch.isnan(nn.KLDivLoss(reduction="sum")(x, crit.true_dist))


def test_label_smoothing_padding_rows_give_zero_not_nan():
    target = torch.tensor([0, 2, 0])
    x = torch.randn(3, V).log_softmax(-1)
    x[0] = float("-inf")  # a padding row the model gives no probability at all
    x[1, 0] = float("-inf")  # no probability on the padding class of a real row
    x.requires_grad_(True)
    crit = LabelSmoothing(V, padding_idx=0, smoothing=0.2)
    loss = crit(x, target)
    assert torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(x.grad).all()
    assert torch.all(x.grad[0] == 0) and torch.all(x.grad[2] == 0)
    # only row 1 counts
    finite = x.detach()[1:2].clone()
    finite[0, 0] = 0.0
    ref = crit.true_dist[1:2]
    expected = (torch.xlogy(ref, ref) - ref * finite).sum()
    torch.testing.assert_close(loss.detach(), expected)


def test_label_smoothing_all_padding_batch_has_zero_loss():
    crit = LabelSmoothing(V, padding_idx=0, smoothing=0.1)
    assert crit(torch.full((4, V), -50.0), torch.zeros(4, dtype=torch.long)).item() == 0.0


def test_label_smoothing_keeps_true_dist_detached_for_plotting():
    crit = LabelSmoothing(5, padding_idx=0, smoothing=0.4)
    assert crit.true_dist is None
    x = torch.randn(2, 5).log_softmax(-1).requires_grad_(True)
    crit(x, torch.tensor([2, 1]))
    assert crit.true_dist.shape == (2, 5) and not crit.true_dist.requires_grad


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        (dict(size=5, padding_idx=5), ValueError, "padding_idx"),
        (dict(size=5, padding_idx=-1), ValueError, "padding_idx"),
        (dict(size=5, padding_idx=0.0), TypeError, "padding_idx"),
        (dict(size=5, padding_idx=0, smoothing=1.0), ValueError, "smoothing"),
        (dict(size=5, padding_idx=0, smoothing=-0.1), ValueError, "smoothing"),
        (dict(size=2, padding_idx=0, smoothing=0.1), ValueError, "size - 2"),
        (dict(size=0, padding_idx=0), ValueError, "size"),
    ],
)
def test_label_smoothing_rejects_bad_arguments(kwargs, error, word):
    with pytest.raises(error, match=word):
        LabelSmoothing(**kwargs)


def test_label_smoothing_rejects_bad_inputs():
    crit = LabelSmoothing(5, padding_idx=0, smoothing=0.1)
    with pytest.raises(ValueError, match=r"\(rows, 5\)"):
        crit(torch.zeros(3, 4), torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="target"):
        crit(torch.zeros(3, 5), torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        crit(torch.zeros(2, 5), torch.tensor([1, 5]))
    with pytest.raises(TypeError, match="integer"):
        crit(torch.zeros(2, 5), torch.tensor([1.0, 2.0]))


def test_label_smoothing_size_two_without_smoothing_is_allowed():
    loss = LabelSmoothing(2, padding_idx=0)(torch.tensor([[-1.0, -0.5]]), torch.tensor([1]))
    assert loss.item() == pytest.approx(0.5)


# --------------------------------------------------------------------------- SimpleLossCompute


def test_simple_loss_compute_returns_sum_and_normalised_node():
    gen = nn.Sequential(nn.Linear(8, V), nn.LogSoftmax(-1))
    crit = LabelSmoothing(V, padding_idx=0, smoothing=0.1)
    x = torch.randn(2, 3, 8)
    y = torch.tensor([[1, 2, 0], [3, 4, 5]])
    loss_sum, loss_node = SimpleLossCompute(gen, crit)(x, y, 5)
    expected = crit(gen(x).view(-1, V), y.view(-1))
    torch.testing.assert_close(loss_sum, expected.detach())
    torch.testing.assert_close(loss_node, expected / 5)
    assert not loss_sum.requires_grad and loss_node.requires_grad
    with pytest.raises(ValueError, match="norm"):
        SimpleLossCompute(gen, crit)(x, y, 0)


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
    return loss, state, [b - p.detach() for b, p in zip(before, model.parameters())]


@pytest.mark.parametrize("batches", [padded_batches(), list(data_gen(V, 4, 3, seq_len=6, seed=1))],
                         ids=["unequal-token-counts", "equal-token-counts"])
def test_gradient_accumulation_equals_one_combined_batch(batches):
    model = tiny_model()
    twin = copy.deepcopy(model)
    loss_acc, state, grads_acc = one_sgd_update(model, batches, accum_iter=len(batches))
    loss_one, _, grads_one = one_sgd_update(twin, [combine(batches)], accum_iter=1)
    assert state.accum_step == 1 and state.step == len(batches)
    assert loss_acc == pytest.approx(loss_one, rel=1e-5)
    for g_acc, g_one in zip(grads_acc, grads_one):
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
    for g, p in zip(grads, twin.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-6)


def test_train_state_counts_and_last_partial_window_is_stepped():
    model = tiny_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: rate(s, 16, 1.0, 5))
    seen = []
    loss, state = run_epoch(data_gen(V, 2, 7, seq_len=5, seed=0), model, make_compute(model), opt,
                            sched, accum_iter=3, progress=False,
                            on_step=lambda st, l: seen.append((st.accum_step, l)))
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
              progress=False, on_step=lambda s, l: losses.append(l))
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


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_round_trip_gives_the_same_outputs(tmp_path):
    model = tiny_model(seed=3).eval()
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, steps=5, note="hello")
    again, meta = load_checkpoint(path)
    assert meta == {"steps": 5, "note": "hello"}
    assert not again.training and again.config == model.config
    b = next(data_gen(V, 3, 1, seq_len=5, seed=0))
    with torch.no_grad():
        torch.testing.assert_close(again(b.src, b.tgt, b.src_mask, b.tgt_mask),
                                   model(b.src, b.tgt, b.src_mask, b.tgt_mask), rtol=0, atol=0)


def test_checkpoint_errors(tmp_path):
    bare = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="config"):
        save_checkpoint(tmp_path / "x.pt", bare)
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
