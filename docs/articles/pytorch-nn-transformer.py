# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # <span id="interop-guide"></span>PyTorch's nn.Transformer and its masks
#
# > **Who this page is for.** A reader who builds models from PyTorch's own Transformer
# > modules, or moves weights between them and this package. If you read the Learn path, the
# > package's masks are taught in [the masks lesson](../../learn/masks/)
# > and heads in [several heads](../../learn/heads/): start at
# > [What `True` means, API by API](#mask-conventions), where PyTorch's conventions differ
# > from the package's.
#
# This page teaches you to use PyTorch's own Transformer modules (`nn.MultiheadAttention`, the
# encoder and decoder layers and stacks, and `nn.Transformer`) without getting a mask wrong:
# which mask goes where, its shape, and what `True` means in each API. You also learn to move
# weights between those modules and `vanilla_transformer`, so that the two compute the same
# function. It follows, section by section, the notebook that introduces itself as *"a clean and
# readable version to understand the notation in transformer"*: `attn_mask`,
# `key_padding_mask`, the two together, the encoder, the decoder, `memory_mask`,
# `nn.Transformer`, and a translation model with one training step. Two exercises check what you
# learned; the notebook's mistakes are gathered in one *Errata* box at the end.
#
# ## <span id="mask-conventions"></span>What `True` means, API by API
#
# This page is the site's home of PyTorch's mask conventions (the package's own convention and
# its masks are taught in [Masks](../../learn/masks/)). Boolean masks mean two
# opposite things *inside PyTorch itself*:
#
# | API | boolean mask | shape | `True` means |
# | --- | --- | --- | --- |
# | `vanilla_transformer` | keep-mask | `(batch or 1, query_len or 1, key_len)` | **may attend** |
# | `F.scaled_dot_product_attention` | `attn_mask` | broadcasts to `(batch, h, L, S)` | **may attend** |
# | `nn.MultiheadAttention`, `nn.Transformer*` | `attn_mask` | `(L, S)` or `(batch·h, L, S)` | **blocked** |
# | `nn.MultiheadAttention`, `nn.Transformer*` | `key_padding_mask` | `(batch, S)` | **blocked** (padding) |
#
# A float mask, in every PyTorch API, is *added* to the scores: `-inf` blocks, `0` leaves a score
# alone. The package's fast path hands its keep-mask to `F.scaled_dot_product_attention`
# unchanged, because the two agree; only the `nn` modules need it inverted. The picture shows one
# causal mask written for each API, and [section b](#b-attn_mask) proves all three with code.
#
# The first cell (its code is hidden here; the downloadable notebook has it) imports the package
# and PyTorch, seeds the random numbers and prints the PyTorch version the page ran with.

# %% tags=["hide-input"]
import inspect
import math
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.colors import ListedColormap
from torch import nn

from vanilla_transformer import (
    collate_batch,
    greedy_decode,
    keep_attention,
    make_model,
    padding_mask,
    sinusoid_table,
    subsequent_mask,
)
from vanilla_transformer.interop import (
    attn_mask_to_keep,
    batch_masks_to_torch,
    forward_with_torch_masks,
    keep_to_attn_mask,
    keep_to_key_padding_mask,
    load_from_torch,
    to_torch,
    torch_masks_to_keep,
)
from vanilla_transformer.model import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    MultiHeadedAttention,
    PositionwiseFeedForward,
)
from vanilla_transformer.model.fast import fast_attention

# nn.TransformerEncoder warns at every construction that it cannot take its nested-tensor fast
# path with these settings; nothing on this page depends on that path
warnings.filterwarnings("ignore", message="enable_nested_tensor is True")

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
# the tensors on this page are tiny: extra threads only add overhead
torch.set_num_threads(1)
# In eval mode PyTorch may take a "fast path" (nested tensors) that writes zeros at
# padded positions. Section 1.3 shows it; everywhere else it is off, so that every
# position can be compared.
torch.backends.mha.set_fastpath_enabled(False)
plt.rcParams.update({"font.size": 11, "figure.dpi": 100})
# Heatmaps keep their colours in the dark scheme: transparent background, mid-grey text.
HEATMAP = {
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.transparent": True,
    **{key: "#808080" for key in ("text.color", "axes.labelcolor", "axes.edgecolor",
                                   "xtick.color", "ytick.color")},
}
print("torch", torch.__version__)

# %% tags=["hide-input", "heatmap"] alt="Three 4 by 4 grids of the same causal mask. In the package's keep-mask and in the boolean attn_mask of F.scaled_dot_product_attention the lower triangle, where a query may attend, reads True; in the attn_mask of nn.MultiheadAttention and nn.Transformer the same cells read False and the blocked upper triangle reads True."
keep4 = subsequent_mask(4)[0]  # (4, 4), True = may attend
panels = {
    "vanilla_transformer\nkeep-mask": keep4,
    "F.scaled_dot_product_attention\nattn_mask": keep4,
    "nn.MultiheadAttention,\nnn.Transformer: attn_mask": keep_to_attn_mask(keep4),
}
with plt.rc_context(HEATMAP):
    fig, axes = plt.subplots(1, 3, figsize=(7.6, 3.4))
    for ax, (title, mask) in zip(axes, panels.items()):
        colours = ListedColormap(["#3b3b3b", "#f5d76e"])
        ax.imshow(keep4.int(), cmap=colours, vmin=0, vmax=1)
        for i in range(4):
            for j in range(4):
                ax.text(j, i, str(bool(mask[i, j])), ha="center", va="center",
                        fontsize=10, color="#1f1f1f" if keep4[i, j] else "#e0e0e0")
        ax.set_xticks(range(4), [f"k{j}" for j in range(4)])
        ax.set_yticks(range(4), [f"q{i}" for i in range(4)])
        ax.set_title(title, fontsize=11)
    fig.suptitle("One causal mask, three APIs (yellow: may attend, dark: blocked)",
                 fontsize=11)
    fig.tight_layout()
    plt.show()

# %% [markdown]
# ## `nn.MultiheadAttention`
#
# ### a. Core usage
#
# `forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
# average_attn_weights=True)` returns the attention output and, by default, the attention weights
# averaged over the heads. The notebook uses `embed_dim=5, num_heads=1`; we use 8 features and 2
# heads so that the split into heads is exercised (the package needs `d_model` divisible by `h`,
# and so does PyTorch). Dropout is 0 everywhere on this page, so every number is reproducible.

# %%
d_model, nhead = 8, 2
mha = nn.MultiheadAttention(
    embed_dim=d_model, num_heads=nhead, dropout=0.0, batch_first=True
)
x = torch.randn(1, 4, d_model)  # (batch, seq_len, d_model)
attn_output, attn_output_weights = mha(x, x, x)
print(attn_output.shape, attn_output_weights.shape)

# %% [markdown]
# The package's `MultiHeadedAttention` keeps $W^Q, W^K, W^V, W^O$ as four `nn.Linear` maps
# (`linears[0..3]`); PyTorch stacks the first three into one `in_proj_weight` of shape
# `(3 * d_model, d_model)` and keeps $W^O$ as `out_proj`. `load_from_torch` splits and copies
# them. With the same weights, the two modules give the same output, and the package's kept
# attention weights, averaged over the heads, are PyTorch's `attn_output_weights`.

# %%
ours = load_from_torch(MultiHeadedAttention(h=nhead, d_model=d_model, dropout=0.0), mha)
with keep_attention(ours):
    ours_output = ours(x, x, x)
assert torch.allclose(ours_output, attn_output, atol=1e-6)
assert torch.allclose(ours.attn.mean(dim=1), attn_output_weights, atol=1e-6)
print(ours.attn.shape, "->", attn_output_weights.shape)

# %% [markdown]
# The weights multiply the **values**, not the input: the values are the input projected by $W^V$
# (the last third of `in_proj_weight`) and split into heads, and the concatenated heads then go
# through `out_proj`. The cell below rebuilds the output that way, and shows that `weights @ x` is
# something else.

