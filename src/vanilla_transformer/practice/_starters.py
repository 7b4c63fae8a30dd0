"""The starter files: one per step, each with the signature, a docstring that says what to
compute, and `raise NotImplementedError` for a body; and the loader that `practice check` uses.

The files import one another by name (`from attention import attention`), so they live in one
folder; [`load_file`][vanilla_transformer.practice.load_file] puts that folder first on the
import path while it loads one of them. Written by `vanilla-transformer practice start DIR`
and downloadable from the *Rebuild it yourself* page.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import IO

from .._io import atomic_write

__all__ = ["STARTERS", "README", "write_starters", "load_file", "LoadError"]

_FILES: dict[str, str] = {
    "subsequent_mask.py": '''\
"""Step 1, subsequent_mask: the decoder's "no peeking ahead" mask.

Check it:  vanilla-transformer practice check subsequent_mask subsequent_mask.py
"""

import torch


def subsequent_mask(size):
    """The keep-mask of a decoder of `size` positions.

    Position i may attend to positions 0..i (itself included) and to none after it.
    Return a bool tensor of shape (1, size, size) where True means "may attend":
    the lower triangle, diagonal included.
    """
    raise NotImplementedError
''',
    "attention.py": '''\
"""Step 2, attention: scaled dot-product attention.

Check it:  vanilla-transformer practice check attention attention.py
"""

import math

import torch


def attention(query, key, value, mask=None, dropout=None):
    """softmax(Q K^T / sqrt(d_k)) V, with a keep-mask.

    query: (..., query_len, d_k); key: (..., key_len, d_k); value: (..., key_len, d_v).
    mask: None, or a keep-mask that broadcasts to (..., query_len, key_len), where
        True (non-zero) means the query may attend to that key.
    dropout: None, or a module applied to the attention weights.

    1. scores = query times key transposed, divided by sqrt(d_k) (d_k = query.size(-1));
    2. where mask == 0, set the score to -1e9 (a large finite number: a row whose every
       key is masked then gets uniform weights instead of NaN);
    3. weights = softmax of the scores over the keys (the last axis);
    4. apply dropout to the weights, if given;
    5. return (weights times value, weights), the weights after dropout.
    """
    raise NotImplementedError
''',
    "multi_head_attention.py": '''\
"""Step 3, multi_head_attention: h heads attending in parallel.

Check it:
    vanilla-transformer practice check multi_head_attention multi_head_attention.py
"""

import copy

import torch
from torch import nn

from attention import attention


def clones(module, N):
    """N independent deep copies of `module`, in an nn.ModuleList."""
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class MultiHeadedAttention(nn.Module):
    """Multi-head attention with h heads of width d_k = d_model // h.

    Keep these names: the trained translator's weights are loaded by name.
    self.linears: four nn.Linear(d_model, d_model), for W^Q, W^K, W^V and W^O.
    self.h, self.d_k: the number of heads and their width.
    self.dropout: nn.Dropout(p=dropout), applied to the attention weights.
    """

    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        raise NotImplementedError

    def forward(self, query, key, value, mask=None):
        """query (batch, query_len, d_model); key, value (batch, key_len, d_model).

        mask: None or a keep-mask (batch or 1, 1 or query_len, key_len); give it a
        head axis (mask.unsqueeze(1)) so that every head uses it.
        1. project query, key and value with linears[0], [1], [2];
        2. split each into heads: (batch, seq_len, d_model) -> (batch, h, seq_len, d_k);
        3. attention(q, k, v, mask, self.dropout) on all heads at once;
        4. merge the heads back:
           (batch, h, query_len, d_k) -> (batch, query_len, d_model);
        5. return linears[3] of that.
        """
        raise NotImplementedError
''',
    "feed_forward.py": '''\
"""Step 4, feed_forward: the position-wise feed-forward network.

