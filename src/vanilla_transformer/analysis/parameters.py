r"""Parameter count: how many trainable parameters a Transformer has (paper section 3, Table 3).

Summing the attention blocks, feed-forward networks, LayerNorms, embeddings and generator, with
$f$, $t$, $b$ equal to 1 for a final LayerNorm per stack, tied weights and a generator bias:

$$
P = N\,(12d^2 + 4d\,d_{ff} + 2d_{ff} + 24d) + 4fd + V_{src}\,d + 2(1 - t)\,V_{tgt}\,d + b\,V_{tgt}
$$

Explained on the [Parameter calculator][calculator-guide] page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from .._checks import check_non_negative_int, check_positive_int
from ..config.model import ModelConfig
from ._table import Breakdown, Component, describe, format_table

__all__ = [
    "PARAMETER_FORMULA",
    "Component",
    "ParameterCount",
    "parameter_count_for",
    "parameter_count",
    "ModuleCount",
    "count_parameters",
    "source_terms",
    "source_closed_form",
]

PARAMETER_FORMULA = (
    r"P = N\,(12d^2 + 4d\,d_{ff} + 2d_{ff} + 24d) + 4fd + V_{src}\,d"
    r" + 2(1 - t)\,V_{tgt}\,d + b\,V_{tgt}"
)
"""The general closed form as LaTeX: `f`, `t`, `b` are 1 for a final LayerNorm per stack, tied
weights and a generator bias, else 0."""


def _component(name: str) -> property:
    return property(lambda self: self[name], doc=f"The `{name}` component.")


@dataclass(frozen=True)
class ParameterCount(Breakdown):
    """The trainable parameters of a model described by a `ModelConfig`, by component.

    Tied weights are counted once: the shared matrix belongs to `src_embedding` (it is the source
    embedding's tensor that the model reuses), `tgt_embedding` then reports 0 and `generator`
    only its bias.

    Attributes:
        config: the configuration counted.
        components: `attention` (the $3N$ multi-head attention modules), `feed_forward` ($2N$),
            `layer_norm` (one per sublayer and, when present, one after each stack),
            `src_embedding`, `tgt_embedding` and `generator`, in that order; each is also an
            attribute (`count.attention`), and `count["attention"]` works too.
        buffers: elements of the positional-encoding tables (two of `max_len * d_model`), which
            the model saves but never trains; not part of `total`.
        total: the number of unique trainable parameters.

    Examples:
        >>> pc = parameter_count(11, 11, N=2)
        >>> pc.total, pc.attention.blocks, pc.attention.per_block
        (14731787, 6, 1050624)
    """

    config: ModelConfig
    components: tuple[Component, ...]
    buffers: int

    attention = _component("attention")
    feed_forward = _component("feed_forward")
    layer_norm = _component("layer_norm")
    src_embedding = _component("src_embedding")
    tgt_embedding = _component("tgt_embedding")
    generator = _component("generator")

    @property
    def formula(self) -> str:
        r"""The closed form for this configuration's options, as LaTeX (symbolic in the sizes).

        Examples:
            >>> parameter_count(11, 11, N=2, tie_weights=True, generator_bias=False).formula
            'P = N\\,(12d^2 + 4d\\,d_{ff} + 2d_{ff} + 24d) + 4d + V\\,d'
        """
        c = self.config
        terms = [r"N\,(12d^2 + 4d\,d_{ff} + 2d_{ff} + 24d)"]
        if c.has_final_norm:
            terms.append("4d")
        if c.tie_weights:
            terms.append(r"V\,d")
            if c.generator_bias:
                terms.append("V")
        else:
            terms.append(r"(V_{src} + 2V_{tgt})\,d")
            if c.generator_bias:
                terms.append("V_{tgt}")
        return "P = " + " + ".join(terms)

    def table(self) -> str:
        """A readable breakdown: one line per component, the total, and the buffers.

        Examples:
            >>> print(parameter_count(11, 11, N=2).table().splitlines()[-1])
            positional-encoding buffers (saved, not trained): 5,120,000
        """
        return "\n".join([
            f"parameters of {describe(self.config)}",
            format_table(self.components, "parameters", self.total),
            f"positional-encoding buffers (saved, not trained): {self.buffers:,}",
        ])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary: total, buffers, components and formula."""
        return dict(total=self.total, buffers=self.buffers, formula=self.formula,
                    components=self.components_dict())


def parameter_count_for(config: ModelConfig) -> ParameterCount:
    """Count the parameters of the model a `ModelConfig` describes, without building it.

    Args:
        config: the configuration.

    Returns:
        A [`ParameterCount`][vanilla_transformer.analysis.parameters.ParameterCount].

    Raises:
        TypeError: if `config` is not a `ModelConfig`.

    Examples:
        >>> parameter_count_for(ModelConfig(11, 11, N=2)).total
        14731787
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    d, d_ff, n = config.d_model, config.d_ff, config.N
    final = 2 if config.has_final_norm else 0
    tied = config.tie_weights
    bias = config.tgt_vocab if config.generator_bias else 0
    components = (
        Component("attention", 4 * d * d + 4 * d, 3 * n),
        Component("feed_forward", 2 * d * d_ff + d_ff + d, 2 * n),
        Component("layer_norm", 2 * d, 5 * n + final),
        Component("src_embedding", config.src_vocab * d, 1,
                  "shared with tgt_embedding and generator" if tied else ""),
        Component("tgt_embedding", 0 if tied else config.tgt_vocab * d, 1,
                  "tied: counted in src_embedding" if tied else ""),
        Component("generator", bias + (0 if tied else config.tgt_vocab * d), 1,
                  "tied: bias only" if tied else ""),
    )
    return ParameterCount(config, components, buffers=2 * config.max_len * d)


def parameter_count(src_vocab: int, tgt_vocab: int, *sizes: Any, **options: Any) -> ParameterCount:
    """Count the trainable parameters `make_model` would create with the same arguments.

    The arguments are those of
    [`make_model`][vanilla_transformer.model.encoder_decoder.make_model], passed on to
    [`ModelConfig`][vanilla_transformer.model.config.ModelConfig] unchanged. Nothing is built.
    Shared (tied) weights are counted once, so `total` equals
    `count_parameters(make_model(...)).total`. Only the sizes, `tie_weights`, `final_norm` (or
    `norm_first`, which sets its default) and `generator_bias` change the count; the other
    options are checked all the same.

    Args:
        src_vocab: source vocabulary size (0 allowed).
        tgt_vocab: target vocabulary size (0 allowed).
        *sizes: `N, d_model, d_ff, h, dropout` by position, as `make_model` takes them.
        **options: any field of `ModelConfig` by name.

    Returns:
        A [`ParameterCount`][vanilla_transformer.analysis.parameters.ParameterCount].

    Raises:
        ValueError: for the same bad arguments as `make_model`.
        TypeError: for a non-integer size or an unknown option.

    Examples:
        >>> pc = parameter_count(11, 11, 2)
        >>> pc.total == sum(p.numel() for p in make_model(11, 11, 2).parameters())
        True
        >>> parameter_count(11, 11, d_model=500, h=8)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: d_model must be divisible by h ... got d_model=500, h=8 (d_model % h = 4)
    """
    return parameter_count_for(ModelConfig(src_vocab, tgt_vocab, *sizes, **options))


@dataclass(frozen=True)
class ModuleCount:
    """The trainable parameters of a real module, by direct child.

    Attributes:
        total: unique trainable parameter elements; a tensor reachable from several places
            (tied weights) is counted once.
        children: `(name, count)` for each direct child in registration order, plus
            `("(direct)", count)` first when the module holds parameters itself. A shared tensor
            is attributed to the first child that holds it.
        frozen: unique parameter elements with `requires_grad=False` (not in `total`).
        buffers: unique buffer elements (e.g. positional-encoding tables).
    """

    total: int
    children: tuple[tuple[str, int], ...]
    frozen: int
    buffers: int

    @property
    def breakdown(self) -> dict[str, int]:
        """The per-child counts as a dict."""
        return dict(self.children)

    def table(self) -> str:
        """The per-child counts, the total, and the frozen and buffer elements as text."""
        width = max([len(n) for n, _ in self.children] + [5])
        number = max([len(f"{c:,}") for _, c in self.children] + [len(f"{self.total:,}")])
        lines = [f"{n.ljust(width)}  {c:>{number},}" for n, c in self.children]
        lines += ["-" * (width + number + 2), f"{'total'.ljust(width)}  {self.total:>{number},}",
                  f"frozen parameters: {self.frozen:,}; buffer elements: {self.buffers:,}"]
        return "\n".join(lines)


def count_parameters(module: nn.Module) -> ModuleCount:
    """Count the unique trainable parameters of any module, with a breakdown by direct child.

    Tensors are identified by object identity, so a matrix shared by several submodules (tied
    embeddings) is counted once, in the first child (registration order) that holds it; this is
    also what `module.parameters()` yields, since it skips repeated tensors.

    Args:
        module: any `nn.Module`.

    Returns:
        A [`ModuleCount`][vanilla_transformer.analysis.parameters.ModuleCount].

    Raises:
        TypeError: if `module` is not an `nn.Module`.

    Examples:
        >>> model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
        >>> counts = count_parameters(model)
        >>> counts.total == parameter_count(11, 11, N=1, d_model=32, d_ff=64, h=4,
        ...                                 tie_weights=True).total
        True
        >>> [counts.breakdown[name] for name in ("src_embed", "tgt_embed", "generator")]
        [352, 0, 11]
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be an nn.Module, got {type(module).__name__}")
    seen: set[int] = set()

    def take(params: Any) -> tuple[int, int]:
        trainable = frozen = 0
        for p in params:
            if id(p) in seen:
                continue
            seen.add(id(p))
            if p.requires_grad:
                trainable += p.numel()
            else:
                frozen += p.numel()
        return trainable, frozen

    own, frozen = take(module.parameters(recurse=False))
    children = [("(direct)", own)] if own else []
    for name, child in module.named_children():
        trainable, frz = take(child.parameters())
        children.append((name, trainable))
        frozen += frz
    buffers = sum(b.numel() for b in {id(b): b for b in module.buffers()}.values())
    return ModuleCount(sum(c for _, c in children), tuple(children), frozen, buffers)


def source_terms(d_model: int = 512, vocab: int = 0) -> dict[str, int]:
    """The four terms of the closed form derived in the source-code tour, for `N = 6`, `d_ff = 4 d`.

    The tour is the one the [source code exploration][transformer-source-code-exploration]
    page follows; its section 5 counts:

    - 5.1 attention: 18 blocks (6 encoder, 12 decoder) of $4(d^2 + d)$: $72d^2 + 72d$.
    - 5.2 feed-forward: 12 blocks of $d \\cdot 4d + 4d + 4d \\cdot d + d = 8d^2 + 5d$:
      $96d^2 + 60d$.
    - 5.3 LayerNorm: $6 \\cdot 2 + 6 \\cdot 3 + 2 = 32$ blocks of $2d$: $64d$.
    - 5.4 embeddings: **one** $vocab \\times d$ matrix, because the article assumes the source
      embedding, the target embedding and the generator share it, and that the generator has
      no bias.

    Args:
        d_model: the width `d`.
        vocab: the shared vocabulary size.

    Returns:
        `{"attention": ..., "feed_forward": ..., "layer_norm": ..., "embedding": ...}`.

    Raises:
        ValueError: if `d_model` is not positive or `vocab` is negative.

    Examples:
        >>> source_terms(512, 0)
        {'attention': 18911232, 'feed_forward': 25196544, 'layer_norm': 32768, 'embedding': 0}
    """
    d = check_positive_int("d_model", d_model)
    v = check_non_negative_int("vocab", vocab)
    return {
        "attention": 18 * 4 * (d * d + d),
        "feed_forward": 12 * (8 * d * d + 5 * d),
        "layer_norm": 32 * 2 * d,
        "embedding": v * d,
    }


def source_closed_form(d_model: int = 512, vocab: int = 0) -> int:
    """The source-code tour's total $168d^2 + 196d + vocab \\cdot d$ (its section 5.5).

    It is the sum of [`source_terms`][vanilla_transformer.analysis.parameters.source_terms]. It
    counts the model only when the embeddings and the generator are tied **and** the generator
    has no bias, with `N = 6` and `d_ff = 4 d`. The Annotated Transformer's `make_model` ties
    nothing and keeps the bias, so it has $2 \\cdot vocab \\cdot d + vocab$ parameters more (a
    second embedding matrix, the generator's matrix and its bias).

    Args:
        d_model: the width `d`.
        vocab: the shared vocabulary size.

    Returns:
        The closed-form total.

    Raises:
        ValueError: if `d_model` is not positive or `vocab` is negative.

    Examples:
        >>> v, d = 37000, 512
        >>> source_closed_form(d, v) == 168 * d**2 + 196 * d + v * d
        True
        >>> source_closed_form(d, v) == parameter_count(v, v, tie_weights=True,
        ...                                             generator_bias=False).total
        True
        >>> parameter_count(v, v).total - source_closed_form(d, v) == 2 * v * d + v
        True
    """
    return sum(source_terms(d_model, vocab).values())