# %%
W_q, W_k, W_v = mha.in_proj_weight.chunk(3)
b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
d_k = d_model // nhead


def split_heads(t):
    return t.view(1, -1, nhead, d_k).transpose(1, 2)  # (batch, h, seq_len, d_k)


q, k, v = (
    split_heads(F.linear(x, W, b)) for W, b in ((W_q, b_q), (W_k, b_k), (W_v, b_v))
)
# (batch, h, 4, 4)
weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
by_hand = mha.out_proj((weights @ v).transpose(1, 2).reshape(1, 4, d_model))
assert torch.allclose(by_hand, attn_output, atol=1e-6)
assert torch.allclose(weights.mean(dim=1), attn_output_weights, atol=1e-6)
print(
    "weights @ x equals the output:",
    torch.allclose(attn_output_weights.bmm(x), attn_output),
)

# %% [markdown]
# ### b. `attn_mask`
#
# `attn_mask` has shape `(L, S)` (target length, source length), shared by every batch item, or
# `(N * num_heads, L, S)`, one mask per item and head. In `nn.MultiheadAttention` a bool mask
# blocks where it is `True`; a float mask is **added** to the scores, so `-inf` blocks and `0`
# leaves a score alone.
#
# The notebook builds its "no peeking ahead" mask with a helper that takes two sizes. Here is the
# same construction, written out: a triangle of ones of shape `(src_sz, tgt_sz)`, transposed, then
# turned into `0` / `-inf`.

# %%
def source_subsequent_mask(tgt_sz, src_sz):
    """The notebook's helper.

    The upper triangle of ones(src_sz, tgt_sz), transposed, as 0 / -inf.
    """
    allowed = (torch.triu(torch.ones(src_sz, tgt_sz)) == 1).transpose(0, 1)
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))


attn_mask = source_subsequent_mask(4, 4)
print(attn_mask)
assert torch.equal(attn_mask, nn.Transformer.generate_square_subsequent_mask(4))
assert torch.equal(attn_mask, keep_to_attn_mask(subsequent_mask(4), float_mask=True))
assert torch.equal(attn_mask_to_keep(attn_mask), subsequent_mask(4))

# %% [markdown]
# For a square mask the helper agrees with PyTorch's
# `nn.Transformer.generate_square_subsequent_mask` and with the package's `subsequent_mask`,
# converted. (What it does with two *different* sizes is
# the subject of section 1.4 B.)
#
# The notebook then turns the float mask into a bool one with `.bool()`. For
# `nn.MultiheadAttention` that is right: `-inf` becomes `True` (blocked) and `0` becomes `False`.
# The same call on a package keep-mask would *not* convert it, since a keep-mask is already bool
# with the opposite meaning; that is what `keep_to_attn_mask` is for.

# %%
bool_attn_mask = attn_mask.bool()
print(bool_attn_mask)
assert torch.equal(bool_attn_mask, keep_to_attn_mask(subsequent_mask(4)))
# .bool() leaves a keep-mask as it is: still True = may attend
assert torch.equal(subsequent_mask(4)[0].bool(), ~bool_attn_mask)

# %% [markdown]
# With the mask, each position attends only to itself and the positions before it: the weights
# above the diagonal are 0. The package's attention, given the keep-mask `subsequent_mask(4)`,
# computes the same thing.

# %%
attn_output, attn_output_weights = mha(x, x, x, attn_mask=bool_attn_mask)
print(attn_output_weights)
with keep_attention(ours):
    ours_output = ours(x, x, x, subsequent_mask(4))
assert torch.allclose(ours_output, attn_output, atol=1e-6)
assert torch.allclose(ours.attn.mean(dim=1), attn_output_weights, atol=1e-6)

# %% [markdown]
# ### Three APIs, one causal mask
#
# The function the notebook quotes here, `_scaled_dot_product_attention`, is the core of
# `nn.MultiheadAttention`; its public relative `F.scaled_dot_product_attention` takes a boolean
# `attn_mask` too, with the **opposite** meaning: `True` means *may attend*, as in this package.
# The cell runs the same causal attention three ways on the projected, split `q`, `k`, `v` of
# section a: the package's keep-mask `subsequent_mask(4)` goes to `F.scaled_dot_product_attention`
# as it is, its inverse goes to `nn.MultiheadAttention`, and the two agree. Passing the keep-mask
# to `nn.MultiheadAttention` (or its inverse to `F.scaled_dot_product_attention`) gives something
# else. The package's `fast_attention` passes its mask to `F.scaled_dot_product_attention`
# unchanged, and matches too.

# %%
keep = subsequent_mask(4)  # (1, 4, 4), True = may attend; broadcasts over the heads
heads = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)  # (batch, h, 4, d_k)
sdpa_output = mha.out_proj(heads.transpose(1, 2).reshape(1, 4, d_model))
mha_output, _ = mha(x, x, x, attn_mask=~keep[0])  # True = blocked
assert torch.allclose(sdpa_output, mha_output, atol=1e-6)
assert torch.allclose(fast_attention(q, k, v, keep, nn.Dropout(0.0)), heads, atol=1e-6)

wrong_sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=~keep)
wrong_mha, _ = mha(x, x, x, attn_mask=keep[0])
wrong_sdpa = mha.out_proj(wrong_sdpa.transpose(1, 2).reshape(1, 4, d_model))
assert not torch.allclose(wrong_sdpa, mha_output, atol=1e-3)
assert not torch.allclose(wrong_mha, mha_output, atol=1e-3)
# a float mask is added to the scores in both APIs: 0 keeps, -inf blocks
float_mask = keep_to_attn_mask(keep[0], float_mask=True)
by_float = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)
assert torch.allclose(by_float, heads, atol=1e-6)
assert torch.allclose(mha(x, x, x, attn_mask=float_mask)[0], mha_output, atol=1e-6)
print("SDPA(keep-mask) == MultiheadAttention(~keep-mask) == fast_attention(keep-mask)")

# %% [markdown]
# ### c. `key_padding_mask`
#
# A batch of three token sequences of length 4, padded on the right:
#
# ```text
# ['a', 'b', 'c', '<pad>']
# ['a', 'b', 'c', 'd']
# ['a', 'b', '<pad>', '<pad>']
# ```
#
# PyTorch's `key_padding_mask` has shape `(batch, S)` and is `True` at padding. The package builds
# a keep-mask of shape `(batch, 1, S)` from the token ids with `padding_mask`, and
# `keep_to_key_padding_mask` turns it into PyTorch's form, which is exactly the mask the notebook
# types by hand.

# %%
vocab = {"<pad>": 0, "a": 3, "b": 4, "c": 5, "d": 6}
sentences = [
    ["a", "b", "c", "<pad>"],
    ["a", "b", "c", "d"],
    ["a", "b", "<pad>", "<pad>"],
]
tokens = torch.tensor([[vocab[w] for w in s] for s in sentences])
keep = padding_mask(tokens, pad=vocab["<pad>"])
key_padding_mask = keep_to_key_padding_mask(keep)
print(keep.shape, key_padding_mask.shape)
print(key_padding_mask)
assert torch.equal(key_padding_mask, torch.tensor([[False, False, False, True],
                                                   [False, False, False, False],
                                                   [False, False, True, True]]))

# %%
x3 = torch.randn(3, 4, d_model)
attn_output, attn_output_weights = mha(x3, x3, x3, key_padding_mask=key_padding_mask)
with keep_attention(ours):
    ours_output = ours(x3, x3, x3, keep)
assert torch.allclose(ours_output, attn_output, atol=1e-6)
print(attn_output_weights[2])  # the third sentence: keys 2 and 3 get no weight
assert (attn_output_weights[2][:, 2:] == 0).all()  # padded keys: no weight
assert torch.allclose(attn_output_weights[2].sum(-1), torch.ones(4))  # every query row

# %% [markdown]
# The mask acts on **keys** only. The padded positions still produce an output as queries (rows 2
# and 3 above are ordinary rows); a loss that ignores padding, like the one in the appendix,
# never reads them.
#
# ### d. `attn_mask` and `key_padding_mask` together
#
# A key is blocked if either mask blocks it. `torch_masks_to_keep` merges the two into one
# keep-mask of shape `(batch, L, S)`, which is what the package's `Batch` builds for a target:
# padding **and** the subsequent mask.

