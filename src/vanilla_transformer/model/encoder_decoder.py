"""The whole encoder-decoder model and its constructor (paper section 3, Figure 1).

[`make_model`][vanilla_transformer.model.encoder_decoder.make_model] makes one attention module,
one feed-forward network and one positional encoding, deep-copies them into every place that
needs one, and gives every weight matrix Xavier-uniform initial values. Taught in the lesson
[The task and the architecture][architecture-lesson].

What a saved model holds is its `model_state`: the `state_dict` without the sinusoid table,
which the configuration recomputes; `check_weights_fit_config` checks saved weights against
the sizes a configuration claims, before a model is built from it.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from .._checks import check_token_ids
from .attention import MultiHeadedAttention
from .config import ModelConfig
from .decoder import Decoder, DecoderLayer
from .embeddings import Embeddings, Generator, PositionalEncoding
from .encoder import Encoder, EncoderLayer
from .layers import PositionwiseFeedForward
from .masks import as_keep_mask

__all__ = ["EncoderDecoder", "make_model", "make_model_from_config", "model_state",
           "load_model_state", "check_weights_fit_config"]


class EncoderDecoder(nn.Module):
    """A standard encoder-decoder: embed and encode the source, embed and decode the target.

    `forward` returns the decoder's states, not probabilities: apply `generator` to them to get
    log-probabilities over the target vocabulary. `forward`, `encode` and `decode` check their
    inputs (shapes, dtypes, masks and, on the CPU, the id range); the layers inside do not.

    Args:
        encoder: the encoder stack.
        decoder: the decoder stack.
        src_embed: source token ids `(batch, src_len)` to `(batch, src_len, d_model)`,
            usually `nn.Sequential(Embeddings, PositionalEncoding)`.
        tgt_embed: the same for the target.
        generator: decoder states to log-probabilities.

    Attributes:
        config: the [`ModelConfig`][vanilla_transformer.model.config.ModelConfig] used by
            `make_model`, or `None` for a hand-assembled model.

    Examples:
        >>> model = make_model(11, 11, N=2)
        >>> src = torch.tensor([[1, 2, 3, 4, 5]])
        >>> out = model(src, src, torch.ones(1, 1, 5), subsequent_mask(5))
        >>> out.shape, model.generator(out).shape
        (torch.Size([1, 5, 512]), torch.Size([1, 5, 11]))
    """

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        src_embed: nn.Module,
        tgt_embed: nn.Module,
        generator: Generator,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator
        self.config: ModelConfig | None = None

    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Encode `src` and decode `tgt` against it.

        Args:
            src: source ids `(batch, src_len)`.
            tgt: target ids `(batch, tgt_len)`, shifted right (starting with the start symbol).
            src_mask: keep-mask `(batch or 1, 1, src_len)`, `True` = may attend.
            tgt_mask: keep-mask `(batch or 1, tgt_len, tgt_len)`.

        Returns:
            Decoder states `(batch, tgt_len, d_model)`.

        Raises:
            ValueError: if the batch sizes differ, a batch or a sequence is empty, an id is out
                of range, a sequence is longer than the positional table, a tensor is on
                another device than the model, or a mask has the wrong shape or (a float mask)
                values other than 0 and 1.
            TypeError: if `src` or `tgt` is not a `torch.long` (or `torch.int32`) tensor.
        """
        self._check_ids(src, self.src_embed, "src")
        self._check_ids(tgt, self.tgt_embed, "tgt")
        if src.size(0) != tgt.size(0):
            raise ValueError(
                f"source and target batches differ in size: src has {src.size(0)} rows, "
                f"tgt has {tgt.size(0)}"
            )
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        """Embed and encode `src` `(batch, src_len)` into `memory` `(batch, src_len, d_model)`."""
        self._check_ids(src, self.src_embed, "src")
        batch, src_len = src.shape
        src_mask = as_keep_mask(src_mask, batch, src_len, src_len, "src_mask")
        return self.encoder(self.src_embed(src), src_mask)

    def decode(
        self,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt: torch.Tensor,
        tgt_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Embed `tgt` `(batch, tgt_len)` and decode it against `memory`
        `(batch, src_len, d_model)`.

        Returns:
            Decoder states `(batch, tgt_len, d_model)`.

        Raises:
            ValueError: as `forward`, or if `memory` has the wrong shape or device.
            TypeError: as `forward`, or if `memory` is not a float tensor of the model's dtype.
        """
        self._check_ids(tgt, self.tgt_embed, "tgt")
        self._check_memory(memory)
        batch, tgt_len = tgt.shape
        if memory.dim() != 3 or memory.size(0) != batch:
            raise ValueError(
                f"memory of shape {tuple(memory.shape)} must be (batch, src_len, d_model); "
                f"memory batch size {memory.size(0)} differs from the target batch size {batch}"
            )
        src_mask = as_keep_mask(src_mask, batch, tgt_len, memory.size(1), "src_mask")
        tgt_mask = as_keep_mask(tgt_mask, batch, tgt_len, tgt_len, "tgt_mask")
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)

    def _check_memory(self, memory: object) -> None:
        if not isinstance(memory, torch.Tensor) or not memory.is_floating_point():
            got = memory.dtype if isinstance(memory, torch.Tensor) else type(memory).__name__
            raise TypeError(f"memory must be a float tensor (batch, src_len, d_model) from "
                            f"encode, got {got}")
        weight = next(self.decoder.parameters(), None)
        if weight is None:
            return
        if memory.device != weight.device:
            raise ValueError(f"memory is on device {memory.device} but the model is on "
                             f"{weight.device}; move one with .to(...)")
        if (memory.dtype != weight.dtype and not torch.compiler.is_compiling()
                and not torch.is_autocast_enabled(memory.device.type)):
            raise TypeError(f"memory has dtype {memory.dtype} but the model's weights are "
                            f"{weight.dtype}; convert it with memory.to({weight.dtype})")

    @staticmethod
    def _check_ids(ids: object, embed: nn.Module, name: str) -> None:
        table = next((m for m in embed.modules() if isinstance(m, nn.Embedding)), None)
        check_token_ids(ids, None if table is None else table.num_embeddings, name)
        assert isinstance(ids, torch.Tensor)  # check_token_ids raised otherwise
        if ids.size(0) == 0 or ids.size(1) == 0:
            raise ValueError(f"{name} of shape {tuple(ids.shape)} is empty: a batch needs at "
                             "least one sequence of at least one token")
        if table is not None and ids.device != table.weight.device:
            raise ValueError(f"{name} is on device {ids.device} but the model's embedding is on "
                             f"{table.weight.device}; move it with {name}.to(...)")
        position = next((m for m in embed.modules() if isinstance(m, PositionalEncoding)), None)
        if position is not None and ids.size(1) > position.max_len:
            raise ValueError(
                f"{name} sequence length {ids.size(1)} exceeds the positional-encoding table's "
                f"max_len {position.max_len}; build the model with a larger max_len"
            )


def _build(config: ModelConfig) -> EncoderDecoder:
    c = copy.deepcopy
    d_model, dropout = config.d_model, config.dropout
    norm_first, layer_norm = config.norm_first, config.layer_norm
    attn = MultiHeadedAttention(config.h, d_model, config.attention_dropout)
    ff = PositionwiseFeedForward(d_model, config.d_ff, config.feed_forward_dropout)
    position = PositionalEncoding(d_model, dropout, config.max_len)
    final_norm = config.has_final_norm
    src_embed = Embeddings(d_model, config.src_vocab)
    tgt_embed = Embeddings(d_model, config.tgt_vocab)
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout, norm_first=norm_first,
                             layer_norm=layer_norm), config.N, final_norm=final_norm),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout, norm_first=norm_first,
                             layer_norm=layer_norm), config.N, final_norm=final_norm),
        nn.Sequential(src_embed, c(position)),
        nn.Sequential(tgt_embed, c(position)),
        Generator(d_model, config.tgt_vocab, bias=config.generator_bias),
    )
    if config.tie_weights:  # section 3.4: one matrix for both embeddings and the generator
        shared = src_embed.lut.weight
        tgt_embed.lut.weight = shared
        model.generator.proj.weight = shared
    return model


def make_model(
    src_vocab: int,
    tgt_vocab: int,
    N: int = 6,
    d_model: int = 512,
    d_ff: int = 2048,
    h: int = 8,
    dropout: float = 0.1,
    **options: Any,
) -> EncoderDecoder:
    """Build a Transformer from hyperparameters, with Xavier-uniform initial weights.

    The positional arguments are the Annotated Transformer's; every other option of
    [`ModelConfig`][vanilla_transformer.model.config.ModelConfig] is accepted by keyword
    (`tie_weights`, `norm_first`, `layer_norm`, `final_norm`, `generator_bias`, `max_len`,
    `attn_dropout`, `ff_dropout`). The defaults are the Annotated Transformer's arrangement:
    pre-norm, untied embeddings, a final LayerNorm on each stack, a generator with a bias, and
    dropout on the attention weights and the feed-forward hidden activations too. The paper's
    own model is `make_model(V, V, **PRESETS["paper-base"])`.
    Everything is checked before anything is built.

    Args:
        src_vocab: source vocabulary size.
        tgt_vocab: target vocabulary size.
        N: number of encoder layers and of decoder layers.
        d_model: model width.
        d_ff: feed-forward hidden width.
        h: number of heads; must divide `d_model`.
        dropout: dropout probability in [0, 1).
        **options: the other fields of `ModelConfig`.

    Returns:
        The model, in training mode, with `model.config` set.

    Raises:
        ValueError: for a vocabulary of 0, and see
            [`ModelConfig`][vanilla_transformer.model.config.ModelConfig].
        TypeError: for an option `ModelConfig` does not have, or a value of the wrong type.

    Examples:
        >>> model = make_model(11, 11, N=2)
        >>> sum(p.numel() for p in model.parameters())
        14731787
    """
    config = ModelConfig(src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout, **options)
    return make_model_from_config(config)


def make_model_from_config(config: ModelConfig) -> EncoderDecoder:
    """Build the model a [`ModelConfig`][vanilla_transformer.model.config.ModelConfig] describes.

    Examples:
        >>> make_model_from_config(ModelConfig(11, 11, N=1, d_model=32, d_ff=64, h=4)).config.N
        1
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    for name in ("src_vocab", "tgt_vocab"):  # 0 is a config's, for counting without embeddings
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be at least 1 to build a model, got "
                             f"{getattr(config, name)}: a model needs a token to embed and "
                             "predict (a vocabulary of 0 is only for counting parameters)")
    model = _build(config)
    for p in model.parameters():  # Glorot / fan_avg initialisation of every weight matrix
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    model.config = config
    return model


