r"""Switches that break a trained model in one place, to watch what fails.

Each switch changes one piece of the paper's model while a `with` block runs, through forward
hooks on the package's modules, so `model/` keeps the paper's equations and the trained
weights are never touched. The hooks sit on the positional encoding and on the projections
$W^Q$ and $W^O$ of the attention modules, which every decoding path of the package calls
through the modules' own forward (the batched decoders of `inference.fast` included, which
`tests/analysis/test_switches.py` checks against a plain forward pass for every switch):

- `"none"`: the model as it is;
- `"no-positions"`: the source's positional encodings are not added (section 3.5): the encoder
  sees a bag of pieces, the same for any order of them;
- `"no-scale"`: the scores are $QK^\top$ instead of $QK^\top / \sqrt{d_k}$ (section 3.2.1), in
  every attention: the query projection's output is multiplied by $\sqrt{d_k}$, which cancels
  the division;
- `"no-cross-attention"`: every cross-attention sublayer adds zero, so the decoder cannot see
  the source and writes the same output for every input;
- `"silence-head"`: one head's slice of the concatenated heads is zeroed before $W^O$
  (section 3.2.2), as if that head had output zeros.

[`record_attention`][vanilla_transformer.analysis.switches.record_attention] keeps every
attention map's scores before the softmax and weights after it. The Try it page and the
lessons run the same switches in the reader's browser (`docs/javascripts/live_model.js`),
checked against these by `tests/docs/test_live_model.py`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..model.attention import MultiHeadedAttention
from ..model.embeddings import PositionalEncoding
from ..model.encoder_decoder import EncoderDecoder
from ..model.masks import mask_fill_value

__all__ = ["SWITCHES", "ATTENTION_KINDS", "switched", "attention_modules", "record_attention"]

SWITCHES = ("none", "no-positions", "no-scale", "no-cross-attention", "silence-head")
"""The switches `switched` accepts."""

ATTENTION_KINDS = ("encoder-self", "decoder-self", "cross")
"""The three kinds of attention in the model, in the order of Figure 1."""


def attention_modules(model: EncoderDecoder) -> dict[tuple[str, int], MultiHeadedAttention]:
    """Every attention module of `model` by `(kind, layer)`, layers counted from 0.

    Examples:
        >>> from vanilla_transformer.model import make_model
        >>> sorted(attention_modules(make_model(11, 11, N=1)))
        [('cross', 0), ('decoder-self', 0), ('encoder-self', 0)]
    """
    modules: dict[tuple[str, int], MultiHeadedAttention] = {}
    for stack, kinds in ((model.encoder, (("encoder-self", "self_attn"),)),
                         (model.decoder, (("decoder-self", "self_attn"), ("cross", "src_attn")))):
        for i, layer in enumerate(stack.layers):
            for kind, name in kinds:
                mha = getattr(layer, name)
                assert isinstance(mha, MultiHeadedAttention)
                modules[kind, i] = mha
    return modules


def _check_switch(model: EncoderDecoder, switch: str, kind: str, layer: int, head: int
                  ) -> tuple[MultiHeadedAttention | None, PositionalEncoding | None]:
    """`switched`'s checks; returns the attention module holding the head to silence (for
    `"silence-head"`) and the source's positional encoding."""
    if not isinstance(model, EncoderDecoder):
        raise TypeError(f"model must be an EncoderDecoder, got {type(model).__name__}")
    if switch not in SWITCHES:
        raise ValueError(f"switch must be one of {SWITCHES}, got {switch!r}")
    target: MultiHeadedAttention | None = None
    if switch == "silence-head":
        if kind not in ATTENTION_KINDS:
            raise ValueError(f"kind must be one of {ATTENTION_KINDS}, got {kind!r}")
        for name, value in (("layer", layer), ("head", head)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int counted from 0, got {value!r}")
        layers = len(model.encoder.layers if kind == "encoder-self" else model.decoder.layers)
        if not 0 <= layer < layers:
            raise ValueError(f"layer must be in [0, {layers}) (counted from 0), got {layer}")
        target = attention_modules(model)[kind, layer]
        if not 0 <= head < target.h:
            raise ValueError(f"head must be in [0, {target.h}) (counted from 0), got {head}")
    position = next((m for m in model.src_embed.modules() if isinstance(m, PositionalEncoding)),
                    None)
    if switch == "no-positions" and position is None:
        raise ValueError("no-positions needs a PositionalEncoding in model.src_embed")
    return target, position


@contextlib.contextmanager
def switched(
    model: EncoderDecoder,
    switch: str,
    *,
    kind: str = "cross",
    layer: int = 0,
    head: int = 0,
) -> Iterator[EncoderDecoder]:
    """Run `model` with one piece switched off while the block runs.

    Args:
        model: an encoder-decoder built by `make_model` (or of the same structure).
        switch: one of `SWITCHES`.
        kind: for `"silence-head"`, the attention holding the head, one of `ATTENTION_KINDS`.
        layer: for `"silence-head"`, the layer, counted from 0 (`model.decoder.layers[layer]`).
        head: for `"silence-head"`, the head, counted from 0.

    Yields:
        `model`, with the switch's hooks in place; they are removed on exit.

    Raises:
        TypeError: if `model` is not an `EncoderDecoder` or `layer`/`head` is not an int.
        ValueError: for an unknown switch or kind, a layer or head out of range, or
            `"no-positions"` on a model whose source embedding has no `PositionalEncoding`.

    Examples:
        >>> from vanilla_transformer.model import make_model
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
        >>> src, tgt = torch.tensor([[1, 2, 3]]), torch.tensor([[1]])
        >>> with switched(model, "no-cross-attention"):
        ...     a = model(src, tgt, None, None)
        ...     b = model(src.flip(1) + 4, tgt, None, None)
        >>> torch.allclose(a, b)
        True
    """
    target, position = _check_switch(model, switch, kind, layer, head)
    modules = attention_modules(model)
    handles: list[torch.utils.hooks.RemovableHandle] = []
    if switch == "no-positions":
        assert position is not None

        def skip_positions(module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
            assert isinstance(module, PositionalEncoding)
            return module.dropout(args[0])  # x instead of x + PE

        handles.append(position.register_forward_hook(skip_positions))
    elif switch == "no-scale":
        for mha in modules.values():
            root_d_k = math.sqrt(mha.d_k)

            def unscale(module: nn.Module, args: tuple[Any, ...], output: Any,
                        root_d_k: float = root_d_k) -> Any:
                return output * root_d_k  # (sqrt(d_k) Q) K^T / sqrt(d_k) = Q K^T

            handles.append(mha.linears[0].register_forward_hook(unscale))
    elif switch == "no-cross-attention":
        for (name, _), mha in modules.items():
            if name == "cross":

                def nothing(module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
                    return torch.zeros_like(output)

                # on W^O, the sublayer's last step, which the batched decoders call too
                handles.append(mha.linears[3].register_forward_hook(nothing))
    elif switch == "silence-head":
        assert target is not None
        start, stop = head * target.d_k, (head + 1) * target.d_k

        def silence(module: nn.Module, args: tuple[Any, ...]) -> Any:
            x = args[0].clone()  # (batch, query_len, h * d_k), the heads concatenated
            x[..., start:stop] = 0
            return (x, *args[1:])

        handles.append(target.linears[3].register_forward_pre_hook(silence))
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def record_attention(
    model: EncoderDecoder,
) -> Iterator[dict[tuple[str, int], tuple[torch.Tensor, torch.Tensor]]]:
    r"""Keep every attention map's scores before the softmax and weights after it.

    For each call of an attention module without a cache the block fills
    `maps[kind, layer] = (scores, weights)`, both `(batch, h, query_len, key_len)`: the scores
    $QK^\top / \sqrt{d_k}$ with masked keys at the mask's fill value (`-1e9` in float32), and
    their softmax. The query and key projections are called again, so a switch's hooks apply.

    Args:
        model: an encoder-decoder.

    Yields:
        The dict, filled as the model runs; the last call of a module wins.

    Examples:
        >>> from vanilla_transformer.model import make_model
        >>> model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
        >>> with record_attention(model) as maps:
        ...     _ = model(torch.tensor([[1, 2, 3]]), torch.tensor([[1, 5]]), None, None)
        >>> scores, weights = maps["cross", 0]
        >>> scores.shape, torch.allclose(weights, scores.softmax(-1))
        (torch.Size([1, 2, 2, 3]), True)
    """
    if not isinstance(model, EncoderDecoder):
        raise TypeError(f"model must be an EncoderDecoder, got {type(model).__name__}")
    maps: dict[tuple[str, int], tuple[torch.Tensor, torch.Tensor]] = {}
    handles = []
    for where, mha in attention_modules(model).items():

        def keep(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any,
                 where: tuple[str, int] = where) -> None:
            assert isinstance(module, MultiHeadedAttention)
            names = ("query", "key", "value", "mask", "cache")
            given = dict(zip(names, args)) | kwargs
            if given.get("cache") is not None:  # one step of cached decoding: a partial map
                return
            q = module.split_heads(module.linears[0](given["query"]))  # (batch, h, q_len, d_k)
            k = module.split_heads(module.linears[1](given["key"]))  # (batch, h, k_len, d_k)
            scores = q @ k.transpose(-2, -1) / math.sqrt(module.d_k)
            mask = given.get("mask")
            if mask is not None:
                scores = scores.masked_fill(mask.unsqueeze(1) == 0, mask_fill_value(scores.dtype))
            maps[where] = (scores.detach(), scores.softmax(-1).detach())

        handles.append(mha.register_forward_hook(keep, with_kwargs=True))
    try:
        yield maps
    finally:
        for handle in handles:
            handle.remove()