# %%
attn_output, attn_output_weights = mha(x3, x3, x3, attn_mask=bool_attn_mask,
                                       key_padding_mask=key_padding_mask)
merged = torch_masks_to_keep(bool_attn_mask, key_padding_mask)
assert torch.equal(merged, keep & subsequent_mask(4))
with keep_attention(ours):
    ours_output = ours(x3, x3, x3, merged)
assert torch.allclose(ours_output, attn_output, atol=1e-6)
print(attn_output_weights[2])

# %% [markdown]
# ### Masks whose meaning would be a guess
#
# The conversion functions refuse any input they would have to guess the meaning of. A keep-mask
# given to them must hold only `0`/`1` (or be bool); a float `attn_mask` only `0` and `-inf`
# (any other value is an additive bias, which no keep-mask can express); and an **integer**
# `attn_mask` is refused outright: PyTorch's deprecated byte mask means `1` = blocked, while an
# integer keep-mask, like the `.type_as(src)` masks of the Annotated Transformer, means `1` =
# may attend. The same tensor would mean opposite things.

# %%
byte_mask = torch.tensor([[0, 1], [0, 0]])
for convert, mask in (
    (attn_mask_to_keep, byte_mask),
    (attn_mask_to_keep, torch.tensor([[0.0, -1e9], [0.0, 0.0]])),
    (keep_to_attn_mask, torch.tensor([[0.0, float("-inf")], [0.0, 0.0]])),
):
    try:
        convert(mask)
        raise AssertionError("converted a mask whose meaning is a guess")
    except ValueError as err:
        print(f"{convert.__name__}: {err}")

# %% [markdown]
# ### When a query has no key left
#
# With padding on the **left** and a causal mask, the first query may look only at position 0,
# which is padding: every key of that row is blocked. No answer is right for such a row, and each
# implementation gives a different one. To make the difference visible, the biases of a fresh
# attention module are set to random values.

# %%
mha_demo = nn.MultiheadAttention(d_model, nhead, dropout=0.0, batch_first=True)
with torch.no_grad():
    mha_demo.in_proj_bias.normal_()
    mha_demo.out_proj.bias.normal_()
ours_demo = load_from_torch(MultiHeadedAttention(nhead, d_model, dropout=0.0), mha_demo)

left_padded = torch.tensor([[0, 3, 4, 5]])  # padding first
kpm = left_padded == 0
causal = nn.Transformer.generate_square_subsequent_mask(4).bool()
keep_left = torch_masks_to_keep(causal, kpm)
print(keep_left[0].int())  # row 0 is all zeros: nothing to attend to

x1 = torch.randn(1, 4, d_model)
# need_weights=True
out_weights, w = mha_demo(x1, x1, x1, attn_mask=causal, key_padding_mask=kpm)
out_no_weights, _ = mha_demo(
    x1, x1, x1, attn_mask=causal, key_padding_mask=kpm, need_weights=False
)
out_fast = ours_demo(x1, x1, x1, keep_left)
with keep_attention(ours_demo):
    out_reference = ours_demo(x1, x1, x1, keep_left)
print("PyTorch, need_weights=True :", out_weights[0, 0])
print("PyTorch, need_weights=False:", out_no_weights[0, 0])
print("package, fast path         :", out_fast[0, 0])
print("package, reference path    :", out_reference[0, 0])
print("package reference weights of row 0:", ours_demo.attn[0, :, 0])

# %% [markdown]
# - `nn.MultiheadAttention` with `need_weights=True`, its default, takes a softmax over a row of
#   `-inf`: the weights and the output of that query are **NaN**.
# - With `need_weights=False` (how `nn.TransformerEncoderLayer` and `nn.TransformerDecoderLayer`
#   call it) PyTorch goes through `scaled_dot_product_attention`, which gives the row a **zero**
#   attention vector: the output is just `out_proj`'s bias.
# - The package's fast path (`scaled_dot_product_attention` too) does the same: zero attention,
#   output = bias of `linears[3]`.
# - The package's reference path fills masked scores with `-1e9` instead of `-inf`. A fully masked
#   row then has equal scores everywhere, and attends **uniformly** to all four keys (a quarter of the weight each).
#
# The rows that are not fully masked agree in all four. The cell below checks each claim.

# %%
assert torch.isnan(out_weights[0, 0]).all() and torch.isnan(w[0, 0]).all()
assert torch.allclose(out_no_weights[0, 0], mha_demo.out_proj.bias, atol=1e-6)
assert torch.allclose(out_fast[0, 0], ours_demo.linears[3].bias, atol=1e-6)
assert torch.allclose(ours_demo.attn[0, :, 0], torch.full((nhead, 4), 0.25))
values = ours_demo.linears[2](x1)  # every key's value, then the mean over the four keys
assert torch.allclose(
    out_reference[0, 0], ours_demo.linears[3](values.mean(dim=1))[0], atol=1e-6
)
for out in (out_no_weights, out_fast, out_reference):
    assert torch.allclose(out[0, 1:], out_weights[0, 1:], atol=1e-6)
print("the other rows agree")

# %% [markdown]
# Right padding never creates such a row under a causal mask as long as every sequence has at
# least one token: position 0 then always holds a real token. The package's `collate_batch` pads
# on the right (checked in [the appendix](#appendix-a-translation-model-its-masks-and-a-training-step)).

# %% [markdown]
# **Exercise: a padding mask for `nn.MultiheadAttention`.** A batch of token ids is padded with
# id 0: `[[7, 3, 0], [5, 0, 0]]`. Write the `key_padding_mask` that `nn.MultiheadAttention`
# expects, first by hand and then from the package's `padding_mask`. Which shape does each have?

# %% tags=["answer"]
# PyTorch's key_padding_mask: (batch, key_len), True where the key is padding (blocked).
# The package's keep-mask: (batch, 1, key_len), True where a query may attend.
ids = torch.tensor([[7, 3, 0], [5, 0, 0]])
by_hand = torch.tensor([[False, False, True], [False, True, True]])
package_keep = padding_mask(ids, pad=0)
print(package_keep.shape, "->", keep_to_key_padding_mask(package_keep).shape)
assert torch.equal(keep_to_key_padding_mask(package_keep), by_hand)
assert torch.equal(by_hand, ids == 0)

# %% [markdown]
# ## `nn.TransformerEncoderLayer`
#
# An encoder layer is self-attention followed by the feed-forward network, each wrapped in a
# residual connection with LayerNorm and dropout. The code the notebook quotes is an older
# version; today's layer also takes `batch_first`, `norm_first` (pre-norm, default `False`: the
# paper's post-norm) and `bias`. Its `forward(src, src_mask=None, src_key_padding_mask=None,
# is_causal=False)` passes `src_mask` to the attention as `attn_mask` and
# `src_key_padding_mask` as `key_padding_mask`, with `need_weights=False` (the cell checks the
# signature and that call).
#
# The package's `EncoderLayer` with `norm_first=False` and `layer_norm="torch"` (PyTorch's
# LayerNorm, biased variance, eps 1e-5) is the same layer. The parameters have different names:

# %%
encoder_layer = nn.TransformerEncoderLayer(
    d_model=d_model, nhead=nhead, dim_feedforward=16, dropout=0.0, batch_first=True
)


def package_encoder_layer(norm_first=False):
    return EncoderLayer(d_model, MultiHeadedAttention(nhead, d_model, 0.0),
                        PositionwiseFeedForward(d_model, 16, 0.0), dropout=0.0,
                        norm_first=norm_first, layer_norm="torch")


ours_layer = load_from_torch(package_encoder_layer(), encoder_layer)
params = inspect.signature(nn.TransformerEncoderLayer).parameters
assert {"batch_first", "norm_first", "bias"} <= set(params)
assert params["norm_first"].default is False
assert "need_weights=False" in inspect.getsource(nn.TransformerEncoderLayer._sa_block)
print("torch:  ", [name for name, _ in encoder_layer.named_parameters()])
print("package:", [name for name, _ in ours_layer.named_parameters()])

