# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Training the copy task<a id="training-guide"></a>
#
# The copy task is the smallest complete test of a Transformer: the source is a random sequence
# of tokens and the target is the same sequence. To get it right, the decoder must learn to
# look, through the encoder-decoder attention, at the source position just after the one it is
# producing. This page trains a model on it with the package's training code and looks inside
# the result:
#
# 1. the package's optimizer and loss, with the paper's recipe;
# 2. gradient accumulation, training, and the loss curve;
# 3. greedy decoding of held-out sequences, the attention weights of the trained model, decoding
#    with the key/value cache, and beam search;
# 4. training on several processes with `DistributedDataParallel`.
#
# The recipe itself (Adam, the warm-up schedule, label smoothing) is explained in
# [the training lesson](../../learn/training/#recipe), and decoding in
# [the decoding lesson](../../learn/decoding/#cached-decoding).
#
# Every cell below ran when this site was built, on a CPU. To keep the build short, the model
# trained here gets half the default number of optimizer steps; it learns visibly, but may not
# copy every held-out sequence. The command line trains for the full default:
#
# ```console
# vanilla-transformer copy-task
# ```
#
# In `benchmarks/results/copy_task.json`, {{ n.training_copy_task.runs }} runs of that command with seeds 0 to
# {{ n.training_copy_task.seed_last }} on a two-core CPU each copied all {{ n.training_copy_task.eval_size }} held-out sequences, in
# {{ n.training_copy_task.train_low }} to {{ n.training_copy_task.train_high }} s of training ({{ n.training_copy_task.wall_low }} to {{ n.training_copy_task.wall_high }} s with Python's
# start-up):

# The code lives in [`training`](../../api/training/schedule/),
# [`copy_task`](../../api/training/copy_task/), [`beam_search`](../../api/inference/beam/)
# and [`ranks`](../../api/training/ranks/). They follow the Annotated Transformer's
# training code; where they differ from it on purpose, a block below that starts with
# **Correction** says how, with a cell that shows the difference.

# %%
import time

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import data_gen, greedy_decode, make_model
from vanilla_transformer.model import keep_attention
from vanilla_transformer.inference import beam_search
from vanilla_transformer.training import CopyTaskConfig, exact_match, train_copy_model
from vanilla_transformer.data import heldout_sequences
from vanilla_transformer.training import (
    LabelSmoothing,
    SimpleLossCompute,
    make_optimizer,
    rate,
    run_epoch,
)

torch.manual_seed(0)
# the models on this page are tiny: extra threads only add overhead
torch.set_num_threads(1)
torch.set_printoptions(precision=3, sci_mode=False, linewidth=100)
print(f"PyTorch {torch.__version__}")


# Heatmaps (cells tagged "heatmap") keep their colours in the dark scheme, which inverts every
# other figure: they are drawn on a transparent background with mid-grey text, legible on both.
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

# %% [markdown]
# ## The optimizer and the loss
#
# The paper trains with Adam and a learning rate that rises linearly for `warmup` steps and then
# falls with the inverse square root of the step (section 5.3;
# [the training lesson](../../learn/training/#recipe) draws it).
# [`rate`](../../api/training/schedule/#vanilla_transformer.training.schedule.rate) computes it,
# with the Annotated Transformer's extra multiplier `factor` (1 here, which gives the paper's
# rate).
# [`make_optimizer`](../../api/training/schedule/#vanilla_transformer.training.schedule.make_optimizer) builds the Adam optimizer and a
# `LambdaLR` scheduler around this function. The optimizer's base rate is 1, so the scheduler's
# multiplier *is* the learning rate:

# %%
optimizer, scheduler = make_optimizer(torch.nn.Linear(4, 4), d_model=512, warmup=4000)
seen = []
for _ in range(3):
    seen.append(optimizer.param_groups[0]["lr"])
    optimizer.step()
    scheduler.step()
assert seen == [rate(s, 512, 1.0, 4000) for s in range(3)]
print([f"{lr:.3e}" for lr in seen])

