"""LayerNorm flavours, SublayerConnection and PositionwiseFeedForward."""

import pytest
import torch
from torch import nn

from vanilla_transformer import LayerNorm, PositionwiseFeedForward, SublayerConnection, make_layer_norm


def test_annotated_layer_norm_formula():
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    ln = LayerNorm(16)
    expected = (x - x.mean(-1, keepdim=True)) / (x.std(-1, unbiased=True, keepdim=True) + 1e-6)
    torch.testing.assert_close(ln(x), expected)
    assert [n for n, _ in ln.named_parameters()] == ["a_2", "b_2"]


def test_torch_flavour_is_nn_layer_norm():
    ln = make_layer_norm(16, "torch")
    assert isinstance(ln, nn.LayerNorm) and ln.eps == 1e-5


def test_flavours_differ_by_the_unbiased_factor():
    torch.manual_seed(0)
    n = 512
    x = torch.randn(8, n)
    ratio = make_layer_norm(n, "annotated")(x) / make_layer_norm(n, "torch")(x)
    torch.testing.assert_close(ratio, torch.full_like(ratio, ((n - 1) / n) ** 0.5), atol=1e-4, rtol=1e-4)


def test_unknown_flavour_is_rejected():
    with pytest.raises(ValueError, match="layer_norm must be one of"):
        make_layer_norm(8, "rms")


@pytest.mark.parametrize("norm_first", [True, False])
def test_sublayer_connection_arrangements(norm_first):
    torch.manual_seed(0)
    sub = SublayerConnection(8, 0.0, norm_first=norm_first)
    x = torch.randn(2, 3, 8)
    f = nn.Linear(8, 8)
    expected = x + f(sub.norm(x)) if norm_first else sub.norm(x + f(x))
    torch.testing.assert_close(sub(x, f), expected)


def test_feed_forward_is_position_wise():
    torch.manual_seed(0)
    ff = PositionwiseFeedForward(8, 32, dropout=0.0)
    x = torch.randn(2, 5, 8)
    out = ff(x)
    assert out.shape == (2, 5, 8)
    torch.testing.assert_close(out[:, 2], ff(x[:, 2:3])[:, 0])
    assert ff.w_1.weight.shape == (32, 8) and ff.w_2.weight.shape == (8, 32)


def test_annotated_layer_norm_gradients_match_the_formula():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 7, dtype=torch.double, requires_grad=True)
    ln = LayerNorm(7).double()
    with torch.no_grad():
        ln.a_2.normal_()
        ln.b_2.normal_()
    assert torch.autograd.gradcheck(ln, (x,))
    formula = ln.a_2 * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + ln.eps) + ln.b_2
    g = torch.randn_like(formula)
    expected = torch.autograd.grad(formula, (x, ln.a_2, ln.b_2), g)
    got = torch.autograd.grad(ln(x), (x, ln.a_2, ln.b_2), g)
    for e, o in zip(expected, got):
        torch.testing.assert_close(o, e)


def test_annotated_layer_norm_constant_row_has_finite_gradient():
    x = torch.ones(2, 4, requires_grad=True)
    LayerNorm(4)(x).sum().backward()
    assert torch.isfinite(x.grad).all()