Check it:  vanilla-transformer practice check feed_forward feed_forward.py
"""

from torch import nn


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, on every position alike.

    self.w_1: nn.Linear(d_model, d_ff); self.w_2: nn.Linear(d_ff, d_model);
    self.dropout: nn.Dropout(dropout), applied to the hidden activations.
    """

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """(batch, seq_len, d_model) -> (batch, seq_len, d_model)."""
        raise NotImplementedError
''',
    "positional_encoding.py": '''\
"""Step 5, positional_encoding: the sinusoids added to the embeddings.

Check it:  vanilla-transformer practice check positional_encoding positional_encoding.py
"""

import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    """Add sinusoidal position information to x, then apply dropout.

    PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))
    for positions pos = 0 .. max_len - 1 and pairs i = 0 .. d_model / 2 - 1.

    Store the table as a buffer named pe of shape (1, max_len, d_model):
    self.register_buffer("pe", table). self.dropout: nn.Dropout(p=dropout).
    """

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """x (batch, seq_len, d_model) + the first seq_len rows of the table."""
        raise NotImplementedError
''',
    "embeddings.py": '''\
"""Step 6, embeddings: token ids to vectors.

Check it:  vanilla-transformer practice check embeddings embeddings.py
"""

import math

from torch import nn


class Embeddings(nn.Module):
    """Learned embeddings, multiplied by sqrt(d_model) (paper section 3.4).

    self.lut: nn.Embedding(vocab, d_model); self.d_model: d_model.
    """

    def __init__(self, d_model, vocab):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """Token ids (batch, seq_len) -> (batch, seq_len, d_model)."""
        raise NotImplementedError
''',
    "layer_norm.py": '''\
"""Step 7, layer_norm: layer normalisation, as the Annotated Transformer writes it.

Check it:  vanilla-transformer practice check layer_norm layer_norm.py
"""

import torch
from torch import nn


class LayerNorm(nn.Module):
    """a_2 * (x - mean) / (std + eps) + b_2, over the last axis.

    std is the UNBIASED standard deviation (divided by n - 1: x.std(-1, keepdim=True)),
    and eps is added to the standard deviation, outside the square root.
    (torch.nn.LayerNorm differs: biased variance, eps inside the root.)
    self.a_2: nn.Parameter of ones (features,); self.b_2: nn.Parameter of zeros.
    """

    def __init__(self, features, eps=1e-6):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        """Normalise x (..., features) over its last axis."""
        raise NotImplementedError
''',
    "sublayer.py": '''\
"""Step 8, sublayer: the residual connection and layer norm, in both arrangements.

Check it:  vanilla-transformer practice check sublayer sublayer.py
"""

from torch import nn

from layer_norm import LayerNorm


class SublayerConnection(nn.Module):
    """A residual connection around a sublayer, with a layer norm and dropout.

    self.norm: your LayerNorm(size) when layer_norm == "annotated", or
        nn.LayerNorm(size, eps=1e-5) when layer_norm == "torch" (the trained
        translator uses that one);
    self.dropout: nn.Dropout(dropout); self.norm_first: norm_first.
    """

    def __init__(self, size, dropout, *, norm_first=True, layer_norm="annotated"):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, sublayer):
        """`sublayer` is a function of one tensor (self-attention, the feed-forward...).

        pre-norm (norm_first=True):   x + dropout(sublayer(norm(x)))
        post-norm (norm_first=False): norm(x + dropout(sublayer(x)))  (the paper's)
        """
        raise NotImplementedError
''',
    "encoder_layer.py": '''\
"""Step 9, encoder_layer: self-attention, then the feed-forward network.

Check it:  vanilla-transformer practice check encoder_layer encoder_layer.py
"""

from torch import nn

from multi_head_attention import clones
from sublayer import SublayerConnection


