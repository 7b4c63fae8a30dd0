"""Step 5, positional_encoding: the sinusoids added to the embeddings.

Check it:  vanilla-transformer practice check positional_encoding positional_encoding.py
"""

import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    """Add sinusoidal position information to x, then apply dropout.

    PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))
    for positions pos = 0 .. max_len - 1 and pairs i = 0 .. d_model / 2 - 1.

    Store the table as a buffer named pe of shape (1, max_len, d_model):
    self.register_buffer("pe", table). self.dropout: nn.Dropout(p=dropout).
    """

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """x (batch, seq_len, d_model) + the first seq_len rows of the table."""
        raise NotImplementedError