# %% [markdown]
# The layers below use `dropout=0.0`: with the default `dropout=0.1` in training mode the outputs
# change from run to run. With `dropout=0.0` (or after `.eval()`) the output is deterministic, which
# is what lets us compare.

# %%
src = torch.randn(1, 4, d_model)
out = encoder_layer(src)
assert torch.allclose(ours_layer(src, None), out, atol=1e-5)

src_keep = torch_masks_to_keep(
    bool_attn_mask, torch.tensor([[False, False, True, True]])
)
out = encoder_layer(src, src_mask=bool_attn_mask,
                    src_key_padding_mask=torch.tensor([[False, False, True, True]]))
assert torch.allclose(ours_layer(src, src_keep), out, atol=1e-5)
print(out)

# %% [markdown]
# ## `nn.TransformerEncoder`
#
# `nn.TransformerEncoder(encoder_layer, num_layers, norm=None)` deep-copies the layer `num_layers`
# times and runs the copies in turn, then applies `norm` if one is given. The copies start with
# **identical** parameters (the package's `Encoder` copies the same way). `nn.Transformer` and
# `make_model` then re-draw every weight *matrix* (Xavier-uniform), but not the biases and the
# LayerNorm parameters: those stay identical copies until training moves them. And the notebook's
# `transformer_encoder` has **no final LayerNorm** (its `norm` is `None`); the package's
# `Encoder(layer, N, final_norm=False)` matches it. The cell checks all three.

# %%
transformer_encoder = nn.TransformerEncoder(encoder_layer, num_layers=2)
same_start = torch.equal(transformer_encoder.layers[0].linear1.weight,
                         transformer_encoder.layers[1].linear1.weight)
print("both layers start with the same weights:", same_start)
print("final norm:", transformer_encoder.norm)
assert same_start and transformer_encoder.norm is None
full = nn.Transformer(d_model, nhead, 2, 2, 16, batch_first=True).encoder.layers
ours_full = make_model(11, 11, N=2, d_model=d_model, d_ff=16, h=nhead).encoder.layers
assert not torch.equal(full[0].linear1.weight, full[1].linear1.weight)
assert torch.equal(full[0].linear1.bias, full[1].linear1.bias)
assert torch.equal(full[0].norm1.bias, full[1].norm1.bias)
w_1 = [layer.feed_forward.w_1 for layer in ours_full]
assert not torch.equal(w_1[0].weight, w_1[1].weight)
assert torch.equal(w_1[0].bias, w_1[1].bias)
with torch.no_grad():  # make the two layers differ, as after training
    for p in transformer_encoder.layers[1].parameters():
        p.add_(0.1 * torch.randn_like(p))

ours_encoder = load_from_torch(Encoder(package_encoder_layer(), 2, final_norm=False),
                               transformer_encoder)
src_kpm = torch.tensor([[False, False, True, True]])
out = transformer_encoder(src, mask=bool_attn_mask, src_key_padding_mask=src_kpm)
assert torch.allclose(ours_encoder(src, src_keep), out, atol=1e-5)
print(out)

# %% [markdown]
# **PyTorch's fast path.** In eval mode, without gradients, and when a few other conditions hold,
# `nn.TransformerEncoder` packs the batch into a nested tensor that leaves the padded positions
# out, and returns **zeros** there. The values at real positions do not change. This is why the
# comparisons on this page switch the fast path off, with
# `torch.backends.mha.set_fastpath_enabled(False)` at the top: with it off, padded positions can
# be compared too.

# %%
transformer_encoder.eval()
src2 = torch.randn(2, 4, d_model)
kpm2 = torch.tensor([[False, False, True, True], [False, False, False, False]])
with torch.no_grad(), warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
    torch.backends.mha.set_fastpath_enabled(True)
    fast = transformer_encoder(src2, src_key_padding_mask=kpm2)
    torch.backends.mha.set_fastpath_enabled(False)
    slow = transformer_encoder(src2, src_key_padding_mask=kpm2)
    ours_out = ours_encoder(src2, torch_masks_to_keep(key_padding_mask=kpm2))
transformer_encoder.train()
print("fast path, padded positions of item 0:", fast[0, 2:].abs().max().item())
assert torch.equal(fast[0, 2:], torch.zeros(2, d_model))
assert torch.allclose(fast[~kpm2], slow[~kpm2], atol=1e-5)  # real positions agree
assert torch.allclose(ours_out, slow, atol=1e-5)  # and the package matches everywhere

# %% [markdown]
# ## `nn.TransformerDecoderLayer`
#
# A decoder layer has three sublayers: masked self-attention (`self_attn`, masks `tgt_mask` and
# `tgt_key_padding_mask`), attention over the encoder output (`multihead_attn`, masks
# `memory_mask` and `memory_key_padding_mask`), and the feed-forward network; `norm1`, `norm2`,
# `norm3` are the LayerNorms of the three. The package calls the second attention `src_attn` and
# keeps the norms in `sublayer[0..2].norm`.

# %%
decoder_layer = nn.TransformerDecoderLayer(
    d_model=d_model, nhead=nhead, dim_feedforward=16, dropout=0.0, batch_first=True
)


def package_decoder_layer(norm_first=False):
    return DecoderLayer(d_model, MultiHeadedAttention(nhead, d_model, 0.0),
                        MultiHeadedAttention(nhead, d_model, 0.0),
                        PositionwiseFeedForward(d_model, 16, 0.0), dropout=0.0,
                        norm_first=norm_first, layer_norm="torch")


ours_dec_layer = load_from_torch(package_decoder_layer(), decoder_layer)
memory = torch.rand(1, 4, d_model)  # (batch, src_len, d_model): the encoder output
tgt = torch.rand(1, 6, d_model)  # (batch, tgt_len, d_model)
out = decoder_layer(tgt, memory)
assert torch.allclose(ours_dec_layer(tgt, memory, None, None), out, atol=1e-5)
print(out.shape)

# %% [markdown]
# ### A. `tgt_mask` and `tgt_key_padding_mask`
#
# They play the same roles as in the encoder, on the target: a causal mask, and padding (here the
# last three target positions).

# %%
tgt_mask = nn.Transformer.generate_square_subsequent_mask(6)  # float: 0 / -inf
tgt_padding_mask = torch.tensor([[False, False, False, True, True, True]])
float_tgt_kpm = tgt_padding_mask.float().masked_fill(tgt_padding_mask, float("-inf"))
out = decoder_layer(tgt, memory, tgt_mask=tgt_mask, tgt_key_padding_mask=float_tgt_kpm)
tgt_keep = torch_masks_to_keep(tgt_mask, float_tgt_kpm)
assert torch.equal(tgt_keep, subsequent_mask(6) & ~tgt_padding_mask.unsqueeze(1))
assert torch.allclose(ours_dec_layer(tgt, memory, None, tgt_keep), out, atol=1e-5)
print(tgt_keep[0].int())

# %% [markdown]
# ### B. `memory_mask` and `memory_key_padding_mask`
#
# In the second attention the queries come from the target and the keys from the memory, so
# `memory_mask` has shape `(tgt_len, src_len)` and `memory_key_padding_mask` `(batch, src_len)`,
# the source padding.
#
# What does `generate_subsequent_mask(6, 4)` mean as a `memory_mask`? The helper builds a triangle
# of ones of shape `(src_sz, tgt_sz) = (4, 6)` and transposes it: the result has shape
# `(tgt_sz, src_sz)` and lets **target position `t` see source positions `0..t`** (all of them
# once `t >= src_sz - 1`). That ties position `t` of the target to position `t` of the source,
# which means nothing in translation, where the positions of the two sentences do not correspond;
# with fewer target than source positions, the last source positions are never seen at all. This is
# why `memory_mask` is left as `None` in practice.

