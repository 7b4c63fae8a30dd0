r"""The hyperparameters of a model, checked once, in one place, without PyTorch.

[`ModelConfig`][vanilla_transformer.model.config.ModelConfig] holds every argument of
[`make_model`][vanilla_transformer.model.encoder_decoder.make_model]. The calculator, the command
line and checkpoints all take or derive from it, so a model can be described, costed and rebuilt
without building it. The paper's two sizes are presets (Table 3). Its checks are written here
again in plain Python (`_checks` needs PyTorch): the same messages.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

__all__ = ["LAYER_NORMS", "ModelConfig", "PAPER_OPTIONS", "PRESETS", "MAX_SEED"]

LAYER_NORMS = ("annotated", "torch")
"""The LayerNorm flavours (`vanilla_transformer.model.layers.LAYER_NORMS`; a test checks they agree)."""

MAX_SEED = 2**63 - 1
"""The largest seed accepted (`torch.manual_seed` takes 64-bit seeds)."""


def check_int(name: str, value: object, low: int = 1) -> int:
    """Return `value` if it is an int >= `low` (1 or 0), else raise naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < low:
        raise ValueError(f"{name} must be a positive int, got {value}" if low == 1
                         else f"{name} must be an int >= {low}, got {value}")
    return value


def check_probability(value: object, name: str = "dropout") -> float:
    """Return `value` if it is a probability in [0, 1), else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {value!r}")
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def check_number(name: str, value: object, *, positive: bool = True) -> float:
    """Return `value` if it is a finite (and positive) number, else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or (positive and not value > 0):
        raise ValueError(f"{name} must be a positive, finite number, got {value!r}")
    return float(value)