class EncoderLayer(nn.Module):
    """One encoder layer.

    self.self_attn, self.feed_forward: the modules given;
    self.sublayer: two SublayerConnection(size, dropout, norm_first=...,
        layer_norm=...), made with clones(...);
    self.size: size; self.layer_norm: layer_norm (the stacks read them).
    """

    def __init__(self, size, self_attn, feed_forward, dropout, *, norm_first=True,
                 layer_norm="annotated"):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, mask):
        """x (batch, src_len, d_model): sublayer[0] around self-attention of x under
        mask, then sublayer[1] around the feed-forward network."""
        raise NotImplementedError
''',
    "decoder_layer.py": '''\
"""Step 10, decoder_layer: masked self-attention, attention to the memory, feed-forward.

Check it:  vanilla-transformer practice check decoder_layer decoder_layer.py
"""

from torch import nn

from multi_head_attention import clones
from sublayer import SublayerConnection


class DecoderLayer(nn.Module):
    """One decoder layer.

    self.self_attn, self.src_attn, self.feed_forward: the modules given;
    self.sublayer: three SublayerConnection(size, dropout, norm_first=...,
        layer_norm=...);
    self.size: size; self.layer_norm: layer_norm.
    """

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout, *,
                 norm_first=True, layer_norm="annotated"):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, memory, src_mask, tgt_mask):
        """x (batch, tgt_len, d_model); memory (batch, src_len, d_model), the encoder's
        output.
        1. sublayer[0] around self-attention of x under tgt_mask;
        2. sublayer[1] around attention from x (queries) to memory (keys and values)
           under src_mask;
        3. sublayer[2] around the feed-forward network."""
        raise NotImplementedError
''',
    "encoder_decoder.py": '''\
"""Step 11, encoder_decoder: the stacks, the generator and make_model.

Check it:  vanilla-transformer practice check encoder_decoder encoder_decoder.py
"""

import copy

import torch
from torch import nn

from decoder_layer import DecoderLayer
from embeddings import Embeddings
from encoder_layer import EncoderLayer
from feed_forward import PositionwiseFeedForward
from layer_norm import LayerNorm
from multi_head_attention import MultiHeadedAttention, clones
from positional_encoding import PositionalEncoding


def make_norm(size, layer_norm):
    """Your LayerNorm for "annotated", nn.LayerNorm(size, eps=1e-5) for "torch"."""
    if layer_norm == "annotated":
        return LayerNorm(size)
    return nn.LayerNorm(size, eps=1e-5)


class Encoder(nn.Module):
    """N deep copies of `layer` (self.layers = clones(layer, N)); a pre-norm stack
    (final_norm=True) ends with self.norm = make_norm(layer.size, layer.layer_norm),
    a post-norm stack has no self.norm at all."""

    def __init__(self, layer, N, final_norm):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, mask):
        """Each layer in turn, then the final norm if there is one."""
        raise NotImplementedError


class Decoder(nn.Module):
    """Like Encoder, for DecoderLayer; forward(x, memory, src_mask, tgt_mask)."""

    def __init__(self, layer, N, final_norm):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, memory, src_mask, tgt_mask):
        raise NotImplementedError


class Generator(nn.Module):
    """self.proj = nn.Linear(d_model, vocab, bias=bias); forward returns the
    log-probabilities: log_softmax(self.proj(x), dim=-1)."""

    def __init__(self, d_model, vocab, bias=True):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        raise NotImplementedError


