r"""Greedy decoding: generate a target one token at a time, always taking the most likely token.

[`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode] works on a whole batch. By default
it recomputes the decoder over the full prefix at every step, as the sources do. With
`use_cache=True` it decodes incrementally: each step feeds only the newest token, the decoder's
self-attention keys and values grow by one position, and the source-attention keys and values
over the encoder memory are computed once. Both give the same tokens.

Explained on the *Tracing the data flow* page.
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import check_positive_int
from ..model.embeddings import Embeddings, PositionalEncoding
from ..model.encoder_decoder import EncoderDecoder
from ..model.masks import subsequent_mask

__all__ = ['embed_last_position', 'greedy_decode']


def embed_last_position(model: EncoderDecoder, ys: torch.Tensor) -> torch.Tensor:
    """Embed only the newest target position, as incremental decoding needs.

    For the usual `nn.Sequential(Embeddings, PositionalEncoding)` target embedding this looks up
    one token and adds one row of the positional table; for any other embedding it embeds the
    whole prefix and keeps the last position. Both give what `model.tgt_embed(ys)[:, -1:]` gives.

    Args:
        model: the encoder-decoder.
        ys: the target prefix `(batch, t + 1)`.

    Returns:
        `(batch, 1, d_model)`.

    Raises:
        ValueError: if position `t` is beyond the positional-encoding table.

    Examples:
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
        >>> ys = torch.tensor([[1, 4, 7]])
        >>> torch.allclose(embed_last_position(model, ys), model.tgt_embed(ys)[:, -1:])
        True
    """
    embed = model.tgt_embed
    if (
        isinstance(embed, nn.Sequential)
        and len(embed) == 2
        and isinstance(embed[0], Embeddings)
        and isinstance(embed[1], PositionalEncoding)
    ):
        t = ys.size(1) - 1
        pos = embed[1]
        if t >= pos.max_len:
            raise ValueError(
                f"decoding position {t} exceeds the positional-encoding table's max_len {pos.max_len}"
            )
        return pos.dropout(embed[0](ys[:, -1:]) + pos.pe[:, t : t + 1])
    return embed(ys)[:, -1:]


@torch.no_grad()
def greedy_decode(
    model: EncoderDecoder,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    max_len: int,
    start_symbol: int,
    *,
    end_symbol: int | None = None,
    pad_symbol: int | None = None,
    use_cache: bool = False,
) -> torch.Tensor:
    """Decode a batch greedily.

    Call `model.eval()` first: in training mode dropout makes the result random.

    Args:
        model: the encoder-decoder.
        src: source ids `(batch, src_len)`.
        src_mask: keep-mask `(batch or 1, 1, src_len)`.
        max_len: length of the output, the start symbol included.
        start_symbol: the first decoder input (for [`data_gen`][vanilla_transformer.data.copy_task.data_gen]'s
            copy task, `1`).
        end_symbol: if given, a sequence stops once it produces this token, and decoding stops
            early once every sequence has.
        pad_symbol: what to write after a sequence's end symbol; defaults to `end_symbol`.
        use_cache: decode incrementally with a key/value cache (same tokens, less work).

    Returns:
        Token ids `(batch, out_len)` with `out_len <= max_len`, starting with `start_symbol`.

    Raises:
        ValueError: if `max_len` is not positive, or any input is invalid for the model.

    Examples:
        >>> model = make_model(11, 11, N=1).eval()
        >>> src = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 0]])
        >>> ys = greedy_decode(model, src, src != 0, max_len=6, start_symbol=1)
        >>> ys.shape, ys[:, 0].tolist()
        (torch.Size([2, 6]), [1, 1])
    """
    check_positive_int("max_len", max_len)
    if src_mask is not None and src_mask.dim() == 2:
        src_mask = src_mask.unsqueeze(-2)  # (batch, src_len) -> (batch, 1, src_len)
    memory = model.encode(src, src_mask)
    batch = src.size(0)
    ys = torch.full((batch, 1), start_symbol, dtype=src.dtype, device=src.device)
    done = torch.zeros(batch, dtype=torch.bool, device=src.device)
    fill = pad_symbol if pad_symbol is not None else end_symbol
    cache = model.decoder.init_cache() if use_cache else None
    for _ in range(max_len - 1):
        if cache is None:
            mask = subsequent_mask(ys.size(1)).to(src.device)
            out = model.decode(memory, src_mask, ys, mask)
        else:
            out = model.decoder(embed_last_position(model, ys), memory, src_mask, None, cache)
        prob = model.generator(out[:, -1])  # (batch, vocab)
        next_word = prob.argmax(dim=-1)
        if end_symbol is not None:
            next_word = next_word.masked_fill(done, fill)
            done = done | (next_word == end_symbol)
        ys = torch.cat([ys, next_word.unsqueeze(1).to(ys.dtype)], dim=1)
        if end_symbol is not None and bool(done.all()):
            break
    return ys
