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
# # Annotated walkthrough
#
# > **Who this page is for.** A reader who knows what the Transformer computes and wants to
# > read its code, class by class. If you read the Learn path, you know the ideas from
# > [attention](../../learn/attention/), [several heads](../../learn/heads/),
# > [positions](../../learn/positions/), [masks](../../learn/masks/) and
# > [layers](../../learn/layers/): skip to [`clones`](#clones-n-independent-copies) and read
# > the code.
#
# This page gives you a reading knowledge of the Transformer's code: every class, in the order the
# model is assembled, with the code printed from the installed package and a cell that shows what
# it does to a real tensor. After it you can open any file of `vanilla_transformer.model` and say
# what each line does and which shape comes out. The classes are those of
# [The Annotated Transformer](https://nlp.seas.harvard.edu/annotated-transformer/), and the page
# follows an untitled notebook commentary on it, which opens with `clones` and ends with
# `EncoderDecoder`: `clones`, `attention`, `MultiHeadedAttention`, the feed-forward network, the
# positional encoding, `LayerNorm`, the residual `SublayerConnection`, the encoder, the decoder,
# the embeddings, the generator and `EncoderDecoder`. That notebook's mistakes are gathered in one
# *Errata* box at the end; two exercises on the way check what you learned.
#
# The ideas behind the classes each have their own lesson
# ([attention](../../learn/attention/#worked-example), [heads](../../learn/heads/),
# [positions](../../learn/positions/), [residual connections and
# normalisation](../../learn/layers/#residual-and-norm),
# [masks](../../learn/masks/)); this page is about the code. The classes use
# `make_model`'s defaults, the Annotated Transformer's arrangement (pre-norm, untied
# embeddings); the paper's own model is `make_model(V, V, **PRESETS["paper-base"])`.
#
# Every cell ran when the site was built. The first one (hidden here; the downloadable notebook
# has it) imports the package and defines three small helpers: `show_source` prints a package
# object's code without its docstring (the [API reference](../../api/) renders those), `shape`
# formats a tensor's shape and `table` shows rows of values as a table.

# %% tags=["hide-input"]
import ast
import inspect
import math
import re
import textwrap
import warnings

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown
from matplotlib.colors import ListedColormap
from matplotlib.patches import FancyBboxPatch, Rectangle
from torch import nn

import vanilla_transformer
from vanilla_transformer import (
    Decoder,
    DecoderLayer,
    Embeddings,
    Encoder,
    EncoderDecoder,
    EncoderLayer,
    Generator,
    LayerNorm,
    MultiHeadedAttention,
    PositionalEncoding,
    PositionwiseFeedForward,
    SublayerConnection,
    attention,
    clones,
    make_model,
    padding_mask,
    sinusoid_table,
    subsequent_mask,
)
from vanilla_transformer.model import keep_attention
from vanilla_transformer.model.config import PRESETS

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False, linewidth=100)
plt.rcParams.update({"font.size": 11, "figure.dpi": 100})


def show_source(obj):
    """Print the source of a package object, without docstrings."""
    src = textwrap.dedent(inspect.getsource(obj))
    tree = ast.parse(src)
    drop = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                drop.update(range(first.lineno - 1, first.end_lineno))
    lines = [line for i, line in enumerate(src.splitlines()) if i not in drop]
    where = obj.__module__.replace(".", "/") + ".py"
    print(f"# {obj.__qualname__}, from {where}\n" + "\n".join(lines) + "\n")


def shape(t):
    return str(tuple(t.shape))



# Heatmaps (cells tagged "heatmap") keep their colours in the dark scheme, which
# inverts every other figure: they are drawn on a transparent background with mid-grey
# text, legible on both.
HEATMAP = {
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.transparent": True,
    **{
        key: "#808080"
        for key in (
            "text.color",
            "axes.labelcolor",
            "axes.edgecolor",
            "xtick.color",
            "ytick.color",
        )
    },
}


def table(header, rows):
    """Rows of values as a Markdown table (numbers right-aligned)."""
    def cell(value):
        return str(value).replace("|", "\\|").replace("_", "\\_")

    numeric = [
        all(
            isinstance(row[j], (int, float))
            or str(row[j]).replace(".", "").replace(",", "").isdigit()
            for row in rows
        )
        for j in range(len(header))
    ]
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


print(
    "vanilla_transformer", vanilla_transformer.__version__, "| torch", torch.__version__
)

# %% [markdown]
# ## `clones`: N independent copies
#
# Every stack in the model (the `N` encoder layers, the `N` decoder layers, the four linear maps
# of an attention module, the two or three residual connections of a layer) is built by
# `clones`, which deep-copies a module `N` times into an `nn.ModuleList`.

# %%
show_source(clones)

# %% [markdown]
# A deep copy copies the parameters too, so the copies share nothing: training one layer does not
# move another. A plain Python list `[layer] * N` would hold the *same* module `N` times. The cell
# compares the two.

# %%
torch.manual_seed(0)
base = nn.Linear(4, 4)
copies = clones(base, 3)
same = nn.ModuleList([base] * 3)

with torch.no_grad():
    copies[0].weight.fill_(0.0)
    same[0].weight.fill_(0.0)

print("clones: other copies still non-zero?", bool(copies[1].weight.abs().sum() > 0))
print("[module] * 3: second entry zeroed too?", bool(same[1].weight.abs().sum() == 0))
print("parameters: clones", sum(p.numel() for p in copies.parameters()),
      "| [module] * 3", sum(p.numel() for p in same.parameters()))
assert copies[1].weight.data_ptr() != copies[0].weight.data_ptr()
assert same[1] is same[0]

# %% [markdown]
# Separate, but not different: the copies start with the *same values*, those of the module that
# was copied. A freshly built `MultiHeadedAttention` therefore has four equal linear maps.
# `make_model` re-draws every weight *matrix* afterwards (Xavier-uniform, separately for each), so
# in a built model those differ from the start. Biases and LayerNorm parameters are not re-drawn:
# they stay identical copies until training moves them.

# %%
fresh = MultiHeadedAttention(h=2, d_model=8)
print("fresh module, linears[0] == linears[1]:",
      torch.equal(fresh.linears[0].weight, fresh.linears[1].weight))
built = make_model(11, 11, N=1, d_model=8, d_ff=16, h=2).encoder.layers[0].self_attn
print("after make_model, linears[0] == linears[1]:",
      torch.equal(built.linears[0].weight, built.linears[1].weight))
assert torch.equal(fresh.linears[0].weight, fresh.linears[1].weight)
assert not torch.equal(built.linears[0].weight, built.linears[1].weight)
assert torch.equal(built.linears[0].bias, built.linears[1].bias)  # biases: still copies

# %% [markdown]
# ## `attention`: scaled dot-product attention
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V$$
#
# (Why this formula, with one query's numbers worked out, is the lesson
# [Attention](../../learn/attention/#worked-example).)
#
# `key.transpose(-2, -1)` swaps only the last two axes: the leading axes (batch, and later heads)
# are carried along, and `torch.matmul` multiplies the last-two-axes matrices pairwise. The
# softmax runs over the last axis, so each query's weights over the keys sum to one.

# %%
show_source(attention)

# %% [markdown]
# A small example: one sequence of 4 positions with $d_k = 8$. The weights are a
# `(query_len, key_len)` matrix whose rows sum to 1, and the output has one `d_k`-vector per query.

# %%
torch.manual_seed(0)
q, k, v = torch.randn(3, 1, 4, 8).unbind(0)
out, weights = attention(q, k, v)
scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))

print("q, k, v:", shape(q), "| scores:", shape(scores), "| weights:", shape(weights),
      "| output:", shape(out))
print("row sums of the weights:", weights.sum(-1))
assert torch.allclose(weights, scores.softmax(-1))
assert torch.allclose(out, weights @ v)

# %% [markdown]
# ### What the mask means
#
# The mask marks the positions a query **may attend to**: `masked_fill(mask == 0, -1e9)`
# overwrites the scores where it is zero. This convention, and the padding and subsequent masks
# built on it, are taught in [Masks](../../learn/masks/); PyTorch's own, partly
# opposite, conventions in [PyTorch's nn.Transformer and its masks](../pytorch-nn-transformer/).

# %%
# (batch, 1, key_len): the last two keys are blocked
keep = torch.tensor([[[1, 1, 0, 0]]])
_, w_masked = attention(q, k, v, mask=keep)
print(w_masked)
assert torch.all(w_masked[..., 2:] == 0)  # mask 0: no weight (every row keeps a key)
assert torch.allclose(w_masked.sum(-1), torch.ones(1, 4))

