"""The model's decoder run one position at a time over a batch whose rows come and go.

The batched decoders of [`inference.fast`][vanilla_transformer.inference.fast] call the
model's own modules, as [`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode]
does with `use_cache=True`: each decoder layer's sublayers, its attention modules with a
key/value cache, the final norm and `model.generator`. Every hook on those modules (the
switches of [`analysis.switches`][vanilla_transformer.analysis.switches] among them) reaches
them. What differs is how the keys and values are kept, in a subclass of
[`KVCache`][vanilla_transformer.model.cache.KVCache] that the attention modules fill through
the same `update` call, and how the beams meet the source:

- the self-attention cache keeps its keys and values time first, `(room, rows, h, d_k)`, and
  writes one position a step in place (where `KVCache` concatenates the whole prefix again);
  reordering the beams copies the positions written into a second buffer, one
  `index_select`, and the two buffers take turns;
- the source-attention cache (a static `KVCache`) is filled on the first step, one row per
  source, and shared by that source's beams, which reach the source attention as the
  queries of one row; it is copied only when a finished source leaves the batch.

Taught in the lesson [Decoding][decoding-lesson].
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from ..model.cache import KVCache
from ..model.decoder import DecoderLayer
from ..model.encoder_decoder import EncoderDecoder
from .greedy import embed_last_position

__all__ = ["SelfCache", "DecoderSteps"]


class SelfCache(KVCache):
    """A self-attention cache written in place, one position a step, in two buffers that
    take turns when the rows are reordered.

    Examples:
        >>> cache = SelfCache()
        >>> step = lambda: (torch.ones(3, 2, 1, 4), torch.zeros(3, 2, 1, 4))
        >>> _ = cache.update(step); k, v = cache.update(step)
        >>> k.shape, bool((k == 1).all())  # (rows, h, positions, d_k)
        (torch.Size([3, 2, 2, 4]), True)
        >>> cache.reorder(torch.tensor([2, 0]))  # row 0 continues row 2, row 1 row 0
        >>> cache.update(lambda: (torch.ones(2, 2, 1, 4), torch.zeros(2, 2, 1, 4)))[0].shape
        torch.Size([2, 2, 3, 4])
    """

    def __init__(self) -> None:
        super().__init__(static=False)
        self.length = 0
        self.keys = torch.empty(0)  # (room, rows, h, d_k), the first `length` positions written
        self.values = torch.empty(0)
        self.spare: list[torch.Tensor] = []  # the other buffers, reused by reorder

    def update(
        self, project: Callable[[], tuple[torch.Tensor, torch.Tensor]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new position's keys and values; return all of them, `(rows, h, t, d_k)`."""
        k, v = project()  # (rows, h, 1, d_k)
        t = self.length + 1
        if self.keys.size(0) < t:  # no room: twice as many positions, the written ones copied
            room = max(16, 2 * self.keys.size(0))
            self.keys = self._grown(self.keys, k, room)
            self.values = self._grown(self.values, v, room)
            self.spare = []
        self.keys[t - 1] = k[:, :, 0]
        self.values[t - 1] = v[:, :, 0]
        self.length = t
        self.k, self.v = (x[:t].permute(1, 2, 0, 3) for x in (self.keys, self.values))
        return self.k, self.v

    def _grown(self, old: torch.Tensor, new: torch.Tensor, room: int) -> torch.Tensor:
        rows, h, _, d_k = new.shape
        grown = new.new_empty(room, rows, h, d_k)
        if self.length:
            grown[: self.length] = old[: self.length]
        return grown

    def reorder(self, index: torch.Tensor) -> None:
        """Row `j` continues row `index[j]`."""
        t = self.length
        moved = []
        for old in (self.keys, self.values):
            shape = (old.size(0), index.size(0), *old.shape[2:])
            new = self.spare.pop() if self.spare else old.new_empty(0)
            if new.numel() < shape[0] * shape[1] * shape[2] * shape[3]:
                new = old.new_empty(shape)
            new = new.view(-1)[: shape[0] * shape[1] * shape[2] * shape[3]].view(shape)
            torch.index_select(old[:t], 1, index, out=new[:t])
            moved.append(new)
        self.spare = [self.keys, self.values]
        self.keys, self.values = moved
        self.k, self.v = (x[:t].permute(1, 2, 0, 3) for x in (self.keys, self.values))


class DecoderSteps:
    """`model`'s decoder run one position at a time for `n` sources: a `SelfCache` and a
    static `KVCache` (the source attention's) for each layer.

    Each layer's three sublayers run as `DecoderLayer.forward` runs them, with one
    difference: the source attention sees the beams of a source as the queries of one row,
    `(n, beams, d_model)`, so that they share the source's keys and values (one product per
    source and head, where `(n * beams, 1, d_model)` would copy them `beams` times).

    Args:
        model: the encoder-decoder, in eval mode, its decoder layers `DecoderLayer`s.
        memory: the encoder's output `(n, src_len, d_model)`.
        src_mask: the source keep-mask `(n or 1, 1, src_len)`, or `None`.
    """

    def __init__(self, model: EncoderDecoder, memory: torch.Tensor,
                 src_mask: torch.Tensor | None) -> None:
        self.model, self.memory, self.mask = model, memory, src_mask
        self.layers = [layer for layer in model.decoder.layers if isinstance(layer, DecoderLayer)]
        self.caches = [(SelfCache(), KVCache(static=True)) for _ in self.layers]

    def __call__(self, ys: torch.Tensor) -> torch.Tensor:
        """Log-probabilities `(rows, vocab)` of the next token after the prefixes `ys`
        `(rows, t)`, where `rows` is `n` times the beams of each source."""
        x = embed_last_position(self.model, ys)  # (rows, 1, d_model)
        for layer, (self_cache, source_cache) in zip(self.layers, self.caches, strict=True):
            x = layer.sublayer[0](x, partial(self._self_attention, layer.self_attn, self_cache))
            x = layer.sublayer[1](x, partial(self._source_attention, layer.src_attn,
                                             source_cache))
            x = layer.sublayer[2](x, layer.feed_forward)
        logp: torch.Tensor = self.model.generator(self.model.decoder.norm(x)[:, -1])
        return logp.float()

    @staticmethod
    def _self_attention(attn: nn.Module, cache: SelfCache, x: torch.Tensor) -> torch.Tensor:
        # one new query a row, which may attend to every cached position: no target mask
        out: torch.Tensor = attn(x, x, x, None, cache)
        return out

    def _source_attention(self, attn: nn.Module, cache: KVCache, x: torch.Tensor
                          ) -> torch.Tensor:
        n = self.memory.size(0)
        beams = x.view(n, -1, x.size(-1))  # (n, beams, d_model): a source's beams as queries
        out: torch.Tensor = attn(beams, self.memory, self.memory, self.mask, cache)
        return out.view(x.shape)

    def reorder(self, follow: torch.Tensor, sources: torch.Tensor | None = None) -> None:
        """Row `j` continues row `follow[j]`; `sources` keeps those sources only."""
        for self_cache, source_cache in self.caches:
            self_cache.reorder(follow)
            if sources is not None:
                source_cache.reorder(sources)
        if sources is not None:
            self.memory = self.memory.index_select(0, sources)
            if self.mask is not None and self.mask.size(0) != 1:
                self.mask = self.mask.index_select(0, sources)
