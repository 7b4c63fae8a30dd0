"""Step 3, multi_head_attention: h heads attending in parallel.

Check it:
    vanilla-transformer practice check multi_head_attention multi_head_attention.py
"""

import copy

import torch
from torch import nn

from attention import attention


def clones(module, N):
    """N independent deep copies of `module`, in an nn.ModuleList."""
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class MultiHeadedAttention(nn.Module):
    """Multi-head attention with h heads of width d_k = d_model // h.

    Keep these names: the trained translator's weights are loaded by name.
    self.linears: four nn.Linear(d_model, d_model), for W^Q, W^K, W^V and W^O.
    self.h, self.d_k: the number of heads and their width.
    self.dropout: nn.Dropout(p=dropout), applied to the attention weights.
    """

    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        raise NotImplementedError

    def forward(self, query, key, value, mask=None):
        """query (batch, query_len, d_model); key, value (batch, key_len, d_model).

        mask: None or a keep-mask (batch or 1, 1 or query_len, key_len), the same for
        every head.
        Returns (batch, query_len, d_model): each head attends with its own slice of
        the projected query, key and value (linears[0], [1], [2]), and the heads'
        results, joined in head order, go through linears[3] (W^O). Dropout applies
        to the attention weights.

        Lesson: Several heads (learn/heads/ on the site).
        Stuck? vanilla-transformer practice hint multi_head_attention
        """
        raise NotImplementedError
