r"""Shape tracing: the tensor shapes that enter and leave every module in one real forward pass.

Every sublayer keeps the model's width (paper section 3.1), and attention splits it into $h$
heads (section 3.2.2):

$$
(\mathrm{batch}, \mathrm{seq\_len}, d_{model}) \to (\mathrm{batch}, h, \mathrm{seq\_len}, d_k),
\qquad d_k = d_{model} / h
$$

Explained on the [Tracing the data flow][tracing-the-data-flow] page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ['Shape', 'OutputShape', 'ShapeRecord', 'trace_shapes', 'format_shape_table']

Shape = tuple[int, ...]
"""A tensor shape as a plain tuple of ints, e.g. `(1, 10, 512)`."""

OutputShape = Shape | tuple[Shape, ...] | None
"""A module output's shape: one `Shape`, a tuple of them, or `None` when it returned no tensor."""


@dataclass(frozen=True)
class ShapeRecord:
    """The shapes seen by one call of one module.

    Attributes:
        path: the module's dotted name inside the traced model, as in `model.named_modules()`,
            e.g. `"encoder.layers.0.self_attn"`; `""` for the model itself.
        module: the module's class name, e.g. `"MultiHeadedAttention"`.
        inputs: the shapes of the tensor arguments, positional first and then keyword, in the
            order they were passed; non-tensor arguments (callables, caches, `None`) are skipped.
        output: the output's shape if the module returned one tensor, a tuple of shapes if it
            returned several, or `None` if it returned none.

    Examples:
        >>> r = ShapeRecord("encoder.layers.0", "EncoderLayer", ((1, 10, 512),), (1, 10, 512))
        >>> r.depth, r.name
        (3, '0')
    """

    path: str
    module: str
    inputs: tuple[Shape, ...]
    output: OutputShape

    @property
    def depth(self) -> int:
        """How deep the module sits: 0 for the model itself, 1 for its children, and so on."""
        return _depth(self.path)

    @property
    def name(self) -> str:
        """The last part of `path` (the attribute or list index that holds the module)."""
        return self.path.rsplit(".", 1)[-1]


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in `value`, looking inside tuples, lists and dict values."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _output_shape(value: Any) -> OutputShape:
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    shapes = tuple(tuple(t.shape) for t in _tensors(value))
    if not shapes:
        return None
    return shapes[0] if len(shapes) == 1 else shapes


def _depth(path: str) -> int:
    return 0 if path == "" else path.count(".") + 1


def _is_selected(name: str, module: nn.Module, max_depth: int | None, leaf_only: bool) -> bool:
    if max_depth is not None and _depth(name) > max_depth:
        return False
    return not (leaf_only and next(module.children(), None) is not None)


