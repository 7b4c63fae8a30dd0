r"""Token embeddings, the sinusoidal positional encoding and the output generator (paper
sections 3.4 and 3.5).

$$
PE_{(pos, 2i)} = \sin(pos / 10000^{2i/d_{model}})
\qquad
PE_{(pos, 2i+1)} = \cos(pos / 10000^{2i/d_{model}})
$$

Embeddings are multiplied by $\sqrt{d_{model}}$. Taught in the lesson
[Positions][positions-lesson].
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.functional import log_softmax

from .._checks import (
    check_dropout,
    check_non_negative_int,
    check_positive_int,
)

__all__ = ['Embeddings', 'sinusoid_table', 'PositionalEncoding', 'Generator']


class Embeddings(nn.Module):
    r"""Learned token embeddings scaled by $\sqrt{d_{model}}$.

    Args:
        d_model: embedding width.
        vocab: vocabulary size (0 is allowed: an empty table).

    Attributes:
        lut: the lookup table, an `nn.Embedding(vocab, d_model)`.

    Raises:
        ValueError: if `d_model` is not positive or `vocab` is negative.

    Examples:
        >>> emb = Embeddings(d_model=512, vocab=11)
        >>> emb(torch.tensor([[1, 2, 3]])).shape
        torch.Size([1, 3, 512])
    """

    def __init__(self, d_model: int, vocab: int) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_non_negative_int("vocab", vocab)
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed token ids `(batch, seq_len)` into `(batch, seq_len, d_model)`."""
        return self.lut(x) * math.sqrt(self.d_model)


def sinusoid_table(max_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal positional-encoding table.

    Even features hold sines and odd features cosines; pair `i` has the wavelength
    $2\\pi \\cdot 10000^{2i/d_{model}}$, a geometric progression from $2\\pi$ towards the
    paper's $10000 \\cdot 2\\pi$ (the last pair reaches $2\\pi \\cdot 10000^{(d_{model}-2)/d_{model}}$:
    $2\\pi \\cdot 9647$ for `d_model = 512`). An odd `d_model` is supported (the last feature is a
    sine).

    Args:
        max_len: number of positions.
        d_model: number of features.

    Returns:
        A float tensor of shape `(max_len, d_model)`.

    Examples:
        >>> pe = sinusoid_table(50, 16)
        >>> pe.shape, pe[0, :4].tolist()
        (torch.Size([50, 16]), [0.0, 1.0, 0.0, 1.0])
        >>> two_i = torch.arange(0, 16, 2)  # pair i's frequency is 1 / 10000^(2i/d_model)
        >>> torch.allclose(pe[1, 0::2], torch.sin(10000 ** (-two_i / 16)))
        True
        >>> round(10000 ** (510 / 512))  # the last pair's wavelength / 2 pi, d_model = 512
        9647
    """
    check_non_negative_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
    div_term = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model)
    )  # (ceil(d_model / 2),)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe


class PositionalEncoding(nn.Module):
    """Add sinusoidal position information to embeddings, then apply dropout.

    Args:
        d_model: embedding width.
        dropout: dropout on the sum, in [0, 1).
        max_len: the longest sequence supported.

    Attributes:
        pe: the buffer of shape `(1, max_len, d_model)` (see
            [`sinusoid_table`][vanilla_transformer.model.embeddings.sinusoid_table]).

    Raises:
        ValueError: for a non-positive size or a dropout outside [0, 1).

    Examples:
        >>> pos = PositionalEncoding(d_model=16, dropout=0.0)
        >>> torch.equal(pos(torch.zeros(1, 3, 16))[0], pos.pe[0, :3])
        True
    """

    pe: torch.Tensor  # the registered buffer (1, max_len, d_model)

    def __init__(self, d_model: int, dropout: float, max_len: int = 5000) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("max_len", max_len)
        check_dropout(dropout)
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("pe", sinusoid_table(max_len, d_model).unsqueeze(0))

    @property
    def max_len(self) -> int:
        """The longest sequence this table covers."""
        return self.pe.size(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Add the encodings of positions `0..seq_len-1` to `x` `(batch, seq_len, d_model)`."""
        return self.dropout(x + self.pe[:, : x.size(1)])


class Generator(nn.Module):
    """The final linear projection and log-softmax over the target vocabulary.

    Args:
        d_model: input width.
        vocab: target vocabulary size.
        bias: whether the projection has a bias (the Annotated Transformer's `nn.Linear` does).

    Attributes:
        proj: the `nn.Linear(d_model, vocab)` projection.

    Examples:
        >>> gen = Generator(512, 11)
        >>> logp = gen(torch.randn(2, 7, 512))
        >>> logp.shape, bool(torch.allclose(logp.exp().sum(-1), torch.ones(2, 7)))
        (torch.Size([2, 7, 11]), True)
    """

    def __init__(self, d_model: int, vocab: int, *, bias: bool = True) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_non_negative_int("vocab", vocab)
        self.proj = nn.Linear(d_model, vocab, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map `(batch, seq_len, d_model)` (or `(batch, d_model)`) to log-probabilities over the
        vocabulary, `(batch, seq_len, vocab)` (or `(batch, vocab)`)."""
        return log_softmax(self.proj(x), dim=-1)
