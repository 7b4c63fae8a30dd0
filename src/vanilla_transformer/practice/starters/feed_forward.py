"""Step 4, feed_forward: the position-wise feed-forward network.

Check it:  vanilla-transformer practice check feed_forward feed_forward.py
"""

import torch
from torch import nn


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, on every position alike.

    self.w_1: nn.Linear(d_model, d_ff); self.w_2: nn.Linear(d_ff, d_model);
    self.dropout: nn.Dropout(dropout), applied to the hidden activations.
    """

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """(batch, seq_len, d_model) -> (batch, seq_len, d_model)."""
        raise NotImplementedError
