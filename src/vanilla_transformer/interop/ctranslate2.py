r"""CTranslate2 export: the model and its vocabulary as a CTranslate2 model folder, and
translation with it.

[CTranslate2](https://opennmt.net/CTranslate2/) runs Transformer translation models in C++,
optionally with 8-bit weights. Its `TransformerSpec` describes the same network as
[`make_model`][vanilla_transformer.model.encoder_decoder.make_model] with the torch LayerNorm:
embeddings scaled by $\sqrt{d_{model}}$, a table of positions added to them, post-norm or
pre-norm layers, the fused query/key/value projections of the self-attention, and a final
projection to the vocabulary. This module copies each weight into the spec, writes the positional
table itself (the package interleaves sines and cosines; CTranslate2's built-in table puts the
sines first, so it is not used), and saves the folder: `model.bin`, `config.json` and
`shared_vocabulary.json`.

Two conventions differ between the two decoders and are set here or named where they bite:

- the source ends with `</s>` in the package; the folder's config says `add_source_eos`, so
  CTranslate2 appends it to the tokens it is given;
- the length penalty: the package divides a hypothesis' log-probability by GNMT's
  $((5 + |Y|) / 6)^\alpha$, CTranslate2 (`length_penalty=alpha`) by $|Y|^\alpha$; both count
  `</s>` in $|Y|$ (CTranslate2 4.8.5 counts it even when `return_end_token=False` leaves it out
  of the output). With $\alpha = 0$ both rank by the log-probability alone and the beams agree;
  [`translate_ctranslate2`][vanilla_transformer.interop.ctranslate2.translate_ctranslate2]
  with `rescore=True` ranks CTranslate2's finished hypotheses by the package's penalty instead.

Explained on the [Deployment][deployment-guide] page.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .._checks import check_existing_folder, check_non_negative_int, check_positive_int
from ..data.tokenizer import SPECIAL_TOKENS, UNK
from ..inference.beam import length_penalty
from ..model.attention import MultiHeadedAttention
from ..model.embeddings import Embeddings, PositionalEncoding
from ..model.encoder_decoder import EncoderDecoder
from ..model.layers import SublayerConnection
from .weights import _typed

if TYPE_CHECKING:
    from ..data.tokenizer import SharedTokenizer

__all__ = ["QUANTIZATIONS", "export_ctranslate2", "ctranslate2_spec", "translate_ctranslate2"]

QUANTIZATIONS = (None, "float32", "int8", "int8_float32", "int16", "float16", "bfloat16",
                 "int8_float16", "int8_bfloat16")
"""The weight types `export_ctranslate2(..., quantization=...)` accepts (`None`: as trained)."""

def _array(tensor: torch.Tensor) -> Any:
    # a copy: CTranslate2 quantizes the arrays it is given in place, and .numpy() of a CPU
    # float32 tensor would share the model's own memory
    return tensor.detach().to("cpu", torch.float32, copy=True).contiguous().numpy()


def _linear(spec: Any, *linears: nn.Linear) -> None:
    """Fill a CTranslate2 `LinearSpec` with `linears` stacked along the output axis (one
    linear: itself; three: the fused query/key/value projection)."""
    spec.weight = _array(torch.cat([lin.weight for lin in linears]))
    if linears[0].bias is not None:
        spec.bias = _array(torch.cat([lin.bias for lin in linears if lin.bias is not None]))


def _norm(spec: Any, norm: nn.Module) -> None:
    assert isinstance(norm, nn.LayerNorm)  # checked by _architecture
    spec.gamma = _array(norm.weight)
    spec.beta = _array(norm.bias)


def _embedding(embed: nn.Module, what: str) -> tuple[nn.Embedding, PositionalEncoding]:
    lut = next((m for m in embed.modules() if isinstance(m, Embeddings)), None)
    position = next((m for m in embed.modules() if isinstance(m, PositionalEncoding)), None)
    if lut is None or position is None:
        raise ValueError(f"the model's {what} must hold an Embeddings and a PositionalEncoding "
                         "(as make_model builds it)")
    return lut.lut, position


def _architecture(model: EncoderDecoder) -> dict[str, Any]:
    """What the spec needs to know, read from the modules; refuses what CTranslate2 cannot run
    exactly."""
    if not isinstance(model, EncoderDecoder):
        raise TypeError(f"model must be an EncoderDecoder (from make_model), got "
                        f"{type(model).__name__}")
    enc_layers, dec_layers = list(model.encoder.layers), list(model.decoder.layers)
    if not enc_layers or not dec_layers:
        raise ValueError("the model's encoder and decoder need at least one layer each")
    sublayers = [_typed(s, SublayerConnection, f"{type(layer).__name__}.sublayer")
                 for layer in enc_layers + dec_layers for s in _typed(
                     getattr(layer, "sublayer", None), nn.ModuleList, type(layer).__name__)]
    norms = [s.norm for s in sublayers]
    norms += [m for m in (model.encoder.norm, model.decoder.norm) if not isinstance(m, nn.Identity)]
    odd = next((type(n).__name__ for n in norms if not isinstance(n, nn.LayerNorm)), None)
    if odd is not None:
        raise ValueError(f"CTranslate2 computes torch.nn.LayerNorm, and this model has {odd} "
                         "(layer_norm='annotated': the unbiased std, eps added to it); build "
                         "the model with layer_norm='torch' to export it")
    eps = {n.eps for n in norms if isinstance(n, nn.LayerNorm)}
    if len(eps) != 1 or any(not n.elementwise_affine or n.bias is None for n in norms
                            if isinstance(n, nn.LayerNorm)):
        raise ValueError("every LayerNorm must have a weight, a bias and the same eps; got "
                         f"eps {sorted(eps)}")
    pre_norm = {s.norm_first for s in sublayers}
    if len(pre_norm) != 1:
        raise ValueError("the model mixes pre-norm and post-norm layers")
    norm_first = pre_norm.pop()
    final = {not isinstance(m, nn.Identity) for m in (model.encoder.norm, model.decoder.norm)}
    if len(final) != 1:
        raise ValueError("the encoder and the decoder must both end with a LayerNorm, or neither")
    has_final = final.pop()
    if has_final and not norm_first:
        raise ValueError("CTranslate2 has no final LayerNorm after post-norm layers; export a "
                         "model built with final_norm=None or False")
    heads = {a.h for a in model.modules() if isinstance(a, MultiHeadedAttention)}
    if len(heads) != 1:
        raise ValueError(f"every attention must have the same number of heads, got {sorted(heads)}")
    return {"N": (len(enc_layers), len(dec_layers)), "h": heads.pop(), "pre_norm": norm_first,
            "final_norm": has_final, "eps": eps.pop()}


def _vocabulary(vocabulary: SharedTokenizer | Sequence[str], size: int) -> list[str]:
    if isinstance(vocabulary, str):
        raise TypeError("vocabulary must be a tokenizer or a list of tokens, not one string")
    inner = getattr(vocabulary, "tokenizer", None)
    if inner is not None and callable(getattr(inner, "get_vocab", None)):
        by_id = {i: t for t, i in inner.get_vocab(with_added_tokens=True).items()}
        tokens = [by_id[i] for i in range(len(by_id))]
    elif isinstance(vocabulary, Sequence) and all(isinstance(t, str) for t in vocabulary):
        tokens = list(vocabulary)
    else:
        raise TypeError(f"vocabulary must be a SharedTokenizer or a list of token strings, got "
                        f"{type(vocabulary).__name__}")
    # <s>, </s> and <unk> are also CTranslate2's default names of its special tokens
    if tuple(tokens[:4]) != SPECIAL_TOKENS:
        raise ValueError(f"the vocabulary must start with {SPECIAL_TOKENS}, got {tuple(tokens[:4])}")
    if len(tokens) > size:
        raise ValueError(f"the vocabulary has {len(tokens)} tokens but the model only {size} ids")
    if len(set(tokens)) != len(tokens):
        raise ValueError("the vocabulary holds a token twice")
    # ids the tokenizer never produces (a model built larger than its vocabulary) still need
    # a name in CTranslate2's table
    return tokens + [f"<unused{i}>" for i in range(len(tokens), size)]


def ctranslate2_spec(model: EncoderDecoder, vocabulary: SharedTokenizer | Sequence[str]) -> Any:
    """The CTranslate2 `TransformerSpec` of `model`, its weights and vocabulary filled in.

    Args:
        model: an encoder-decoder built by `make_model` with `layer_norm="torch"` (pre-norm
            with final norms, or post-norm without them, as the presets build it).
        vocabulary: the `SharedTokenizer` the model was trained with, or its tokens in id
            order; ids 0-3 must be `<pad>`, `<s>`, `</s>` and `<unk>`.

    Returns:
        A `ctranslate2.specs.TransformerSpec`; `spec.save(folder)` writes the model folder.

    Raises:
        TypeError: if `model` is not an `EncoderDecoder` or `vocabulary` is neither a tokenizer
            nor a list of strings.
        ValueError: if the model has a part CTranslate2 does not compute the same way (the
            annotated LayerNorm, a final LayerNorm after post-norm layers, mixed settings) or
            the vocabulary does not fit the model.
        ModuleNotFoundError: if `ctranslate2` is not installed.
    """
    arch = _architecture(model)
    src_lut, src_pos = _embedding(model.src_embed, "src_embed")
    tgt_lut, tgt_pos = _embedding(model.tgt_embed, "tgt_embed")
    if src_lut.num_embeddings != tgt_lut.num_embeddings:
        raise ValueError(f"the source and target vocabularies differ in size "
                         f"({src_lut.num_embeddings} and {tgt_lut.num_embeddings}); the "
                         "export writes one shared vocabulary")
    tokens = _vocabulary(vocabulary, src_lut.num_embeddings)
    from ctranslate2.specs import transformer_spec  # optional dependency: only needed here

    spec = transformer_spec.TransformerSpec.from_config(
        arch["N"], arch["h"], pre_norm=arch["pre_norm"], no_final_norm=not arch["final_norm"])
    spec.config.layer_norm_epsilon = arch["eps"]
    spec.config.add_source_eos = True  # the package's sources end with </s>
    for side, lut, position in ((spec.encoder, src_lut, src_pos), (spec.decoder, tgt_lut, tgt_pos)):
        embeddings = side.embeddings[0] if isinstance(side.embeddings, list) else side.embeddings
        embeddings.weight = _array(lut.weight)
        side.scale_embeddings = True  # x sqrt(d_model), as Embeddings does
        side.position_encodings.encodings = _array(position.pe[0])  # (max_len, d_model)
    for stack, layers in ((spec.encoder, model.encoder.layers), (spec.decoder, model.decoder.layers)):
        if arch["final_norm"]:
            _norm(stack.layer_norm, model.encoder.norm if stack is spec.encoder
                  else model.decoder.norm)
        layer: Any
        for layer_spec, layer in zip(stack.layer, layers):
            q, k, v, o = layer.self_attn.linears
            _linear(layer_spec.self_attention.linear[0], q, k, v)
            _linear(layer_spec.self_attention.linear[1], o)
            _norm(layer_spec.self_attention.layer_norm, layer.sublayer[0].norm)
            if stack is spec.decoder:
                q, k, v, o = layer.src_attn.linears
                _linear(layer_spec.attention.linear[0], q)
                _linear(layer_spec.attention.linear[1], k, v)
                _linear(layer_spec.attention.linear[2], o)
                _norm(layer_spec.attention.layer_norm, layer.sublayer[1].norm)
            _linear(layer_spec.ffn.linear_0, layer.feed_forward.w_1)
            _linear(layer_spec.ffn.linear_1, layer.feed_forward.w_2)
            _norm(layer_spec.ffn.layer_norm, layer.sublayer[-1].norm)
    _linear(spec.decoder.projection, model.generator.proj)
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    return spec


def export_ctranslate2(
    model: EncoderDecoder,
    vocabulary: SharedTokenizer | Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    quantization: str | None = None,
) -> dict[str, Path]:
    """Write `model` and its vocabulary as a CTranslate2 model folder.

    The folder loads with `ctranslate2.Translator(out_dir)` and takes the tokenizer's pieces
    (`tokenizer.tokens(text)`); CTranslate2 appends `</s>` to them and starts the output with
    `<s>`, as the package does. Its greedy outputs are the package's; for beam search see the
    module's note on the length penalty.

    Args:
        model: see [`ctranslate2_spec`][vanilla_transformer.interop.ctranslate2.ctranslate2_spec].
        vocabulary: the `SharedTokenizer` the model was trained with, or its tokens in id order.
        out_dir: an existing folder; `model.bin`, `config.json` and `shared_vocabulary.json`
            are written (or replaced) there, each atomically.
        quantization: the type of the stored weights (one of `QUANTIZATIONS`; `None` keeps
            float32). CTranslate2 can also convert when it loads (`compute_type="int8"`).

    Returns:
        `{"model": path, "config": path, "vocabulary": path}`.

    Raises:
        TypeError: if `model`, `vocabulary` or `out_dir` has the wrong type.
        ValueError: if `out_dir` is not an existing folder, `quantization` is unknown, or
            [`ctranslate2_spec`][vanilla_transformer.interop.ctranslate2.ctranslate2_spec]
            refuses the model.
        ModuleNotFoundError: if `ctranslate2` is not installed (nothing is written).

    Examples:
        >>> import tempfile
        >>> from vanilla_transformer.interop import export_ctranslate2
        >>> tokens = ["<pad>", "<s>", "</s>", "<unk>", "▁one", "▁eins"]
        >>> model = make_model(6, 6, N=1, d_model=16, d_ff=32, h=2, layer_norm="torch")
        >>> with tempfile.TemporaryDirectory() as out_dir:
        ...     paths = export_ctranslate2(model, tokens, out_dir)
        ...     sorted(p.name for p in paths.values())
        ['config.json', 'model.bin', 'shared_vocabulary.json']
    """
    path = check_existing_folder("out_dir", out_dir)
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}")
    spec = ctranslate2_spec(model, vocabulary)
    spec.validate()
    spec.optimize(quantization=quantization)
    names = {"model": "model.bin", "config": "config.json", "vocabulary": "shared_vocabulary.json"}
    with tempfile.TemporaryDirectory(dir=path, prefix=".ctranslate2-") as tmp:
        spec.save(tmp)
        written = Path(tmp)
        missing = [n for n in names.values() if not (written / n).is_file()]
        if missing:  # a CTranslate2 that writes other files: keep the folder as it was
            raise ValueError(f"CTranslate2 did not write {', '.join(missing)}")
        for name in names.values():
            os.replace(written / name, path / name)  # one rename each: a file is whole or old
    return {key: path / name for key, name in names.items()}


def translate_ctranslate2(
    translator: Any,
    tokenizer: SharedTokenizer,
    sentences: Sequence[str],
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_extra: int = 50,
    rescore: bool = True,
    batch_size: int = 64,
) -> list[str]:
    """Translate with a CTranslate2 `Translator` of an exported folder, with the package's
    decoding settings.

    As [`translate_sentences`][vanilla_transformer.inference.evaluate.translate_sentences]:
    each output has at most `len(source ids) + max_extra` tokens (`</s>` included), and `</s>`
    may come first. With `rescore=True` (and `beam_size > 1`) CTranslate2 searches with no
    length penalty, returns its `beam_size` finished hypotheses with their log-probabilities,
    and the best by the package's score $\\log P / ((5 + |Y|) / 6)^\\alpha$ is kept. With
    `rescore=False`, CTranslate2's own penalty is used: `length_penalty=alpha`,
    $\\log P / |Y|^\\alpha$. |Y| counts `</s>` in both.

    Args:
        translator: a `ctranslate2.Translator`.
        tokenizer: the tokenizer the folder was exported with.
        sentences: source sentences.
        beam_size: the beam; 1 is greedy decoding.
        alpha: the length penalty's exponent.
        max_extra: an output has at most `input length + max_extra` tokens.
        rescore: rank by the package's length penalty (see above).
        batch_size: sentences per call; sentences of one call have the same source length,
            so that they share one length limit.

    Returns:
        One translation per sentence, in input order.

    Raises:
        TypeError: if `sentences` is one string.
        ValueError: for a non-positive `beam_size` or `batch_size`, or a negative `alpha` or
            `max_extra`.
    """
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings, not one string")
    check_positive_int("beam_size", beam_size)
    check_positive_int("batch_size", batch_size)
    check_non_negative_int("max_extra", max_extra)
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    pieces = [tokenizer.tokens(s) for s in sentences]
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(pieces):
        groups.setdefault(len(p), []).append(i)
    rank = rescore and beam_size > 1
    out: list[str] = [""] * len(sentences)
    for length, rows in sorted(groups.items()):
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            results = translator.translate_batch(
                [pieces[i] for i in chunk], beam_size=beam_size,
                length_penalty=0.0 if rank else float(alpha),
                num_hypotheses=beam_size if rank else 1, return_scores=rank,
                return_end_token=True,  # len(hypothesis) is |Y|, </s> included
                max_decoding_length=length + 1 + max_extra,  # + 1: the source's </s>
                min_decoding_length=0)
            for i, result in zip(chunk, results):
                hyps = result.hypotheses
                best = 0
                if rank:
                    best = max(range(len(hyps)), key=lambda j: result.scores[j]
                               / length_penalty(len(hyps[j]), alpha))
                hyp = hyps[best]
                out[i] = tokenizer.decode([_token_id(tokenizer, t) for t in hyp])
    return out


def _token_id(tokenizer: SharedTokenizer, token: str) -> int:
    found = tokenizer.tokenizer.token_to_id(token)
    return UNK if found is None else int(found)  # <unused...> padding ids: <unk>