# %% [markdown]
# The loss is label smoothing. Section 5.4 of the paper gives only its value,
# $\epsilon_{ls} = 0.1$, and cites Szegedy et al., whose smoothed target puts
# $\epsilon / K$ on every one of $K$ classes, the correct one included: the correct class gets
# $1 - \epsilon + \epsilon / K$. The Annotated Transformer chose another spread, and
# [`LabelSmoothing`](../../api/training/loss/#vanilla_transformer.training.loss.LabelSmoothing)
# follows it: $1 - \epsilon$ on the correct token, nothing on padding, and
# $\epsilon / (V - 2)$ on each of the `size - 2` other tokens. It keeps the target of its last
# call in `true_dist`: here five rows over a vocabulary of five tokens, padding id 0,
# $\epsilon = 0.4$ to make the spread easy to see. The correct tokens are 2, 1, 0, 3 and 3; the
# third row's target *is* padding.

# %%
crit = LabelSmoothing(size=5, padding_idx=0, smoothing=0.4)
predict = torch.tensor([[0, 0.2, 0.6, 0.1, 0.1]] * 5).log()  # log 0 = -inf for padding
loss = crit(predict, torch.tensor([2, 1, 0, 3, 3]))
print(crit.true_dist)
assert torch.allclose(crit.true_dist.sum(-1), torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0]))

# %% [markdown]
# Each real row sums to 1: $1 - 0.4 = 0.6$ on the correct token and $0.4 / 3$ on each of the
# `size - 2 = 3` tokens that are neither correct nor padding. The padding row is all zero and
# adds nothing to the loss.
#
# With the paper's $\epsilon$ and the copy task's eleven tokens, the two spreads differ on
# every class. PyTorch's `F.cross_entropy(..., label_smoothing=0.1)` uses Szegedy's target, so
# it gives the correct token $\epsilon / K$ more than `LabelSmoothing` does, and padding some
# weight too:

# %%
V, eps = CopyTaskConfig().vocab, CopyTaskConfig().smoothing  # 11 tokens, the paper's 0.1
assert (V, eps) == (11, 0.1)
target = torch.tensor([3])
package = LabelSmoothing(size=V, padding_idx=0, smoothing=eps)
package(torch.zeros(1, V).log_softmax(-1), target)
szegedy = torch.full((1, V), eps / V).scatter(1, target.unsqueeze(1), 1 - eps + eps / V)
print(f"correct token: package {package.true_dist[0, 3]:.4f}, Szegedy {szegedy[0, 3]:.4f}")
print(f"padding:       package {package.true_dist[0, 0]:.4f}, Szegedy {szegedy[0, 0]:.4f}")
assert torch.isclose(package.true_dist[0, 3], torch.tensor(1 - eps))
# PyTorch's smoothed cross-entropy is the cross-entropy with Szegedy's target
logits = torch.randn(1, V)
expected = -(szegedy * logits.log_softmax(-1)).sum()
got = torch.nn.functional.cross_entropy(logits, target, label_smoothing=eps)
assert torch.isclose(got, expected)

# %% [markdown]
#
# > **Correction.** The Annotated Transformer sums its label-smoothing loss with
# > `nn.KLDivLoss`. In current PyTorch that returns NaN as soon as the model's log-probability is
# > $-\infty$ at an entry whose target is 0, which is what its own example feeds it:
# > `predict.log()` of a table whose padding column holds zeros, like the one above. Here such
# > entries count as 0,
# > whatever the model predicts there, and a padding row adds exactly nothing:

# %%
annotated_style = torch.nn.KLDivLoss(reduction="sum")(predict, crit.true_dist)
confident = torch.tensor(
    [[float("-inf"), float("-inf"), 0.0, float("-inf"), float("-inf")]]
)
padding_row = crit(confident, torch.tensor([0]))
print(f"nn.KLDivLoss: {annotated_style}; LabelSmoothing: {loss:.4f}; "
      f"a padding row with -inf everywhere but token 2: {padding_row}")
assert torch.isnan(annotated_style) and torch.isfinite(loss) and padding_row == 0