# %%
memory_mask = source_subsequent_mask(6, 4)
print(memory_mask.shape)
print(memory_mask)
short = source_subsequent_mask(2, 4)
print(short)
t_idx, s_idx = torch.meshgrid(torch.arange(6), torch.arange(4), indexing="ij")
assert torch.equal(memory_mask == 0, s_idx <= t_idx)  # target t sees source 0..t
assert torch.isinf(short[:, 2:]).all()  # source positions 2 and 3 are never visible

# %% [markdown]
# The package's decoder receives one keep-mask for its source attention, of shape
# `(batch or 1, tgt_len or 1, src_len)`; normally that is the source padding mask `(batch, 1, S)`,
# the same one the encoder uses. A `(tgt_len, src_len)` memory mask converts like any `attn_mask`.
# The notebook's attention example, with the memory mask and the source padding:

# %%
cross = nn.MultiheadAttention(d_model, nhead, dropout=0.0, batch_first=True)
ours_cross = load_from_torch(MultiHeadedAttention(nhead, d_model, 0.0), cross)
memory_kpm = torch.tensor([[False, False, True, True]])
float_memory_kpm = memory_kpm.float().masked_fill(memory_kpm, float("-inf"))
attn_output, attn_output_weights = cross(tgt, memory, memory, attn_mask=memory_mask,
                                         key_padding_mask=float_memory_kpm)
cross_keep = torch_masks_to_keep(memory_mask, float_memory_kpm)
assert torch.allclose(
    ours_cross(tgt, memory, memory, cross_keep), attn_output, atol=1e-6
)
print(attn_output_weights[0])

# %% [markdown]
# And the whole decoder layer with all four masks:

# %%
out = decoder_layer(
    tgt,
    memory,
    tgt_mask=tgt_mask,
    memory_mask=memory_mask,
    tgt_key_padding_mask=float_tgt_kpm,
    memory_key_padding_mask=float_memory_kpm,
)
assert torch.allclose(ours_dec_layer(tgt, memory, cross_keep, tgt_keep), out, atol=1e-5)
print(out)

# %% [markdown]
# PyTorch deprecates mixing a bool `key_padding_mask` with a float `attn_mask` (it warns), so the
# padding masks in this section are given as floats like the `0 / -inf` masks they go with. The
# conversion functions accept both forms.
#
# ## `nn.TransformerDecoder`
#
# Like the encoder: deep copies of the layer run in turn, each attending to the same `memory`,
# and an optional final `norm`.

# %%
transformer_decoder = nn.TransformerDecoder(decoder_layer, num_layers=2)
with torch.no_grad():
    for p in transformer_decoder.layers[1].parameters():
        p.add_(0.1 * torch.randn_like(p))
ours_decoder = load_from_torch(Decoder(package_decoder_layer(), 2, final_norm=False),
                               transformer_decoder)
out = transformer_decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                          tgt_key_padding_mask=float_tgt_kpm,
                          memory_key_padding_mask=float_memory_kpm)
assert torch.allclose(ours_decoder(tgt, memory, cross_keep, tgt_keep), out, atol=1e-5)
print(out.shape)

# %% [markdown]
# ## `nn.Transformer`
#
# `nn.Transformer` builds an encoder and a decoder from these layers. The notebook quotes its
# docstring with sequence-first shapes `(S, N, E)`: that is the default, `batch_first=False`. All of
# the notebook's examples (and the package) use `batch_first=True`, `(N, S, E)`.
#
# `nn.Transformer(d_model=5, nhead=1, num_encoder_layers=1, batch_first=True)` is not a one-layer
# model: only the encoder has one layer. The decoder keeps the default `num_decoder_layers=6`, and
# `dim_feedforward` keeps its default of 2048.

# %%
assert nn.Transformer().batch_first is False  # the default layout is (S, N, E)
source_like = nn.Transformer(d_model=5, nhead=1, num_encoder_layers=1, batch_first=True)
layers = (len(source_like.encoder.layers), len(source_like.decoder.layers))
width = source_like.encoder.layers[0].linear1.out_features
print(f"{layers[0]} encoder layer, {layers[1]} decoder layers, dim_feedforward {width}")
assert layers == (1, 6) and width == 2048
try:
    one_layer = make_model(11, 11, N=1, d_model=5, d_ff=2048, h=1, layer_norm="torch",
                           norm_first=False, final_norm=True)
    load_from_torch(one_layer, source_like)
except ValueError as err:
    print("ValueError:", err)
else:
    raise AssertionError("a 1 + 6 layer nn.Transformer loaded into a model with N=1")

# %% [markdown]
# The package's models have one `N` for both stacks, so that model has no package equivalent.
# There is a second difference: **`nn.Transformer` always puts a LayerNorm after each stack**, even
# in post-norm mode, where the paper's model has none (its post-norm layers already end in one).
# `make_model(..., norm_first=False)` follows the paper (its `final_norm=None` means "only for
# pre-norm"); `final_norm=True` adds the two norms that `nn.Transformer` has.

# %%
transformer_model = nn.Transformer(
    d_model=d_model,
    nhead=nhead,
    num_encoder_layers=2,
    num_decoder_layers=2,
    dim_feedforward=16,
    dropout=0.0,
    batch_first=True,
)
print(
    type(transformer_model.encoder.norm).__name__,
    type(transformer_model.decoder.norm).__name__,
)
model = make_model(11, 11, N=2, d_model=d_model, d_ff=16, h=nhead, dropout=0.0,
                   norm_first=False, layer_norm="torch", final_norm=True)
load_from_torch(model, transformer_model)

src = torch.randn(1, 4, d_model)
output = transformer_model(src, tgt)
assert torch.allclose(forward_with_torch_masks(model, src, tgt), output, atol=1e-5)
print(output.shape)

# %% [markdown]
# `forward_with_torch_masks` takes `nn.Transformer.forward`'s arguments and PyTorch's masks, and
# runs the package's encoder and decoder stacks with the converted masks. With all of the notebook's
# masks:

# %%
torch_masks = dict(
    src_mask=source_subsequent_mask(4, 4),
    tgt_mask=source_subsequent_mask(6, 6),
    memory_mask=source_subsequent_mask(6, 4),
    # (1, 4): the last two source positions are padding
    src_key_padding_mask=float_memory_kpm,
    # (1, 6): the last three target positions are padding
    tgt_key_padding_mask=float_tgt_kpm,
    memory_key_padding_mask=float_memory_kpm,
)
output = transformer_model(src, tgt, **torch_masks)
ours_output = forward_with_torch_masks(model, src, tgt, **torch_masks)
assert torch.allclose(ours_output, output, atol=1e-5)
print((ours_output - output).abs().max())

# %% [markdown]
# The other direction: `to_torch` builds an `nn.Transformer` (`batch_first=True`) from a package
# model. A pre-norm model maps to `norm_first=True`. A model built the paper's way, post-norm
# with no final LayerNorm, cannot become a standard `nn.Transformer`, so `to_torch` refuses unless
# asked (`allow_no_final_norm=True`), and then sets the `nn.Transformer`'s `encoder.norm` and
# `decoder.norm` to `None`, which `nn.TransformerEncoder` and `nn.TransformerDecoder` support.

# %%
pre_norm = make_model(11, 11, N=2, d_model=d_model, d_ff=16, h=nhead, dropout=0.0,
                      norm_first=True, layer_norm="torch")
exported = to_torch(pre_norm)
assert exported.encoder.layers[0].norm_first and exported.batch_first
assert torch.allclose(
    exported(src, tgt, **torch_masks),
    forward_with_torch_masks(pre_norm, src, tgt, **torch_masks),
    atol=1e-5,
)

paper = make_model(11, 11, N=2, d_model=d_model, d_ff=16, h=nhead, dropout=0.0,
                   norm_first=False, layer_norm="torch")
try:
    to_torch(paper)
except ValueError as err:
    print("ValueError:", err)
else:
    raise AssertionError("exported a post-norm model without final norms silently")