class EncoderDecoder(nn.Module):
    """self.encoder, self.decoder, self.src_embed, self.tgt_embed, self.generator."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        raise NotImplementedError

    def encode(self, src, src_mask):
        """memory = encoder(src_embed(src), src_mask)."""
        raise NotImplementedError

    def decode(self, memory, src_mask, tgt, tgt_mask):
        """decoder(tgt_embed(tgt), memory, src_mask, tgt_mask)."""
        raise NotImplementedError

    def forward(self, src, tgt, src_mask, tgt_mask):
        """decode(encode(src, src_mask), src_mask, tgt, tgt_mask): the decoder's states,
        not yet through the generator."""
        raise NotImplementedError


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1, *,
               norm_first=True, layer_norm="annotated", tie_weights=False,
               generator_bias=True, max_len=5000):
    """Build the whole model; the names below are the ones the trained weights use.

    EncoderDecoder(
        Encoder(EncoderLayer(d_model, attn, ff, dropout, ...), N,
                final_norm=norm_first),
        Decoder(DecoderLayer(d_model, attn, attn, ff, dropout, ...), N, final_norm=...),
        nn.Sequential(Embeddings(d_model, src_vocab), PositionalEncoding(...)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), PositionalEncoding(...)),
        Generator(d_model, tgt_vocab, bias=generator_bias))
    with attn = MultiHeadedAttention(h, d_model, dropout) and
    ff = PositionwiseFeedForward(d_model, d_ff, dropout), deep-copied into each place.
    tie_weights=True: one matrix for both embeddings and the generator:
        model.tgt_embed[0].lut.weight = model.src_embed[0].lut.weight, and the same for
        model.generator.proj.weight.
    Initialise every parameter with more than one axis with nn.init.xavier_uniform_.
    """
    raise NotImplementedError
''',
    "label_smoothing.py": '''\
"""Step 12, label_smoothing: the smoothed target and its KL divergence.

Check it:  vanilla-transformer practice check label_smoothing label_smoothing.py
"""

import torch
from torch import nn


class LabelSmoothing(nn.Module):
    """KL divergence to a smoothed target distribution, summed.

    For a row whose correct class is y: put 1 - smoothing on y, 0 on padding_idx, and
    spread smoothing evenly over the other size - 2 classes. A row whose target IS
    padding_idx gets an all-zero target. Keep the target in self.true_dist.
    The loss is the sum of t * (log t - x) over the entries with t > 0
    (nn.KLDivLoss(reduction="sum") computes it).
    """

    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, target):
        """x: log-probabilities (rows, size); target: class ids (rows,).
        Returns the summed loss, a scalar tensor."""
        raise NotImplementedError
''',
    "greedy_decode.py": '''\
"""Step 13, greedy_decode: generate one token at a time, always the most likely.

Check it:  vanilla-transformer practice check greedy_decode greedy_decode.py
"""

import torch

from subsequent_mask import subsequent_mask


@torch.no_grad()
def greedy_decode(model, src, src_mask, max_len, start_symbol, *, end_symbol=None,
                  pad_symbol=None):
    """Decode a batch greedily: token ids (batch, out_len), out_len <= max_len.

    1. memory = model.encode(src, src_mask);
       ys = start_symbol for every sentence, shape (batch, 1);
    2. up to max_len - 1 times: decode ys against memory under
       subsequent_mask(ys.size(1)); take model.generator of the LAST position;
       its argmax is each sentence's next token; append it to ys;
    3. with end_symbol: once a sentence has produced end_symbol, write pad_symbol (or
       end_symbol when pad_symbol is None) in its later places; stop as soon as every
       sentence has ended.
    """
    raise NotImplementedError
''',
    "translator.py": '''\
"""Step 14, translator: your model, the site's trained weights, your decoding.

Check it:  vanilla-transformer practice check translator translator.py

The check builds your make_model with the trained translator's sizes (a post-norm
model with nn.LayerNorm, tied embeddings and no generator bias), loads the trained
weights into it by name, and translates English numbers it never saw into German
with your greedy_decode.
"""

from encoder_decoder import make_model  # noqa: F401
from greedy_decode import greedy_decode  # noqa: F401
''',
}

README = """\
# Rebuild the Transformer yourself

One file per step, in the order of the lessons. Each file has the signature, a
docstring that says what to compute, and `raise NotImplementedError` where your code
goes. Write a step, then check it:

    vanilla-transformer practice check STEP FILE.py

The check prints what differs, on the smallest input that shows it, and names the
classic mistakes. It exits with 0 on a pass, 1 on a failure and 2 when the file does
not load. Keep the files in one folder: later steps import earlier ones by name.

| step | file | what you write |
|------|------|----------------|
{rows}

