"""Step 1, subsequent_mask: the decoder's "no peeking ahead" mask.

Check it:  vanilla-transformer practice check subsequent_mask subsequent_mask.py
"""

import torch


def subsequent_mask(size):
    """The keep-mask of a decoder of `size` positions.

    Position i may attend to positions 0..i (itself included) and to none after it.
    Return a bool tensor of shape (1, size, size) where True means "may attend":
    the lower triangle, diagonal included.
    """
    raise NotImplementedError
