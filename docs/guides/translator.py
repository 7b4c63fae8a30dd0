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
# # Training a real translator
#
# The copy task checks that the machinery works; this page trains the model on a real language
# pair, small enough for a CPU and still made of real words: English number words in, German
# number words out. `num2words` spells every number in both languages, so the data is made on
# the spot, offline, and as large as we like. The page goes through the paper's whole recipe:
#
# 1. the data, and why German is an interesting target;
# 2. one byte-pair vocabulary for both languages (section 5.1);
# 3. the model and the training recipe (sections 3.4, 5.1, 5.3 and 5.4, explained in
#    [the training lesson](../../learn/training/#recipe)), with the learning-rate and loss
#    curves;
# 4. scores on numbers the model never saw: BLEU, chrF and exact match, greedy decoding against
#    beam search, the last checkpoint against the average of the last ones (section 6.1);
# 5. a few translations;
# 6. where the decoder looks in the English sentence while it writes the German one.
#
# Every cell ran when this site was built, on a CPU. To keep the build short, the model here
# trains for a third of the default number of steps (the exact numbers are printed below), so
# it still gets some numbers wrong. The command line trains the full configuration; in
# `benchmarks/results/translate_numbers.json`, {{ n.translator.runs }} such runs on one CPU thread trained in
# {{ n.translator.train_s_low }} to {{ n.translator.train_s_high }} s and got {{ n.translator.exact_low:g }} to {{ n.translator.exact_high:g }} % of
# {{ n.translator.test_size }} unseen numbers exactly right (checked
# [below](#beam-search-against-greedy-decoding)):
#
# ```console
# vanilla-transformer translate numbers --lang de --out data
# vanilla-transformer translate train \
#     --train data/train.tsv --valid data/valid.tsv --out run
# ```
#
# The code lives in [`numbers`](../../api/data/numbers/),
# [`tokenizer`](../../api/data/tokenizer/), [`token_batches`](../../api/data/token_batches/),
# [`translation`](../../api/training/translation/) and
# [`evaluate`](../../api/inference/evaluate/).

# %%
import tempfile
import textwrap
import time

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown

from vanilla_transformer.data import (
    number_corpus,
    number_words,
    split_numbers,
    train_tokenizer,
)
from vanilla_transformer.data.token_batches import make_token_batches
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.inference import score_translations, translate_sentences
from vanilla_transformer.model import keep_attention
from vanilla_transformer.training import (
    TRANSLATION_PRESETS,
    TranslationConfig,
    load_translator,
    train_translation,
)
from vanilla_transformer.training.schedule import rate

SEED = 0
torch.manual_seed(SEED)
torch.set_num_threads(1)  # a small model: more threads only add overhead
plt.rcParams.update({"font.size": 11})

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
print(f"PyTorch {torch.__version__}")
assert torch.initial_seed() == SEED

# %% [markdown]
# ## The data
#
# [`number_corpus`](../../api/data/numbers/#vanilla_transformer.data.numbers.number_corpus)
# draws numbers below one million, splits them into a training, a validation and a test set
# with a seeded permutation, and spells each one in English and in German. Every number below
# {{ n.translator.always_first }} goes to the training set: these are the building blocks of all the others, and drawn at
# random they would be one in a thousand.

# %%
SIZES = {"train": 20_000, "valid": 200, "test": 300}
corpus = number_corpus("de", SIZES, seed=SEED)
assert {name: len(pairs) for name, pairs in corpus.items()} == SIZES
examples = [("training", *pair) for pair in corpus["train"][417:422]]
examples += [("test", *pair) for pair in corpus["test"][:3]]
Markdown("\n".join(["| set | English | German |", "| --- | --- | --- |"]
                   + [f"| {where} | {en} | {de} |" for where, en, de in examples]))

# %% [markdown]
# German is a good test of attention because its word order is not the English one. A number
# below a million is a single word, and inside each group of three digits the units come
# *before* the tens, joined by "und": `421` is "vier-hundert-ein-und-zwanzig", four hundred,
# one and twenty. To write it, the decoder must look at the English "one" before it looks at
# "twenty": the alignment crosses.

