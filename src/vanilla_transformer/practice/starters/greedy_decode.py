"""Step 13, greedy_decode: generate one token at a time, always the most likely.

Check it:  vanilla-transformer practice check greedy_decode greedy_decode.py
"""

import torch

from subsequent_mask import subsequent_mask


@torch.no_grad()
def greedy_decode(model, src, src_mask, max_len, start_symbol, *, end_symbol=None,
                  pad_symbol=None):
    """Decode a batch greedily: token ids (batch, out_len), out_len <= max_len.

    Each row starts with start_symbol and grows one token at a time, always the most
    likely next token given the source and the tokens so far (the decoder sees no
    token ahead of the one it predicts). With end_symbol: a sentence that has ended
    gets pad_symbol (or end_symbol when pad_symbol is None) in its later places, and
    decoding stops as soon as every sentence has ended.

    Lesson: Decoding (learn/decoding/ on the site).
    Stuck? vanilla-transformer practice hint greedy_decode
    """
    raise NotImplementedError