# %% [markdown]
# ## `MultiHeadedAttention`
#
# Multi-head attention runs `h` attention functions side by side, each on its own
# $d_k = d_{model}/h$ slice of a learned projection, and joins the results (the idea, in
# [Heads](../../learn/heads/); here, the code).
#
# The module holds four `d_model × d_model` linear maps in `self.linears`: $W^Q$, $W^K$, $W^V$
# (the projections of query, key and value) and $W^O$ (applied after the heads are joined).

# %%
show_source(MultiHeadedAttention.__init__)

# %% [markdown]
# The four maps are not stacked: none of them feeds another. The first three are applied side by
# side, one to each of query, key and value, and the fourth is applied once to the joined heads.
#
# `d_k = d_model // h` only works when `d_model` is divisible by `h`: otherwise the heads would
# not fill `d_model`. The module checks it when it is built.

# %%
mha = MultiHeadedAttention(h=2, d_model=8)
print("linears:", [tuple(l.weight.shape) for l in mha.linears], "| d_k =", mha.d_k)
rejected = False
try:
    MultiHeadedAttention(h=3, d_model=7)
except ValueError as err:
    rejected = True
    print("h=3, d_model=7 ->", err)
assert rejected and mha.d_k * mha.h == 8

# %% [markdown]
# Each linear map computes $Y = XW^\top + b$ on the last axis only, so a `(batch, seq_len, d_model)`
# input stays 3-D after the projection:

# %%
x = torch.randn(2, 3, 8)
lin = mha.linears[0]
print("input", shape(x), "-> projected", shape(lin(x)))
assert torch.allclose(lin(x), x @ lin.weight.T + lin.bias)

# %% [markdown]
# Here is the package's `forward`: the heads are split by `split_heads` and joined again by the
# `transpose(...).reshape(...)` line near the end.
# Between the two, either the explicit `attention` function above runs (when the weights are
# kept for inspection) or `fast_attention`, which computes the same function with PyTorch's fused
# `scaled_dot_product_attention` (on a CPU, in training with dropout on the weights, PyTorch has
# no fused kernel, and `fast_attention` computes the weights itself in fewer passes; the
# [Performance](../../guides/performance/#what-makes-it-fast) page measures both). The `cache` lines serve incremental decoding and can be skipped here.

# %%
show_source(MultiHeadedAttention.split_heads)
show_source(MultiHeadedAttention.forward)

# %% [markdown]
# `forward` receives 3-D tensors, `(batch, seq_len, d_model)`; the heads axis only appears when
# the projection is split into heads.

# %%
torch.manual_seed(0)
mha = MultiHeadedAttention(h=2, d_model=8, dropout=0.0).eval()
x = torch.randn(1, 3, 8)
print("query passed to forward:", shape(x))
print("after the split:        ", shape(mha.split_heads(mha.linears[0](x))))
print("module output:          ", shape(mha(x, x, x)))
assert x.dim() == 3 and mha(x, x, x).shape == x.shape

# %% [markdown]
# ### `zip`: which linear map projects which input
#
# The Annotated Transformer projects the three inputs in one line with
# `zip(self.linears, (query, key, value))`. `zip` pairs items by position and stops at the
# shorter argument, so the fourth map, $W^O$, is left out of the loop.
#
# The tuple is `(query, key, value)`, so the pairs are `(linears[0], query)`,
# `(linears[1], key)` and `(linears[2], value)`: key comes before value.

# %%
pairs = list(zip(["linears[0]", "linears[1]", "linears[2]", "linears[3]"],
                 ["query", "key", "value"]))
print(pairs)
assert pairs[1] == ("linears[1]", "key") and pairs[2] == ("linears[2]", "value")

# %% [markdown]
# The package writes the three projections out one by one instead of with `zip`, as `forward`
# above shows: `linears[0]` on query, `linears[1]` on key, `linears[2]` on value. The assignment
# is the same. The next cell proves it: it recomputes the
# module's output with key projected by `linears[1]` and value by `linears[2]`, and checks that
# swapping the two gives a different answer. (The four maps are first given independent random
# values, as `make_model` does; straight after `clones` they are equal and a swap would change
# nothing.)

# %%
torch.manual_seed(0)
for lin in mha.linears:
    nn.init.xavier_uniform_(lin.weight)
query, key, value = torch.randn(3, 1, 3, 8).unbind(0)


def by_hand(w_key, w_value):
    qh, kh, vh = (mha.split_heads(lin(t)) for lin, t in
                  zip((mha.linears[0], w_key, w_value), (query, key, value)))
    heads, _ = attention(qh, kh, vh)
    return mha.linears[3](heads.transpose(1, 2).reshape(1, 3, 8))


expected = mha(query, key, value)
print("key->linears[1], value->linears[2] matches:",
      torch.allclose(by_hand(mha.linears[1], mha.linears[2]), expected, atol=1e-6))
print("key->linears[2], value->linears[1] matches:",
      torch.allclose(by_hand(mha.linears[2], mha.linears[1]), expected, atol=1e-6))
assert torch.allclose(by_hand(mha.linears[1], mha.linears[2]), expected, atol=1e-6)
assert not torch.allclose(by_hand(mha.linears[2], mha.linears[1]), expected, atol=1e-3)

# %% [markdown]
# ### Splitting into heads: `view` then `transpose`
#
# After the projection each position has one `d_model`-vector. The split gives every head its own
# `d_k` consecutive features of every position:
#
# 1. `view(batch, -1, h, d_k)` cuts the last axis into `h` groups of `d_k`:
#    `(batch, seq_len, d_model)` → `(batch, seq_len, h, d_k)`;
# 2. `transpose(1, 2)` brings the heads forward:
#    `(batch, seq_len, h, d_k)` → `(batch, h, seq_len, d_k)`, so each head sees the whole
#    sequence, as a `(seq_len, d_k)` matrix the attention function can work on.
#
# The last axis is one head's share `d_k`, not the embedding width `d_model`.
#
# A small tensor makes the moves visible: `batch=1`, `seq_len=3`, `d_model=8`, `h=2`, so
# `d_k=4`. Entry `10·t + f` is feature `f` of position `t`, so `21` is position 2, feature 1.

# %%
h, d_k, seq_len = 2, 4, 3
proj = (10 * torch.arange(seq_len).unsqueeze(1) + torch.arange(h * d_k)).unsqueeze(0)
viewed = proj.view(1, -1, h, d_k)
split = viewed.transpose(1, 2)
print("projection (batch, seq_len, d_model) =", shape(proj), "\n", proj, "\n")
print(
    "view(1, -1, h, d_k) -> (batch, seq_len, h, d_k) =",
    shape(viewed),
    "\n",
    viewed,
    "\n",
)
print("transpose(1, 2) -> (batch, h, seq_len, d_k) =", shape(split), "\n", split)
# head 1 = features 4..7 of every position
assert torch.equal(split[0, 1], proj[0, :, 4:8])

# %% [markdown]
# Why not reshape straight to `(batch, h, seq_len, d_k)`? Because a reshape never moves an
# element: it only re-reads the same row-major sequence of numbers with new axis lengths. Read
# that way, "head 0" would get all 8 features of position 0 and the first 4 of position 1, mixing
# positions together. Only the transpose moves features between positions' rows.
#
# The same thing in miniature (with the numbers 1 to 6): reading
# `[1..6]` as 2×3 and transposing is not the same as reading it as 3×2.

# %%
six = torch.arange(1, 7)
print("view(2, 3).T:\n", six.view(2, 3).T, "\nview(3, 2):\n", six.view(3, 2))
wrong = proj.reshape(1, h, -1, d_k)
print("\ndirect reshape(1, h, -1, d_k):\n", wrong)
print("same as view + transpose?", torch.equal(wrong, split))
assert not torch.equal(wrong, split)
# "head 0" holds part of position 0 twice
assert torch.equal(wrong[0, 0, 1], proj[0, 0, 4:8])

# %% [markdown]
# The figure below draws the split. Each cell shows its `10·t + f`
# label; its colour says which head the feature belongs to. After `view` + `transpose` every
# head's block holds only its own colour, for all three positions. The direct reshape mixes both
# colours (both heads' features) inside a block.

# %% tags=["hide-input"] alt="Four rows of numbered cells coloured by head. 1: the projection, three positions by eight features. 2: after view, each position holds two groups of four features, one per head. 3: after transpose, one block per head, each holding only its own colour for all three positions. 4: a direct reshape to the same shape, whose blocks mix both colours."
HEAD_COLOURS = ["#8ecae6", "#ffb703"]