# %% [markdown]
# ## Gradient accumulation
#
# [`run_epoch`](../../api/training/loop/#vanilla_transformer.training.loop.run_epoch) can add up the gradients of `accum_iter`
# batches before each optimizer step, to train with a batch larger than fits in memory at once.
# Each batch's summed loss is divided by the number of target tokens in the whole group, so the
# accumulated gradient is the gradient of the mean loss over the combined batch, up to float
# rounding (the cell below prints the largest difference).
#
# > **Correction.** The Annotated Transformer's `run_epoch` divides each batch's loss by that
# > batch's own token count and never by `accum_iter`, so its accumulated gradient is `accum_iter`
# > times too large; it steps when `i % accum_iter == 0`, that is after the *first* batch; it
# > steps the scheduler once per batch instead of once per update; it leaves the gradients of a
# > last, incomplete group for the next epoch; and it takes `train_state=TrainState()` as a
# > default argument, one object shared by every call. None of these remain.
#
# The cell below compares one update made from three batches with one made from the same
# sequences as a single batch.

# %%
def one_update(batches, accum_iter):
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, dropout=0.0)
    sgd = torch.optim.SGD(model.parameters(), lr=1.0)
    before = [p.detach().clone() for p in model.parameters()]
    compute = SimpleLossCompute(model.generator, LabelSmoothing(11, padding_idx=0))
    run_epoch(batches, model, compute, sgd, accum_iter=accum_iter, progress=False)
    # = the gradient
    return [b - p.detach() for b, p in zip(before, model.parameters())]


three = list(data_gen(11, batch_size=4, nbatches=3, seed=1))
combined = next(data_gen(11, batch_size=12, nbatches=1, seed=1))
# data_gen draws row by row, so the 12 rows are the 3 batches of 4 one after the other
assert torch.equal(combined.src, torch.cat([b.src for b in three]))
accumulated, single = (
    one_update(three, accum_iter=3),
    one_update([combined], accum_iter=1),
)
gap = max((a - s).abs().max().item() for a, s in zip(accumulated, single))
print(f"largest difference between the two gradients: {gap:.1e}")
assert gap < 1e-5

# %% [markdown]
# ## Training
#
# [`train_copy_model`](../../api/training/copy_task/#vanilla_transformer.training.copy_task.train_copy_model) builds a model with
# [`make_model`](../../api/model/encoder_decoder/#vanilla_transformer.model.encoder_decoder.make_model), the paper's optimizer and schedule, and
# trains it on batches from [`data_gen`](../../api/data/copy_task/#vanilla_transformer.data.copy_task.data_gen): every sequence
# starts with the start symbol 1 and its other nine tokens are drawn from 1 to 10; 0 is padding.
# The defaults of [`CopyTaskConfig`](../../api/training/copy_task/#vanilla_transformer.training.copy_task.CopyTaskConfig) are printed
# below; this page only halves the number of steps. The model's hyperparameters are a
# [`ModelConfig`](../../api/model/config/#vanilla_transformer.model.config.ModelConfig), the same
# one every model of the package is built from, with both vocabularies set to the task's.
#
# The defaults were chosen for a 2-core CPU: one layer per stack, {{ n.training_copy_task.steps }} steps of
# {{ n.training_copy_task.batch_size }} sequences (the benchmark above timed them), no dropout, and the paper's label
# smoothing of {{ n.training_copy_task.smoothing }}. Every
# batch is freshly drawn, so the model never sees the same data twice; the held-out sequences
# below measure what it learned.

