"""The answers of the lessons' "Predict, then reveal" blocks, computed from the trained translator.

Each lesson asks the reader to pick one of a few answers before opening the reveal. The page
lists the choices; this script holds the same choices (CHOICES), computes what the model does,
and returns the letter of the right choice with the numbers that show it, so that the reveal
never states a typed answer. A choice is a guess about a piece that carries meaning, never
about the bare mark of a word's start, "▁".
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from vanilla_transformer.inference import translate_sentences
from vanilla_transformer.model.embeddings import PositionalEncoding
from vanilla_transformer.training.translation import load_translator

FIGURES = Path("docs/figures")
TRANSLATOR = "docs/assets/translator"
MARK = "▁"  # the start of a word

# lesson -> the choices its page lists, in order (a, b, c, ...)
CHOICES: dict[str, list[str]] = {
    "task": ["one piece, the whole word", "vierhundert · ein · undvierzig",
             "vier · hundert · ein · und · vier · zig"],
    "heads": ["four", "hundred", "and", "forty-", "one", "</s>"],
    "positions": ["the same two translations as before", "one translation for both",
                  "no German at all"],
    "masks": ["on <s> itself", "on the later German pieces", "evenly on all four"],
    "layers": ["nearly all of them", "about half", "a small share"],
    "training": ["vierhundert", "ein", "undvierzig", "</s>"],
}


def _figure(name: str) -> dict[str, Any]:
    return runpy.run_path(str(FIGURES / f"{name}.py"))


def _letter(lesson: str, answer: str) -> str:
    """The letter of `answer` among the lesson's choices; the answer must be one of them."""
    choices = CHOICES[lesson]
    assert answer in choices, f"{lesson}: the model's answer {answer!r} is not a choice"
    assert all(choice.strip() != MARK for choice in choices), f"{lesson} offers the bare mark"
    return "abcdefgh"[choices.index(answer)]


def _bare(piece: str) -> str:
    return piece.removeprefix(MARK) if piece != MARK else piece


def values() -> dict[str, Any]:
    out: dict[str, Any] = {}
    model, tok = load_translator(TRANSLATOR)

    # task: how the shared vocabulary cuts the German of 441
    pieces = [_bare(p) for p in tok.tokens("vierhunderteinundvierzig")]
    split = " · ".join(pieces)
    out["task_letter"] = _letter("task", split if len(pieces) > 1 else CHOICES["task"][0])
    out["task_pieces"] = split
    out["task_count"] = len(pieces)

    # heads: where heads 3 and 4 of the last decoder layer look while writing undvierzig
    source, predicted, weights = _figure("heads_translator")["source_attention"]()
    row = predicted.index("undvierzig")
    looked = {source[int(weights[h, row].argmax())] for h in (2, 3)}
    assert len(looked) == 1, looked  # the two heads agree
    (piece,) = looked
    out["heads_letter"] = _letter("heads", piece)
    out["heads_piece"] = piece
    out["heads_weight_3"] = float(weights[2, row].max())
    out["heads_weight_4"] = float(weights[3, row].max())

    # positions: the encoder's positional encoding set to zero
    sentences = ["four hundred and forty-one", "forty-one hundred and four"]
    before = translate_sentences(model, tok, sentences, beam_size=1)
    zeroed, _ = load_translator(TRANSLATOR)
    encoding = list(zeroed.src_embed.children())[1]  # (embedding, positional encoding)
    assert isinstance(encoding, PositionalEncoding)
    encoding.pe.zero_()  # the encoder's table, all zeros
    after = translate_sentences(zeroed, tok, sentences, beam_size=1)
    if after == before:
        answer = CHOICES["positions"][0]
    elif len(set(after)) == 1 and after[0]:
        answer = CHOICES["positions"][1]
    else:
        answer = CHOICES["positions"][2]
    out["positions_letter"] = _letter("positions", answer)
    out["positions_before"] = " and ".join(f"*{german}*" for german in before)
    out["positions_after"] = f"*{after[0]}*"

    # masks: the decoder's first query, <s>, with a mask that blocks nothing
    free = _figure("masks_translator")["translator_weights"](unmasked=True)
    first = free["dec"][0][0, 0][0]  # layer 1, head 1, sentence 1, query <s>: (key,)
    later = float(first[1:].sum())
    if float(first[0]) > 0.5:
        answer = CHOICES["masks"][0]
    elif later > 0.5:
        answer = CHOICES["masks"][1]
    else:
        answer = CHOICES["masks"][2]
    out["masks_letter"] = _letter("masks", answer)
    out["masks_later"] = later
    out["masks_self"] = float(first[0])
    top = int(first[1:].argmax()) + 1
    out["masks_top_piece"] = _bare(free["tgt"][0][top])
    out["masks_top_weight"] = float(first[top])

    # layers: the share of the feed-forward network's hidden units that the ReLU leaves on
    _, hidden = _figure("layers_ffn")["hidden"]()
    on = (hidden > 0).sum(dim=-1)
    share = float(on.float().mean()) / hidden.size(1)
    answer = CHOICES["layers"][0 if share > 0.8 else 1 if share > 0.3 else 2]
    out["layers_letter"] = _letter("layers", answer)
    out["layers_min_on"], out["layers_max_on"] = int(on.min()), int(on.max())
    out["layers_d_ff"] = hidden.size(1)
    out["layers_share_pct"] = 100 * share

    # training: the piece the model gets first, after the figure's first checkpoint
    learning = _figure("training_learning")
    names, probs = learning["right_piece_probs"]()
    early = probs["step 100"]
    best = max(range(len(early)), key=early.__getitem__)
    out["training_letter"] = _letter("training", _bare(names[best]))
    out["training_piece"] = _bare(names[best])
    out["training_prob"] = early[best]
    out["training_step"] = int(learning["MODELS"]["step 100"].split("/")[1])
    out["training_others_max"] = max(p for i, p in enumerate(early) if i != best)
    # each reveal explains the answer it was written for: a different answer fails the build
    explained = {"task": "b", "heads": "d", "positions": "b", "masks": "b", "layers": "c",
                 "training": "a"}
    changed = {k: out[f"{k}_letter"] for k, v in explained.items() if out[f"{k}_letter"] != v}
    assert not changed, f"the model now answers {changed}; rewrite those reveals"
    return out