# %%
print(number_words(421), "->", number_words(421, "de"))
assert number_words(421, "de") == "vier" + "hundert" + "ein" + "und" + "zwanzig"

# %% [markdown]
# The scores below are only worth something if the test numbers were never seen in training.
# The split is made on the numbers themselves, so no test number, and hence no test sentence,
# is in the training set:

# %%
numbers = split_numbers(SIZES, seed=SEED)
train_numbers, test_numbers = set(numbers["train"]), set(numbers["test"])
train_english = {english for english, _ in corpus["train"]}
unseen = sum(english not in train_english for english, _ in corpus["test"])
print(f"{unseen} of {len(corpus['test'])} test sentences are absent from training")
assert not train_numbers & test_numbers and unseen == len(corpus["test"])
assert set(range(1000)) <= train_numbers  # every number below 1000 is a training number

# %% [markdown]
# ## One vocabulary for both languages
#
# The paper encodes sentences with byte-pair encoding (section 5.1): start from single
# characters and merge the most frequent adjacent pair, again and again, until the vocabulary
# has the size asked for. Frequent words become one piece; rare ones are spelled from pieces.
# [`train_tokenizer`](../../api/data/tokenizer/#vanilla_transformer.data.tokenizer.train_tokenizer)
# learns **one** vocabulary from the sentences of both languages. That is what lets the
# model use a single matrix for the source embedding, the target embedding and the projection
# before the softmax (section 3.4): one row per piece, whatever the language. The marker `▁`
# starts a word.

# %%
config = TranslationConfig(max_steps=400, warmup=200, save_every=25, eval_size=100)
sentences = [s for pair in corpus["train"] for s in pair]  # English and German
tokenizer = train_tokenizer(sentences, config.vocab_size)
for n in (421, 441):
    for text in (number_words(n), number_words(n, "de")):
        print(f"{text:>27}: {tokenizer.tokens(text)}")
print(f"{tokenizer.vocab_size} pieces, ids {PAD}, {BOS}, {EOS} are <pad>, <s>, </s>")
assert tokenizer.decode(tokenizer.encode("vierhunderteinundzwanzig")) == (
    "vierhunderteinundzwanzig")

# %% [markdown]
# German compounds fall apart into pieces that are reused across numbers: the units ("ein"),
# then "und" with the tens. Which pieces exist depends only on frequency. "twenty-one" is
# common enough in the training set to have become one English piece, while "forty-one" is
# still two, "forty-" and "one"; this matters when we look at the attention at the end.
#
# ## The recipe
#
# The model is the `paper-small` preset of
# [`TRANSLATION_PRESETS`](../../api/training/translation/#vanilla_transformer.training.translation.TRANSLATION_PRESETS):
# the paper's arrangement (residual, then layer normalisation, the "post-norm" of section 3.1;
# tied embeddings; no bias on the output projection; dropout 0.1 on the sublayer outputs and
# none on the attention weights) at a width that trains on a laptop.

# %%
preset = TRANSLATION_PRESETS["paper-small"]
print(textwrap.fill(", ".join(f"{k}={v}" for k, v in preset.items()), 80))
print(textwrap.fill(repr(config), 80, subsequent_indent="    "))
assert not preset["norm_first"] and preset["tie_weights"]
assert preset["attn_dropout"] == 0

# %% [markdown]
# [`train_translation`](../../api/training/translation/#vanilla_transformer.training.translation.train_translation)
# puts the recipe together:
#
# - **batches by token count** (section 5.1): the pairs are sorted by length and cut into
#   batches of about `max_tokens` padded tokens, many short sentences or few long ones, so
#   little of each batch is padding;
# - **Adam** with $\beta_1 = 0.9$, $\beta_2 = 0.98$, $\epsilon = 10^{-9}$ and the warm-up
#   schedule of section 5.3,
#   $lrate = d_{model}^{-0.5} \cdot \min(step^{-0.5},\ step \cdot warmup^{-1.5})$;
# - **label smoothing** $\epsilon_{ls} = 0.1$ (section 5.4);
# - a checkpoint every `save_every` steps and, at the end, the **average of the last
#   `average` checkpoints** (section 6.1), taken from the last fifth of the run only: earlier
#   in a short run a checkpoint is a weaker model, and in our runs averaging one in lowered
#   the scores.
#
# Here is what batching by token count makes of the training set:

