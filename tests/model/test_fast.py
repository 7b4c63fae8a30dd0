"""The fast attention kernels compute the same function as the reference `attention`."""

import torch
from torch import nn

from vanilla_transformer.model.attention import attention
from vanilla_transformer.model.fast import fast_attention


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
