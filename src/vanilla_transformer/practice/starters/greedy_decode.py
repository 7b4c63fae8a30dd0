"""Step 13, greedy_decode: generate one token at a time, always the most likely.

Check it:  vanilla-transformer practice check greedy_decode greedy_decode.py
"""

import torch

from subsequent_mask import subsequent_mask


@torch.no_grad()
def greedy_decode(model, src, src_mask, max_len, start_symbol, *, end_symbol=None,
                  pad_symbol=None):
    """Decode a batch greedily: token ids (batch, out_len), out_len <= max_len.

    1. memory = model.encode(src, src_mask);
       ys = start_symbol for every sentence, shape (batch, 1);
    2. up to max_len - 1 times: decode ys against memory under
       subsequent_mask(ys.size(1)); take model.generator of the LAST position;
       its argmax is each sentence's next token; append it to ys;
    3. with end_symbol: once a sentence has produced end_symbol, write pad_symbol (or
       end_symbol when pad_symbol is None) in its later places; stop as soon as every
       sentence has ended.
    """
    raise NotImplementedError
