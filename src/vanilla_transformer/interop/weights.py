"""Weights shared with PyTorch's `torch.nn.Transformer`, copied in either direction.

Explained on the [PyTorch's nn.Transformer][interop-guide] page.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from ..model.attention import MultiHeadedAttention
from ..model.decoder import Decoder, DecoderLayer
from ..model.encoder import Encoder, EncoderLayer
from ..model.encoder_decoder import EncoderDecoder
from ..model.layers import LayerNorm, SublayerConnection

__all__ = ['load_from_torch', 'to_torch']

_Pairs = list[tuple[torch.Tensor, torch.Tensor]]
"""(package tensor, torch tensor) pairs of the same shape, copied one way or the other."""

M = TypeVar("M")


def _typed(value: object, cls: type[M], where: str) -> M:
    """`value`, checked to be a `cls`: torch types a submodule reached by attribute or index as
    `Tensor | Module`, so each one is checked here, and a mismatch names the module."""
    if not isinstance(value, cls):
        raise ValueError(f"{where}: expected {cls.__name__}, got {type(value).__name__}")
    return value


def _sublayer(layer: EncoderLayer | DecoderLayer, i: int) -> SublayerConnection:
    """The residual connection `i` of a package layer (its norm, dropout and `norm_first`)."""
    return _typed(layer.sublayer[i], SublayerConnection, f"sublayer.{i}")


def _layers(stack: nn.Module, cls: type[M], where: str) -> list[M]:
    """The layers of a stack (the package's or torch's), each checked to be a `cls`."""
    layers = _typed(getattr(stack, "layers", None), nn.ModuleList, f"{where}.layers")
    return [_typed(layer, cls, f"{where}.layers.{i}") for i, layer in enumerate(layers)]


def _mismatch(where: str, what: str, ours: object, theirs: object) -> ValueError:
    return ValueError(f"{where}: {what} differs: the package module has {ours}, torch has {theirs}")


def _linear_pairs(ours: nn.Linear, theirs: nn.Linear, where: str) -> _Pairs:
    if theirs.bias is None:
        raise ValueError(f"{where}: the torch module was built with bias=False; the package's "
                         "linear maps always have a bias")
    if ours.weight.shape != theirs.weight.shape:
        raise _mismatch(where, "weight shape", tuple(ours.weight.shape), tuple(theirs.weight.shape))
    return [(ours.weight, theirs.weight), (ours.bias, theirs.bias)]


def _norm_pairs(ours: nn.Module, theirs: nn.Module | None, where: str) -> _Pairs:
    if isinstance(ours, LayerNorm):
        raise ValueError(
            f"{where}: the package model uses the 'annotated' LayerNorm (unbiased std, eps added "
            "to the std), a different function from nn.LayerNorm; build it with "
            "make_model(..., layer_norm='torch')"
        )
    if not isinstance(theirs, nn.LayerNorm) or not isinstance(ours, nn.LayerNorm):
        raise ValueError(f"{where}: expected nn.LayerNorm on both sides, got "
                         f"{type(ours).__name__} and {type(theirs).__name__}")
    if not theirs.elementwise_affine or theirs.bias is None:
        raise ValueError(f"{where}: the torch LayerNorm has no learnable bias (bias=False or "
                         "elementwise_affine=False); the package's has one")
    if ours.normalized_shape != theirs.normalized_shape:
        raise _mismatch(where, "d_model", ours.normalized_shape, theirs.normalized_shape)
    if ours.eps != theirs.eps:
        raise _mismatch(where, "LayerNorm eps (layer_norm_eps)", ours.eps, theirs.eps)
    return [(ours.weight, theirs.weight), (ours.bias, theirs.bias)]


def _attention_pairs(ours: MultiHeadedAttention, theirs: nn.Module, where: str) -> _Pairs:
    if not isinstance(theirs, nn.MultiheadAttention):
        raise ValueError(f"{where}: expected nn.MultiheadAttention, got {type(theirs).__name__}")
    d_model = ours.h * ours.d_k
    if theirs.embed_dim != d_model:
        raise _mismatch(where, "d_model (embed_dim)", d_model, theirs.embed_dim)
    if theirs.num_heads != ours.h:
        raise _mismatch(where, "the number of heads (h / nhead)", ours.h, theirs.num_heads)
    if not theirs._qkv_same_embed_dim:
        raise ValueError(f"{where}: kdim/vdim differ from embed_dim; the package's attention "
                         "projects queries, keys and values from d_model")
    if theirs.in_proj_bias is None:
        raise ValueError(f"{where}: the torch attention was built with bias=False")
    if theirs.bias_k is not None or theirs.add_zero_attn:
        raise ValueError(f"{where}: add_bias_kv / add_zero_attn have no package equivalent")
    w, b = theirs.in_proj_weight, theirs.in_proj_bias
    linears = [_typed(m, nn.Linear, f"{where}: linears.{i}") for i, m in enumerate(ours.linears)]
    pairs: _Pairs = []
    for i, linear in enumerate(linears[:3]):  # in_proj stacks W^Q, W^K, W^V along the outputs
        rows = slice(i * d_model, (i + 1) * d_model)
        pairs += [(linear.weight, w[rows]), (linear.bias, b[rows])]
    return pairs + _linear_pairs(linears[3], theirs.out_proj, f"{where}.out_proj")


_TorchLayer = nn.TransformerEncoderLayer | nn.TransformerDecoderLayer


def _plain(theirs: nn.Module, cls: type[M], where: str, what: str) -> M:
    """`theirs`, checked to be exactly a `cls` (a subclass may compute something else)."""
    if type(theirs) is not cls:
        raise ValueError(f"{where}: expected a plain {cls.__name__}, got {type(theirs).__name__} "
                         f"({what})")
    return _typed(theirs, cls, where)


def _check_layer(ours: EncoderLayer | DecoderLayer, theirs: _TorchLayer, where: str) -> None:
    act = theirs.activation
    if not (act is F.relu or isinstance(act, nn.ReLU)):
        raise ValueError(f"{where}: the torch layer's activation is {theirs.activation!r}; the "
                         "package's feed-forward network uses relu")
    norm_first = _sublayer(ours, 0).norm_first
    if theirs.norm_first != norm_first:
        raise _mismatch(where, "norm_first", norm_first, theirs.norm_first)
    d_ff = ours.feed_forward.w_1.out_features
    if theirs.linear1.out_features != d_ff:
        raise _mismatch(where, "d_ff (dim_feedforward)", d_ff, theirs.linear1.out_features)


def _ff_norm_pairs(ours: EncoderLayer | DecoderLayer, theirs: _TorchLayer, where: str,
                   norms: list[nn.Module | None]) -> _Pairs:
    """The feed-forward network's pairs, then each sublayer's norm with torch's `norms`."""
    pairs = (_linear_pairs(ours.feed_forward.w_1, theirs.linear1, f"{where}.linear1")
             + _linear_pairs(ours.feed_forward.w_2, theirs.linear2, f"{where}.linear2"))
    for i, norm in enumerate(norms):
        pairs += _norm_pairs(_sublayer(ours, i).norm, norm, f"{where}.norm{i + 1}")
    return pairs


