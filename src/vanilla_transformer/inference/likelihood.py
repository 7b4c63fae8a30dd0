"""Scores of a model that need no text metric: the teacher-forced negative log-likelihood of
pairs (whose exponential is the perplexity the validator reports) and the copy task's exact
match.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..data.batching import collate_batch
from ..data.copy_task import PAD as COPY_PAD
from ..data.copy_task import START_SYMBOL
from ..model.encoder_decoder import EncoderDecoder
from .greedy import greedy_decode

__all__ = ["teacher_forced_nll", "exact_match"]


@torch.no_grad()
def teacher_forced_nll(model: EncoderDecoder, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], *,
                       pad: int, bos: int, eos: int, batch_size: int = 64) -> float:
    r"""The mean negative log-likelihood per target token (end symbol included) of `pairs`,
    teacher forced, without smoothing: $-\frac{1}{T} \sum_t \log p(y_t \mid y_{<t}, x)$,
    whose exponential is the perplexity. Run in eval mode on the model's device, sorted by
    length; the model's mode is restored.

    Args:
        model: an `EncoderDecoder`.
        pairs: `(source ids, target ids)` without special tokens (added as in training).
        pad: the padding id. bos: the start symbol. eos: the end symbol.
        batch_size: sentences per forward pass.

    Returns:
        The mean over the target tokens, in nats (`nan` for no pairs).

    Examples:
        >>> from vanilla_transformer import make_model
        >>> model = make_model(6, 6, N=1, d_model=16, d_ff=32, h=2)
        >>> nll = teacher_forced_nll(model, [([3, 4], [5]), ([4], [3, 3])], pad=0, bos=1, eos=2)
        >>> 0 < nll < 10
        True
    """
    if not pairs:
        return float("nan")
    device = next(model.parameters()).device
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
    training, sums, tokens = model.training, list[torch.Tensor](), 0
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            chunk = [(list(pairs[i][0]) + [eos], pairs[i][1])
                     for i in order[start:start + batch_size]]
            batch = collate_batch(chunk, pad, bos=bos, eos=eos).to(device)
            logp = model.generator(model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask))
            sums.append(torch.nn.functional.nll_loss(logp.reshape(-1, logp.size(-1)).float(),
                                                     batch.tgt_y.reshape(-1), ignore_index=pad,
                                                     reduction="sum"))
            tokens += sum(len(t) + 1 for _, t in chunk)
    finally:
        model.train(training)
    return float(torch.stack(sums).sum()) / tokens  # the one host sync


def exact_match(
    model: EncoderDecoder, src: torch.Tensor, *, use_cache: bool = True
) -> tuple[float, torch.Tensor]:
    """Greedy-decode `src` in eval mode, from the start symbol `1` (not the padding id `0`, as
    some versions of the source code do), and count the rows copied exactly.

    Args:
        model: the trained model.
        src: sequences `(n, seq_len)`, e.g. from `heldout_sequences`.
        use_cache: decode with the key/value cache (same tokens, faster).

    Returns:
        `(accuracy, decoded)`: the fraction of rows decoded exactly, in [0, 1], and the decoded
        ids `(n, seq_len)`.

    Examples:
        >>> from vanilla_transformer import make_model
        >>> from vanilla_transformer.inference.likelihood import exact_match
        >>> from vanilla_transformer.data import heldout_sequences
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2)
        >>> accuracy, decoded = exact_match(model, heldout_sequences(4))
        >>> decoded.shape, 0.0 <= accuracy <= 1.0
        (torch.Size([4, 10]), True)
    """
    model.eval()
    decoded = greedy_decode(model, src, src != COPY_PAD, max_len=src.size(1),
                            start_symbol=START_SYMBOL, use_cache=use_cache)
    accuracy = float((decoded == src).all(dim=1).float().mean())
    return accuracy, decoded