def trace_shapes(
    model: nn.Module,
    *args: Any,
    fn: Callable[..., Any] | None = None,
    max_depth: int | None = None,
    leaf_only: bool = False,
    **kwargs: Any,
) -> list[ShapeRecord]:
    """Run one real forward pass and record the shapes at every submodule.

    Hooks are put on `model` and every module inside it, `fn(*args, **kwargs)` is called once
    (by default `model(*args, **kwargs)`), and every hook is removed again afterwards, also when
    the call raises. The pass runs under `torch.no_grad()`; dropout behaves as the model's mode
    says, so call `model.eval()` first if the values (not only the shapes) matter.

    Args:
        model: the module whose submodules are traced.
        *args: positional arguments for `fn`.
        fn: what to call instead of `model` itself, e.g. `model.encode`, `model.decode` or
            `lambda: greedy_decode(model, ...)`; only modules inside `model` are traced.
        max_depth: keep only modules at most this deep (0 = the model itself, 1 = its children,
            ...); `None` keeps every depth.
        leaf_only: keep only modules without children (linear maps, embeddings, dropouts,
            LayerNorms).
        **kwargs: keyword arguments for `fn`.

    Returns:
        One [`ShapeRecord`][vanilla_transformer.analysis.tracing.ShapeRecord] per module call, in the
        order the calls started (parents before their children). A module called several times
        (for example by a decoding loop) has one record per call.

    Raises:
        TypeError: if `model` is not an `nn.Module` or `fn` is not callable.
        ValueError: if `max_depth` is negative.
        Exception: whatever the forward pass raises, after the hooks are removed.

    Examples:
        >>> from vanilla_transformer.analysis import trace_shapes
        >>> model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4)
        >>> src = torch.tensor([[1, 2, 3, 4]])
        >>> records = trace_shapes(model, src, torch.ones(1, 1, 4), fn=model.encode, max_depth=1)
        >>> [(r.path, r.module, r.output) for r in records]
        [('src_embed', 'Sequential', (1, 4, 32)), ('encoder', 'Encoder', (1, 4, 32))]
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if fn is None:
        fn = model
    elif not callable(fn):
        raise TypeError(f"fn must be callable (e.g. model.encode), got {type(fn).__name__}")
    if max_depth is not None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int):
            raise TypeError(f"max_depth must be an int or None, got {max_depth!r}")
        if max_depth < 0:
            raise ValueError(f"max_depth must be >= 0 (0 = the model itself), got {max_depth}")

    # a slot is reserved when a call starts and filled when it ends, so the order is call order
    slots: list[list[Any]] = []
    open_calls: dict[int, list[list[Any]]] = {}
    handles = []

    def make_hooks(name: str, module: nn.Module) -> tuple[Callable[..., None], Callable[..., None]]:
        def pre_hook(mod: nn.Module, a: tuple[Any, ...], kw: dict[str, Any]) -> None:
            inputs = tuple(tuple(t.shape) for t in _tensors((a, kw)))
            slot = [name, type(mod).__name__, inputs, None]
            slots.append(slot)
            open_calls.setdefault(id(mod), []).append(slot)

        def post_hook(mod: nn.Module, a: tuple[Any, ...], kw: dict[str, Any], out: Any) -> None:
            open_calls[id(mod)].pop()[3] = _output_shape(out)

        return pre_hook, post_hook

    try:
        for name, module in model.named_modules():
            if not _is_selected(name, module, max_depth, leaf_only):
                continue
            pre_hook, post_hook = make_hooks(name, module)
            handles.append(module.register_forward_pre_hook(pre_hook, with_kwargs=True))
            handles.append(module.register_forward_hook(post_hook, with_kwargs=True))
        with torch.no_grad():
            fn(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return [ShapeRecord(*slot) for slot in slots]


def _format_shape(shape: Shape) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _format_output(output: OutputShape) -> str:
    if output is None:
        return "-"
    if output and isinstance(output[0], tuple):
        return ", ".join(_format_shape(s) for s in output)
    # one shape: mypy cannot narrow the union by its first item's type, checked above
    return _format_shape(output)  # type: ignore[arg-type]  # a tuple of ints here


def format_shape_table(records: Sequence[ShapeRecord], *, inputs: bool = True) -> str:
    """Render shape records as an aligned plain-text table.

    Args:
        records: records from [`trace_shapes`][vanilla_transformer.analysis.tracing.trace_shapes].
        inputs: include the column of input shapes.

    Returns:
        A table with one line per record under a header line: module path (`(model)` for the
        model itself), class name, input shapes (comma-separated) and output shape. Lines carry
        no trailing spaces.

    Examples:
        >>> from vanilla_transformer.analysis import ShapeRecord, format_shape_table
        >>> print(format_shape_table([
        ...     ShapeRecord("src_embed.0", "Embeddings", ((1, 10),), (1, 10, 512)),
        ...     ShapeRecord("encoder", "Encoder", ((1, 10, 512), (1, 1, 10)), (1, 10, 512)),
        ... ]))
        path         module      inputs                    output
        src_embed.0  Embeddings  (1, 10)                   (1, 10, 512)
        encoder      Encoder     (1, 10, 512), (1, 1, 10)  (1, 10, 512)
    """
    header = ["path", "module", "inputs", "output"] if inputs else ["path", "module", "output"]
    rows = [header]
    for r in records:
        row = [r.path or "(model)", r.module]
        if inputs:
            row.append(", ".join(_format_shape(s) for s in r.inputs) or "-")
        row.append(_format_output(r.output))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)