def draw_blocks(ax, blocks, titles, block_title):
    """Draw a list of 2-D integer blocks side by side; colour each cell by its head."""
    x0 = 0
    for block, title in zip(blocks, titles):
        rows, cols = block.shape
        for r in range(rows):
            for c in range(cols):
                value = int(block[r, c])
                head = (value % 10) // d_k
                ax.add_patch(
                    Rectangle((x0 + c, -r - 1), 1, 1, fc=HEAD_COLOURS[head], ec="white")
                )
                ax.text(
                    x0 + c + 0.5,
                    -r - 0.5,
                    str(value),
                    ha="center",
                    va="center",
                    fontsize=10,
                )
        ax.text(x0 + cols / 2, 0.3, title, ha="center", va="bottom", fontsize=10)
        x0 += cols + 1
    ax.set_xlim(-0.2, x0)
    ax.set_ylim(-4.2, 1.3)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(block_title, fontsize=10, loc="left")


fig, axes = plt.subplots(4, 1, figsize=(7, 7.5))
draw_blocks(axes[0], [proj[0]], ["rows: positions 0..2, columns: features 0..7"],
            "1. projection, (seq_len, d_model) = (3, 8)")
draw_blocks(
    axes[1],
    list(viewed[0]),
    [f"position {t}: (h, d_k)" for t in range(seq_len)],
    "2. view(1, -1, h, d_k): (seq_len, h, d_k) = (3, 2, 4)",
)
draw_blocks(axes[2], list(split[0]), [f"head {i}" for i in range(h)],
            "3. transpose(1, 2): (h, seq_len, d_k) = (2, 3, 4), one block per head")