def _recomputed(name: str) -> bool:
    """Whether a `state_dict` entry is the positional encoding's sinusoid table."""
    return name == "pe" or name.endswith(".pe")


def model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's `state_dict` without the buffers its configuration recomputes.

    Examples:
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
        >>> sorted(set(model.state_dict()) - set(model_state(model)))
        ['src_embed.1.pe', 'tgt_embed.1.pe']
    """
    return {k: v for k, v in model.state_dict().items() if not _recomputed(k)}


def load_model_state(
    model: nn.Module, state: dict[str, torch.Tensor], name: str = "the state"
) -> None:
    """Load `state` into `model`, recomputed buffers optional (old files hold them).

    Raises:
        ValueError: if a parameter is missing, unexpected, or of the wrong shape, naming it.
    """
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as error:
        reason = " ".join(str(error).split())[:300]
        raise ValueError(f"{name}: the saved weights do not fit the saved configuration "
                         f"({reason})") from error
    missing = [k for k in missing if not _recomputed(k)]
    if missing or unexpected:
        raise ValueError(f"{name}: the saved weights do not fit the saved configuration "
                         f"(missing {missing[:3]}, unexpected {list(unexpected)[:3]})")


def _layer_count(state: dict[str, Any], stack: str) -> int:
    prefix = f"{stack}.layers."
    indices = {int(k[len(prefix):].split(".", 1)[0]) for k in state if k.startswith(prefix)}
    return max(indices) + 1 if indices else 0


def check_weights_fit_config(
    config: ModelConfig, state: dict[str, Any], name: str = "the file"
) -> None:
    """Check the sizes `config` claims against the weights' shapes before a model is built: a
    `ValueError` names `name` and the first size that does not match.

    Examples:
        >>> model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
        >>> check_weights_fit_config(model.config.replace(N=10_000), model.state_dict(), "m.pt")
        Traceback (most recent call last):
        ...
        ValueError: m.pt: the saved weights do not fit the saved configuration: it says
        N=10000 but the weights hold 1 encoder layers
    """
    def shape(key: str) -> tuple[int, ...] | None:
        tensor = state.get(key)
        return tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else None

    for stack in ("encoder", "decoder"):
        layers = _layer_count(state, stack)
        if layers != config.N:
            raise ValueError(f"{name}: the saved weights do not fit the saved configuration: "
                             f"it says N={config.N} but the weights hold {layers} {stack} "
                             "layers")
    claims = [
        ("src_embed.0.lut.weight", (config.src_vocab, config.d_model), "src_vocab, d_model"),
        ("tgt_embed.0.lut.weight", (config.tgt_vocab, config.d_model), "tgt_vocab, d_model"),
        ("encoder.layers.0.feed_forward.w_1.weight", (config.d_ff, config.d_model),
         "d_ff, d_model"),
        ("src_embed.1.pe", (1, config.max_len, config.d_model), "1, max_len, d_model"),
    ]
    for key, expected, fields in claims:
        found = shape(key)
        if found is not None and found != expected:
            raise ValueError(f"{name}: the saved weights do not fit the saved configuration: "
                             f"it says ({fields}) = {expected} but {key} has shape {found}")
