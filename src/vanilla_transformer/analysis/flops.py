r"""Floating-point operations of one forward pass, by component (paper sections 3.2 to 3.4).

Only matrix multiplications are counted, at **2 FLOPs per multiply-add**, because they are
nearly all of the work and because that is what `torch.utils.flop_counter.FlopCounterMode`
counts (`mm`, `addmm`, `bmm`, `baddbmm` and the fused attention kernels). Bias additions,
softmax, LayerNorm, dropout and ReLU are left out: each costs $O(\text{tokens} \cdot d)$ against
$O(\text{tokens} \cdot d^2)$ for the matrix products.

For a batch of $B$ pairs of $S$ source and $T$ target tokens, with $d = d_{model}$:

| component | FLOPs per layer |
| --- | --- |
| encoder self-attention projections $W^Q, W^K, W^V, W^O$ | $8BSd^2$ |
| encoder attention scores $QK^\top$ and weighted sum with $V$ | $4BS^2d$ |
| encoder feed-forward | $4BSd\,d_{ff}$ |
| decoder self-attention projections | $8BTd^2$ |
| decoder attention scores and weighted sum (masked scores too) | $4BT^2d$ |
| cross-attention $W^Q$ and $W^O$ (per target token) | $4BTd^2$ |
| cross-attention $W^K$ and $W^V$ (per **source** token: they read the encoder output) | $4BSd^2$ |
| cross-attention scores and weighted sum | $4BTSd$ |
| decoder feed-forward | $4BTd\,d_{ff}$ |

plus the generator once, $2BTd\,V_{tgt}$ (`FlopCounterMode` sees it as `addmm`, or `mm` without
a bias). The embedding lookup is indexing, not arithmetic, and the scaling by $\sqrt{d}$ is
elementwise, so tied or not the embeddings add nothing. The causal mask does not save work:
the masked scores are computed, then discarded. Altogether

$$
F = 4NBd\,\big[(3d + d_{ff})(S + T) + S^2 + ST + T^2\big] + 2BTd\,V_{tgt}
$$

The number of heads does not appear: $h$ heads of width $d/h$ cost what one head of width $d$
costs. Both attention paths of
[`MultiHeadedAttention`][vanilla_transformer.model.attention.MultiHeadedAttention] do the same
multiplications, and a fused projection (self-attention's $W^Q, W^K, W^V$, or cross-attention's
$W^K, W^V$, applied as one `F.linear` with the matrices concatenated) costs what separate ones
cost. One caveat when measuring: without dropout (evaluation mode, or `dropout=0`) the fast
path on CPU runs the fused kernel `_scaled_dot_product_flash_attention_for_cpu`, which
`FlopCounterMode` has no formula for, so it reports only the projections there (pass it the
formula through `custom_mapping`, as the guide page shows).

A training step costs about three forward passes (`training_total`): the backward pass of every
matrix product $Y = XW$ computes two products of the same size, $\partial L/\partial X$ and
$\partial L/\partial W$. With every input requiring a gradient this is exact for the counted
products, as a test against `FlopCounterMode` on forward plus backward checks.

Explained on the *Parameter calculator* guide page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._checks import check_positive_int
from ..model.config import ModelConfig
from .parameters import Component, _describe, _format_table

__all__ = ['FLOP_FORMULA', 'FlopCount', 'forward_flops_for', 'forward_flops']

FLOP_FORMULA = (
    r"F = 4NBd\,\big[(3d + d_{ff})(S + T) + S^2 + ST + T^2\big] + 2BTd\,V_{tgt}"
)
"""The forward-pass FLOPs as LaTeX ($B$ batch, $S$ source and $T$ target length)."""


@dataclass(frozen=True)
class FlopCount:
    """Forward-pass FLOPs (matrix multiplications only, 2 per multiply-add) by component.

    Attributes:
        config: the model configuration.
        batch: sentence pairs per batch.
        src_len: source length `S`.
        tgt_len: target length `T` (decoder input positions, all fed at once).
        components: one [`Component`][vanilla_transformer.analysis.parameters.Component] per line of the
            table in the module notes, `per_block` being one layer's FLOPs.

    Examples:
        >>> fc = forward_flops(11, 11, N=2, batch=1, src_len=10, tgt_len=10)
        >>> fc.total, fc.training_total == 3 * fc.total
        (294942720, True)
    """

    config: ModelConfig
    batch: int
    src_len: int
    tgt_len: int
    components: tuple[Component, ...]

    @property
    def total(self) -> int:
        """FLOPs of one forward pass, generator included."""
        return sum(c.subtotal for c in self.components)

    @property
    def training_total(self) -> int:
        """FLOPs of one training step: forward plus a backward pass of twice the forward."""
        return 3 * self.total

    @property
    def breakdown(self) -> dict[str, Component]:
        """The components by name."""
        return {c.name: c for c in self.components}

    def __getitem__(self, name: str) -> Component:
        return self.breakdown[name]

    def table(self) -> str:
        """A readable breakdown with the forward and training totals.

        Examples:
            >>> print(forward_flops(11, 11, N=2, batch=1, src_len=10, tgt_len=10).table()
            ...       .splitlines()[-1])
            training step (about 3x forward): 884,828,160 FLOPs
        """
        return "\n".join([
            f"forward FLOPs of {_describe(self.config, options=False)}",
            f"  batch={self.batch}, src_len={self.src_len}, tgt_len={self.tgt_len}",
            _format_table(self.components, "FLOPs", self.total),
            f"training step (about 3x forward): {self.training_total:,} FLOPs",
        ])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary."""
        return dict(batch=self.batch, src_len=self.src_len, tgt_len=self.tgt_len,
                    total=self.total, training_total=self.training_total,
                    components={c.name: c.to_dict() for c in self.components})


