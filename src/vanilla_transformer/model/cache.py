"""The key/value cache of one attention module, for decoding one token at a time.

When the decoder generates token `t`, the keys and values of positions `0..t-1` are the same as
at the step before; the cache keeps them so that each step projects only the new position.
Taught in the lesson [Decoding][cached-decoding].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = ["KVCache"]


@dataclass
class KVCache:
    """Projected keys and values of one attention module, kept between decoding steps.

    A self-attention cache (`static=False`) grows by one position per generated token; a
    cross-attention cache (`static=True`) is filled once from the encoder output and reused.

    Attributes:
        static: whether the keys and values are computed once and reused.
        k: cached keys `(batch, h, key_len, d_k)`, or `None` before the first step.
        v: cached values `(batch, h, key_len, d_k)`, or `None` before the first step.

    Examples:
        >>> cache = KVCache(static=False)
        >>> step = lambda: (torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4))
        >>> _ = cache.update(step); k, v = cache.update(step)
        >>> k.shape  # two steps cached
        torch.Size([1, 2, 2, 4])
    """

    static: bool
    k: torch.Tensor | None = None
    v: torch.Tensor | None = None

    def update(
        self, project: Callable[[], tuple[torch.Tensor, torch.Tensor]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return all keys and values so far, calling `project()` for the new ones if needed.

        A filled static cache returns what it holds without calling `project`; otherwise the new
        keys and values are appended along the length axis.
        """
        if self.static and self.k is not None and self.v is not None:
            return self.k, self.v
        k, v = project()
        if self.k is not None and self.v is not None:
            k, v = torch.cat([self.k, k], dim=2), torch.cat([self.v, v], dim=2)
        self.k, self.v = k, v
        return k, v

    def reorder(self, index: torch.Tensor) -> None:
        """Select batch rows (e.g. surviving beams) in place: `k = k[index]`."""
        if self.k is not None and self.v is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)
