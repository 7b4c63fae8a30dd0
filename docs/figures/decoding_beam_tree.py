"""Beam search with a beam of 4, as a tree: the trained translator translating "one thousand,
three hundred and eight" (a number of the test split) with the paper's beam of 4 and length
penalty 0.6. Each row is one step; its boxes are the prefixes the beam keeps, best first, each
with the piece it adds and its log-probability log P so far; a line joins each prefix to the one
it extends. A hypothesis that ends with the end symbol is finished and leaves the beam, with its
score log P / lp. The tree is recorded by `beam_tree`, which runs the same steps as the
package's `beam_search` (a decoder pass per step, the best 2k extensions, the first k that end
finish, the best k that do not stay) and checks that it finishes with the same hypotheses.
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from vanilla_transformer import beam_search, padding_mask, subsequent_mask
from vanilla_transformer.data import number_words
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.training.translation import load_translator

COMMON = runpy.run_path(str(Path(__file__).with_name("_lesson_common.py")))
NUMBER, BEAM, ALPHA, MAX_LEN = 1308, 4, 0.6, 20
KEPT, DONE, EDGE = "#3060a8", "#b35806", "#888888"  # survive the dark scheme's inversion


class Node(NamedTuple):
    """One prefix of the tree: the step that made it, its parent's slot one step up, its
    newest piece, log P so far, and, for a finished hypothesis, its score log P / lp."""

    step: int
    parent: int
    piece: str
    log_prob: float
    score: float  # NaN while the prefix is alive


def beam_tree(
    number: int = NUMBER, k: int = BEAM, alpha: float = ALPHA
) -> tuple[list[list[Node]], list[tuple[Node, list[int]]]]:
    """(rows, finished): rows[t] lists the prefixes kept after step t + 1, best first;
    finished lists the finished hypotheses as (Node, tokens), in the order they finished."""
    model, tok = load_translator(COMMON["TRANSLATOR"])
    name = tok.tokenizer.id_to_token
    src = torch.tensor([tok.encode(number_words(number)) + [EOS]])
    mask = padding_mask(src, PAD)
    prefixes, scores = [[BOS]], [0.0]
    rows: list[list[Node]] = []
    finished: list[tuple[Node, list[int]]] = []
    best_penalty = ((5.0 + MAX_LEN - 1) / 6.0) ** alpha
    with torch.no_grad():
        memory = model.encode(src, mask)
        for t in range(1, MAX_LEN):
            ys = torch.tensor(prefixes)
            out = model.decode(memory.expand(len(prefixes), -1, -1), mask, ys,
                               subsequent_mask(ys.size(1)))
            logp = model.generator(out[:, -1]).float()
            vocab = logp.size(-1)
            candidates = (torch.tensor(scores).view(-1, 1) + logp).view(-1)
            top, index = candidates.topk(2 * k)
            penalty = ((5.0 + t) / 6.0) ** alpha
            kept: list[Node] = []
            ids: list[int] = []  # the token of each kept prefix
            for j, (value, i) in enumerate(zip(top.tolist(), index.tolist(), strict=True)):
                parent, token = divmod(i, vocab)
                node = Node(t, parent, str(name(token)), value, math.nan)
                if token == EOS:
                    if j < k:  # only the first k candidates may finish
                        finished.append((node._replace(score=value / penalty),
                                         prefixes[parent] + [token]))
                elif len(kept) < k:
                    kept.append(node)
                    ids.append(token)
            rows.append(kept)
            if len(finished) >= k:
                kth = sorted((n.score for n, _ in finished), reverse=True)[k - 1]
                if kept[0].log_prob / best_penalty <= kth:
                    break
            prefixes = [prefixes[n.parent] + [ids[slot]] for slot, n in enumerate(kept)]
            scores = [n.log_prob for n in kept]
    # the package's beam search finishes with the same hypotheses and scores
    _, _, hypotheses = beam_search(model, src, mask, MAX_LEN, BOS, EOS, beam_size=k,
                                   length_penalty=alpha, return_all=True)
    best = sorted(finished, key=lambda f: f[0].score, reverse=True)[:k]
    assert [h.tokens.tolist() for h in hypotheses[0]] == [tokens for _, tokens in best]
    assert all(math.isclose(h.score, n.score, abs_tol=1e-4)
               for h, (n, _) in zip(hypotheses[0], best, strict=True))
    return rows, finished


SHOWN = 7  # the steps drawn: every hypothesis of the result has finished by then


def label(piece: str) -> str:
    """A piece as the box shows it: the word-start mark kept, a long piece on two lines."""
    return piece if len(piece) <= 11 else piece[:10] + "\n" + piece[10:]


def draw() -> plt.Figure:
    rows, finished = beam_tree()
    best = sorted(finished, key=lambda f: f[0].score, reverse=True)[:BEAM]
    result = {(n.step, n.parent) for n, _ in best}
    rows = rows[:SHOWN]
    fig, ax = plt.subplots(figsize=(4.75, 6.6), layout="constrained")
    ax.set_xlim(-0.55, BEAM - 0.45)
    ax.set_ylim(SHOWN + 0.95, -0.45)
    ax.axis("off")
    box = dict(boxstyle="round,pad=0.25", fc="white", ec=KEPT, lw=1.2)
    ax.text((BEAM - 1) / 2, 0, "<s>", ha="center", va="center", fontsize=11, bbox=box)
    # the path of the best hypothesis, slot by slot from its end back to <s>
    node, _ = best[0]
    path, slot = set(), node.parent
    for t in range(node.step - 1, 0, -1):
        path.add((t, slot))
        slot = rows[t - 1][slot].parent
    for t, kept in enumerate(rows, start=1):
        ax.text(-0.55, t, f"{t}", ha="left", va="center", fontsize=11, color=EDGE)
        for slot, node in enumerate(kept):
            x0 = (BEAM - 1) / 2 if t == 1 else node.parent
            ax.plot([x0, slot], [t - 1 + 0.2, t - 0.28], color=EDGE, lw=1, zorder=0)
            on_path = (t, slot) in path
            style = dict(box, fc="#dbe6f5" if on_path else "white", lw=2 if on_path else 1.2)
            ax.text(slot, t, f"{label(node.piece)}\n{node.log_prob:.2f}", ha="center",
                    va="center", fontsize=11, bbox=style, linespacing=1.1)
    for node, _ in finished:
        if node.step > SHOWN or node.step < 2:
            continue
        chosen = (node.step, node.parent) in result
        ax.text(node.parent, node.step - 1 + 0.5, f"</s> {node.score:.2f}", ha="center",
                va="center", fontsize=11, color=DONE if chosen else EDGE,
                fontweight="bold" if chosen else "normal")
    ax.text(-0.55, SHOWN + 0.7, "step; each box: newest piece, log P so far\n"
            "</s>: a finished hypothesis, its score log P / lp", ha="left", va="center",
            fontsize=11, color="#333333")
    return fig
