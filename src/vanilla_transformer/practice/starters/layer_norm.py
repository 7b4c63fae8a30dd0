"""Step 7, layer_norm: layer normalisation, as the Annotated Transformer writes it.

Check it:  vanilla-transformer practice check layer_norm layer_norm.py
"""

import torch
from torch import nn


class LayerNorm(nn.Module):
    """a_2 * (x - mean) / (std + eps) + b_2, over the last axis.

    std is the UNBIASED standard deviation (divided by n - 1: x.std(-1, keepdim=True)),
    and eps is added to the standard deviation, outside the square root.
    (torch.nn.LayerNorm differs: biased variance, eps inside the root.)
    self.a_2: nn.Parameter of ones (features,); self.b_2: nn.Parameter of zeros.
    """

    def __init__(self, features, eps=1e-6):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """Normalise x (..., features) over its last axis."""
        raise NotImplementedError