# %%
pair_ids = list(zip(tokenizer.encode_batch([e for e, _ in corpus["train"]]),
                    tokenizer.encode_batch([g for _, g in corpus["train"]])))
batches = make_token_batches(pair_ids, config.max_tokens, pad=PAD, bos=BOS, eos=EOS)
shapes = [tuple(b.src.shape) for b in batches]
padded = sum(int((b.src == PAD).sum()) for b in batches)
padding = padded / sum(b.src.numel() for b in batches)
print(f"{len(batches)} batches; first {shapes[0]}, last {shapes[-1]} "
      f"(sentences, tokens); {100 * padding:.1f} % of English positions are padding")
assert all(rows * length <= config.max_tokens for rows, length in shapes[:-1])

# %% [markdown]
# The full command-line run trains for {{ n.translator.max_steps }} steps; this page stops at the number printed
# below, with a shorter warm-up to match. Training takes most of this page's build time.

# %%
default = TranslationConfig()
out = tempfile.mkdtemp()
run = train_translation(corpus["train"], corpus["valid"], out, config=config,
                        progress=False)
print(f"{run.step} steps (the default is {default.max_steps}), "
      f"{len(corpus['train']):,} pairs, {run.seconds:.0f} s; "
      f"loss {run.losses[0]:.2f} -> {run.losses[-1]:.2f}; "
      f"averaged the checkpoints of steps {run.averaged}")
assert run.step == config.max_steps and run.losses[-1] < run.losses[0] / 5
assert tokenizer.tokens("vierhunderteinundzwanzig") == (
    run.tokenizer.tokens("vierhunderteinundzwanzig"))  # the same vocabulary as above

# %% [markdown]
# The left panel is the schedule the optimizer followed: a linear rise for `warmup` steps,
# then a decay with the inverse square root of the step. The right panel is the training loss
# per German token, and the greedy exact match on the first validation numbers at each
# checkpoint. With label smoothing the best the model can do is match the smoothed target,
# which keeps 0.1 of the probability spread over the other pieces, rather than be certain.

# %% alt="Left: the learning rate at each optimizer step, rising during the warm-up and then falling as the inverse square root of the step. Right: the training loss per token at each step, and the exact match on the validation numbers, in per cent, at each checkpoint."
d_model = run.model.src_embed[0].d_model
steps = range(1, run.step + 1)
fig, (left, right) = plt.subplots(1, 2, figsize=(7, 3), layout="constrained")
left.plot(steps, [rate(s, d_model, config.factor, config.warmup) for s in steps])
left.set_xlabel("optimizer step")
left.set_ylabel("learning rate")
right.plot(steps, run.losses, linewidth=0.8, label="loss")
right.set_xlabel("optimizer step")
right.set_ylabel("loss per token")
exact = right.twinx()
exact.plot([h["step"] for h in run.history], [h["valid_exact"] for h in run.history],
           "o-", color="tab:orange", markersize=3, label="exact match")
exact.set_ylabel("valid exact match (%)")
exact.set_ylim(0, 100)
plt.show()
print("validation exact match (%) at the checkpoints:",
      [round(h["valid_exact"]) for h in run.history])
assert max(h["valid_exact"] for h in run.history) > 50