exported = to_torch(paper, allow_no_final_norm=True)
print(exported.encoder.norm, exported.decoder.norm)
assert torch.allclose(
    exported(src, tgt, **torch_masks),
    forward_with_torch_masks(paper, src, tgt, **torch_masks),
    atol=1e-5,
)

# %% [markdown]
# `make_model`'s default LayerNorm ("annotated": unbiased standard deviation, eps added to it)
# computes a slightly different function from `nn.LayerNorm`, so both functions refuse it too:

# %%
annotated = make_model(11, 11, N=1, d_model=d_model, d_ff=16, h=nhead, norm_first=False,
                       final_norm=True)
torch_twin = nn.Transformer(d_model, nhead, 1, 1, 16, batch_first=True)
conversions = (lambda: to_torch(annotated),
               lambda: load_from_torch(annotated, torch_twin))
for convert in conversions:
    try:
        convert()
    except ValueError as err:
        print("ValueError:", err)
    else:
        raise AssertionError("converted a model with the annotated LayerNorm")

# %% [markdown]
# ### Where each weight goes
#
# `load_from_torch` and `to_torch` move these tensors, one to one, in either direction:
#
# | package | `torch.nn` |
# | --- | --- |
# | `self_attn.linears[0]`, `[1]`, `[2]` ($W^Q, W^K, W^V$ and biases) | `self_attn.in_proj_weight`, `in_proj_bias`, stacked `[q; k; v]` |
# | `self_attn.linears[3]` ($W^O$) | `self_attn.out_proj` |
# | `src_attn` (decoder) | `multihead_attn` |
# | `feed_forward.w_1`, `feed_forward.w_2` | `linear1`, `linear2` |
# | `sublayer[0].norm`, `[1]`, `[2]` | `norm1`, `norm2`, `norm3` |
# | `encoder.norm`, `decoder.norm` (`nn.Identity` when absent) | `encoder.norm`, `decoder.norm` (`None` when absent) |
#
# The embeddings, the positional encoding and the generator have no counterpart: `nn.Transformer`
# starts from embedded inputs and returns decoder states. For the two sides to compute the same
# function, everything else must match, and anything that does not raises a `ValueError` naming
# the module, before a single weight is copied: besides the LayerNorm flavour and the final
# norms above, the LayerNorm eps (PyTorch's `1e-5`), `norm_first`, `d_model`, `nhead` = `h`,
# `dim_feedforward` = `d_ff`, the number of layers, `activation="relu"` (the paper's FFN),
# `bias=True`, and the standard layer classes (a subclass may compute something else).
#
# Two settings are *not* weights, so they need not match. `batch_first` only changes how inputs
# are laid out: a model loaded from a `batch_first=False` transformer gives the same results once
# the inputs `(seq_len, batch, d_model)` are transposed. And dropout is not copied by
# `load_from_torch`: the package model keeps its own probability (`to_torch` copies it across).

# %%
for option in (dict(activation="gelu"), dict(layer_norm_eps=1e-6)):
    try:
        load_from_torch(
            make_model(
                11,
                11,
                N=1,
                d_model=d_model,
                d_ff=16,
                h=nhead,
                norm_first=False,
                layer_norm="torch",
                final_norm=True,
            ),
            nn.Transformer(d_model, nhead, 1, 1, 16, batch_first=True, **option),
        )
        raise AssertionError(f"loaded a transformer built with {option}")
    except ValueError as err:
        print("ValueError:", err)

# PyTorch suggests batch_first=True, which is the point here
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
    # batch_first=False
    seq_first = nn.Transformer(d_model, nhead, 1, 1, 16, dropout=0.3).eval()
loaded = load_from_torch(
    make_model(
        11,
        11,
        N=1,
        d_model=d_model,
        d_ff=16,
        h=nhead,
        dropout=0.0,
        norm_first=False,
        layer_norm="torch",
        final_norm=True,
    ),
    seq_first,
).eval()
# (batch, seq_len, d_model)
src_b, tgt_b = torch.randn(2, 5, d_model), torch.randn(2, 3, d_model)
theirs = seq_first(src_b.transpose(0, 1), tgt_b.transpose(0, 1)).transpose(0, 1)
assert torch.allclose(forward_with_torch_masks(loaded, src_b, tgt_b), theirs, atol=1e-5)
assert loaded.encoder.layers[0].sublayer[0].dropout.p == 0.0  # its own dropout, not 0.3
print("batch_first=False: same weights, same outputs once transposed")

# %% [markdown]
# ## Appendix: a translation model, its masks, and a training step
#
# The notebook ends with PyTorch's translation tutorial: a `Seq2SeqTransformer` (token embeddings,
# positional encoding, `nn.Transformer`, a linear generator), a `create_mask` helper, and a
# training loop over the Multi30k translation corpus.
#
# Multi30k cannot be downloaded when this page is built, so the data here is a small parallel
# corpus made in code: each "sentence" is 2 to 6 random word ids, and its "translation" is the same
# words in reverse order. Id 0 is padding, 1 starts and 2 ends a target sentence.
# `collate_batch` pads a list of pairs into a `Batch`.

# %%
PAD, BOS, EOS, VOCAB = 0, 1, 2, 13
corpus_gen = torch.Generator().manual_seed(0)


def reverse_pairs(n):
    """n (source, target) pairs: the target is the source reversed."""
    pairs = []
    for _ in range(n):
        length = int(torch.randint(2, 7, (1,), generator=corpus_gen))
        words = torch.randint(3, VOCAB, (length,), generator=corpus_gen).tolist()
        pairs.append((words, words[::-1]))
    return pairs


batch = collate_batch(reverse_pairs(4), pad=PAD, bos=BOS, eos=EOS)
print(batch.src)
# decoder input: BOS + reversed words (+ EOS for the shorter ones), padded
print(batch.tgt)
print(batch.tgt_y)  # what to predict: reversed words + EOS, padded
real = batch.src != PAD
assert torch.equal(real, real.cummin(dim=1).values)  # padding only on the right

# %% [markdown]
# The tutorial's model, written batch-first. Its positional encoding computes the same sinusoid
# table as the package's `sinusoid_table` (checked below), so we use that.
#
# The tutorial's model is sequence-first (`nn.Transformer`'s default), and its `PositionalEncoding`
# adds `pos_embedding[:x.size(0)]`, a table of shape `(max_len, 1, E)`. Copied into batch-first
# code, that line would not fail: it would silently add the encoding of position `n` to every token
# of batch item `n`. The class below slices the sequence axis, `x.size(1)`.

# %%
def tutorial_table(max_len, emb_size):
    """The tutorial's table: sin on even features, cos on odd ones."""
    den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
    pos = torch.arange(0, max_len).reshape(max_len, 1)
    table = torch.zeros(max_len, emb_size)
    table[:, 0::2] = torch.sin(pos * den)
    table[:, 1::2] = torch.cos(pos * den)
    return table


assert torch.allclose(tutorial_table(50, 32), sinusoid_table(50, 32), atol=1e-5)

# (max_len, 1, E), as in the tutorial
seq_first_table = tutorial_table(50, 32).unsqueeze(1)
batch_first_input = torch.zeros(3, 7, 32)  # (N, S, E)
wrong = batch_first_input + seq_first_table[: batch_first_input.size(0)]
# item 2 gets position 2 at every step
assert torch.equal(wrong[2, 5], seq_first_table[2, 0])
print("silently wrong shape:", wrong.shape)