def forward_flops_for(config: ModelConfig, *, batch: int, src_len: int, tgt_len: int) -> FlopCount:
    """Forward FLOPs of the model a `ModelConfig` describes, on one batch.

    Args:
        config: the configuration.
        batch: sentence pairs per batch.
        src_len: source length.
        tgt_len: target length.

    Returns:
        A [`FlopCount`][vanilla_transformer.analysis.flops.FlopCount].

    Raises:
        ValueError: if a length or the batch is not positive, or a length exceeds `max_len`.
        TypeError: if `config` is not a `ModelConfig` or a size is not an int.

    Examples:
        >>> forward_flops_for(ModelConfig(11, 11, N=2), batch=1, src_len=10, tgt_len=10).total
        294942720
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    B = check_positive_int("batch", batch)
    S = check_positive_int("src_len", src_len)
    T = check_positive_int("tgt_len", tgt_len)
    if max(S, T) > config.max_len:
        raise ValueError(f"src_len={S} and tgt_len={T} must not exceed max_len={config.max_len}")
    d, d_ff, n = config.d_model, config.d_ff, config.N
    components = (
        Component("encoder_self_attn_proj", 8 * B * S * d * d, n),
        Component("encoder_self_attn_scores", 4 * B * S * S * d, n),
        Component("encoder_feed_forward", 4 * B * S * d * d_ff, n),
        Component("decoder_self_attn_proj", 8 * B * T * d * d, n),
        Component("decoder_self_attn_scores", 4 * B * T * T * d, n),
        Component("cross_attn_q_o_proj", 4 * B * T * d * d, n),
        Component("cross_attn_kv_proj", 4 * B * S * d * d, n, "per source token"),
        Component("cross_attn_scores", 4 * B * T * S * d, n),
        Component("decoder_feed_forward", 4 * B * T * d * d_ff, n),
        Component("generator", 2 * B * T * d * config.tgt_vocab, 1),
    )
    return FlopCount(config, B, S, T, components)


def forward_flops(
    src_vocab: int,
    tgt_vocab: int,
    N: int = 6,
    d_model: int = 512,
    d_ff: int = 2048,
    h: int = 8,
    dropout: float = 0.1,
    *,
    batch: int,
    src_len: int,
    tgt_len: int,
    tie_weights: bool = False,
    norm_first: bool = True,
    layer_norm: str = "annotated",
    final_norm: bool | None = None,
    generator_bias: bool = True,
    max_len: int = 5000,
) -> FlopCount:
    """Forward FLOPs of `model.generator(model(src, tgt, src_mask, tgt_mask))` for the model
    `make_model` builds with the same arguments.

    `EncoderDecoder.forward` stops before the generator; the count includes it, since training
    applies it to every target position. The options other than the sizes do not change the
    count (they change no matrix product) but are checked as `make_model` checks them.

    Args:
        src_vocab: source vocabulary size.
        tgt_vocab: target vocabulary size (the generator's output width).
        N: layers per stack.
        d_model: model width.
        d_ff: feed-forward hidden width.
        h: heads (must divide `d_model`; does not change the count).
        dropout: dropout probability (checked only).
        batch: sentence pairs per batch.
        src_len: source length `S`.
        tgt_len: target length `T`.
        tie_weights: see `make_model`.
        norm_first: see `make_model`.
        layer_norm: see `make_model`.
        final_norm: see `make_model`.
        generator_bias: see `make_model`.
        max_len: see `make_model`; the lengths must not exceed it.

    Returns:
        A [`FlopCount`][vanilla_transformer.analysis.flops.FlopCount].

    Raises:
        ValueError: for the same bad arguments as `make_model`, a non-positive batch or
            length, or a length above `max_len`.
        TypeError: for a non-integer size.

    Examples:
        >>> import torch.utils.flop_counter as fc
        >>> model = make_model(7, 9, N=1, d_model=32, d_ff=64, h=4)  # training mode
        >>> src, tgt = torch.randint(0, 7, (2, 5)), torch.randint(0, 9, (2, 3))
        >>> with fc.FlopCounterMode(display=False) as counter:
        ...     _ = model.generator(model(src, tgt, None, subsequent_mask(3)))
        >>> counter.get_total_flops() == forward_flops(
        ...     7, 9, N=1, d_model=32, d_ff=64, h=4, batch=2, src_len=5, tgt_len=3).total
        True
    """
    config = ModelConfig(
        src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout,
        tie_weights=tie_weights, norm_first=norm_first, layer_norm=layer_norm,
        final_norm=final_norm, generator_bias=generator_bias, max_len=max_len,
    )
    return forward_flops_for(config, batch=batch, src_len=src_len, tgt_len=tgt_len)