def check_seed(value: object, name: str = "seed") -> int:
    """Return `value` if it is an int seed in `[0, MAX_SEED]`, else raise."""
    check_int(name, value, 0)
    if value > MAX_SEED:  # type: ignore[operator]
        raise ValueError(f"{name} must be at most 2**63 - 1 = {MAX_SEED}, got {value}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class ModelConfig:
    """Every argument of `make_model`, validated on construction.

    Each field's `metadata["help"]` is its one-sentence help on the command line; the entries
    below say more.

    Args:
        src_vocab: source vocabulary size (0 allowed: no source embedding rows).
        tgt_vocab: target vocabulary size (0 allowed).
        N: number of encoder layers and of decoder layers.
        d_model: model width.
        d_ff: feed-forward hidden width.
        h: number of attention heads; must divide `d_model`.
        dropout: dropout probability in [0, 1).
        tie_weights: share one matrix between the source embedding, the target embedding and
            the generator (paper section 3.4). Needs `src_vocab == tgt_vocab`.
        norm_first: pre-norm residual blocks (the Annotated Transformer) or post-norm (the paper).
        layer_norm: `"annotated"` (unbiased std, eps 1e-6 added to the std) or `"torch"`
            (`nn.LayerNorm`: biased variance, eps 1e-5 inside the square root).
        final_norm: whether each stack ends with a LayerNorm. `None` means "as the
            arrangement needs": yes for pre-norm, no for the paper's post-norm. `True` with
            post-norm matches `torch.nn.Transformer`, which always has one.
        generator_bias: whether the generator's projection has a bias (the Annotated Transformer's has).
        max_len: length of the positional-encoding table.
        attn_dropout: dropout on the attention weights. `None` (the default) uses `dropout`, as
            the Annotated Transformer does; the paper applies dropout only to each sublayer's
            output and to the embedding sums (section 5.4), so its presets set `0.0`.
        ff_dropout: dropout on the feed-forward network's hidden activations, between the ReLU
            and `W_2`. `None` (the default) uses `dropout`, as the Annotated Transformer does;
            the paper's presets set `0.0` for the same reason as `attn_dropout`.

    Raises:
        ValueError: for a non-positive size, `d_model % h != 0`, a dropout outside [0, 1), an
            unknown LayerNorm flavour, or `tie_weights=True` with different vocabularies.
        TypeError: for a non-integer size.

    Examples:
        >>> cfg = ModelConfig(11, 11, N=2)
        >>> cfg.d_model, cfg.has_final_norm
        (512, True)
    """

    src_vocab: int = field(metadata={
        "help": "source vocabulary size (0 allowed: no source embedding rows)"})
    tgt_vocab: int = field(metadata={"help": "target vocabulary size (0 allowed)"})
    N: int = field(default=6, metadata={
        "help": "number of encoder layers and of decoder layers"})
    d_model: int = field(default=512, metadata={"help": "model width"})
    d_ff: int = field(default=2048, metadata={"help": "feed-forward hidden width"})
    h: int = field(default=8, metadata={
        "help": "number of attention heads; must divide `d_model`"})
    dropout: float = field(default=0.1, metadata={"help": "dropout probability in [0, 1)"})
    tie_weights: bool = field(default=False, metadata={
        "help": "share one matrix between the source embedding, the target embedding and the "
                "generator (paper section 3.4)"})
    norm_first: bool = field(default=True, metadata={
        "help": "pre-norm residual blocks (the Annotated Transformer) or post-norm (the paper)"})
    layer_norm: str = field(default="annotated", metadata={
        "help": '`"annotated"` (unbiased std, eps 1e-6 added to the std) or `"torch"` '
                "(`nn.LayerNorm`: biased variance, eps 1e-5 inside the square root)"})
    final_norm: bool | None = field(default=None, metadata={
        "help": "whether each stack ends with a LayerNorm"})
    generator_bias: bool = field(default=True, metadata={
        "help": "whether the generator's projection has a bias (the Annotated Transformer's "
                "has)"})
    max_len: int = field(default=5000, metadata={
        "help": "length of the positional-encoding table"})
    attn_dropout: float | None = field(default=None, metadata={
        "help": "dropout on the attention weights"})
    ff_dropout: float | None = field(default=None, metadata={
        "help": "dropout on the feed-forward network's hidden activations, between the ReLU "
                "and `W_2`"})

    def __post_init__(self) -> None:
        check_int("src_vocab", self.src_vocab, 0)
        check_int("tgt_vocab", self.tgt_vocab, 0)
        for name in ("N", "d_model", "d_ff", "h"):
            check_int(name, getattr(self, name))
        if self.d_model % self.h != 0:
            raise ValueError(
                f"d_model must be divisible by h so every head gets d_k = d_model / h features; "
                f"got d_model={self.d_model}, h={self.h} (d_model % h = {self.d_model % self.h})"
            )
        check_probability(self.dropout)
        for name in ("attn_dropout", "ff_dropout"):
            if getattr(self, name) is not None:
                check_probability(getattr(self, name), name)
        if not isinstance(self.layer_norm, str) or self.layer_norm not in LAYER_NORMS:
            raise ValueError(f"layer_norm must be one of {LAYER_NORMS}, got {self.layer_norm!r}")
        check_int("max_len", self.max_len)
        if self.layer_norm == "annotated" and self.d_model < 2:
            raise ValueError(
                f"layer_norm='annotated' needs d_model >= 2 (it uses the unbiased std); "
                f"got d_model={self.d_model}"
            )
        for name in ("tie_weights", "norm_first", "generator_bias"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.final_norm is not None and not isinstance(self.final_norm, bool):
            raise TypeError(f"final_norm must be a bool or None, got {self.final_norm!r}")
        if self.tie_weights and self.src_vocab != self.tgt_vocab:
            raise ValueError(
                "tie_weights=True shares one embedding matrix between source, target and "
                f"generator, so the vocabularies must be equal; got src_vocab={self.src_vocab}, "
                f"tgt_vocab={self.tgt_vocab}"
            )

    @property
    def d_k(self) -> int:
        """Per-head width `d_model // h`."""
        return self.d_model // self.h

    @property
    def attention_dropout(self) -> float:
        """Dropout on the attention weights (resolves `attn_dropout=None` to `dropout`)."""
        return self.dropout if self.attn_dropout is None else self.attn_dropout

    @property
    def feed_forward_dropout(self) -> float:
        """Dropout on the feed-forward hidden activations (resolves `ff_dropout=None`)."""
        return self.dropout if self.ff_dropout is None else self.ff_dropout

    @property
    def has_final_norm(self) -> bool:
        """Whether each stack ends with a LayerNorm (resolves `final_norm=None`)."""
        return self.norm_first if self.final_norm is None else self.final_norm

    def to_dict(self) -> dict[str, Any]:
        """The configuration as a plain dict (JSON-serialisable)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Rebuild a configuration from `to_dict`'s output; unknown keys raise `ValueError`."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"unknown ModelConfig fields {unknown}; expected some of {sorted(known)}"
            )
        return cls(**data)

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with some fields changed (and validated again)."""
        return replace(self, **changes)


PAPER_OPTIONS: dict[str, Any] = dict(
    norm_first=False, tie_weights=True, generator_bias=False, layer_norm="torch",
    attn_dropout=0.0, ff_dropout=0.0,
)
"""The options that turn the defaults into the paper's arrangement, whatever the sizes."""

PRESETS: dict[str, dict[str, Any]] = {
    "base": dict(N=6, d_model=512, d_ff=2048, h=8, dropout=0.1),
    "big": dict(N=6, d_model=1024, d_ff=4096, h=16, dropout=0.3),
    "paper-base": dict(N=6, d_model=512, d_ff=2048, h=8, dropout=0.1, **PAPER_OPTIONS),
    "paper-big": dict(N=6, d_model=1024, d_ff=4096, h=16, dropout=0.3, **PAPER_OPTIONS),
}
"""Named sets of `ModelConfig` fields; the vocabulary is chosen separately.

- `base`, `big`: Table 3's sizes in the Annotated Transformer's arrangement (pre-norm, untied
  embeddings, a generator with a bias, dropout on the attention weights and the feed-forward
  hidden activations too).
- `paper-base`, `paper-big`: the paper's model: Table 3's sizes, post-norm residual blocks
  (section 3.1), one weight matrix shared by both embeddings and the pre-softmax projection
  (section 3.4, which needs one vocabulary for both languages), no generator bias (the paper
  names only the shared matrix), `nn.LayerNorm`, and dropout only on sublayer outputs and
  embedding sums (section 5.4): none on
  the attention weights or inside the feed-forward network.
"""
