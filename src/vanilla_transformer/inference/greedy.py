r"""Greedy decoding: generate a target one token at a time, always taking the most likely token.

$$y_t = \arg\max_{y} P(y \mid y_{<t}, x)$$

Taught in the lesson [Decoding][decoding-lesson].
"""

from __future__ import annotations

from typing import TypeVar

import torch
from torch import nn

from .._checks import check_non_negative_int, check_positive_int, check_token_ids
from ..model.embeddings import Embeddings, PositionalEncoding
from ..model.encoder_decoder import EncoderDecoder
from ..model.masks import as_keep_mask, subsequent_mask

__all__ = ['embed_last_position', 'greedy_decode']

M = TypeVar("M", bound=nn.Module)


def _find(module: object, cls: type[M]) -> M | None:
    if not isinstance(module, nn.Module):
        return None
    return next((m for m in module.modules() if isinstance(m, cls)), None)


def _src_keep_mask(src: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor | None:
    """`src_mask` checked and returned as a bool `(batch or 1, 1, src_len)` keep-mask."""
    if src_mask is None:
        return None
    if isinstance(src_mask, torch.Tensor) and src_mask.dim() == 2:
        src_mask = src_mask.unsqueeze(-2)  # (batch, src_len) -> (batch, 1, src_len)
    if isinstance(src_mask, torch.Tensor) and src_mask.dim() != 3:
        raise ValueError(f"src_mask must have shape (batch or 1, 1, src_len) or (batch, src_len), "
                         f"got {tuple(src_mask.shape)}")
    return as_keep_mask(src_mask, src.size(0), 1, src.size(1), "src_mask")


def _model_device(model: nn.Module) -> torch.device | None:
    """The device of the model's parameters (`None` for a model without any)."""
    first = next(model.parameters(), None)
    return None if first is None else first.device


def _target_mask(size: int, device: torch.device) -> torch.Tensor:
    """`subsequent_mask(size)` made on `device` directly, not made on the CPU and copied."""
    with device:
        return subsequent_mask(size)


def _check_inputs(
    model: nn.Module,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    max_len: int,
    start_symbol: int,
    end_symbol: int | None,
    pad_symbol: int | None,
) -> torch.Tensor | None:
    """The checks of a decoding call, done once; returns `src_mask` as `(batch or 1, 1, src_len)`.

    `src` and `src_mask` must be on the device of the model's parameters: decoding makes
    every tensor it needs on `src.device`.

    `src` is checked for its type and shape here; `model.encode` checks its ids against the
    vocabulary. The target symbols are checked against the target vocabulary and `max_len`
    against the positional table, because the decoding loop calls the decoder directly.
    """
    check_token_ids(src, None, "src")
    device = _model_device(model)
    if device is not None and src.device != device:
        raise ValueError(f"src is on {src.device} but the model's parameters are on {device}: "
                         f"move it with src.to({str(device)!r})")
    if src_mask is not None and src_mask.device != src.device:
        raise ValueError(f"src_mask is on {src_mask.device} but src is on {src.device}")
    if src.size(0) == 0 or src.size(1) == 0:
        raise ValueError(f"src of shape {tuple(src.shape)} is empty: decoding needs at least one "
                         "source sequence of at least one token")
    check_positive_int("max_len", max_len)
    check_non_negative_int("start_symbol", start_symbol)
    table = _find(getattr(model, "tgt_embed", None), nn.Embedding)
    for name, symbol in (("start_symbol", start_symbol), ("end_symbol", end_symbol),
                         ("pad_symbol", pad_symbol)):
        if symbol is None:
            continue
        check_non_negative_int(name, symbol)
        if table is not None and symbol >= table.num_embeddings:
            raise ValueError(f"{name} must be a target id in [0, {table.num_embeddings}), "
                             f"got {symbol}")
    position = _find(getattr(model, "tgt_embed", None), PositionalEncoding)
    if position is not None and max_len - 1 > position.max_len:
        raise ValueError(
            f"max_len {max_len} feeds the decoder {max_len - 1} positions, more than the "
            f"positional-encoding table's max_len {position.max_len}"
        )
    return _src_keep_mask(src, src_mask)


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
        x: torch.Tensor = pos.dropout(embed[0](ys[:, -1:]) + pos.pe[:, t : t + 1])
        return x
    whole: torch.Tensor = embed(ys)
    return whole[:, -1:]


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

    The inputs are checked once; then the source is encoded once and the decoder runs
    `max_len - 1` times. By default each step recomputes the decoder over the whole prefix, as
    the Annotated Transformer does. With `use_cache=True` each step feeds only the newest token and the
    attention modules keep their keys and values in a
    [`KVCache`][vanilla_transformer.model.cache.KVCache]; in the tests the tokens are the same (a
    near-tie could break differently, since the sums run in another order).

    Call `model.eval()` first: in training mode dropout makes the result random.

    Args:
        model: the encoder-decoder.
        src: source ids `(batch, src_len)`, an integer tensor.
        src_mask: keep-mask `(batch or 1, 1, src_len)` or `(batch, src_len)`, or `None`.
        max_len: length of the output, the start symbol included.
        start_symbol: the first decoder input (for
            [`data_gen`][vanilla_transformer.data.copy_task.data_gen]'s copy task, `1`).
        end_symbol: if given, a sequence stops once it produces this token, and decoding stops
            early once every sequence has.
        pad_symbol: what to write after a sequence's end symbol; defaults to `end_symbol`.
        use_cache: decode incrementally with a key/value cache (same tokens, less work).

    Returns:
        Token ids `(batch, out_len)` with `out_len <= max_len`, starting with `start_symbol`.

    Raises:
        ValueError: if `max_len` is not positive or longer than the positional table allows, a
            symbol is outside the target vocabulary, `src_mask` has the wrong shape, `src`
            is not `(batch, src_len)` or is empty, or the model's scores for a row are not
            finite (NaN weights, say).
        TypeError: if `src` is not a `torch.long` (or `torch.int32`) tensor or a size or symbol
            is not an int.

    Examples:
        >>> model = make_model(11, 11, N=1).eval()
        >>> src = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 0]])
        >>> ys = greedy_decode(model, src, src != 0, max_len=6, start_symbol=1)
        >>> ys.shape, ys[:, 0].tolist()
        (torch.Size([2, 6]), [1, 1])
        >>> torch.equal(ys, greedy_decode(model, src, src != 0, 6, 1, use_cache=True))
        True
    """
    src_mask = _check_inputs(model, src, src_mask, max_len, start_symbol, end_symbol, pad_symbol)
    memory = model.encode(src, src_mask)
    batch, device = src.size(0), src.device
    ys = torch.full((batch, 1), start_symbol, dtype=src.dtype, device=device)
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    fill = pad_symbol if pad_symbol is not None else end_symbol
    cache = model.decoder.init_cache() if use_cache else None
    broken = torch.zeros(batch, dtype=torch.bool, device=device)  # rows whose scores were NaN/inf
    for _ in range(max_len - 1):
        if cache is None:
            tgt_mask = _target_mask(ys.size(1), device)
            out = model.decoder(model.tgt_embed(ys), memory, src_mask, tgt_mask)
        else:  # one new query, which may attend to every cached position: no target mask
            out = model.decoder(embed_last_position(model, ys), memory, src_mask, None, cache)
        logp = model.generator(out[:, -1])  # (batch, vocab)
        broken |= ~torch.isfinite(logp.amax(dim=-1)) & ~done
        next_word = logp.argmax(dim=-1)  # (batch,)
        if end_symbol is not None:
            next_word = next_word.masked_fill(done, fill)
            done = done | (next_word == end_symbol)
        ys = torch.cat([ys, next_word.unsqueeze(1).to(ys.dtype)], dim=1)
        if end_symbol is not None:
            stop, bad = torch.stack([done.all(), broken.any()]).tolist()  # the step's one sync
            if bad or stop:
                break
    _raise_if_broken(broken)
    return ys


def _raise_if_broken(broken: torch.Tensor) -> None:
    """Refuse the output of rows whose scores were not finite (a model with NaN weights)."""
    if broken.device.type == "meta":  # a tensor without values: nothing to read
        return
    rows = broken.nonzero().flatten().tolist()
    if rows:
        raise ValueError(
            f"the model's scores for batch row(s) {rows} are not finite (NaN or inf): its "
            "weights or its inputs hold NaN or inf, so no output can be decoded"
        )
