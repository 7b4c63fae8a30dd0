"""Step 6, embeddings: token ids to vectors.

Check it:  vanilla-transformer practice check embeddings embeddings.py
"""

import math

from torch import nn


class Embeddings(nn.Module):
    """Learned embeddings, multiplied by sqrt(d_model) (paper section 3.4).

    self.lut: nn.Embedding(vocab, d_model); self.d_model: d_model.
    """

    def __init__(self, d_model, vocab):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """Token ids (batch, seq_len) -> (batch, seq_len, d_model)."""
        raise NotImplementedError
