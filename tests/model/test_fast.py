"""The fast paths compute the same functions as the reference: attention and dropout."""

import math

import pytest
import torch
from torch import nn

from vanilla_transformer.model.attention import attention
from vanilla_transformer.model.fast import Dropout, fast_attention


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_keeps_each_element_with_probability_1_minus_p(p):
    torch.manual_seed(0)
    n = 400_000
    y = Dropout(p)(torch.ones(n))
    kept = (y != 0).float().mean().item()
    # a binomial proportion: five standard deviations
    assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    assert torch.allclose(y[y != 0], torch.full_like(y[y != 0], 1 / (1 - p)))


def test_dropout_mean_and_variance_match_nn_dropout():
    torch.manual_seed(0)
    x = torch.randn(1000, 1000)
    ours, theirs = Dropout(0.2)(x), nn.Dropout(0.2)(x)
    for stat in (torch.mean, torch.var):
        assert stat(ours).item() == pytest.approx(stat(theirs).item(), rel=0.02, abs=2e-3)


def test_dropout_gradient_is_the_mask_times_the_scale():
    torch.manual_seed(0)
    x = torch.randn(64, 64, requires_grad=True)
    y = Dropout(0.3)(x)
    y.sum().backward()
    expected = (y != 0).float() / 0.7
    torch.testing.assert_close(x.grad, expected)


def test_dropout_is_nn_dropout_in_eval_mode_and_in_the_state_dict():
    drop = Dropout(0.5).eval()
    x = torch.randn(10)
    assert torch.equal(drop(x), x)
    assert isinstance(drop, nn.Dropout) and drop.state_dict() == {}
    assert torch.equal(Dropout(0.0).train()(x), x)


def test_fast_attention_matches_the_reference_without_and_with_masks():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, 8) for _ in range(3))
    mask = torch.rand(2, 1, 5, 5) > 0.3
    mask[..., 0] = True  # no fully masked query, where the two differ by design
    off = nn.Dropout(0.0)
    for m in (None, mask, mask.float()):
        torch.testing.assert_close(fast_attention(q, k, v, m, off), attention(q, k, v, m)[0])


def test_cpu_dropout_branch_matches_the_reference_with_the_same_random_numbers():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, 8) for _ in range(3))
    drop = Dropout(0.2).train()
    torch.manual_seed(1)
    fast = fast_attention(q, k, v, None, drop)
    torch.manual_seed(1)
    reference = attention(q, k, v, None, drop)[0]
    torch.testing.assert_close(fast, reference)