# %% [markdown]
# ## Scores on unseen numbers
#
# Three scores, from
# [`score_translations`](../../api/inference/evaluate/#vanilla_transformer.inference.evaluate.score_translations):
#
# - **BLEU**, the paper's measure: the geometric mean of the 1- to 4-gram precisions, times a
#   penalty for short output. It is computed here on **characters**: a German number below a
#   million is one word, and a one-word sentence has no word 4-grams, so word BLEU would be 0
#   whatever the translation.
# - **chrF**, an F-score over character n-grams, which gives partial credit to a
#   nearly right compound.
# - **Exact match**, the share of numbers translated without a single wrong letter: the
#   strictest of the three, and the one that matters for numbers.
#
# BLEU and chrF come from `sacrebleu`; a character BLEU is not comparable with the word BLEU
# that papers report. Each score is measured for greedy decoding and for the paper's beam search
# (beam 4, length penalty $\alpha = 0.6$), with the last checkpoint and with the average of the
# last ones.

# %%
english = [e for e, _ in corpus["test"]]
german = [g for _, g in corpus["test"]]
last_model, _ = load_translator(out, checkpoint="last")
models = {"last checkpoint": last_model, "average of the last": run.model}
scores, outputs = {}, {}
start = time.perf_counter()
for name, model in models.items():
    for beam in (1, 4):
        hyps = translate_sentences(model, run.tokenizer, english, beam_size=beam,
                                   alpha=0.6)
        outputs[name, beam] = hyps
        scores[name, beam] = score_translations(hyps, german, bleu_tokenize="char")
seconds = time.perf_counter() - start
best = max(s.exact_match for s in scores.values())
assert best > 70
for name in models:
    assert scores[name, 4].exact_match >= scores[name, 1].exact_match - 2
rows = [
    f"| {name} | {'greedy' if beam == 1 else f'beam {beam}'} "
    f"| {s.bleu:.1f} | {s.chrf:.1f} "
    f"| {s.exact_match:.1f} % |"
    for (name, beam), s in scores.items()
]
Markdown(f"{len(english)} unseen numbers, decoded 4 ways in {seconds:.0f} s\n\n"
         + "\n".join(["| model | decoding | BLEU | chrF | exact |",
                       "| --- | --- | ---: | ---: | ---: |", *rows]))

# %% [markdown]
# ## Beam search against greedy decoding
#
# Beam search keeps the four most probable prefixes at each step instead of one. On this task
# that did not help. `benchmarks/results/translate_numbers.json` holds {{ n.translator.runs }} full runs of the
# command line (seeds 0 to {{ n.translator.seed_last }}, {{ n.translator.test_size }} unseen numbers each): beam 4 got fewer numbers exactly right
# than greedy decoding in every run, with the averaged model and with the last checkpoint.
# Their mean exact match, in per cent of the test numbers:
#
# | model | greedy | beam 4 |
# | --- | ---: | ---: |
# | average of the last | {{ n.translator.mean_averaged_greedy }} | {{ n.translator.mean_averaged_beam4 }} |
# | last checkpoint | {{ n.translator.mean_last_greedy }} | {{ n.translator.mean_last_beam4 }} |
#
# Each run trained in {{ n.translator.train_s_low }} to {{ n.translator.train_s_high }} s, and its averaged model, decoding greedily, got
# {{ n.translator.exact_low }} to {{ n.translator.exact_high }} % of the test numbers exactly right.

# %% [markdown]
# ## Translations
#
# A few unseen numbers, translated by the averaged model with greedy decoding: the first four
# of the test set, then the first three it gets wrong, each with the reference.

# %%
hyps = outputs["average of the last", 1]
triples = list(zip(english, hyps, german))
wrong = [(e, h, g) for e, h, g in triples if h != g]
for e, h, g in triples[:4] + wrong[:3]:
    shown = h if len(h) <= 64 else h[:63] + "…"  # a looping output, cut for the page
    print(f"{e}\n    {shown}  {'✓' if h == g else '✗'}")
    if h != g:
        print(f"    should be {g}")
print(f"{len(wrong)} of {len(english)} wrong")
right = scores["average of the last", 1].exact_match / 100
assert len(wrong) == round(len(english) * (1 - right))

