"""Step 2, attention: scaled dot-product attention.

Check it:  vanilla-transformer practice check attention attention.py
"""

import math

import torch


def attention(query, key, value, mask=None, dropout=None):
    """softmax(Q K^T / sqrt(d_k)) V, with a keep-mask.

    query: (..., query_len, d_k); key: (..., key_len, d_k); value: (..., key_len, d_v).
    mask: None, or a keep-mask that broadcasts to (..., query_len, key_len), where
        True (non-zero) means the query may attend to that key.
    dropout: None, or a module applied to the attention weights.

    Returns (output, weights): output (..., query_len, d_v); weights
    (..., query_len, key_len), after dropout, each row summing to 1 before it.
    A masked key gets (almost) no weight, and a query whose every key is masked gets
    uniform weights, not NaN.

    Lesson: Attention (learn/attention/ on the site).
    Stuck? vanilla-transformer practice hint attention
    """
    raise NotImplementedError
