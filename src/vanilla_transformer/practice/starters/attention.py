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

    1. scores = query times key transposed, divided by sqrt(d_k) (d_k = query.size(-1));
    2. where mask == 0, set the score to -1e9 (a large finite number: a row whose every
       key is masked then gets uniform weights instead of NaN);
    3. weights = softmax of the scores over the keys (the last axis);
    4. apply dropout to the weights, if given;
    5. return (weights times value, weights), the weights after dropout.
    """
    raise NotImplementedError