# %%
config = CopyTaskConfig().replace(steps=CopyTaskConfig().steps // 2)
print(config)
assert (config.model.src_vocab, config.model.tgt_vocab) == (config.vocab, config.vocab)
run = train_copy_model(config)
n_params = sum(p.numel() for p in run.model.parameters())
print(f"{n_params:,} parameters, {config.steps} steps of {config.batch_size} sequences "
      f"in {run.seconds:.1f} s; loss {run.losses[0]:.3f} -> {run.final_loss:.4f}")
assert run.final_loss < run.losses[0] / 10

# %% alt="The copy task's training loss per target token at each optimizer step, on a logarithmic scale."
fig, ax = plt.subplots(figsize=(8, 3.5))
ax.plot(range(1, len(run.losses) + 1), run.losses)
ax.set_yscale("log")
ax.set_xlabel("optimizer step")
ax.set_ylabel("loss per token (log scale)")
ax.set_title("Training loss on the copy task")
plt.show()

# %% [markdown]
# ## Greedy decoding of held-out sequences
#
# The test is **exact match**: greedy decoding must reproduce a whole sequence, token for token.
# The held-out sequences come from
# [`heldout_sequences`](../../api/data/copy_task/#vanilla_transformer.data.copy_task.heldout_sequences), drawn with a different
# seed from the training data.
#
# > **Correction.** Some versions of the Annotated Transformer start greedy decoding from
# > `start_symbol=0`. In this task 0 is the padding id: the decoder never saw it as a first input.
# > The start symbol the model was trained with is 1.

# %%
held_out = heldout_sequences(100, seed=config.seed + 1)
accuracy, decoded = exact_match(run.model, held_out)
for src, out in zip(held_out[:4], decoded[:4]):
    print(f"{src.tolist()} -> {out.tolist()}")
print(f"exact match: {100 * accuracy:.1f}% of 100 held-out sequences")
assert accuracy > 0.5

# %%
example = torch.arange(1, 11).unsqueeze(0)  # the source's example: 1, 2, ..., 10
from_one = greedy_decode(run.model, example, example != 0, max_len=10, start_symbol=1)
from_pad = greedy_decode(run.model, example, example != 0, max_len=10, start_symbol=0)
print(f"start symbol 1: {from_one[0].tolist()}")
print(f"start symbol 0: {from_pad[0].tolist()}")
assert from_one[0, 0] == 1

# %% [markdown]
# ## What the attention heads learned
#
# Inside [`keep_attention`](../../api/model/attention/#vanilla_transformer.model.attention.keep_attention), every attention module
# keeps its weights in `.attn`, shape `(batch, h, query_len, key_len)`. One forward pass over the
# first held-out sequence fills the encoder's self-attention, the decoder's (masked)
# self-attention and the decoder's attention over the source. Each panel is one head; rows are
# query positions, columns key positions.

# %% tags=["heatmap"] alt="Three rows of four heatmaps, one per head of the first layer: the encoder's self-attention, the decoder's self-attention (nothing above the diagonal) and the decoder's attention over the encoder, for one held-out sequence; rows are queries and columns keys, each labelled with its token."
src = held_out[:1]
tgt = src[:, :-1]  # the decoder input: the target without its last token
with torch.no_grad(), keep_attention(run.model):
    run.model(src, tgt, (src != 0).unsqueeze(-2), torch.ones(1, 9, 9).tril().bool())
layer_enc, layer_dec = run.model.encoder.layers[0], run.model.decoder.layers[0]
maps = {
    "encoder self-attention": layer_enc.self_attn.attn[0],
    "decoder self-attention": layer_dec.self_attn.attn[0],
    "decoder-encoder attention": layer_dec.src_attn.attn[0],
}
h = config.model.h
src_tokens, tgt_tokens = (
    [str(t) for t in src[0].tolist()],
    [str(t) for t in tgt[0].tolist()],
)
with plt.rc_context(HEATMAP):
    fig, axes = plt.subplots(3, h, figsize=(7, 6.8))
    for row, (title, attn) in enumerate(maps.items()):
        keys = tgt_tokens if title == "decoder self-attention" else src_tokens
        queries = src_tokens if title.startswith("encoder") else tgt_tokens
        for head in range(h):
            ax = axes[row, head]
            ax.imshow(attn[head], cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks(range(len(keys)), keys, fontsize=10, rotation=90)
            ax.set_yticks(range(len(queries)), queries, fontsize=10)
            ax.set_title(f"head {head}", fontsize=10)
            if head == 0:
                ax.set_ylabel(title.replace(" ", "\n", 1), fontsize=10)
    fig.supxlabel("key (token); rows: query (token)", fontsize=10)
    fig.tight_layout()
    plt.show()
# (tgt_len, src_len), averaged over heads
cross = maps["decoder-encoder attention"].mean(0)
looks_ahead = (cross.argmax(-1) == torch.arange(1, 10)).float().mean().item()
print(f"decoder position i attends most to source position i + 1 in "
      f"{100 * looks_ahead:.0f}% of rows")
assert all(torch.allclose(a.sum(-1), torch.ones(a.shape[:-1])) for a in maps.values())
# the subsequent mask: no decoder position attends to a later one
assert torch.triu(maps["decoder self-attention"], diagonal=1).abs().max() == 0

# %% [markdown]
# The decoder's attention over the source is the copying mechanism: to produce the token at
# position $i + 1$, decoder position $i$ looks mostly at source position $i + 1$, in the share
# of rows printed above. The decoder's self-attention is lower triangular, because the
# subsequent mask hides later positions (the last line of the cell checks it).

# %% [markdown]
# ## Decoding with the key/value cache
#
# `greedy_decode(..., use_cache=True)` feeds only the newest token at each step and keeps every
# layer's keys and values from the earlier steps, instead of running the decoder over the whole
# prefix again. It must produce exactly the same tokens:

# %%
start = time.perf_counter()
without = greedy_decode(run.model, held_out, held_out != 0, 10, 1, use_cache=False)
middle = time.perf_counter()
with_cache = greedy_decode(run.model, held_out, held_out != 0, 10, 1, use_cache=True)
end = time.perf_counter()
assert torch.equal(without, with_cache)
print(
    "identical tokens for all 100 sequences; "
    f"recomputing {1000 * (middle - start):.0f} ms, "
    f"cached {1000 * (end - middle):.0f} ms"
)

# %% [markdown]
# Recomputing runs the decoder over the whole prefix at every step: over `n` steps the
# projections cost like $n^2$ and self-attention, each of `t` positions reading up to `t` keys,
# like $n^3$; the cache feeds one position per step. With ten tokens and a model this small both
# take milliseconds; the [Performance](../performance/#decoding) page measures the gap on the
# paper's base model for up to {{ n.performance.dec_last }} generated tokens (`benchmarks/performance.py`).
#
# ## Beam search
#
# The paper decodes translations with beam search, beam size 4 and length penalty
# $\alpha = 0.6$ (section 6.1; [the decoding lesson](../../learn/decoding/#cached-decoding)
# explains it).
# [`beam_search`](../../api/inference/beam/#vanilla_transformer.inference.beam.beam_search)
# implements it for a batch. On the first eight held-out sequences, here is how often it agrees
# with greedy decoding:

# %%
tokens, scores = beam_search(run.model, held_out[:8], held_out[:8] != 0, max_len=10,
                             start_symbol=1, beam_size=4, length_penalty=0.6)
agree = (tokens == with_cache[:8]).all(1)
print(f"beam search equals greedy decoding on {int(agree.sum())} of 8 sequences; "
      f"scores {[round(s, 4) for s in scores.tolist()]}")
assert tokens.shape == (8, 10) and bool((scores <= 0).all())

# %% [markdown]
# ## Training on several processes
#
# [`train_distributed`](../../api/training/copy_task/#vanilla_transformer.training.copy_task.train_distributed) runs the same
# [`run_epoch`](../../api/training/loop/#vanilla_transformer.training.loop.run_epoch) with the model wrapped in
# `DistributedDataParallel`. Every rank draws the same global batch and keeps its own slice of
# it ([`shard_batches`](../../api/training/copy_task/#vanilla_transformer.training.copy_task.shard_batches)); after `backward()` the
# ranks average their gradients, so all copies of the model stay identical, and with equal
# slices the update is the one a single process would make on the whole batch. The backend is
# gloo on CPU and NCCL on GPUs. Start it with `torchrun`:
#
# ```console
# torchrun --standalone --nproc_per_node=2 \
#     -m vanilla_transformer.cli.distributed --steps 400
# ```
#
# It takes the options of `vanilla-transformer copy-task` (the model's are generated from the
# fields of `ModelConfig`), with `--batch-size` counted per rank.
#
# The tests run two CPU processes with
# [`run_local`](../../api/training/copy_task/#vanilla_transformer.training.copy_task.run_local) and check that both end with the same
# weights and that their loss matches a single process's on the combined batch to a relative
# 1e-5 (`tests/training/test_distributed.py`).
