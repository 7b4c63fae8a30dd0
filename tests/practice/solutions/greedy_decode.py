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
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), start_symbol, dtype=src.dtype)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    fill = pad_symbol if pad_symbol is not None else end_symbol
    for _ in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)))
        next_word = model.generator(out[:, -1]).argmax(dim=-1)
        if end_symbol is not None:
            next_word = next_word.masked_fill(done, fill)
            done = done | (next_word == end_symbol)
        ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        if end_symbol is not None and bool(done.all()):
            break
    return ys
