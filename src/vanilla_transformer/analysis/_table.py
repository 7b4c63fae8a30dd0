r"""Cost tables: the layout shared by the parameter, FLOP and memory counts.

Every count is a list of components, each `blocks` identical blocks of `per_block`, and its
total is the sum of their subtotals. `Component` lives here, beside the tables that lay it
out, and is imported from `analysis.parameters`; this module imports none of the counts:

$$
\text{total} = \sum_i \text{per\_block}_i \cdot \text{blocks}_i
$$

Explained on the [Parameter calculator][calculator-guide] page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.model import ModelConfig

__all__ = ['Component', 'Breakdown', 'format_table', 'describe']


@dataclass(frozen=True)
class Component:
    """One line of a cost breakdown: `blocks` identical blocks of `per_block` each.

    The same shape serves parameters, FLOPs and bytes.

    Attributes:
        name: what is counted, e.g. `"attention"`.
        per_block: the cost of one block.
        blocks: how many such blocks the model has.
        note: a short remark shown in tables (e.g. which component holds a shared matrix).

    Examples:
        >>> Component("attention", per_block=10, blocks=3).subtotal
        30
    """

    name: str
    per_block: int
    blocks: int
    note: str = ""

    @property
    def subtotal(self) -> int:
        """`per_block * blocks`."""
        return self.per_block * self.blocks

    def to_dict(self) -> dict[str, Any]:
        """The component as a JSON-serialisable dict (with its subtotal)."""
        return dict(per_block=self.per_block, blocks=self.blocks, subtotal=self.subtotal,
                    note=self.note)


class Breakdown:
    """The total, the lookup by name and the JSON form of a dataclass with `components`."""

    components: tuple[Component, ...]

    @property
    def total(self) -> int:
        """The sum of the components' subtotals."""
        return sum(c.subtotal for c in self.components)

    @property
    def breakdown(self) -> dict[str, Component]:
        """The components by name."""
        return {c.name: c for c in self.components}

    def __getitem__(self, name: str) -> Component:
        return self.breakdown[name]

    def components_dict(self) -> dict[str, dict[str, Any]]:
        """The components as JSON-serialisable dicts, by name."""
        return {c.name: c.to_dict() for c in self.components}


def format_table(components: tuple[Component, ...], unit: str, total: int) -> str:
    """Lay components out as an aligned text table ending with their total."""
    rows = [("component", "per block", "blocks", unit, "")]
    rows += [(c.name, f"{c.per_block:,}", str(c.blocks), f"{c.subtotal:,}", c.note)
             for c in components]
    rows.append(("total", "", "", f"{total:,}", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, r in enumerate(rows):
        cells = [r[0].ljust(widths[0])] + [r[j].rjust(widths[j]) for j in (1, 2, 3)]
        lines.append(("  ".join(cells) + ("  " + r[4] if r[4] else "")).rstrip())
        if i == 0 or i == len(rows) - 2:
            lines.append("-" * (sum(widths) + 6))
    return "\n".join(lines)


def describe(config: ModelConfig, options: bool = True) -> str:
    """`make_model(...)` with a configuration's sizes, and its options on a second line."""
    call = (f"make_model({config.src_vocab}, {config.tgt_vocab}, N={config.N}, "
            f"d_model={config.d_model}, d_ff={config.d_ff}, h={config.h})")
    if not options:
        return call
    chosen = [
        "tied" if config.tie_weights else "untied",
        "pre-norm" if config.norm_first else "post-norm",
        f"{config.layer_norm} LayerNorm",
        "final norm" if config.has_final_norm else "no final norm",
        "generator bias" if config.generator_bias else "no generator bias",
    ]
    if config.attention_dropout != config.dropout:
        chosen.append(f"attention-weight dropout {config.attention_dropout}")
    if config.feed_forward_dropout != config.dropout:
        chosen.append(f"feed-forward dropout {config.feed_forward_dropout}")
    return f"{call}\n  {', '.join(chosen)}"