The last step, `translator`, loads the trained translator's weights into your own
model and translates numbers with your own greedy decoding. It needs the trained
translator (`docs/assets/translator` in the source tree) and
`pip install 'vanilla-transformer[translate]'`.
"""

_WHAT = {
    "subsequent_mask": "subsequent_mask(size)",
    "attention": "attention(query, key, value, mask=None, dropout=None)",
    "multi_head_attention": "class MultiHeadedAttention",
    "feed_forward": "class PositionwiseFeedForward",
    "positional_encoding": "class PositionalEncoding",
    "embeddings": "class Embeddings",
    "layer_norm": "class LayerNorm",
    "sublayer": "class SublayerConnection",
    "encoder_layer": "class EncoderLayer",
    "decoder_layer": "class DecoderLayer",
    "encoder_decoder": "Encoder, Decoder, Generator, EncoderDecoder, make_model",
    "label_smoothing": "class LabelSmoothing",
    "greedy_decode": "greedy_decode(model, src, src_mask, max_len, start_symbol, ...)",
    "translator": "nothing: it imports make_model and greedy_decode",
}

STARTERS: dict[str, str] = {
    **_FILES,
    "README.md": README.format(rows="\n".join(
        f"| `{name}` | `{name}.py` | {what} |" for name, what in _WHAT.items())),
}
"""Every starter file's name and text, the README included."""


def write_starters(folder: str | os.PathLike[str], *, overwrite: bool = False) -> list[Path]:
    """Write the starter files into `folder` (created if needed).

    Args:
        folder: where to write them.
        overwrite: replace files that exist; by default an existing file is kept, so your
            work is never lost.

    Returns:
        The paths written (the files kept are not listed).

    Raises:
        ValueError: if `folder` exists and is not a folder.

    Example:
        >>> import tempfile
        >>> written = write_starters(tempfile.mkdtemp())
        >>> len(written), written[0].name
        (15, 'subsequent_mask.py')
    """
    path = Path(os.fspath(folder))
    if path.exists() and not path.is_dir():
        raise ValueError(f"{str(path)!r} exists and is not a folder")
    path.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in STARTERS.items():
        target = path / name
        if target.exists() and not overwrite:
            continue
        atomic_write(target, _writer(text.encode("utf-8")))
        written.append(target)
    return written


def _writer(data: bytes) -> Callable[[IO[bytes]], object]:
    return lambda f: f.write(data)


class LoadError(Exception):
    """A file that does not load: missing, not Python, raising on import, or lacking a name."""


def load_file(path: str | os.PathLike[str]) -> ModuleType:
    """Import a learner's file as a module, its own folder first on the import path.

    The modules of its sibling files that it imports are forgotten afterwards, so that files
    of the same names in another folder load afresh.

    Args:
        path: a `.py` file.

    Returns:
        The module.

    Raises:
        LoadError: if the file is missing or raises while it loads (a syntax error, a failed
            import), with the reason in one line.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "two.py").write_text("TWO = 2\\n")
        >>> _ = (folder / "four.py").write_text("from two import TWO\\nFOUR = 2 * TWO\\n")
        >>> load_file(folder / "four.py").FOUR
        4
    """
    file = Path(os.fspath(path))
    if not file.is_file():
        raise LoadError(f"{file}: no such file")
    folder = str(file.resolve().parent)
    siblings = {p.stem for p in file.resolve().parent.glob("*.py")}
    saved = {name: sys.modules.pop(name) for name in siblings if name in sys.modules}
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(f"_practice_{file.stem}", file)
        if spec is None or spec.loader is None:
            raise LoadError(f"{file}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except SyntaxError as error:
            raise LoadError(f"{file}, line {error.lineno}: SyntaxError: {error.msg}") from None
        except Exception as error:  # noqa: BLE001 - report whatever the file raised, in one line
            text = " ".join(str(error).split())
            raise LoadError(f"{file} raised {type(error).__name__} while loading: {text}") from None
        return module
    finally:
        sys.path.remove(folder)
        for name in siblings:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
