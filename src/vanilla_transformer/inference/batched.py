"""Decoding many sources: sorted by length, cut into batches, each sentence with its own
limit, by the batched decoders of [`inference.fast`][vanilla_transformer.inference.fast] or
the readable [`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode] and
[`beam_search`][vanilla_transformer.inference.beam.beam_search]. The one decoding loop of
[`translate_ids`][vanilla_transformer.inference.evaluate.translate_ids] and
[`translate_nbest`][vanilla_transformer.inference.evaluate.translate_nbest].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

from ..data.batching import pad_sequences
from ..data.tokenizer import BOS, EOS, PAD
from ..model.encoder_decoder import EncoderDecoder
from .beam import beam_search
from .fast import Decoded, batch_beam_search, batch_greedy
from .greedy import _model_device, greedy_decode

__all__ = ["BatchDecoder", "each_batch", "fast_decoder", "best_tokens", "readable_decoder",
           "until_end"]

T = TypeVar("T")

def _batches(lengths: Sequence[int], batch_size: int, max_tokens: int | None) -> list[list[int]]:
    """Indices of `lengths` sorted by length and cut into batches of at most `batch_size`
    rows and `max_tokens` padded tokens (a longer sentence is a batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = lengths[i]  # sorted: the newest is the longest
        if current and (len(current) == batch_size
                        or (max_tokens is not None and (len(current) + 1) * width > max_tokens)):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


BatchDecoder = Callable[[EncoderDecoder, torch.Tensor, torch.Tensor, list[int]], list[T]]
"""Decodes a padded batch `(src, src_mask, max_lens)` into one result per row."""


def each_batch(
    model: EncoderDecoder,
    ids: list[list[int]],
    decode: BatchDecoder[T],
    *,
    max_extra: int,
    batch_size: int,
    max_tokens: int | None,
    progress: Callable[[int], object] | None,
) -> list[T]:
    """The decoding loop: `decode` on sorted batches, each sentence with its own limit
    (`len(source) + max_extra` tokens after `<s>`); the results in input order."""
    model.eval()
    if any(len(s) == 0 for s in ids):
        raise ValueError("every source needs at least one token (its </s>)")
    device = _model_device(model) or torch.device("cpu")
    out: dict[int, T] = {}
    done = 0
    for rows in _batches([len(s) for s in ids], batch_size, max_tokens):
        with device:  # the batch is made where the model is
            src = pad_sequences([ids[i] for i in rows], PAD)
        src_mask = (src != PAD).unsqueeze(-2)  # (batch, 1, src_len)
        max_lens = [len(ids[i]) + max_extra + 1 for i in rows]  # + 1: the start symbol
        for i, found in zip(rows, decode(model, src, src_mask, max_lens), strict=True):
            out[i] = found
        done += len(rows)
        if progress is not None:
            progress(done)
    return [out[i] for i in range(len(ids))]


def fast_decoder(beam_size: int, alpha: float, nbest: int) -> BatchDecoder[list[Decoded]]:
    """The batched decoders, each row decoded as if alone."""

    def decode(model: EncoderDecoder, src: torch.Tensor, src_mask: torch.Tensor,
               max_lens: list[int]) -> list[list[Decoded]]:
        if beam_size == 1:
            return [[h] for h in batch_greedy(model, src, src_mask, max_lens, BOS, EOS,
                                              alpha=alpha)]
        return batch_beam_search(model, src, src_mask, max_lens, BOS, EOS, beam_size, alpha,
                                 nbest=nbest)

    return decode


def best_tokens(decode: BatchDecoder[list[Decoded]]) -> BatchDecoder[list[int]]:
    """The tokens of each row's best hypothesis."""

    def best(model: EncoderDecoder, src: torch.Tensor, src_mask: torch.Tensor,
             max_lens: list[int]) -> list[list[int]]:
        return [hyps[0].tokens for hyps in decode(model, src, src_mask, max_lens)]

    return best


def readable_decoder(beam_size: int, alpha: float) -> BatchDecoder[list[int]]:
    """`greedy_decode` (with the cache) or `beam_search` on the batch with its longest limit,
    each output cut to its own, through its first `</s>`."""

    def decode(model: EncoderDecoder, src: torch.Tensor, src_mask: torch.Tensor,
               max_lens: list[int]) -> list[list[int]]:
        if beam_size == 1:
            ys = greedy_decode(model, src, src_mask, max(max_lens), BOS, end_symbol=EOS,
                               pad_symbol=PAD, use_cache=True)
        else:
            ys, _ = beam_search(model, src, src_mask, max(max_lens), BOS, EOS, beam_size,
                                alpha, pad_symbol=PAD)
        return [_through_end(row[1:n]) for row, n in zip(ys.tolist(), max_lens, strict=True)]

    return decode


def until_end(row: list[int]) -> list[int]:
    return row[: row.index(EOS)] if EOS in row else row


def _through_end(row: list[int]) -> list[int]:
    return row[: row.index(EOS) + 1] if EOS in row else row
