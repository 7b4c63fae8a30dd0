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
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.size = size
        self.padding_idx = padding_idx
        self.smoothing = smoothing
        self.true_dist = None

    def forward(self, x, target):
        """x: log-probabilities (rows, size); target: class ids (rows,).
        Returns the summed loss, a scalar tensor."""
        true_dist = torch.full_like(x, self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.unsqueeze(1), 1.0 - self.smoothing)
        true_dist[:, self.padding_idx] = 0
        true_dist[target == self.padding_idx] = 0
        self.true_dist = true_dist
        return self.criterion(x, true_dist)