class Seq2SeqTransformer(nn.Module):
    """The tutorial's model, batch-first.

    Scaled embeddings + positions, nn.Transformer, linear.
    """

    def __init__(
        self,
        num_layers,
        emb_size,
        nhead,
        src_vocab,
        tgt_vocab,
        dim_feedforward,
        dropout,
    ):
        super().__init__()
        self.transformer = nn.Transformer(
            emb_size,
            nhead,
            num_layers,
            num_layers,
            dim_feedforward,
            dropout,
            batch_first=True,
        )
        self.src_tok_emb = nn.Embedding(src_vocab, emb_size)
        self.tgt_tok_emb = nn.Embedding(tgt_vocab, emb_size)
        self.generator = nn.Linear(emb_size, tgt_vocab)
        self.register_buffer("pos_embedding", sinusoid_table(64, emb_size))
        self.dropout = nn.Dropout(dropout)
        self.emb_size = emb_size

    def embed(self, emb, tokens):
        x = emb(tokens) * math.sqrt(self.emb_size)
        # slice the sequence axis
        return self.dropout(x + self.pos_embedding[: tokens.size(1)])

    def forward(self, src, tgt, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                memory_key_padding_mask):
        src_emb, tgt_emb = (
            self.embed(self.src_tok_emb, src),
            self.embed(self.tgt_tok_emb, tgt),
        )
        outs = self.transformer(
            src_emb,
            tgt_emb,
            src_mask,
            tgt_mask,
            None,
            src_padding_mask,
            tgt_padding_mask,
            memory_key_padding_mask,
        )
        return self.generator(outs)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self.embed(self.src_tok_emb, src), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(
            self.embed(self.tgt_tok_emb, tgt), memory, tgt_mask
        )


torch.manual_seed(0)
s2s = Seq2SeqTransformer(2, 32, 4, VOCAB, VOCAB, dim_feedforward=64, dropout=0.0)
print(sum(p.numel() for p in s2s.parameters()), "parameters")

# %% [markdown]
# ### `create_mask`
#
# The tutorial's `create_mask(src, tgt)` returns four masks: an all-`False` `src_mask` (it blocks
# nothing, so `None` does the same), a causal `tgt_mask`, and the source and target padding masks.
# Its training step passes the source padding mask a second time as `memory_key_padding_mask`, and
# `None` as `memory_mask`.
#
# The tutorial's `tgt_mask` is a float `0 / -inf` mask while its padding masks are bool. Current
# PyTorch deprecates that mix and warns (shown below). A bool causal mask means the same thing
# and keeps the two kinds equal.
#
# The batch-first version below uses a bool causal mask, and returns exactly what the package's
# `batch_masks_to_torch` reads out of a `Batch`.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mha(x, x, x, attn_mask=nn.Transformer.generate_square_subsequent_mask(4),
        key_padding_mask=torch.tensor([[False, False, False, True]]))
print(caught[0].message)


def create_mask(src, tgt):
    """The tutorial's helper for batch-first ids (batch, seq_len).

    With a bool causal mask.
    """
    src_seq_len, tgt_seq_len = src.shape[1], tgt.shape[1]
    tgt_mask = (
        nn.Transformer.generate_square_subsequent_mask(tgt_seq_len) == float("-inf")
    )
    src_mask = torch.zeros(src_seq_len, src_seq_len, dtype=torch.bool)
    return src_mask, tgt_mask, src == PAD, tgt == PAD


src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(
    batch.src, batch.tgt
)
masks = batch_masks_to_torch(batch)
assert not src_mask.any()
assert torch.equal(tgt_mask, masks.tgt_mask)
assert torch.equal(src_padding_mask, masks.src_key_padding_mask)
assert torch.equal(tgt_padding_mask, masks.tgt_key_padding_mask)
assert masks.memory_key_padding_mask is masks.src_key_padding_mask
encoder = nn.Transformer(32, 4, 1, 1, 64, dropout=0.0, batch_first=True).encoder
embedded = torch.randn(*batch.src.shape, 32)
with_mask = encoder(embedded, src_mask, src_key_padding_mask=src_padding_mask)
without = encoder(embedded, None, src_key_padding_mask=src_padding_mask)
assert torch.allclose(with_mask, without)  # an all-False src_mask blocks nothing
print(masks.tgt_key_padding_mask)

# %% [markdown]
# ### The same model in the package
#
# `make_model` with post-norm, PyTorch's LayerNorm and the final norms builds the same network.
# `load_from_torch` copies the `nn.Transformer`; the embeddings and the generator are copied by
# hand (`nn.Transformer` has none). The package's `Generator` returns log-probabilities, so we
# compare with `log_softmax` of the tutorial's logits, at every position.

# %%
model = make_model(
    VOCAB,
    VOCAB,
    N=2,
    d_model=32,
    d_ff=64,
    h=4,
    dropout=0.0,
    norm_first=False,
    layer_norm="torch",
    final_norm=True,
    max_len=64,
)
load_from_torch(model, s2s.transformer)
with torch.no_grad():
    model.src_embed[0].lut.weight.copy_(s2s.src_tok_emb.weight)
    model.tgt_embed[0].lut.weight.copy_(s2s.tgt_tok_emb.weight)
    model.generator.proj.weight.copy_(s2s.generator.weight)
    model.generator.proj.bias.copy_(s2s.generator.bias)

logits = s2s(batch.src, batch.tgt, None, tgt_mask, src_padding_mask, tgt_padding_mask,
             src_padding_mask)
log_probs = model.generator(model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask))
assert torch.allclose(log_probs, logits.log_softmax(dim=-1), atol=1e-5)
print(log_probs.shape, (log_probs - logits.log_softmax(-1)).abs().max())

# %% [markdown]
# The tutorial's `encode` and `decode` pass no padding masks: `encode` gives the encoder no
# `src_key_padding_mask`, and `decode` calls the decoder without `memory_key_padding_mask`. For a
# single sentence, which has no padding, that is harmless; on a padded batch the short sentences
# attend to the padding of the source. The package's `greedy_decode` passes the source mask to
# every decoding step. The cell shows the difference for the shortest sentence of the batch: run
# alone, and inside the padded batch with and without the padding masks.

# %%
shortest = int((batch.src != PAD).sum(1).argmin())
n_real = int((batch.src[shortest] != PAD).sum())
alone = s2s.transformer.decoder(
    s2s.embed(s2s.tgt_tok_emb, batch.tgt[shortest : shortest + 1]),
    s2s.encode(batch.src[shortest : shortest + 1, :n_real], None),
    tgt_mask,
)
# the tutorial's encode: no src padding mask either
memory = s2s.encode(batch.src, None)
tut = s2s.decode(batch.tgt, memory, tgt_mask)[shortest]
memory = s2s.transformer.encoder(s2s.embed(s2s.src_tok_emb, batch.src),
                                 src_key_padding_mask=src_padding_mask)
fixed = s2s.transformer.decoder(s2s.embed(s2s.tgt_tok_emb, batch.tgt), memory, tgt_mask,
                                memory_key_padding_mask=src_padding_mask)[shortest]
print("without padding masks:", (tut - alone[0]).abs().max().item())
print("with padding masks:   ", (fixed - alone[0]).abs().max().item())
assert not torch.allclose(tut, alone[0], atol=1e-3)
assert torch.allclose(fixed, alone[0], atol=1e-5)

# %% [markdown]
# ### One training step, both ways
#
# The tutorial's step: feed `tgt[:-1]` (here `batch.tgt`, the target without its last token),
# predict `tgt[1:]` (`batch.tgt_y`), cross-entropy that ignores padding, backward, optimizer step.
# Run once on each model from the same weights, the losses agree, and so do the weights after the
# update. (Plain SGD keeps the comparison tight; the tutorial uses Adam.)

# %%
torch_opt = torch.optim.SGD(s2s.parameters(), lr=0.1)
ours_opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)

logits = s2s(batch.src, batch.tgt, None, tgt_mask, src_padding_mask, tgt_padding_mask,
             src_padding_mask)
torch_loss = loss_fn(logits.reshape(-1, VOCAB), batch.tgt_y.reshape(-1))
torch_opt.zero_grad()
torch_loss.backward()
torch_opt.step()

log_probs = model.generator(model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask))
ours_loss = F.nll_loss(
    log_probs.reshape(-1, VOCAB), batch.tgt_y.reshape(-1), ignore_index=PAD
)
ours_opt.zero_grad()
ours_loss.backward()
ours_opt.step()

print(f"loss: nn.Transformer {torch_loss.item():.6f}, package {ours_loss.item():.6f}")
assert torch.allclose(torch_loss, ours_loss, atol=1e-5)
assert torch.allclose(
    model.encoder.layers[0].self_attn.linears[0].weight,
    s2s.transformer.encoder.layers[0].self_attn.in_proj_weight[:32],
    atol=1e-5,
)
assert torch.allclose(model.generator.proj.weight, s2s.generator.weight, atol=1e-5)