draw_blocks(
    axes[3],
    list(wrong[0]),
    [f"'head' {i}" for i in range(h)],
    "4. direct reshape(1, h, -1, d_k): same shape, but positions and heads are mixed",
)
fig.legend(
    handles=[Rectangle((0, 0), 1, 1, fc=c) for c in HEAD_COLOURS],
    labels=["feature of head 0", "feature of head 1"],
    loc="lower center",
    ncol=2,
    fontsize=10,
)
fig.tight_layout(rect=(0, 0.04, 1, 1))
plt.show()
assert {int(v) % 10 // d_k for v in split[0, 0].flatten()} == {0}
assert {int(v) % 10 // d_k for v in wrong[0, 0].flatten()} == {0, 1}

# %% [markdown]
# **Exercise: predict the shapes of the split.** A batch of 2 sentences of 5 tokens goes through
# `MultiHeadedAttention(h=4, d_model=16)`. Which shape does the query have after its linear map,
# after `view(batch, -1, h, d_k)`, and after `transpose(1, 2)`? Which features of position 0
# does head 3 hold?

# %% tags=["answer"]
# d_k = 16 // 4 = 4. The projection keeps (batch, seq_len, d_model); view cuts d_model
# into h groups of d_k; transpose brings the heads forward. Head 3 holds features 12..15.
quiz = MultiHeadedAttention(h=4, d_model=16)
x_quiz = torch.randn(2, 5, 16)
projected = quiz.linears[0](x_quiz)
viewed_quiz = projected.view(2, -1, 4, 4)
split_quiz = viewed_quiz.transpose(1, 2)
print(shape(projected), "->", shape(viewed_quiz), "->", shape(split_quiz))
assert split_quiz.shape == (2, 4, 5, 4)
assert torch.equal(split_quiz[:, 3, 0], projected[:, 0, 12:16])
assert torch.equal(quiz.split_heads(projected), split_quiz)

# %% [markdown]
# ### Attention per head, and the mask's extra axis
#
# Per head, $QK^\top$ multiplies a `(seq_len, d_k)` matrix by a `(d_k, seq_len)` one, giving a
# `(seq_len, seq_len)` matrix of scores; the softmax turns it into weights, and multiplying the
# weights by the `(seq_len, d_k)` values gives one `d_k`-vector per position and head. With
# the batch and head axes in front, these are the shapes:

# %%
q_h = k_h = v_h = mha.split_heads(mha.linears[0](x))
scores_h = q_h @ k_h.transpose(-2, -1) / math.sqrt(d_k)
out_h, w_h = attention(q_h, k_h, v_h)
print("Q, K, V per head (batch, h, seq_len, d_k):", shape(q_h))
print("K^T                (batch, h, d_k, seq_len):", shape(k_h.transpose(-2, -1)))
print("scores, weights    (batch, h, seq_len, seq_len):", shape(scores_h), shape(w_h))
print("output             (batch, h, seq_len, d_k):", shape(out_h))
assert out_h.shape == q_h.shape

# %% [markdown]
# Three tensors are worth keeping apart: the *scores* $QK^\top/\sqrt{d_k}$ (before the softmax),
# the attention *weights* `p_attn` (their softmax), and the output `x`, the weighted sum of the
# values, one `d_k`-vector per query and head.
#
# A mask arrives as `(batch, 1, seq_len)` or `(batch, seq_len, seq_len)`. Inside the module it
# gets one more axis of size 1 (the `mask.unsqueeze(1)` at the top of the package's `forward`),
# so that it broadcasts over the `h` heads of the
# `(batch, h, seq_len, seq_len)` scores.

# %%
src_mask = torch.tensor([[[True, True, False]]])
per_head = src_mask.unsqueeze(1)  # what forward does with it
print("mask as given:", shape(src_mask), "-> inside the module:", shape(per_head),
      "-> broadcast against scores", shape(scores_h))
assert per_head.shape == (1, 1, 1, 3)
assert torch.broadcast_shapes(per_head.shape, scores_h.shape) == scores_h.shape

# %% [markdown]
# ### Joining the heads again
#
# `x.transpose(1, 2).contiguous().view(batch, -1, h * d_k)` undoes the split: the heads go back
# behind the positions and the `h` pieces of each position are laid end to end, giving
# `(batch, seq_len, d_model)` again, the shape the next layer (and the residual addition) expects.
# `contiguous()` is needed because the attention output is stored head by head (it comes out of
# a matrix multiplication); after the transpose its elements are no longer in row-major order
# for the new shape, and `view` refuses to re-read such a tensor. `contiguous()` copies it into
# the right order first.

# %%
# stored head by head, like the output of attention
heads_out = split.contiguous()
joined = heads_out.transpose(1, 2).contiguous().view(1, -1, h * d_k)
print("joined:", shape(joined), "equal to the projection:", torch.equal(joined, proj))
try:
    heads_out.transpose(1, 2).view(1, -1, h * d_k)
except RuntimeError as err:
    print("without contiguous():", str(err).split(".")[0])
else:
    raise AssertionError("expected view() to fail on the transposed tensor")
assert torch.equal(joined, proj)

# %% [markdown]
# The package has two routes through the middle of `forward`: the explicit `attention` function
# (taken when the weights are kept, for example inside `keep_attention`) and PyTorch's
# `scaled_dot_product_attention`. They agree:

# %%
fast = mha(x, x, x, src_mask)
with keep_attention(mha):
    reference = mha(x, x, x, src_mask)
print("fast and reference paths agree:", torch.allclose(fast, reference, atol=1e-6))
print(
    "kept weights:",
    shape(mha.attn),
    "| weight on the masked key:",
    mha.attn[..., 2].max().item(),
)
assert torch.allclose(fast, reference, atol=1e-6) and mha.attn[..., 2].max() == 0

# %% [markdown]
# ## `PositionwiseFeedForward`
#
# $$\mathrm{FFN}(x) = \max(0,\, xW_1 + b_1)\,W_2 + b_2$$
#
# Two linear maps with a ReLU between them, widening each position's vector from `d_model` to
# `d_ff` and narrowing it back. Dropout is applied to the widened activations.

# %%
show_source(PositionwiseFeedForward)

# %%
torch.manual_seed(0)
ff = PositionwiseFeedForward(d_model=8, d_ff=32, dropout=0.0)
x = torch.randn(2, 5, 8)
print("input", shape(x), "-> w_1", shape(ff.w_1(x)), "-> w_2", shape(ff(x)))
assert ff(x).shape == x.shape

# %% [markdown]
# "Position-wise" means that each position is transformed on its own, with the same weights: the
# output at position 3 depends only on the input at position 3. Mixing information between
# positions is attention's job.

# %%
one_at_a_time = torch.cat([ff(x[:, i:i + 1]) for i in range(x.size(1))], dim=1)
print(
    "all positions at once == one position at a time:",
    torch.allclose(ff(x), one_at_a_time),
)
assert torch.allclose(ff(x), one_at_a_time, atol=1e-6)

# %% [markdown]
# Every encoder layer and every decoder layer has its own copy of this network. Its weights start
# random (Xavier-uniform) and are trained together with the rest of the model.

# %%
torch.manual_seed(0)
small = make_model(11, 11, N=2, d_model=32, d_ff=64, h=4, dropout=0.0)
ffs = [
    name for name, m in small.named_modules() if isinstance(m, PositionwiseFeedForward)
]
print(ffs)
print("trainable:", all(p.requires_grad for name in ffs
                        for p in small.get_submodule(name).parameters()))
assert len(ffs) == 4 and ffs[0].startswith("encoder") and ffs[-1].startswith("decoder")
# make_model's defaults: pre-norm, untied; the paper's preset: post-norm, tied
assert small.config.norm_first and not small.config.tie_weights
assert not PRESETS["paper-base"]["norm_first"] and PRESETS["paper-base"]["tie_weights"]

# %% [markdown]
# ## `PositionalEncoding`
#
# Attention by itself does not know the order of its inputs, so the model adds to each embedding
# a fixed vector that depends on its position `pos` (why sinusoids, in
# [Positions](../../learn/positions/)):
#
# $$PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\qquad
#   PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)$$
#
# Even features get sines and odd features cosines (the slices `0::2` and `1::2`). The package
# builds the table in `sinusoid_table` and stores it, with a leading batch axis, as the buffer
# `pe` of shape `(1, max_len, d_model)`.

# %%
show_source(sinusoid_table)
show_source(PositionalEncoding)

# %% [markdown]
# `torch.arange(0, max_len)` counts from 0 to `max_len - 1`. The first row of the table is
# therefore the encoding of position 0: every sine is 0 and every cosine is 1.

# %%
position = torch.arange(0, 5000).unsqueeze(1)
print(
    "position:",
    shape(position),
    "first:",
    position[0].item(),
    "last:",
    position[-1].item(),
)
pos_enc = PositionalEncoding(d_model=8, dropout=0.0)
print("pe[0, 0] (position 0):", pos_enc.pe[0, 0])
assert position[0].item() == 0 and position[-1].item() == 4999
assert torch.equal(pos_enc.pe[0, 0], torch.tensor([0.0, 1.0] * 4))

# %% [markdown]
# ### `div_term`
#
# `div_term` holds the frequencies $1/10000^{2i/d_{model}}$, one per sine/cosine pair. The code
# computes them as $\exp(-2i \ln(10000)/d_{model})$, which is the same number (the exponential
# of a logarithm), evaluated without raising 10000 to a power. Each pair's wavelength is
# $2\pi / \text{frequency}$, growing geometrically from pair to pair (why, in
# [Positions](../../learn/positions/)). For `d_model = 8`:

# %%
d_model = 8
two_i = torch.arange(0, d_model, 2)
div_term = torch.exp(two_i * -(math.log(10000.0) / d_model))
assert torch.allclose(div_term, 1 / 10000 ** (two_i / d_model))
table(["2i", "div_term", "1/10000^(2i/d)", "wavelength (positions)"],
      [(t, f"{f:.6f}", f"{1 / 10000 ** (t / d_model):.6f}", f"{2 * math.pi / f:.1f}")
       for t, f in zip(two_i.tolist(), div_term.tolist())])

# %% [markdown]
# `torch.arange(0, d_model, 2)` has `d_model / 2` entries (for even `d_model`): one frequency per
# sine/cosine pair, as the table above shows.
#
# The expression `torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model)` needs no more
# parentheses: the unary minus applies to the bracketed quotient, and the multiplication comes
# last either way. The cell checks that both ways of writing it give identical numbers.

# %%
print("div_term shape:", shape(div_term), "for d_model =", d_model)
extra = torch.exp(two_i * (-(math.log(10000.0) / d_model)))
print("with the extra parentheses, identical:", torch.equal(div_term, extra))
assert div_term.shape == (d_model // 2,) and torch.equal(div_term, extra)

# %% [markdown]
# `position * div_term` multiplies a `(max_len, 1)` column by a `(d_model/2,)` row. Broadcasting
# stretches both to `(max_len, d_model/2)`: entry `(pos, i)` is `pos × div_term[i]`. A small
# example, a column `[1, 2, 3]` times a row `[1, 2, 3]`:

# %%
print(torch.tensor([[1], [2], [3]]) * torch.tensor([1, 2, 3]))
print("position * div_term:", shape(position), "*", shape(div_term), "->",
      shape(position * div_term))
assert (position * div_term).shape == (5000, d_model // 2)

# %% [markdown]
# The product is element-wise under broadcasting: `(max_len, 1) * (d_model/2,)` gives
# `(max_len, d_model/2)`, the outer product of the two vectors. Nothing is summed, so it is not a
# dot product.

# %%
outer = torch.outer(position[:, 0].float(), div_term)
print("equal to torch.outer:", torch.allclose(position * div_term, outer))
print(
    "a dot product of two 4-vectors is one number:", torch.dot(div_term, div_term).shape
)
assert torch.allclose(position * div_term, outer)

# %% [markdown]
# The real `pe` buffer of a `PositionalEncoding(d_model=64)` as a heatmap: on the left (low
# features) the values change quickly with position, on the right (high features) slowly. Every
# position gets a different row, as the cell's printed distance checks.

# %% tags=["hide-input", "heatmap"] alt="Heatmap of the positional-encoding table, positions 0 to 99 down and features 0 to 63 across, values from -1 (blue) to 1 (red): the low features alternate in fast stripes, the high features change slowly or not at all over the first hundred positions."
pe64 = PositionalEncoding(d_model=64, dropout=0.0).pe[0, :100]
with plt.rc_context(HEATMAP):
    fig, ax = plt.subplots(figsize=(6.8, 4))
    image = ax.imshow(pe64, aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
    ax.set_xticks(range(0, 64, 8))
    ax.set_yticks(range(0, 100, 10))
    ax.set_xlabel("feature")
    ax.set_ylabel("position")
    ax.set_title("PositionalEncoding(d_model=64).pe[0, :100]")
    fig.colorbar(image, ax=ax)
    plt.show()
distances = torch.cdist(pe64, pe64).fill_diagonal_(float("inf"))
print(
    "smallest distance between the rows of two different positions:",
    f"{distances.min():.3f}",
)
assert distances.min() > 0.1

# %% [markdown]
# ### The forward pass
#
# `forward` adds the first `seq_len` rows of the table to the input and applies dropout. The
# table is a *buffer*: it moves with the model between devices and is saved in its `state_dict`,
# but it is not a parameter, so no optimiser ever changes it and it needs no `Variable` wrapper.
#
# `x.size(1)` is the sequence length: the slice takes the rows for positions `0 .. seq_len - 1`,
# each a full `d_model`-vector.

# %%
pos_enc = PositionalEncoding(d_model=8, dropout=0.0, max_len=50)
x = torch.zeros(2, 6, 8)                      # (batch, seq_len, d_model)
print("x:", shape(x), "| slice used:", shape(pos_enc.pe[:, : x.size(1)]))
print("pe is a buffer:", "pe" in dict(pos_enc.named_buffers()),
      "| a parameter:", "pe" in dict(pos_enc.named_parameters()),
      "| requires_grad:", pos_enc.pe.requires_grad)
assert torch.equal(pos_enc(x)[1], pos_enc.pe[0, :6])

# %% [markdown]
# Code written for PyTorch before version 0.4 wraps such tables in
# `torch.autograd.Variable(..., requires_grad=False)`. `Variable` has been a no-op since
# then: it returns an ordinary tensor, which carries `requires_grad` itself. The package
# never imports it:

# %%
import importlib
import pkgutil

from torch.autograd import Variable  # only to show what it does today

wrapped = Variable(torch.ones(3), requires_grad=False)
print(type(wrapped), "requires_grad =", wrapped.requires_grad)
model_modules = [importlib.import_module(f"vanilla_transformer.model.{info.name}")
                 for info in pkgutil.iter_modules(vanilla_transformer.model.__path__)]
uses_variable = [
    m.__name__ for m in model_modules if "Variable" in inspect.getsource(m)
]
# masks, attention, layers, embeddings, ..., encoder_decoder
assert len(model_modules) >= 10
print("package modules that use Variable:", uses_variable)
assert type(wrapped) is torch.Tensor and uses_variable == []

# %% [markdown]
# ## `LayerNorm`
#
# Layer normalisation rescales each position's vector to mean 0 and standard deviation 1 across
# its features (the last axis), then applies a learned gain `a_2` and bias `b_2`, both of length
# `features`:
#
# $$\mathrm{LN}(x) = a_2 \odot \frac{x - \mu}{s + \epsilon} + b_2$$

# %%
show_source(LayerNorm)

# %% [markdown]
# `torch.ones(features)` is a vector with one entry per feature (the integer `features` is the
# scalar), so each feature gets its own gain and bias.
#
# `nn.Parameter` marks a tensor as a learnable part of the module: it is listed by
# `parameters()` and `named_parameters()`, it requires gradients, and it prints as
# "Parameter containing:". Here is that inspection on the package's `LayerNorm`:

# %%
ln = LayerNorm(4)
for name, param in ln.named_parameters():
    print(
        name, type(param).__name__, shape(param), "requires_grad =", param.requires_grad
    )
print(ln.a_2)
assert [name for name, _ in ln.named_parameters()] == ["a_2", "b_2"]

# %% [markdown]
# `x.mean(-1, keepdim=True)` averages over the last axis and keeps it with length 1, so the
# result broadcasts against `x` in `x - mean`. Without `keepdim` the axis disappears, and the
# subtraction would line up the wrong axes (or fail):

# %%
torch.manual_seed(0)
x = torch.randn(2, 3, 4)
print("x", shape(x), "| mean keepdim=True", shape(x.mean(-1, keepdim=True)),
      "| keepdim=False", shape(x.mean(-1)))
try:
    x - x.mean(-1)
except RuntimeError as err:
    print("x - x.mean(-1):", str(err).split("\n")[0])
assert x.mean(-1, keepdim=True).shape == (2, 3, 1)

# %% [markdown]
# $\epsilon$ is added to the **denominator**: it keeps the division finite when a vector's
# features are all equal and its standard deviation is 0. A zero numerator is harmless.

# %%
constant = torch.full((1, 4), 3.0)                 # all features equal: std = 0
print("std:", constant.std(-1).item(), "| LayerNorm output:", LayerNorm(4)(constant))
print(
    "the same without eps:",
    (constant - constant.mean(-1, keepdim=True)) / constant.std(-1, keepdim=True),
)
assert torch.isfinite(LayerNorm(4)(constant)).all()

# %% [markdown]
# ### This LayerNorm is not `nn.LayerNorm`
#
# The class above uses `x.std`, which is the **unbiased** standard deviation (dividing by
# $n - 1$), and adds $\epsilon = 10^{-6}$ to the standard deviation. PyTorch's `nn.LayerNorm`
# uses the **biased** variance (dividing by $n$) and adds $\epsilon = 10^{-5}$ inside the square
# root. With the same gain and bias the two outputs differ by a factor of about
# $\sqrt{(n-1)/n}$, which is small for $n = 512$ and large for tiny widths:

# %%
torch.manual_seed(0)
rows = []
for n_features in (4, 32, 512):
    x = torch.randn(64, n_features)
    ours, theirs = LayerNorm(n_features)(x), nn.LayerNorm(n_features)(x)
    ratio = (ours / theirs).median().item()
    expected = math.sqrt((n_features - 1) / n_features)
    assert abs(ratio - expected) < 1e-3
    rows.append(
        (
            n_features,
            f"{(ours - theirs).abs().max().item():.6f}",
            f"{ratio:.5f}",
            f"{expected:.5f}",
        )
    )
biased = (x - x.mean(-1, keepdim=True)) / torch.sqrt(
    x.var(-1, unbiased=False, keepdim=True) + 1e-5
)
assert torch.allclose(nn.LayerNorm(512)(x), biased, atol=1e-5)
table(
    ["n", "max \\|annotated - nn.LayerNorm\\|", "median ratio", "sqrt((n-1)/n)"], rows
)

# %% [markdown]
# `make_model(..., layer_norm="torch")` builds the model with `nn.LayerNorm` instead; the default
# is the Annotated Transformer's flavour.
#
# ## `SublayerConnection`: the residual block
#
# Every sublayer of every layer (self-attention, source attention, feed-forward) sits inside the
# same wrapper: normalise, apply the sublayer, apply dropout, add the input back,
# $x + \mathrm{Dropout}(\mathrm{Sublayer}(\mathrm{LN}(x)))$. Normalising first ("pre-norm") is
# the Annotated Transformer's arrangement; the paper normalises after the addition, which the
# package offers as `norm_first=False` (the two compared in
# [Residual connections and normalisation](../../learn/layers/#residual-and-norm)).

# %%
show_source(SublayerConnection.forward)

# %% [markdown]
# The `sublayer` argument is a *callable*: any object that can be called with one tensor. The
# encoder layer passes a `lambda` for the attention sublayer and the module instance
# `self.feed_forward` for the second sublayer. The cell records what each `SublayerConnection` of
# a real encoder layer receives.

# %%
torch.manual_seed(0)
enc_layer = EncoderLayer(8, MultiHeadedAttention(2, 8, dropout=0.0),
                         PositionwiseFeedForward(8, 16, dropout=0.0), dropout=0.0)
received = []
for sub in enc_layer.sublayer:
    sub.register_forward_pre_hook(lambda module, args: received.append(args[1]))

x = torch.randn(1, 3, 8)
mask = torch.tensor([[[True, True, False]]])
enc_out = enc_layer(x, mask)
for i, fn in enumerate(received):
    print(f"sublayer[{i}] received:", type(fn).__name__,
          "| is a class:", inspect.isclass(fn), "| callable:", callable(fn))
assert inspect.isfunction(received[0]) and received[1] is enc_layer.feed_forward

# %% [markdown]
# ### The lambda trick
#
# `SublayerConnection.forward` calls its sublayer with one argument, `self.norm(x)`. Attention
# needs four: query, key, value and mask. The encoder layer bridges the gap with
# `lambda x: self.self_attn(x, x, x, mask)`: a one-argument function that *closes over* `mask`
# (and `self`) from the enclosing `forward`. When `SublayerConnection` calls it with the
# normalised tensor, the lambda's own parameter `x` (the normalised tensor, not the outer `x`)
# fills the three tensor slots and the captured `mask` fills the fourth.
#
# The recorded lambda proves it: its free variables are `mask` and `self`, and the captured mask
# is the very tensor passed to the layer.

# %%
attn_fn = received[0]
captured = dict(zip(attn_fn.__code__.co_freevars,
                    (cell.cell_contents for cell in attn_fn.__closure__)))
print("lambda parameters:", attn_fn.__code__.co_varnames[:attn_fn.__code__.co_argcount])
print("closes over:", attn_fn.__code__.co_freevars)
print("captured mask is the mask we passed:", captured["mask"] is mask)
assert captured["mask"] is mask and captured["self"] is enc_layer

# %% [markdown]
# The lambda stores no result: it is a function, run later by `SublayerConnection` on the
# **normalised** input. Computing the attention in advance would apply it to the un-normalised
# `x`, which is a different computation. The cell shows both: the lambda reproduces the layer's
# first sublayer, the precomputed variant does not.

# %%
first = enc_layer.sublayer[0]
via_lambda = first(x, attn_fn)
by_hand_sub = x + enc_layer.self_attn(first.norm(x), first.norm(x), first.norm(x), mask)
precomputed = x + enc_layer.self_attn(x, x, x, mask)
print(
    "lambda route == x + attn(LN(x)):",
    torch.allclose(via_lambda, by_hand_sub, atol=1e-6),
)
print(
    "precomputed attn(x) gives the same:",
    torch.allclose(via_lambda, precomputed, atol=1e-6),
)
assert torch.allclose(via_lambda, by_hand_sub, atol=1e-6)
assert not torch.allclose(via_lambda, precomputed, atol=1e-3)

# %% [markdown]
# **Exercise: the lambda without a lambda.** Run the first residual block of `enc_layer` on `x`
# and `mask` by passing `enc_layer.sublayer[0]` a named function instead of a lambda. Which
# argument does the function receive, and where do the other three of `self_attn` come from?

# %% tags=["answer"]
# It receives one tensor, the normalised input, used as query, key and value; the mask
# (and the layer) come from the enclosing scope, as in the lambda.
def attend_to_itself(normalised):
    return enc_layer.self_attn(normalised, normalised, normalised, mask)


by_name = enc_layer.sublayer[0](x, attend_to_itself)
print("same as the lambda:", torch.allclose(by_name, via_lambda))
assert torch.allclose(by_name, via_lambda)

# %% [markdown]
# ## `EncoderLayer`
#
# An encoder layer is two residual blocks: self-attention (query, key and value all come from
# the layer's input), then the feed-forward network. The output of the first block is the input
# of the second.

# %%
show_source(EncoderLayer.__init__)
show_source(EncoderLayer.forward)

# %% [markdown]
# ### `make_model`: where `self_attn` comes from
#
# The layer only receives ready-made modules; which ones is decided when the model is built.
# `make_model` collects its arguments into a `ModelConfig`, and the model is assembled from one
# attention module, one feed-forward module and one positional encoding, each deep-copied
# (`c = copy.deepcopy`) into every place that needs it:

# %%
from vanilla_transformer.model import encoder_decoder as model_module

show_source(model_module._build)
show_source(model_module.make_model_from_config)

# %% [markdown]
# So `self_attn` is a `MultiHeadedAttention` instance (not the `attention` function), each layer
# has its own copy, and the encoder's and decoder's copies are unrelated:

# %%
e0, d0 = small.encoder.layers[0], small.decoder.layers[0]
print("type of self_attn:", type(e0.self_attn).__name__)
print(
    "encoder layer 0 and 1 share attention weights:",
    e0.self_attn.linears[0].weight
    is small.encoder.layers[1].self_attn.linears[0].weight,
)
print("encoder and decoder share attention weights:",
      e0.self_attn.linears[0].weight is d0.self_attn.linears[0].weight)
assert isinstance(e0.self_attn, MultiHeadedAttention)
assert e0.self_attn is not d0.self_attn and e0.self_attn is not d0.src_attn

# %% [markdown]
# The initialiser is `nn.init.xavier_uniform_`, with the trailing underscore that marks in-place
# operations; the old name without it is deprecated and warns. The cell shows the warning and
# checks that every weight matrix of the built model lies within the Xavier bound
# $\sqrt{6/(\text{fan\_in} + \text{fan\_out})}$.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    nn.init.xavier_uniform(torch.empty(3, 4))
print("deprecated call warns:", [str(w.message) for w in caught])
for name, p in small.named_parameters():
    if p.dim() > 1:
        bound = math.sqrt(6 / (p.size(0) + p.size(1)))
        assert p.abs().max() <= bound, name
print("every weight matrix is within its Xavier-uniform bound")
assert len(caught) == 1

# %% [markdown]
# ### The data flow through one encoder layer
#
# Here the steps of one encoder layer are run one by one on
# a real layer of the small model (in evaluation mode, so dropout is the identity), checked
# against the layer's own output, and drawn with the shapes measured along the way. The
# feed-forward network widens to `d_ff = 64` inside its box and narrows back.

# %%
small.eval()
torch.manual_seed(0)
src = torch.tensor([[1, 5, 3, 7, 2, 0, 0], [1, 4, 4, 8, 9, 6, 3]])
src_pad_mask = padding_mask(src, pad=0)                   # (batch, 1, src_len)
x0 = small.src_embed(src)                                # (batch, src_len, d_model)
with torch.no_grad():
    s0, s1 = e0.sublayer
    n1 = s0.norm(x0)
    a = e0.self_attn(n1, n1, n1, src_pad_mask)
    x1 = x0 + s0.dropout(a)
    n2 = s1.norm(x1)
    f = e0.feed_forward(n2)
    x2 = x1 + s1.dropout(f)
    layer_out = e0(x0, src_pad_mask)
    hidden = e0.feed_forward.w_1(n2)
print("step by step == EncoderLayer output:", torch.allclose(x2, layer_out, atol=1e-6))
steps = [
    ("x", x0),
    ("LN(x)", n1),
    ("self_attn", a),
    ("x'", x1),
    ("w_1 (inside FFN)", hidden),
    ("feed_forward", f),
    ("output", x2),
]
for name, t in steps:
    print(f"{name:18s}{shape(t)}")
assert torch.allclose(x2, layer_out, atol=1e-6)

# %% tags=["hide-input"] alt="Flow chart of encoder layer 0: the embedded source of shape (2, 7, 32) goes through LayerNorm, self-attention (which also receives the mask of shape (2, 1, 7)), dropout and a residual addition, then LayerNorm, the feed-forward network (64 wide inside), dropout and a second residual addition; green lines carry each block's input around it to the addition. Every step keeps the shape (2, 7, 32)."
BOX_COLOURS = {"io": "#e5e7eb", "norm": "#fde68a", "attn": "#fca5a5", "ff": "#93c5fd",
               "drop": "#d1d5db", "add": "#bbf7d0"}


def draw_flow(ax, title, boxes, skips, side=None):
    """Draw a vertical chain of boxes with residual skips.

    boxes: (label, kind, shape after the box); skips: (from box, to box) pairs;
    side: box index -> label of an input arriving from the right.
    """
    side = side or {}
    ys = [-1.1 * i for i in range(len(boxes))]
    for i, (label, kind, out_shape) in enumerate(boxes):
        y = ys[i]
        ax.add_patch(
            FancyBboxPatch(
                (-1.5, y - 0.32),
                3.0,
                0.64,
                boxstyle="round,pad=0.03",
                fc=BOX_COLOURS[kind],
                ec="black",
                lw=0.8,
            )
        )
        ax.text(0, y, label, ha="center", va="center", fontsize=10)
        if i + 1 < len(boxes):
            ax.annotate("", xy=(0, ys[i + 1] + 0.35), xytext=(0, y - 0.35),
                        arrowprops=dict(arrowstyle="->", lw=0.8))
            ax.text(
                0.08, y - 0.55, out_shape, fontsize=10, va="center", color="#555555"
            )
    for k, (start, end) in enumerate(skips):
        xs = -1.9 - 0.25 * k
        y_from = ys[start] - 0.55
        ax.plot([0, xs, xs], [y_from, y_from, ys[end]], color="#15803d", lw=1)
        ax.annotate("", xy=(-1.5, ys[end]), xytext=(xs, ys[end]),
                    arrowprops=dict(arrowstyle="->", color="#15803d", lw=1))
    for i, label in side.items():
        ax.annotate(
            label,
            xy=(1.5, ys[i]),
            xytext=(2.0, ys[i]),
            fontsize=10,
            va="center",
            arrowprops=dict(arrowstyle="->", color="#7c3aed", lw=1),
            color="#7c3aed",
        )
    ax.set_xlim(-2.8, 4.4)
    ax.set_ylim(ys[-1] - 0.6, 0.6)
    ax.axis("off")
    ax.set_title(title, fontsize=10)


enc_boxes = [
    ("x = embedded source", "io", shape(x0)),
    ("sublayer[0].norm  (LayerNorm)", "norm", shape(n1)),
    ("self_attn(x, x, x, mask)  via the lambda", "attn", shape(a)),
    ("sublayer[0].dropout", "drop", shape(a)),
    ("+  (residual)", "add", shape(x1) + "  = x'"),
    ("sublayer[1].norm  (LayerNorm)", "norm", shape(n2)),
    (f"feed_forward  (d_ff = {hidden.size(-1)} inside)", "ff", shape(f)),
    ("sublayer[1].dropout", "drop", shape(f)),
    ("+  (residual)", "add", shape(x2)),
    ("output of encoder layer 0", "io", ""),
]
fig, ax = plt.subplots(figsize=(7, 8))
draw_flow(
    ax,
    "EncoderLayer: shapes measured on make_model(11, 11, N=2, d_model=32, h=4)",
    enc_boxes,
    skips=[(0, 4), (4, 8)],
    side={2: f"mask {shape(src_pad_mask)}"},
)
plt.show()
assert layer_out.shape == x0.shape

# %% [markdown]
# The same layer seen by `trace_shapes`, which hooks every submodule, runs one real forward pass
# and records the shapes going in and out of each call, in the order the calls start. The
# callable argument of each `SublayerConnection` is not a tensor, so only `x` is listed as its
# input. The feed-forward network's widening to `d_ff` shows in its own rows. The attention
# module's four `linears` appear as calls here, each on its own input.

# %%
from vanilla_transformer.analysis import format_shape_table, trace_shapes

records = trace_shapes(e0, x0, src_pad_mask)
by_path = {r.path: r for r in records}
assert by_path["feed_forward.w_1"].output == (2, 7, 64)
assert by_path[""].output == tuple(x0.shape) and "self_attn.linears.3" in by_path
lines = format_shape_table(records).splitlines()
table(lines[0].split(), [re.split(r" {2,}", line) for line in lines[1:]])

# %% [markdown]
# ## `Encoder`
#
# The encoder runs its `N` layers one after the other, each on the previous one's output (they
# do not run in parallel), and normalises the result once more: in the pre-norm arrangement the
# residual stream is otherwise never normalised.

# %%
show_source(Encoder.forward)

# %%
with torch.no_grad():
    h_enc = x0
    for layer in small.encoder.layers:
        h_enc = layer(h_enc, src_pad_mask)
    by_loop = small.encoder.norm(h_enc)
    memory = small.encoder(x0, src_pad_mask)
print(
    "layers in turn + final norm == Encoder output:",
    torch.allclose(by_loop, memory, atol=1e-6),
)
print("memory:", shape(memory))
assert torch.allclose(by_loop, memory, atol=1e-6)

# %% [markdown]
# ## `DecoderLayer`
#
# A decoder layer has three residual blocks: masked self-attention over the target so far,
# attention to the encoder's output (`src_attn`), and the feed-forward network.

# %%
show_source(DecoderLayer.forward)

# %% [markdown]
# In `src_attn(x, m, m, src_mask)` the query comes from the decoder and the keys and values from
# `memory`, the encoder's output. The two sequences may have different lengths: each of the
# `tgt_len` queries gets a weight for each of the `src_len` source positions. `tgt_mask` stops
# each target position from looking ahead; `src_mask` hides the source padding.
#
# `lambda x: self.src_attn(x, m, m, src_mask)` takes exactly one parameter, `x`; `m` and
# `src_mask` are captured from `forward` (with `self`, and in the package also the decoding cache
# `src_cache`), just as `mask` was in the encoder layer. That is why `SublayerConnection` can call
# it with one tensor.

# %%
dec_layer = small.decoder.layers[0]
lambdas = []
hooks = [sub.register_forward_pre_hook(lambda module, args: lambdas.append(args[1]))
         for sub in dec_layer.sublayer]
tgt = torch.tensor([[1, 5, 3, 7], [1, 4, 4, 8]])
tgt_mask = subsequent_mask(tgt.size(1))
with torch.no_grad(), keep_attention(small):
    y0 = small.tgt_embed(tgt)
    dec_out = dec_layer(y0, memory, src_pad_mask, tgt_mask)
for hook in hooks:
    hook.remove()
src_lambda = lambdas[1]
print("parameters of the src_attn lambda:",
      src_lambda.__code__.co_varnames[:src_lambda.__code__.co_argcount])
print("captured:", src_lambda.__code__.co_freevars)
print(
    "self_attn weights (batch, h, tgt_len, tgt_len):", shape(dec_layer.self_attn.attn)
)
print("src_attn weights  (batch, h, tgt_len, src_len):", shape(dec_layer.src_attn.attn))
assert src_lambda.__code__.co_argcount == 1
assert dec_layer.src_attn.attn.shape == (2, 4, tgt.size(1), src.size(1))

# %% [markdown]
# The decoder layer's data flow, drawn the same way as the encoder's. The violet arrow is `memory`, which enters the middle block as key and value.

# %% tags=["hide-input"] alt="Flow chart of decoder layer 0 with three residual blocks: LayerNorm then masked self-attention (receiving tgt_mask of shape (1, 4, 4)), LayerNorm then source attention (receiving memory of shape (2, 7, 32) and src_mask of shape (2, 1, 7)), LayerNorm then the feed-forward network; each block ends in dropout and a residual addition, and the shape stays (2, 4, 32)."
dec_boxes = [
    ("y = embedded target", "io", shape(y0)),
    ("sublayer[0].norm", "norm", shape(y0)),
    ("self_attn(y, y, y, tgt_mask)", "attn", shape(y0)),
    ("dropout, +  (residual)", "add", shape(y0)),
    ("sublayer[1].norm", "norm", shape(y0)),
    ("src_attn(y, m, m, src_mask)", "attn", shape(y0)),
    ("dropout, +  (residual)", "add", shape(y0)),
    ("sublayer[2].norm", "norm", shape(y0)),
    ("feed_forward", "ff", shape(y0)),
    ("dropout, +  (residual)", "add", shape(dec_out)),
    ("output of decoder layer 0", "io", ""),
]
fig, ax = plt.subplots(figsize=(7, 8.5))
draw_flow(
    ax,
    "DecoderLayer: three residual blocks",
    dec_boxes,
    skips=[(0, 3), (3, 6), (6, 9)],
    side={
        2: f"tgt_mask {shape(tgt_mask)}",
        5: f"memory m {shape(memory)}\nsrc_mask {shape(src_pad_mask)}",
    },
)
plt.show()
assert dec_out.shape == y0.shape

# %% [markdown]
# ## `Decoder`
#
# Like the encoder: `N` layers in turn, then a final LayerNorm. Every layer receives the same
# `memory`, the output of the *whole* encoder stack.

# %%
show_source(Decoder.forward)

# %%
with torch.no_grad():
    h_dec = y0
    for layer in small.decoder.layers:
        h_dec = layer(h_dec, memory, src_pad_mask, tgt_mask)
    by_loop = small.decoder.norm(h_dec)
    decoded = small.decoder(y0, memory, src_pad_mask, tgt_mask)
print(
    "layers in turn + final norm == Decoder output:",
    torch.allclose(by_loop, decoded, atol=1e-6),
)
print("decoder output:", shape(decoded))
assert torch.allclose(by_loop, decoded, atol=1e-6)

# %% [markdown]
# ## `Embeddings`
#
# `nn.Embedding(vocab, d_model)` is a lookup table: a `(vocab, d_model)` weight matrix whose row
# `i` is the vector of token `i`. Looking tokens up is just indexing rows (the first row is
# token 0):

# %%
torch.manual_seed(0)
table = nn.Embedding(10, 5)
ids = torch.tensor([1, 2, 3, 4])
print(table(ids))
assert torch.equal(table(ids), table.weight[ids])

# %% [markdown]
# `nn.Embedding` accepts integer tensors of any shape and appends a `d_model` axis: the model
# passes `(batch, seq_len)` ids and gets `(batch, seq_len, d_model)` vectors.

# %%
ids_2d = torch.tensor([[1, 2, 3], [4, 5, 6]])
print("ids", shape(ids_2d), "-> vectors", shape(table(ids_2d)))
assert table(ids_2d).shape == (2, 3, 5)

# %% [markdown]
# The package's `Embeddings` wraps such a table as `lut` and scales the looked-up vectors.

# %%
show_source(Embeddings.forward)

# %% [markdown]
# The embeddings are multiplied by $\sqrt{d_{model}}$: a factor larger than 1 that uses the model
# width, not the head size (the $1/\sqrt{d_k}$ factor belongs to the attention scores). With
# `d_model = 512` the factor is:

# %%
torch.manual_seed(0)
emb = Embeddings(d_model=512, vocab=11)
tokens = torch.tensor([[1, 2, 3]])
factor = (emb(tokens) / emb.lut(tokens)).mean().item()
print(f"measured factor: {factor:.4f} | sqrt(d_model) = {math.sqrt(512):.4f} "
      f"| 1/sqrt(d_k) with h = 8: {1 / math.sqrt(512 // 8):.4f}")
assert torch.allclose(emb(tokens), emb.lut(tokens) * math.sqrt(512))
assert abs(factor - math.sqrt(512)) < 1e-3

# %% [markdown]
# ## `Generator`
#
# The last step maps each decoder output vector to log-probabilities over the target
# vocabulary: a linear map `d_model → vocab` (`proj`) followed by `log_softmax` over the last axis.

# %%
show_source(Generator.forward)

# %% [markdown]
# The decoder's output, the generator's input, has shape `(batch, seq_len, d_model)`: one vector
# per target position. The vocabulary appears only in the generator's *output*,
# `(batch, seq_len, vocab)`. Here the target has 4 positions and the vocabulary 11 tokens:

# %%
with torch.no_grad():
    log_probs = small.generator(decoded)
print("generator input (batch, seq_len, d_model):", shape(decoded))
print("generator output (batch, seq_len, vocab): ", shape(log_probs))
print(
    "probabilities sum to 1:", torch.allclose(log_probs.exp().sum(-1), torch.ones(2, 4))
)
assert decoded.shape == (tgt.size(0), tgt.size(1), small.config.d_model)
assert log_probs.shape == (tgt.size(0), tgt.size(1), small.config.tgt_vocab)

# %% [markdown]
# ## `EncoderDecoder`
#
# The top-level module holds the five parts built by `make_model` and defines three methods:
# `encode` (embed the source and run the encoder), `decode` (embed the target and run the
# decoder against `memory`), and `forward`, which is `decode(encode(...))`.

# %%
show_source(EncoderDecoder.encode)
show_source(EncoderDecoder.decode)
print(small.src_embed)

# %% [markdown]
# Besides `forward`, the model has two methods, `encode` (source and source mask to `memory`) and
# `decode` (`memory`, source mask, target and target mask to decoder states); the attributes
# `encoder` and `decoder` are the stacks. Inference needs the two methods separately: greedy
# decoding encodes the source once and then calls `decode` once per generated token, reusing the
# same `memory`.
#
# `src_vocab` is the size of the source *vocabulary*, the number of rows of the embedding table;
# the model does not fix the sequence length at all (up to `max_len`).
#
# `forward` stops at the decoder's output vectors `(batch, tgt_len, d_model)`; the generator is
# stored on the model but applied separately (by the loss computation in training, or by the
# decoding loop).

# %%
with torch.no_grad():
    full = small(src, tgt, src_pad_mask, tgt_mask)
    two_steps = small.decode(
        small.encode(src, src_pad_mask), src_pad_mask, tgt, tgt_mask
    )
print("forward == decode(encode(...)):", torch.allclose(full, two_steps))
print("forward output:", shape(full), "(last axis d_model, not vocab)")
print("embedding table rows (src_vocab):", small.src_embed[0].lut.num_embeddings,
      "| memory for a source of length 7:", shape(small.encode(src, None)),
      "and of length 3:", shape(small.encode(src[:, :3], None)))
assert torch.allclose(full, two_steps) and full.size(-1) == small.config.d_model

# %% [markdown]
# ### Attention weights of a whole model
#
# Finally, the attention weights of every head of the first encoder and decoder layers, from one
# forward pass of the small model inside `keep_attention` (which makes each attention module keep
# its weights in `.attn`). The model is untrained, and in this run the weights inside the allowed
# region are close to uniform; what the picture shows is the masks at work: the source padding (the last two
# source tokens of the first sequence are `0`) gets no weight in the encoder and in the source
# attention, and the decoder's self-attention is lower triangular.

# %% tags=["hide-input", "heatmap"] alt="A grid of heatmaps of attention weights, three rows (encoder self-attention, decoder self-attention, decoder source attention) by four heads, with token ids as tick labels. The last two source columns, padding, are empty in the encoder and source-attention rows; the decoder self-attention maps are lower triangular."
with torch.no_grad(), keep_attention(small):
    small(src, tgt, src_pad_mask, tgt_mask)
rows = {
    "encoder.layers[0].self_attn": small.encoder.layers[0].self_attn.attn[0],
    "decoder.layers[0].self_attn": small.decoder.layers[0].self_attn.attn[0],
    "decoder.layers[0].src_attn": small.decoder.layers[0].src_attn.attn[0],
}
src_labels, tgt_labels = (
    [str(t) for t in src[0].tolist()],
    [str(t) for t in tgt[0].tolist()],
)
short = {"encoder.layers[0].self_attn": "encoder self-attn",
         "decoder.layers[0].self_attn": "decoder self-attn",
         "decoder.layers[0].src_attn": "decoder src-attn"}
with plt.rc_context(HEATMAP):
    fig, axes = plt.subplots(3, small.config.h, figsize=(7.2, 7))
    for r, (name, weights) in enumerate(rows.items()):
        keys = tgt_labels if "decoder.layers[0].self" in name else src_labels
        queries = src_labels if name.startswith("encoder") else tgt_labels
        for head in range(small.config.h):
            ax = axes[r, head]
            ax.imshow(weights[head], cmap="viridis", vmin=0, vmax=weights.max().item())
            ax.set_xticks(range(len(keys)), keys, fontsize=10)
            ax.set_yticks(range(len(queries)), queries, fontsize=10)
            ax.set_title(f"head {head}", fontsize=10)
            if head == 0:
                ax.set_ylabel(short[name], fontsize=11)
    fig.supxlabel("key (token id); rows: query (token id)", fontsize=11)
    fig.tight_layout()
    plt.show()
assert torch.all(rows["encoder.layers[0].self_attn"][..., 5:] == 0)
assert torch.all(rows["decoder.layers[0].src_attn"][..., 5:] == 0)
assert torch.equal(rows["decoder.layers[0].self_attn"] > 0,
                   subsequent_mask(tgt.size(1)).expand(small.config.h, -1, -1))

# %% [markdown]
# ## Errata
#
# <details class="warning"><summary>Errata</summary>
#
# The notebook this page follows makes these mistakes. Each row links to the section whose
# cell checks the correct statement.
#
# | the notebook says | in fact | checked in |
# | --- | --- | --- |
# | `Variable(...)` is needed around tensors | `Variable` returns a plain tensor; it is not needed | [the forward pass](#the-forward-pass) |
# | the mask stores the positions to mask | it marks the positions that **may** be attended | [what the mask means](#what-the-mask-means) |
# | `linears` are four stacked layers | three run side by side on q, k, v; the fourth after the heads are joined | [`MultiHeadedAttention`](#multiheadedattention) |
# | any `d_model`, `h` will do (7 // 3 = 2) | `d_model` must be divisible by `h` | [`MultiHeadedAttention`](#multiheadedattention) |
# | `query` in `forward` is 4-D | it is `(batch, seq_len, d_model)`; 4-D only after the split | [`MultiHeadedAttention`](#multiheadedattention) |
# | zip pairs linear 2 with value, linear 3 with key | `linears[1]` with key, `linears[2]` with value | [`zip`](#zip-which-linear-map-projects-which-input) |
# | after `view`: "(nbatches, length of the words, number of words, length of the embedding)" | `(batch, seq_len, h, d_k)`, then `(batch, h, seq_len, d_k)` after `transpose` | [splitting into heads](#splitting-into-heads-view-then-transpose) |
# | `x` is "the attention score" | scores are $QK^\top/\sqrt{d_k}$; `x` is the weighted sum of values | [attention per head](#attention-per-head-and-the-masks-extra-axis) |
# | the feed-forward network is "pre-trained", for the decoder | trained with the model, in every encoder and decoder layer | [`PositionwiseFeedForward`](#positionwisefeedforward) |
# | positions are 1 .. max_len | 0 .. max_len - 1 | [`PositionalEncoding`](#positionalencoding) |
# | `div_term` has shape `(d_model,)` | `(d_model/2,)` | [`div_term`](#div_term) |
# | a pair of parentheses is missing in `div_term` | none is missing | [`div_term`](#div_term) |
# | `position * div_term` is a dot product | an element-wise (outer) product under broadcasting | [`div_term`](#div_term) |
# | `pe[:, :x.size(1)]` takes the first d_model elements | it takes the first `seq_len` positions | [the forward pass](#the-forward-pass) |
# | `a_2 = torch.ones(features)` is a scalar | a vector of length `features` | [`LayerNorm`](#layernorm) |
# | $\epsilon$ keeps the numerator from 0 | it keeps the denominator from 0 | [`LayerNorm`](#layernorm) |
# | the `sublayer` argument is a class | it is a callable: a lambda or a module instance | [`SublayerConnection`](#sublayerconnection-the-residual-block) |
# | the lambda stores the attention output | it is a function, run later on `LN(x)` | [the lambda trick](#the-lambda-trick) |
# | initialise with `nn.init.xavier_uniform` | deprecated; the package calls `nn.init.xavier_uniform_` | [`make_model`](#make_model-where-self_attn-comes-from) |
# | the decoder's lambda takes (x, m, m, src_mask) | it takes `x` only; the rest is captured | [`DecoderLayer`](#decoderlayer) |
# | `nn.Embedding` takes a 1-D index vector | any shape of integer tensor | [`Embeddings`](#embeddings) |
# | embeddings are scaled by $1/\sqrt{d_k}$ | by $\sqrt{d_{model}}$ | [`Embeddings`](#embeddings) |
# | the generator's input is (nbatches, vocab, d_model) | `(batch, seq_len, d_model)` | [`Generator`](#generator) |
# | the methods are "encoder" and "decoder"; "decoder" takes the source | `encode` takes the source, `decode` the target | [`EncoderDecoder`](#encoderdecoder) |
# | `src_vocab` is the number of words in the input sequence | the source vocabulary size | [`EncoderDecoder`](#encoderdecoder) |
# | `EncoderDecoder` outputs a probability table | it outputs decoder states; the generator is separate | [`EncoderDecoder`](#encoderdecoder) |
#
# </details>
