r"""Forward FLOPs: the matrix multiplications of one forward pass (paper sections 3.2 to 3.4).

For a batch of $B$ pairs of $S$ source and $T$ target tokens, at 2 FLOPs per multiply-add:

$$
F = 4NBd\,\big[(3d + d_{ff})(S + T) + S^2 + ST + T^2\big] + 2BTd\,V_{tgt}
$$

Explained on the [Parameter calculator][calculator-guide] page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._checks import check_positive_int
from ..config.model import ModelConfig
from ._table import Breakdown, describe, format_table
from .parameters import Component

__all__ = ['FLOP_FORMULA', 'FlopCount', 'forward_flops_for', 'forward_flops']

FLOP_FORMULA = (
    r"F = 4NBd\,\big[(3d + d_{ff})(S + T) + S^2 + ST + T^2\big] + 2BTd\,V_{tgt}"
)
"""The forward-pass FLOPs as LaTeX ($B$ batch, $S$ source and $T$ target length)."""


@dataclass(frozen=True)
class FlopCount(Breakdown):
    """Forward-pass FLOPs (matrix multiplications only, 2 per multiply-add) by component.

    Attributes:
        config: the model configuration.
        batch: sentence pairs per batch.
        src_len: source length `S`.
        tgt_len: target length `T` (decoder input positions, all fed at once).
        components: one [`Component`][vanilla_transformer.analysis.parameters.Component] per
            line of the FLOP table on the guide page, `per_block` being one layer's FLOPs.
        total: FLOPs of one forward pass, generator included.

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
    def training_total(self) -> int:
        """FLOPs of one training step, estimated as three forward passes: the usual rule of
        thumb that a backward pass costs about twice the forward (not counted here)."""
        return 3 * self.total

    def table(self) -> str:
        """A readable breakdown with the forward and training totals.

        Examples:
            >>> print(forward_flops(11, 11, N=2, batch=1, src_len=10, tgt_len=10).table()
            ...       .splitlines()[-1])
            training step (about 3x forward): 884,828,160 FLOPs
        """
        return "\n".join([
            f"forward FLOPs of {describe(self.config, options=False)}",
            f"  batch={self.batch}, src_len={self.src_len}, tgt_len={self.tgt_len}",
            format_table(self.components, "FLOPs", self.total),
            f"training step (about 3x forward): {self.training_total:,} FLOPs",
        ])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary."""
        return dict(batch=self.batch, src_len=self.src_len, tgt_len=self.tgt_len,
                    total=self.total, training_total=self.training_total,
                    components=self.components_dict())


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
    *sizes: Any,
    batch: int,
    src_len: int,
    tgt_len: int,
    **options: Any,
) -> FlopCount:
    """Forward FLOPs of `model.generator(model(src, tgt, src_mask, tgt_mask))` for the model
    `make_model` builds with the same arguments.

    `EncoderDecoder.forward` stops before the generator; the count includes it, since training
    applies it to every target position. Only the sizes change the count; the other options
    change no matrix product but are checked as `make_model` checks them.

    Args:
        src_vocab: source vocabulary size.
        tgt_vocab: target vocabulary size (the generator's output width).
        *sizes: `N, d_model, d_ff, h, dropout` by position, as `make_model` takes them.
        batch: sentence pairs per batch.
        src_len: source length `S`.
        tgt_len: target length `T`.
        **options: any field of [`ModelConfig`][vanilla_transformer.model.config.ModelConfig]
            by name; the lengths must not exceed `max_len`.

    Returns:
        A [`FlopCount`][vanilla_transformer.analysis.flops.FlopCount].

    Raises:
        ValueError: for the same bad arguments as `make_model`, a non-positive batch or
            length, or a length above `max_len`.
        TypeError: for a non-integer size or an unknown option.

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
    config = ModelConfig(src_vocab, tgt_vocab, *sizes, **options)
    return forward_flops_for(config, batch=batch, src_len=src_len, tgt_len=tgt_len)
