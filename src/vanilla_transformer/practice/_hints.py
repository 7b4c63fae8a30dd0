"""Hints for a learner who is stuck on a step, one level at a time: first what to think about,
then the operations and shapes, then the steps nearly as code. `vanilla-transformer practice
hint STEP [--level N]` prints them; the starter files do not hold them.

This module imports nothing, so that printing a hint needs no PyTorch.
"""

from __future__ import annotations

__all__ = ["HINTS", "hint"]

HINTS: dict[str, tuple[str, ...]] = {
    "subsequent_mask": (
        "Row i of the mask is what position i may look at. Which positions of the output "
        "exist when position i is being predicted?",
        "Start from a (size, size) matrix of ones: a triangle of it is the answer. Which "
        "triangle, and does it include the diagonal? Add a leading axis of 1 for the batch.",
        "torch.ones(1, size, size, dtype=torch.bool).tril(): the lower triangle, diagonal "
        "included (True = may attend).",
    ),
    "attention": (
        "Each query scores every key by a dot product; the scores become weights that sum to "
        "1 over the keys; the output is the weighted sum of the values. Why divide before the "
        "softmax, and by what?",
        "scores = query @ key.transpose(-2, -1), shape (..., query_len, key_len), divided by "
        "sqrt(d_k). Masked scores must get (almost) no weight, but a fully masked row must "
        "not become NaN. The softmax runs over the keys, the last axis.",
        "1. scores = q @ k^T / math.sqrt(q.size(-1)); 2. scores.masked_fill(mask == 0, -1e9); "
        "3. p = scores.softmax(-1); 4. p = dropout(p) if given; 5. return p @ value, p.",
    ),
    "multi_head_attention": (
        "h heads each attend in a d_k = d_model / h slice of the model's width, with their "
        "own projections of query, key and value; the heads' results are joined and mixed "
        "by one more projection.",
        "Four nn.Linear(d_model, d_model) in self.linears: W^Q, W^K, W^V, W^O, made as "
        "independent copies. Split (batch, seq_len, d_model) into (batch, h, seq_len, d_k); "
        "the mask needs a head axis.",
        "1. mask = mask.unsqueeze(1); 2. q, k, v = linears[i](x).view(b, -1, h, d_k)"
        ".transpose(1, 2) for (linears[0], query), (linears[1], key), (linears[2], value); "
        "3. x, _ = attention(q, k, v, mask, self.dropout); 4. x.transpose(1, 2).reshape(b, "
        "-1, h * d_k); 5. return linears[3](x).",
    ),
    "feed_forward": (
        "The same two-layer network runs on every position on its own: widen, a "
        "non-linearity, narrow back.",
        "w_1: d_model to d_ff, then ReLU, then dropout on those hidden activations, then "
        "w_2: d_ff to d_model.",
        "return self.w_2(self.dropout(self.w_1(x).relu())).",
    ),
    "positional_encoding": (
        "Each position gets a fixed vector of sines and cosines at different wavelengths, "
        "added to its embedding. The table is computed once, not learned.",
        "Positions 0..max_len-1 as a column; one frequency per pair of features, "
        "1 / 10000^(2i / d_model) for i = 0..d_model/2-1; sines in the even features, "
        "cosines in the odd ones. Keep the table as a buffer pe of shape (1, max_len, "
        "d_model); dropout applies to the sum.",
        "div = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model)); "
        "pe[:, 0::2] = sin(position * div); pe[:, 1::2] = cos(position * div); forward: "
        "self.dropout(x + self.pe[:, : x.size(1)]).",
    ),
    "embeddings": (
        "A learned lookup table turns each token id into a vector; the paper scales it.",
        "self.lut = nn.Embedding(vocab, d_model); the scale is the square root of the "
        "embedding width (section 3.4).",
        "return self.lut(x) * math.sqrt(self.d_model).",
    ),
    "layer_norm": (
        "Each position's features are shifted to mean 0 and scaled to spread 1, then given "
        "a learned gain and bias.",
        "Mean and standard deviation over the last axis, keepdim=True; this version uses the "
        "unbiased std and adds eps to the std, outside the root. a_2 starts at ones, b_2 "
        "at zeros.",
        "mean = x.mean(-1, keepdim=True); std = x.std(-1, keepdim=True); return self.a_2 * "
        "(x - mean) / (std + self.eps) + self.b_2.",
    ),
    "sublayer": (
        "Every sublayer is wrapped the same way: a residual connection around it, a layer "
        "norm, and dropout on what the sublayer adds. Where the norm goes is the difference "
        "between pre-norm and post-norm.",
        "Pre-norm normalises the sublayer's input; post-norm (the paper's) normalises the sum. "
        "Dropout applies to the sublayer's output only, never to the residual path x.",
        "norm_first: x + self.dropout(sublayer(self.norm(x))); otherwise: self.norm(x + "
        "self.dropout(sublayer(x))).",
    ),
    "encoder_layer": (
        "An encoder layer is self-attention, then the feed-forward network, each inside its "
        "own residual sublayer.",
        "Two SublayerConnections (independent copies); the mask goes to self-attention, "
        "where query, key and value are all x.",
        "x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask)); return "
        "self.sublayer[1](x, self.feed_forward).",
    ),
    "decoder_layer": (
        "A decoder layer has three sublayers: masked self-attention, attention to the "
        "encoder's output, and the feed-forward network.",
        "Self-attention takes tgt_mask (no peeking ahead); attention to memory takes its "
        "queries from the decoder, keys and values from memory, and src_mask.",
        "x = sublayer[0](x, lambda x: self_attn(x, x, x, tgt_mask)); x = sublayer[1](x, "
        "lambda x: src_attn(x, memory, memory, src_mask)); return sublayer[2](x, "
        "feed_forward).",
    ),
    "encoder_decoder": (
        "make_model assembles the pieces: embeddings and positional encodings for both sides, "
        "N encoder layers, N decoder layers, and a generator to log-probabilities.",
        "Every copy of a layer is an independent deep copy; encode embeds the source, decode "
        "embeds the target; forward returns the decoder's states and the generator is "
        "applied separately. With tie_weights, the two embeddings and the generator share one "
        "weight.",
        "encode: encoder(src_embed(src), src_mask); decode: decoder(tgt_embed(tgt), memory, "
        "src_mask, tgt_mask); forward: decode(encode(src, src_mask), src_mask, tgt, "
        "tgt_mask); generator: log_softmax(proj(x), dim=-1).",
    ),
    "label_smoothing": (
        "Instead of putting all probability on the right token, the target keeps 1 - "
        "smoothing there and spreads the rest; padding gets none, and padded rows count for "
        "nothing.",
        "Fill with smoothing / (size - 2), put 1 - smoothing on each row's target, zero the "
        "padding column and every row whose target is padding; the loss is the summed KL "
        "divergence.",
        "true_dist = full_like(x, smoothing / (size - 2)); scatter_(1, target.unsqueeze(1), "
        "1 - smoothing); true_dist[:, padding_idx] = 0; true_dist[target == padding_idx] = 0; "
        "return nn.KLDivLoss(reduction='sum')(x, true_dist).",
    ),
    "greedy_decode": (
        "Generate one token at a time: run the decoder on what is generated so far and take "
        "the most likely next token, until every sentence has ended or max_len is reached.",
        "Encode once; start ys at start_symbol, shape (batch, 1); decode under "
        "subsequent_mask(ys.size(1)); the next token comes from the last position; a "
        "sentence that has ended gets pad_symbol (or end_symbol) from then on.",
        "for _ in range(max_len - 1): out = model.decode(memory, src_mask, ys, "
        "subsequent_mask(ys.size(1))); next = model.generator(out[:, -1]).argmax(-1); "
        "next = next.masked_fill(done, fill); done |= next == end_symbol; ys = torch.cat([ys, "
        "next.unsqueeze(1)], 1); break when done.all().",
    ),
    "translator": (
        "Nothing new to write: the translator uses your make_model and greedy_decode. If it "
        "fails, the message names the first stage that differs and the step to check again.",
        "Run that step's check again, with another --seed too: the payoff compares every "
        "stage on a padded batch, so masks and padding matter here.",
        "Check each step in order with vanilla-transformer practice status DIR; the first "
        "step that fails is the one to fix.",
    ),
}
"""The hints of each step, from a nudge to the steps nearly as code."""


def hint(step: str, level: int = 1) -> str:
    """Hint number `level` (from 1) of `step`, and how to ask for the next one.

    Raises:
        ValueError: for an unknown step or a level out of range.

    Example:
        >>> print(hint("embeddings", 3).splitlines()[0])
        embeddings, hint 3 of 3:
    """
    if step not in HINTS:
        raise ValueError(f"unknown step {step!r}; the steps are {', '.join(HINTS)}")
    levels = HINTS[step]
    if not 1 <= level <= len(levels):
        raise ValueError(f"{step} has hints 1 to {len(levels)}, got level {level}")
    import textwrap

    lines = [f"{step}, hint {level} of {len(levels)}:",
             textwrap.fill(levels[level - 1], 78, initial_indent="  ", subsequent_indent="  ")]
    if level < len(levels):
        lines.append(f"Still stuck? vanilla-transformer practice hint {step} --level {level + 1}")
    return "\n".join(lines)
