"""Step 8, sublayer: the residual connection and layer norm, in both arrangements.

Check it:  vanilla-transformer practice check sublayer sublayer.py
"""

from torch import nn

from layer_norm import LayerNorm


class SublayerConnection(nn.Module):
    """A residual connection around a sublayer, with a layer norm and dropout.

    self.norm: your LayerNorm(size) when layer_norm == "annotated", or
        nn.LayerNorm(size, eps=1e-5) when layer_norm == "torch" (the trained
        translator uses that one);
    self.dropout: nn.Dropout(dropout); self.norm_first: norm_first.
    """

    def __init__(self, size, dropout, *, norm_first=True, layer_norm="annotated"):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, sublayer):
        """`sublayer` is a function of one tensor (self-attention, the feed-forward...).

        pre-norm (norm_first=True):   x + dropout(sublayer(norm(x)))
        post-norm (norm_first=False): norm(x + dropout(sublayer(x)))  (the paper's)
        """
        raise NotImplementedError
