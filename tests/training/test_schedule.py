"""The learning-rate schedule of section 5.3, checked against PyTorch's own schedulers and Adam."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer.training import make_optimizer, rate


@settings(max_examples=30, deadline=None)
@given(d_model=st.integers(1, 4096), factor=st.floats(0.01, 10.0), warmup=st.integers(2, 300))
def test_warmup_is_pytorchs_linear_warmup_to_the_peak(d_model, factor, warmup):
    # torch's LinearLR from 1/warmup to 1 over warmup - 1 steps, scaled to the peak at `warmup`
    peak = rate(warmup, d_model, factor, warmup)
    opt = torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=peak)
    linear = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, end_factor=1.0,
                                               total_iters=warmup - 1)
    for step in range(1, warmup + 1):
        assert rate(step, d_model, factor, warmup) == pytest.approx(opt.param_groups[0]["lr"])
        opt.step()
        linear.step()


@settings(max_examples=50, deadline=None)
@given(step=st.integers(1, 10_000), k=st.integers(1, 50), warmup=st.integers(1, 4000))
def test_decay_is_inverse_square_root_after_warmup(step, k, warmup):
    s = warmup + step
    assert rate(k * s, 512, 1.0, warmup) == pytest.approx(rate(s, 512, 1.0, warmup) / math.sqrt(k))


def test_base_model_peak_is_the_papers():
    # d_model = 512, warmup = 4000: the peak usually quoted for the base model, about 7e-4
    assert rate(4000, 512, 1.0, 4000) == pytest.approx(6.988e-4, rel=1e-3)


def test_rate_warms_up_linearly_peaks_at_warmup_then_decays():
    lrs = [rate(s, 512, 1.0, 400) for s in range(1, 2000)]
    peak = max(range(len(lrs)), key=lrs.__getitem__) + 1
    assert peak == 400
    assert lrs[399] == pytest.approx(1 / math.sqrt(512 * 400))
    assert all(a < b for a, b in itertools.pairwise(lrs[:400]))  # increasing
    assert all(a > b for a, b in itertools.pairwise(lrs[400:]))  # decreasing
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




def test_make_optimizer_is_adam_with_the_papers_settings_driven_by_rate():
    torch.manual_seed(0)
    model, twin = nn.Linear(4, 3), nn.Linear(4, 3)
    twin.load_state_dict(model.state_dict())
    optimizer, scheduler = make_optimizer(model, d_model=16, factor=2.0, warmup=3)
    reference = torch.optim.Adam(twin.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    x = torch.randn(8, 4)
    for step in range(6):
        for group in reference.param_groups:  # what LambdaLR should have set
            group["lr"] = rate(step, 16, 2.0, 3)
        for m, opt in ((model, optimizer), (twin, reference)):
            opt.zero_grad()
            m(x).pow(2).sum().backward()
            opt.step()
        scheduler.step()
        for a, b in zip(model.parameters(), twin.parameters(), strict=False):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(ValueError, match="warmup"):
        make_optimizer(model, d_model=16, warmup=0)
