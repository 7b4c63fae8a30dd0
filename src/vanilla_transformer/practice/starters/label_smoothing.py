"""Step 12, label_smoothing: the smoothed target and its KL divergence.

Check it:  vanilla-transformer practice check label_smoothing label_smoothing.py
"""

import torch
from torch import nn


class LabelSmoothing(nn.Module):
    """KL divergence to a smoothed target distribution, summed.

    For a row whose correct class is y: put 1 - smoothing on y, 0 on padding_idx, and
    spread smoothing evenly over the other size - 2 classes. A row whose target IS
    padding_idx gets an all-zero target. Keep the target in self.true_dist.
    The loss is the sum of t * (log t - x) over the entries with t > 0
    (nn.KLDivLoss(reduction="sum") computes it).
    """

    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, target):
        """x: log-probabilities (rows, size); target: class ids (rows,).
        Returns the summed loss, a scalar tensor."""
        raise NotImplementedError