# %% [markdown]
# To average the loss over an epoch, count the batches inside the loop. `len(list(loader))`
# gives the same number but walks the whole loader (and for a streamed corpus like Multi30k,
# reads the data) a second time; the cell counts the passes over a small streamed dataset.

# %%
class Streamed(torch.utils.data.IterableDataset):
    passes = 0

    def __iter__(self):
        Streamed.passes += 1
        return iter(range(6))


loader = torch.utils.data.DataLoader(Streamed(), batch_size=2)
batches = sum(1 for _ in loader)  # the training loop's own pass
assert (batches, Streamed.passes) == (3, 1)
assert len(list(loader)) == batches and Streamed.passes == 2
print(f"{batches} batches; len(list(loader)) made pass number {Streamed.passes}")

# %% [markdown]
# ### Training the package model
#
# Three hundred steps of Adam on fresh batches teach the small model to reverse most of its
# inputs (more steps would make it better). Then `greedy_decode` translates a fresh batch,
# `reverse_pairs(200)`.

# %%
torch.manual_seed(0)
model = make_model(
    VOCAB,
    VOCAB,
    N=1,
    d_model=32,
    d_ff=64,
    h=4,
    dropout=0.0,
    norm_first=False,
    layer_norm="torch",
    final_norm=True,
    max_len=64,
)
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
losses = []
for step in range(300):
    b = collate_batch(reverse_pairs(32), pad=PAD, bos=BOS, eos=EOS)
    log_probs = model.generator(model(b.src, b.tgt, b.src_mask, b.tgt_mask))
    loss = F.nll_loss(
        log_probs.reshape(-1, VOCAB), b.tgt_y.reshape(-1), ignore_index=PAD
    )
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
means = [sum(losses[i:i + 50]) / 50 for i in range(0, 300, 50)]
print("mean loss per 50 steps:", " ".join(f"{m:.3f}" for m in means))
assert sum(losses[-50:]) < sum(losses[:50]) / 4

# %%
model.eval()
test = collate_batch(reverse_pairs(200), pad=PAD, bos=BOS, eos=EOS)
decoded = greedy_decode(model, test.src, test.src_mask, max_len=8, start_symbol=BOS,
                        end_symbol=EOS, pad_symbol=PAD)
correct = 0
for i, (source, output) in enumerate(zip(test.src.tolist(), decoded.tolist())):
    words = [t for t in source if t != PAD]
    guess = [t for t in output[1:] if t not in (PAD, EOS)]
    correct += guess == words[::-1]
    if i < 4:
        print(words, "->", guess, "expected", words[::-1])
print(f"{correct} of {len(decoded)} new sentences reversed exactly")
assert correct > len(decoded) // 2

# %% [markdown]
# **Exercise: one keep-mask, two PyTorch calls.** You hold the package's causal keep-mask
# `subsequent_mask(3)` and projected heads `q`, `k`, `v` of shape `(1, 2, 3, 4)`. What do you
# pass as `attn_mask` to `F.scaled_dot_product_attention`, and what to an
# `nn.MultiheadAttention` that should compute the same causal attention? Check that the package's
# `attention` function agrees with the first.

# %% tags=["answer"]
# F.scaled_dot_product_attention: True = may attend, like the package: pass it as it is.
# nn.MultiheadAttention: True = blocked: pass the inverse, (L, S) without the batch axis.
from vanilla_transformer import attention

causal = subsequent_mask(3)  # (1, 3, 3)
q3, k3, v3 = torch.randn(3, 1, 2, 3, 4).unbind(0)
by_sdpa = F.scaled_dot_product_attention(q3, k3, v3, attn_mask=causal)
by_package, _ = attention(q3, k3, v3, mask=causal.unsqueeze(1))
assert torch.allclose(by_sdpa, by_package, atol=1e-6)
print("for nn.MultiheadAttention:", keep_to_attn_mask(causal[0]), sep="\n")
assert torch.equal(keep_to_attn_mask(causal[0]), ~causal[0])

# %% [markdown]
# ## Summary
#
# - Boolean masks mean two things in PyTorch: `F.scaled_dot_product_attention`'s `attn_mask`
#   says what **may be attended**, like the package's keep-masks; `nn.MultiheadAttention`'s and
#   `nn.Transformer`'s `attn_mask` and `key_padding_mask` say what is **blocked**. Float masks
#   are added to the scores everywhere. `keep_to_attn_mask`, `attn_mask_to_keep`,
#   `keep_to_key_padding_mask`, `key_padding_mask_to_keep` and `torch_masks_to_keep` convert
#   between the package and the `nn` modules, and refuse input whose meaning would be a guess.
# - A query with every key blocked gives NaN in `nn.MultiheadAttention` (with its default
#   `need_weights=True`), zero attention in PyTorch's layers and the package's fast path, and
#   uniform attention in the package's reference path.
# - With `layer_norm="torch"`, the same `norm_first`, and `final_norm=True` (because
#   `nn.Transformer` always normalises after each stack), a package model and an `nn.Transformer`
#   compute the same function; `load_from_torch` and `to_torch` move the weights either way.
# - A `(tgt_len, src_len)` subsequent mask used as `memory_mask` ties target position `t` to
#   source position `t`; translation models leave `memory_mask` as `None` and pass the source
#   padding as `memory_key_padding_mask`.

# %% [markdown]
# ## Errata
#
# <details class="warning"><summary>Errata</summary>
#
# Where the notebook this page follows goes wrong, and the section whose cell checks the correct
# statement:
#
# | the notebook | in fact | checked in |
# | --- | --- | --- |
# | multiplies the weights by the input, `attn_output_weights.bmm(x)`, and wonders how that relates to the output | the weights multiply the values ($W^V$-projected, split into heads); `out_proj` follows | [core usage](#a-core-usage) |
# | prints layer outputs in training mode with `dropout=0.1` | those numbers change from run to run; `dropout=0.0` or `.eval()` makes them comparable | [`nn.TransformerEncoderLayer`](#nntransformerencoderlayer) |
# | passes `generate_subsequent_mask(6, 4)` as `memory_mask`, as if "no peeking ahead" carried over to the source | the `(tgt_sz, src_sz)` result lets target position `t` see source positions `0..t`, a meaningless alignment in translation; `memory_mask` stays `None` | [`memory_mask`](#b-memory_mask-and-memory_key_padding_mask) |
# | says `memory_mask` "is always set to None in practice" | it is a choice of the model, not a rule of PyTorch: `nn.Transformer` applies any `(tgt_len, src_len)` mask it is given | [`memory_mask`](#b-memory_mask-and-memory_key_padding_mask) |
# | quotes `nn.Transformer`'s old docstring: masks are "additive", padding masks "ByteTensor" | bool masks are accepted everywhere (`True` = blocked); float masks are added | [three APIs](#three-apis-one-causal-mask) |
# | calls `nn.Transformer(d_model=5, nhead=1, num_encoder_layers=1)` a one-layer model | the decoder keeps 6 layers and `dim_feedforward` 2048 | [`nn.Transformer`](#nntransformer) |
# | copies the sequence-first tutorial's `pos_embedding[:x.size(0)]` | in batch-first code it silently adds position `n`'s encoding to batch item `n`; slice `x.size(1)` | [the appendix](#appendix-a-translation-model-its-masks-and-a-training-step) |
# | mixes a float `0 / -inf` `tgt_mask` with bool padding masks | current PyTorch warns; a bool causal mask means the same | [`create_mask`](#create_mask) |
# | decodes without padding masks in `encode` and `decode` | harmless for one sentence, wrong on a padded batch | [the same model in the package](#the-same-model-in-the-package) |
# | averages the loss with `len(list(train_dataloader))` | that walks the data loader a second time; count the batches in the loop | [one training step](#one-training-step-both-ways) |
#
# </details>