# %% [markdown]
# Compare each mistake printed above with its reference: is it a wrong digit, or a misspelling
# inside the word? This model trained for a third of the default steps; the full run gets
# nearly all of them right.
#
# ## Where the decoder looks
#
# With [`keep_attention`](../../api/model/attention/#vanilla_transformer.model.attention.keep_attention),
# each attention module keeps its weights in `.attn`, shape
# `(batch, heads, query length, key length)`. One forward pass over an English number and the
# model's own German translation fills them. The maps below are the encoder-decoder attention
# (`src_attn`) of the **last decoder layer**, averaged over its heads. Each row is the decoder
# position that writes the German piece on the left (its queries); each column is an English
# piece of the input (its keys); a row sums to 1.

# %% tags=["heatmap"] alt="Two heatmaps of the last decoder layer's cross-attention, averaged over its heads: one for an unseen number ending in forty-something and one for four hundred and forty-one. Rows are the German pieces written, columns the English pieces read, each labelled with its piece."
def cross_attention(model, tokenizer, text):
    """The last decoder layer's src_attn, mean over heads, and the pieces."""
    src = torch.tensor([tokenizer.encode(text) + [EOS]])
    german = translate_sentences(model, tokenizer, [text])[0]
    ids = [BOS] + tokenizer.encode(german) + [EOS]
    tgt = torch.tensor([ids[:-1]])  # reads <s> + pieces, writes pieces + </s>
    mask = torch.ones(1, tgt.size(1), tgt.size(1)).tril().bool()
    with torch.no_grad(), keep_attention(model):
        model(src, tgt, (src != PAD).unsqueeze(-2), mask)
    weights = model.decoder.layers[-1].src_attn.attn[0].mean(0)
    names = tokenizer.tokenizer.id_to_token
    return weights, [names(i) for i in ids[1:]], [names(i) for i in src[0].tolist()]


def pieces(text):
    return run.tokenizer.tokens(text)


# an unseen number whose last tens and units are separate English pieces, and 441
unseen_example = next(e for e in english if pieces(e)[-2:-1] == ["▁forty-"])
examples = [unseen_example, number_words(441)]
maps = []
with plt.rc_context(HEATMAP):
    fig, axes = plt.subplots(len(examples), 1, figsize=(7, 9), layout="constrained",
                             height_ratios=[1.6, 1])
    for ax, text in zip(axes, examples):
        weights, rows, columns = cross_attention(run.model, run.tokenizer, text)
        maps.append((weights, rows, columns))
        ax.imshow(weights, cmap="viridis", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(columns)), columns, rotation=60, ha="right",
                      rotation_mode="anchor", fontsize=11)
        ax.set_yticks(range(len(rows)), rows, fontsize=11)
        ax.set_xlabel("English piece read (key)")
        ax.set_ylabel("German piece written (query)")
        ax.set_title(text, fontsize=11)
    plt.show()
for weights, rows, columns in maps:
    # the last pieces: English "forty-", units, </s>; German units, "und...zig", </s>
    units, tens = weights[-3], weights[-2]
    print(f"{rows[-3]!r} reads {columns[-2]!r} {units[-2]:.2f}, {columns[-3]!r} "
          f"{units[-3]:.2f}; {rows[-2]!r} reads {columns[-2]!r} {tens[-2]:.2f}, "
          f"{columns[-3]!r} {tens[-3]:.2f}")
    assert units[-2] > tens[-2] and tens[-3] > tens[-2]  # the lines cross
weights, rows, columns = maps[0]
looks_at = {row: columns[int(weights[i].argmax())] for i, row in enumerate(rows)}
print(looks_at)
assert looks_at[rows[-3]] == columns[-2] and looks_at[rows[-2]] == "▁forty-"

# %% [markdown]
# Read the bottom rows of the top map. The German units piece reads the English units most, and
# the "und...zig" piece after it reads "forty-": German writes the units first, and the lines of
# the map cross (the assertions of the cell check both rows, for both numbers). Nobody told the
# model that German swaps units and tens; the attention learned it from the pairs alone.
#
# The bottom map is `441`, a number from the training set; the printed weights show how sharply
# each of its two rows picks its English piece. One layer's attention, averaged over heads, is
# a hint of where information flows, not an exact alignment: the other heads and the lower
# layer also carry it.