def _encoder_layer_pairs(ours: EncoderLayer, theirs: nn.Module, where: str) -> _Pairs:
    layer = _plain(theirs, nn.TransformerEncoderLayer, where, "a custom layer may compute "
                   "something else")
    _check_layer(ours, layer, where)
    return (_attention_pairs(ours.self_attn, layer.self_attn, f"{where}.self_attn")
            + _ff_norm_pairs(ours, layer, where, [layer.norm1, layer.norm2]))


def _decoder_layer_pairs(ours: DecoderLayer, theirs: nn.Module, where: str) -> _Pairs:
    layer = _plain(theirs, nn.TransformerDecoderLayer, where, "a custom layer may compute "
                   "something else")
    _check_layer(ours, layer, where)
    return (_attention_pairs(ours.self_attn, layer.self_attn, f"{where}.self_attn")
            + _attention_pairs(ours.src_attn, layer.multihead_attn, f"{where}.multihead_attn")
            + _ff_norm_pairs(ours, layer, where, [layer.norm1, layer.norm2, layer.norm3]))


def _layer_pairs(ours: nn.Module, theirs: nn.Module, where: str) -> _Pairs:
    if isinstance(ours, EncoderLayer):
        return _encoder_layer_pairs(ours, theirs, where)
    return _decoder_layer_pairs(_typed(ours, DecoderLayer, where), theirs, where)


