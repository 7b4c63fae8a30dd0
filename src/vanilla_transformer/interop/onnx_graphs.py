"""The two graphs that [`export_onnx`][vanilla_transformer.interop.onnx.export_onnx] traces:
the encoder, and the decoder run on a whole prefix for the next token's log-probabilities,
with the attention weights it may return; and the mode the model is traced in (the
reference attention and LayerNorm, plain ONNX operations).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from ..model.attention import MultiHeadedAttention
from ..model.encoder_decoder import EncoderDecoder
from ..model.layers import LayerNorm

__all__ = ["EncoderGraph", "DecoderGraph", "export_mode"]


def _kept(layer: nn.Module, name: str) -> torch.Tensor:
    """The weights `(batch, h, q, k)` that the attention `layer.<name>` kept in this pass."""
    attn = getattr(layer, name, None)
    weights = attn.attn if isinstance(attn, MultiHeadedAttention) else None
    if weights is None:
        raise ValueError(f"{type(layer).__name__}.{name} kept no attention weights: trace the "
                         "graph inside export_mode(..., keep_all=True)")
    return weights


def _stacked(layers: nn.ModuleList, name: str) -> torch.Tensor:
    """Kept weights `(batch, h, q, k)` of each layer's `name` -> `(batch, N, h, q, k)`."""
    return torch.stack([_kept(layer, name) for layer in layers], dim=1)


class EncoderGraph(nn.Module):
    """`(src, src_mask)` -> `memory`: `EncoderDecoder.encode` without its Python-side checks
    (and, with `attention_weights="all"`, every encoder layer's self-attention)."""

    def __init__(self, model: EncoderDecoder, attention_weights: bool | str = False) -> None:
        super().__init__()
        self.model = model
        self.attention_weights = attention_weights

    def forward(
        self, src: torch.Tensor, src_mask: torch.Tensor
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        memory: torch.Tensor = self.model.encoder(self.model.src_embed(src), src_mask)
        if self.attention_weights != "all":
            return memory
        return memory, _stacked(self.model.encoder.layers, "self_attn")


class DecoderGraph(nn.Module):
    """`(memory, src_mask, ys)` -> log-probabilities of the token after `ys` (and attention)."""

    def __init__(self, model: EncoderDecoder, attention_weights: bool | str) -> None:
        super().__init__()
        self.model = model
        self.attention_weights = attention_weights

    def forward(
        self, memory: torch.Tensor, src_mask: torch.Tensor, ys: torch.Tensor
    ) -> torch.Tensor | tuple[torch.Tensor, ...]:
        # subsequent_mask(tgt_len), written with tensor ops so that tgt_len stays dynamic
        pos = torch.arange(ys.size(1), device=ys.device)
        tgt_mask = (pos.unsqueeze(0) <= pos.unsqueeze(1)).unsqueeze(0)  # (1, tgt_len, tgt_len)
        out = self.model.decoder(self.model.tgt_embed(ys), memory, src_mask, tgt_mask)
        log_probs: torch.Tensor = self.model.generator(out[:, -1])  # (batch, tgt_vocab)
        if not self.attention_weights:
            return log_probs
        layers = self.model.decoder.layers
        attn = _kept(layers[-1], "src_attn")  # (batch, h, tgt_len, src_len)
        last = attn[:, :, -1].mean(dim=1)  # (batch, src_len)
        if self.attention_weights != "all":
            return log_probs, last
        return log_probs, last, _stacked(layers, "self_attn"), _stacked(layers, "src_attn")


@contextlib.contextmanager
def export_mode(model: EncoderDecoder, keep_all: bool = False) -> Iterator[None]:
    """Eval mode, the reference attention and LayerNorm everywhere, the last cross-attention's
    weights kept (every attention's with `keep_all`); every flag, mode and kept weight is
    restored on exit."""
    modes = [(module, module.training) for module in model.modules()]
    attentions = [a for a in model.modules() if isinstance(a, MultiHeadedAttention)]
    saved = [(a.fast, a.keep_attn, a.attn) for a in attentions]
    norms = [(n, n.fast) for n in model.modules() if isinstance(n, LayerNorm)]
    model.eval()
    for n, _ in norms:
        n.fast = False  # mean, std and the formula: plain ONNX ops
    for a in attentions:
        a.fast = False  # the paper's softmax(QK^T / sqrt(d_k)) V: plain ONNX ops, no SDPA
    last_cross = getattr(model.decoder.layers[-1], "src_attn", None)
    if isinstance(last_cross, MultiHeadedAttention):  # the graph returns where it attended
        last_cross.keep_attn = True
    for a in attentions if keep_all else ():
        a.keep_attn = True
    try:
        yield
    finally:
        for module, training in modes:
            module.training = training
        for a, (fast, keep, attn) in zip(attentions, saved):
            a.fast, a.keep_attn, a.attn = fast, keep, attn
        for n, fast in norms:
            n.fast = fast
