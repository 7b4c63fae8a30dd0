"""The fast kernels compute the same functions as the reference `attention` and `LayerNorm`."""

import torch
from torch import nn

from vanilla_transformer.model.attention import attention
from vanilla_transformer.model.fast import fast_attention, fast_layer_norm
from vanilla_transformer.model.layers import LayerNorm


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
    drop = nn.Dropout(0.2).train()
    torch.manual_seed(1)
    fast = fast_attention(q, k, v, None, drop)
    torch.manual_seed(1)
    reference = attention(q, k, v, None, drop)[0]
    torch.testing.assert_close(fast, reference)


def _reference_layer_norm(x, a, b, eps):
    return a * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) + b


def test_fast_layer_norm_matches_the_reference_values_and_gradients():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16, dtype=torch.float64, requires_grad=True)
    a = torch.randn(16, dtype=torch.float64, requires_grad=True)
    b = torch.randn(16, dtype=torch.float64, requires_grad=True)
    grad = torch.randn(3, 5, 16, dtype=torch.float64)
    fast = fast_layer_norm(x, a, b, 1e-6)
    reference = _reference_layer_norm(x, a, b, 1e-6)
    torch.testing.assert_close(fast, reference)
    for mine, theirs in zip(torch.autograd.grad(fast, (x, a, b), grad),
                            torch.autograd.grad(reference, (x, a, b), grad)):
        torch.testing.assert_close(mine, theirs)
    assert torch.autograd.gradcheck(lambda *t: fast_layer_norm(*t, 1e-3), (x[:1, :2], a, b))


def test_fast_layer_norm_without_autograd_and_on_a_constant_row():
    torch.manual_seed(0)
    x, a, b = torch.randn(4, 8), torch.randn(8), torch.randn(8)
    with torch.no_grad():
        torch.testing.assert_close(fast_layer_norm(x, a, b, 1e-6),
                                   _reference_layer_norm(x, a, b, 1e-6))
    row = torch.full((1, 8), 3.0, requires_grad=True)
    out = fast_layer_norm(row, a, b, 1e-6)
    torch.testing.assert_close(out, b.expand(1, 8))  # a constant row normalises to 0
    out.sum().backward()
    assert torch.isfinite(row.grad).all()


def test_layer_norm_module_switches_between_the_two_paths():
    torch.manual_seed(0)
    norm = LayerNorm(8)
    with torch.no_grad():
        norm.a_2.normal_()
    x = torch.randn(2, 3, 8, requires_grad=True)
    fast = norm(x)
    fast.sum().backward()
    grad, x.grad = x.grad, None
    norm.fast = False
    reference = norm(x)
    reference.sum().backward()
    torch.testing.assert_close(fast, reference)
    torch.testing.assert_close(grad, x.grad)
    assert norm.a_2.grad is not None and norm.b_2.grad is not None


def test_mixed_dtypes_take_the_reference_path():
    x = torch.randn(2, 8, dtype=torch.bfloat16, requires_grad=True)
    a, b = torch.ones(8, requires_grad=True), torch.zeros(8, requires_grad=True)
    out = fast_layer_norm(x, a, b, 1e-6)
    assert out.dtype == torch.float32  # promoted, as the reference's `a * ...` promotes
    torch.testing.assert_close(out, _reference_layer_norm(x, a, b, 1e-6))
    out.sum().backward()
    assert x.grad.dtype == torch.bfloat16


def test_cpu_dropout_branch_with_masks_that_block_something_or_nothing():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, 8) for _ in range(3))
    drop = nn.Dropout(0.2).train()
    padded = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    padded[1, ..., 3:] = False  # the second sequence has two padding positions
    for mask in (padded, torch.ones(2, 1, 1, 5, dtype=torch.bool), torch.ones(5, 5).tril()):
        torch.manual_seed(1)
        fast = fast_attention(q, k, v, mask, drop)
        torch.manual_seed(1)
        reference = attention(q, k, v, mask, drop)[0]
        torch.testing.assert_close(fast, reference)