def _stack_pairs(ours: Encoder | Decoder, theirs: nn.Module, where: str) -> _Pairs:
    custom = "a custom encoder or decoder cannot be mapped onto the package's"
    stack: nn.TransformerEncoder | nn.TransformerDecoder
    if isinstance(ours, Encoder):
        stack = _plain(theirs, nn.TransformerEncoder, where, custom)
    else:
        stack = _plain(theirs, nn.TransformerDecoder, where, custom)
    mine, torch_layers = _layers(ours, nn.Module, where), _layers(stack, nn.Module, where)
    if len(torch_layers) != len(mine):
        raise _mismatch(where, "the number of layers (N)", len(mine), len(torch_layers))
    pairs: _Pairs = []
    for i, (a, b) in enumerate(zip(mine, torch_layers)):
        pairs += _layer_pairs(a, b, f"{where}.layers.{i}")
    ours_final, theirs_final = not isinstance(ours.norm, nn.Identity), stack.norm is not None
    if ours_final != theirs_final:
        raise ValueError(
            f"{where}: final LayerNorm mismatch: the package stack has "
            f"{'one' if ours_final else 'none'}, torch has {'one' if theirs_final else 'none'}. "
            "nn.Transformer always builds one after each stack, even with norm_first=False; "
            "build the package model with make_model(..., final_norm=True) to match it"
        )
    if ours_final:
        pairs += _norm_pairs(ours.norm, stack.norm, f"{where}.norm")
    return pairs


def _model_pairs(ours: EncoderDecoder, theirs: nn.Module, where: str) -> _Pairs:
    if not isinstance(theirs, nn.Transformer):
        raise ValueError(f"{where}: expected nn.Transformer, got {type(theirs).__name__}")
    return (_stack_pairs(ours.encoder, theirs.encoder, "encoder")
            + _stack_pairs(ours.decoder, theirs.decoder, "decoder"))


_MAPPED = (EncoderDecoder, Encoder, Decoder, EncoderLayer, DecoderLayer, MultiHeadedAttention)
"""The package classes with a `torch.nn` counterpart."""


def _unmapped(ours: nn.Module, verb: str) -> TypeError:
    return TypeError(f"cannot {verb} {type(ours).__name__} onto torch.nn; expected one of "
                     f"{', '.join(cls.__name__ for cls in _MAPPED)}")


def _pairs(ours: nn.Module, theirs: nn.Module) -> _Pairs:
    where = type(theirs).__name__
    if isinstance(ours, EncoderDecoder):
        return _model_pairs(ours, theirs, where)
    if isinstance(ours, (Encoder, Decoder)):
        return _stack_pairs(ours, theirs, where)
    if isinstance(ours, (EncoderLayer, DecoderLayer)):
        return _layer_pairs(ours, theirs, where)
    if isinstance(ours, MultiHeadedAttention):
        return _attention_pairs(ours, theirs, where)
    raise _unmapped(ours, "map")


