"""What the two shipped translators make of "one million", a number outside their corpus.

The German model's vocabulary has no piece with an "m" (no English number word below a million
has one), so the page refuses the input; the French model's has "m", "▁mil" and "▁mille", from
the French *mille*, so it encodes the input and translates it.
"""

from __future__ import annotations

from typing import Any

import torch

from vanilla_transformer.data.tokenizer import BOS, EOS, UNK
from vanilla_transformer.inference import greedy_decode
from vanilla_transformer.training.translation import load_translator

ENGLISH = "one million"
FRENCH_PIECES = ("m", "▁mil", "▁mille")


def values() -> dict[str, Any]:
    out: dict[str, Any] = {"english": ENGLISH}
    _, german_tok = load_translator("docs/assets/translator")
    german_vocab = german_tok.tokenizer.get_vocab()
    assert not [piece for piece in german_vocab if "m" in piece], "the German vocabulary has an m"
    assert UNK in german_tok.encode(ENGLISH)
    model, tok = load_translator("docs/assets/translator/fr")
    vocab = tok.tokenizer.get_vocab()
    missing = [piece for piece in FRENCH_PIECES if piece not in vocab]
    assert not missing, f"the French vocabulary lacks {missing}"
    out["french_pieces"] = ", ".join(f"`{piece}`" for piece in FRENCH_PIECES)
    ids = tok.encode(ENGLISH)
    assert UNK not in ids
    src = torch.tensor([ids + [EOS]])
    model.eval()
    with torch.no_grad():
        ys = greedy_decode(model, src, None, len(ids) + 10, BOS, end_symbol=EOS)
    pieces = [i for i in ys[0, 1:].tolist() if i != EOS]
    out["french_answer"] = tok.decode(pieces)
    return out
