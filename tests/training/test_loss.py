"""Label smoothing, its fused form and SimpleLossCompute, against PyTorch's cross-entropy and
KL divergence."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer.training import (
    LabelSmoothing,
    SimpleLossCompute,
    label_smoothed_kl,
)

V = 7


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


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothing_is_pytorchs_cross_entropy_up_to_a_constant(smoothing):
    # F.cross_entropy(label_smoothing=e) spreads e / C over all C classes, the correct one
    # included; LabelSmoothing spreads its e over the C - 1 others and none on padding. Over the
    # C = V - 1 classes that are not padding, with e = smoothing * C / (C - 1), the targets
    # agree. The KL divergence adds the target's entropy, a constant, so differences between two
    # inputs agree exactly.
    c = V - 1
    crit = LabelSmoothing(V, padding_idx=0, smoothing=smoothing)
    target = torch.tensor([3, 0, 2, 6, 0, 1])  # two padding rows

    def both(logits):
        x = torch.cat([torch.full((len(target), 1), float("-inf")), logits.log_softmax(-1)], 1)
        ours = crit(x, target)
        torch_ce = F.cross_entropy(logits, target - 1, ignore_index=-1, reduction="sum",
                                   label_smoothing=smoothing * c / (c - 1))
        return ours, torch_ce

    ours_a, torch_a = both(torch.randn(len(target), c))
    ours_b, torch_b = both(3 * torch.randn(len(target), c))
    torch.testing.assert_close(ours_a - ours_b, torch_a - torch_b)


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




def test_probabilities_instead_of_log_probabilities_are_refused():
    crit = LabelSmoothing(5, padding_idx=0, smoothing=0.1)
    probs = torch.softmax(torch.randn(3, 5), dim=-1)
    with pytest.raises(ValueError, match=r"log-probabilities .*did you pass probabilities"):
        crit(probs, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"target ids must lie in .* found id 5"):
        crit(probs.log(), torch.tensor([1, 2, 5]))
    assert crit(probs.log(), torch.tensor([1, 2, 3])) >= 0


# --------------------------------------------------------------------------- label_smoothed_kl


@st.composite
def loss_inputs(draw):
    size = draw(st.integers(3, 40))
    rows = draw(st.integers(0, 30))
    padding_idx = draw(st.integers(0, size - 1))
    smoothing = draw(st.sampled_from([0.0, 0.1, 0.25, 0.6, 0.95]))
    seed = draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)
    x = (3 * torch.randn(rows, size, generator=generator, dtype=torch.float64)).log_softmax(-1)
    target = torch.randint(0, size, (rows,), generator=generator)
    target[torch.rand(rows, generator=generator) < 0.3] = padding_idx
    return x, target, padding_idx, smoothing


@settings(max_examples=60, deadline=None)
@given(loss_inputs())
def test_label_smoothed_kl_equals_label_smoothing_value_and_gradient(inputs):
    x, target, padding_idx, smoothing = inputs
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):
        a = x.to(dtype).clone().requires_grad_(True)
        b = x.to(dtype).clone().requires_grad_(True)
        expected = LabelSmoothing(x.size(1), padding_idx, smoothing)(a, target)
        fused = label_smoothed_kl(b, target, padding_idx, smoothing)
        torch.testing.assert_close(fused, expected, rtol=tol, atol=tol)
        expected.backward()
        fused.backward()
        assert a.grad is not None and b.grad is not None
        torch.testing.assert_close(b.grad, a.grad, rtol=0, atol=0)  # both are exactly -t


@pytest.mark.parametrize("padding_idx", [0, 3, V - 1])
def test_label_smoothed_kl_ignores_padding_rows_and_the_padding_column(padding_idx):
    target = torch.tensor([padding_idx, 2 if padding_idx != 2 else 1, padding_idx])
    x = torch.randn(3, V).log_softmax(-1)
    x[0] = float("-inf")  # a padding row the model gives no probability at all
    x[1, padding_idx] = float("-inf")  # no probability on the padding class of a real row
    x.requires_grad_(True)
    loss = label_smoothed_kl(x, target, padding_idx, 0.2)
    assert torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(x.grad).all()
    assert torch.all(x.grad[0] == 0) and torch.all(x.grad[2] == 0)
    assert torch.all(x.grad[:, padding_idx] == 0)
    torch.testing.assert_close(loss, LabelSmoothing(V, padding_idx, 0.2)(x.detach(), target))
    # only the real row counts: the loss equals that row's alone
    torch.testing.assert_close(loss, label_smoothed_kl(x[1:2].detach(), target[1:2], padding_idx,
                                                       0.2))


def test_label_smoothed_kl_of_an_all_padding_or_empty_batch_is_zero():
    assert label_smoothed_kl(torch.full((4, V), -50.0), torch.zeros(4, dtype=torch.long), 0,
                             0.1).item() == 0.0
    empty = torch.zeros(0, V, requires_grad=True)
    loss = label_smoothed_kl(empty, torch.zeros(0, dtype=torch.long), 0, 0.1)
    loss.backward()
    assert loss.item() == 0.0 and empty.grad.shape == (0, V)


def test_label_smoothed_kl_of_a_label_ruled_out_is_infinite_like_label_smoothing():
    x = torch.tensor([[0.0, float("-inf"), -1.0, -2.0]]).log_softmax(-1)
    for smoothing in (0.0, 0.1, 0.9):
        expected = LabelSmoothing(4, 0, smoothing)(x, torch.tensor([1]))
        assert label_smoothed_kl(x, torch.tensor([1]), 0, smoothing) == expected == float("inf")


def test_label_smoothed_kl_with_zero_smoothing_is_nll_summed():
    target = torch.tensor([3, 0, 2, 6, 0])
    x = torch.randn(5, V).log_softmax(-1)
    x[:, 4] = float("-inf")  # ruled out classes that are not labels cost nothing without smoothing
    torch.testing.assert_close(label_smoothed_kl(x, target, 0, 0.0),
                               F.nll_loss(x, target, ignore_index=0, reduction="sum"))


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothed_kl_is_cross_entropy_plus_the_targets_entropy(smoothing):
    # Over the C = V - 1 classes that are not padding, F.cross_entropy's label_smoothing e puts
    # 1 - e + e / C on the label and e / C elsewhere; with e = smoothing * C / (C - 1) that is
    # 1 - smoothing and smoothing / (C - 1) = smoothing / (V - 2), the same target. The KL
    # divergence adds sum(t log t) once per row that is not padding.
    c = V - 1
    target = torch.tensor([3, 0, 2, 6, 0, 1])  # two padding rows
    logits = torch.randn(len(target), c, dtype=torch.float64)
    x = torch.cat([torch.full((len(target), 1), float("-inf"), dtype=torch.float64),
                   logits.log_softmax(-1)], 1)
    ce = F.cross_entropy(logits, target - 1, ignore_index=-1, reduction="sum",
                         label_smoothing=smoothing * c / (c - 1))
    spread = smoothing / (c - 1)
    entropy_term = torch.xlogy(torch.tensor(1 - smoothing), torch.tensor(1 - smoothing)) + (
        (c - 1) * torch.xlogy(torch.tensor(spread), torch.tensor(spread)))
    n_real = int((target != 0).sum())
    torch.testing.assert_close(label_smoothed_kl(x, target, 0, smoothing),
                               ce + n_real * entropy_term.double())


def test_label_smoothed_kl_of_half_precision_sums_in_float32():
    x = torch.randn(8, 3000).log_softmax(-1)
    target = torch.randint(1, 3000, (8,))
    loss = label_smoothed_kl(x.half(), target, 0, 0.1)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    torch.testing.assert_close(loss, label_smoothed_kl(x, target, 0, 0.1), rtol=1e-2, atol=0)
    xh = x.half().requires_grad_(True)
    label_smoothed_kl(xh, target, 0, 0.1).backward()
    assert xh.grad.dtype == torch.float16


def test_label_smoothed_kl_accepts_int32_targets():
    x = torch.randn(3, V).log_softmax(-1)
    target = torch.tensor([1, 0, 4])
    assert label_smoothed_kl(x, target.int(), 0, 0.1) == label_smoothed_kl(x, target, 0, 0.1)


@pytest.mark.parametrize(
    "args, error, word",
    [
        ((torch.zeros(3, 5), torch.tensor([1, 2, 3]), 5, 0.1), ValueError, r"padding_idx .*\[0, 5\)"),
        ((torch.zeros(3, 5), torch.tensor([1, 2, 3]), -1, 0.1), ValueError, "padding_idx"),
        ((torch.zeros(3, 5), torch.tensor([1, 2, 3]), 0.0, 0.1), TypeError, "padding_idx"),
        ((torch.zeros(3, 5), torch.tensor([1, 2, 3]), 0, 1.0), ValueError, "smoothing"),
        ((torch.zeros(3, 5), torch.tensor([1, 2, 3]), 0, -0.1), ValueError, "smoothing"),
        ((torch.zeros(3, 5), torch.tensor([1, 2, 3]), 0, "0.1"), TypeError, "smoothing"),
        ((torch.zeros(3, 2), torch.tensor([1, 1, 1]), 0, 0.1), ValueError, "V - 2"),
        ((torch.zeros(3, 5, 1), torch.tensor([1, 2, 3]), 0, 0.1), ValueError, r"\(rows, V\)"),
        ((torch.zeros(3, 5), torch.tensor([1, 2]), 0, 0.1), ValueError, r"target .*\(3,\)"),
        ((torch.zeros(3, 5), torch.tensor([[1, 2, 3]]), 0, 0.1), ValueError, "target"),
        ((torch.zeros(3, 5), torch.tensor([1.0, 2.0, 3.0]), 0, 0.1), TypeError, "integer"),
        ((torch.zeros(3, 5, dtype=torch.long), torch.tensor([1, 2, 3]), 0, 0.1), TypeError,
         "floating-point"),
        ((torch.zeros(3, 5), [1, 2, 3], 0, 0.1), TypeError, "target must be a torch.Tensor"),
        ((torch.zeros(3, 5), torch.tensor([1, 2, 5]), 0, 0.1), ValueError, "found id 5"),
        ((torch.zeros(3, 5), torch.tensor([1, -2, 3]), 0, 0.1), ValueError, "found id -2"),
    ],
)
def test_label_smoothed_kl_rejects_bad_inputs(args, error, word):
    with pytest.raises(error, match=word):
        label_smoothed_kl(*args)


def test_label_smoothed_kl_in_simple_loss_compute():
    gen = nn.Sequential(nn.Linear(8, V), nn.LogSoftmax(-1))
    x = torch.randn(2, 3, 8)
    y = torch.tensor([[1, 2, 0], [3, 4, 5]])
    fused = SimpleLossCompute(gen, functools.partial(label_smoothed_kl, padding_idx=0,
                                                     smoothing=0.1))(x, y, 5)
    classic = SimpleLossCompute(gen, LabelSmoothing(V, padding_idx=0, smoothing=0.1))(x, y, 5)
    torch.testing.assert_close(fused, classic)


def test_teacher_forced_nll_is_pytorchs_cross_entropy_sentence_by_sentence():
    from vanilla_transformer import make_model
    from vanilla_transformer.training.loss import teacher_forced_nll

    torch.manual_seed(0)
    model = make_model(9, 9, N=1, d_model=16, d_ff=32, h=2, dropout=0.3)  # dropout: eval
    pairs = [([3, 4, 5], [6]), ([4], [7, 8, 3, 3]), ([5, 6], [4, 4]), ([8], [3])]
    pad, bos, eos = 0, 1, 2
    total, tokens = 0.0, 0
    model.eval()
    with torch.no_grad():
        for src, tgt in pairs:  # one unpadded sentence at a time: no masking to get wrong
            s, t = torch.tensor([src + [eos]]), torch.tensor([[bos] + tgt])
            y = torch.tensor(tgt + [eos])
            logits = model.generator.proj(model(s, t, None, _causal_mask(t.size(1))))
            total += float(F.cross_entropy(logits[0], y, reduction="sum"))
            tokens += len(y)
    model.train()
    nll = teacher_forced_nll(model, pairs, pad=pad, bos=bos, eos=eos, batch_size=3)
    assert nll == pytest.approx(total / tokens, rel=1e-5)
    assert model.training  # its mode is restored
    assert teacher_forced_nll(model, pairs[:1], pad=pad, bos=bos, eos=eos) != pytest.approx(nll)


def _causal_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))