@torch.no_grad()
def _copy(pairs: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> None:
    for dst, src in pairs:
        dst.copy_(src)


def load_from_torch(model: nn.Module, torch_module: nn.Module) -> nn.Module:
    """Copy the weights of a `torch.nn` transformer module into the package's equivalent.

    Works on matching pairs: an
    [`EncoderDecoder`][vanilla_transformer.model.encoder_decoder.EncoderDecoder] and
    an `nn.Transformer`, an `Encoder` and an `nn.TransformerEncoder`, a `Decoder` and an
    `nn.TransformerDecoder`, an `EncoderLayer` and an `nn.TransformerEncoderLayer`, a
    `DecoderLayer` and an `nn.TransformerDecoderLayer`, a `MultiHeadedAttention` and an
    `nn.MultiheadAttention`. Everything is checked before anything is copied, so a failed call
    leaves `model` unchanged. The embeddings and generator of an `EncoderDecoder` are left alone
    (`nn.Transformer` has none). `batch_first` of the torch module does not matter: it changes
    how inputs are laid out, not the weights. Dropout is not a weight: `model` keeps its own.

    Args:
        model: the package module to fill; for a whole model, one built with
            `make_model(..., layer_norm="torch", norm_first=<same>, final_norm=True)` and the same
            `d_model`, `h`, `d_ff` and `N`.
        torch_module: the `torch.nn` module to read.

    Returns:
        `model`, with its weights replaced.

    Raises:
        ValueError: if the two do not compute the same function: the annotated LayerNorm, a
            different `d_model`, number of heads, `d_ff`, number of layers, `norm_first`, final
            LayerNorm or LayerNorm eps, an activation other than relu, `bias=False`, or a custom
            layer, encoder or decoder class. The message names the offending module.
        TypeError: if `model` is not one of the package classes above, or `torch_module`
            is not an `nn.Module`.

    Examples:
        >>> torch_model = nn.Transformer(32, 4, 1, 1, 64, dropout=0.0, batch_first=True)
        >>> model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, dropout=0.0,
        ...                    layer_norm="torch", norm_first=False, final_norm=True)
        >>> model = load_from_torch(model, torch_model)
        >>> torch.equal(model.encoder.layers[0].feed_forward.w_1.weight,
        ...             torch_model.encoder.layers[0].linear1.weight)
        True
    """
    if not isinstance(torch_module, nn.Module):
        raise TypeError(f"torch_module must be a torch.nn module, got {type(torch_module).__name__}")
    _copy(iter(_pairs(model, torch_module)))
    return model


def _layer_options(first: EncoderLayer | DecoderLayer, kw: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the torch layers that compute what `first` computes."""
    sublayer = _sublayer(first, 0)
    if isinstance(sublayer.norm, LayerNorm):
        raise ValueError(
            "the package model uses the 'annotated' LayerNorm (unbiased std, eps added to the "
            "std), which nn.LayerNorm cannot represent; build it with "
            "make_model(..., layer_norm='torch')"
        )
    norm = _typed(sublayer.norm, nn.LayerNorm, "sublayer.0.norm")
    return dict(d_model=first.size, nhead=first.self_attn.h,
                dim_feedforward=first.feed_forward.w_1.out_features,
                dropout=sublayer.dropout.p, activation="relu", layer_norm_eps=norm.eps,
                batch_first=True, norm_first=sublayer.norm_first, **kw)


def _final_norm(stack: Encoder | Decoder, kw: dict[str, Any]) -> nn.LayerNorm | None:
    """torch's final norm of a stack: `None` where the package's stack has none."""
    if isinstance(stack.norm, nn.Identity):
        return None
    norm = _typed(stack.norm, nn.LayerNorm, "norm")
    return nn.LayerNorm(norm.normalized_shape, eps=norm.eps, **kw)


def _build_torch(ours: nn.Module, allow_no_final_norm: bool) -> nn.Module:
    if not isinstance(ours, _MAPPED):
        raise _unmapped(ours, "build a torch.nn module from")
    param = next(ours.parameters())
    kw: dict[str, Any] = dict(device=param.device, dtype=param.dtype)
    if isinstance(ours, MultiHeadedAttention):
        return nn.MultiheadAttention(ours.h * ours.d_k, ours.h, dropout=ours.dropout.p,
                                     batch_first=True, **kw)
    if isinstance(ours, (EncoderLayer, DecoderLayer)):
        if isinstance(ours, EncoderLayer):
            return nn.TransformerEncoderLayer(**_layer_options(ours, kw))
        return nn.TransformerDecoderLayer(**_layer_options(ours, kw))
    stack = ours.encoder if isinstance(ours, EncoderDecoder) else ours
    first = _layers(stack, nn.Module, "layers")[0]
    if not isinstance(first, (EncoderLayer, DecoderLayer)):
        raise ValueError(f"layers.0: expected a package layer, got {type(first).__name__}")
    layer_kw = _layer_options(first, kw)
    with warnings.catch_warnings():
        # PyTorch warns that pre-norm encoders cannot use its nested-tensor fast path
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        if isinstance(ours, Encoder):
            return nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer_kw),
                                         len(ours.layers), _final_norm(ours, kw))
        if isinstance(ours, Decoder):
            return nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer_kw),
                                         len(ours.layers), _final_norm(ours, kw))
        return _build_transformer(ours, layer_kw, allow_no_final_norm)


def _build_transformer(ours: EncoderDecoder, layer_kw: dict[str, Any],
                       allow_no_final_norm: bool) -> nn.Transformer:
    has_final = [not isinstance(s.norm, nn.Identity) for s in (ours.encoder, ours.decoder)]
    if not all(has_final) and not allow_no_final_norm:
        raise ValueError(
            "the package model has no final LayerNorm after its stacks (the paper's post-norm "
            "arrangement), but nn.Transformer always builds one. Build the model with "
            "make_model(..., final_norm=True), or pass allow_no_final_norm=True to get an "
            "nn.Transformer whose encoder.norm / decoder.norm are None"
        )
    theirs = nn.Transformer(num_encoder_layers=len(ours.encoder.layers),
                            num_decoder_layers=len(ours.decoder.layers), **layer_kw)
    if not has_final[0]:
        theirs.encoder.norm = None
    if not has_final[1]:
        theirs.decoder.norm = None
    return theirs


def to_torch(model: nn.Module, *, allow_no_final_norm: bool = False) -> nn.Module:
    """Build the `torch.nn` module that computes what a package module computes.

    An [`EncoderDecoder`][vanilla_transformer.model.encoder_decoder.EncoderDecoder] becomes an
    `nn.Transformer`
    holding its encoder and decoder stacks (not the embeddings or generator, which
    `nn.Transformer` does not have); an `Encoder`, `Decoder`, `EncoderLayer`, `DecoderLayer` or
    `MultiHeadedAttention` becomes its `torch.nn` counterpart. The result has `batch_first=True`,
    activation relu, the same `norm_first` and LayerNorm eps, the same device and dtype, the same
    training/eval mode, and the sublayer-output dropout rate. A `torch.nn` layer applies that one
    rate to the attention weights and the feed-forward hidden activations too, so a model whose
    `attn_dropout` or `ff_dropout` differs from its `dropout` (the paper presets set them to 0)
    computes the same function only in eval mode or with all dropout at 0.

    Args:
        model: the package module.
        allow_no_final_norm: for an `EncoderDecoder` without final LayerNorms (post-norm built
            with `final_norm=None` or `False`), build the `nn.Transformer` anyway and set its
            `encoder.norm` and `decoder.norm` to `None`. Without it such a model raises, because
            a standard `nn.Transformer` always has both norms.

    Returns:
        The new `torch.nn` module with the package module's weights.

    Raises:
        ValueError: for the annotated LayerNorm, or a missing final LayerNorm without
            `allow_no_final_norm`.
        TypeError: for a module with no `torch.nn` counterpart.

    Examples:
        >>> model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, dropout=0.0,
        ...                    layer_norm="torch", norm_first=True)
        >>> t = to_torch(model)
        >>> type(t).__name__, t.batch_first, t.encoder.layers[0].norm_first
        ('Transformer', True, True)
    """
    if not isinstance(allow_no_final_norm, bool):
        raise TypeError(f"allow_no_final_norm must be a bool, got {allow_no_final_norm!r}")
    theirs = _build_torch(model, allow_no_final_norm)
    # copy package -> torch: the same pairs as load_from_torch, the other way round
    _copy((t, o) for o, t in _pairs(model, theirs))
    return theirs.train(model.training)
