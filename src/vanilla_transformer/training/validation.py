"""Validation during training: the scores of the model on held-out pairs at a checkpoint,
and which validation is the best.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..config import LOWER_IS_BETTER
from ..data.translation_batches import encode_pairs
from .loss import teacher_forced_nll

if TYPE_CHECKING:
    from ..data.tokenizer import SharedTokenizer
    from ..inference.evaluate import TranslationScores
    from ..model.encoder_decoder import EncoderDecoder

__all__ = ["auto_bleu_tokenize", "VALID_KEYS", "sign", "best_entry", "Validator"]


def auto_bleu_tokenize(references: Sequence[str]) -> str:
    """sacrebleu's BLEU tokenizer for `references`: `char` when they average fewer than four
    words (no word 4-grams), else `13a`.

    Examples:
        >>> auto_bleu_tokenize(["vierhunderteins", "zwei"]), auto_bleu_tokenize(["a b c d e"])
        ('char', '13a')
    """
    if not references:
        return "13a"
    words = sum(len(r.split()) for r in references) / len(references)
    return "char" if words < 4 else "13a"


VALID_KEYS = ("valid_loss", "valid_ppl", "valid_exact", "valid_bleu", "valid_chrf")
"""What a validation writes to `metrics.jsonl`, beside its step and training loss."""


def sign(key: str) -> int:
    """`-1` for a validation key where lower is better (`valid_loss`), else `1`."""
    return -1 if key.removeprefix("valid_") in LOWER_IS_BETTER else 1


def best_entry(history: Sequence[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The validation with the best `key` (the lowest `valid_loss`, the highest score; the
    earliest of equals), or `None`.

    Examples:
        >>> history = [{"step": 1, "valid_loss": 2.0}, {"step": 2, "valid_loss": 1.5}]
        >>> best_entry(history, "valid_loss")["step"]
        2
    """
    scored = [h for h in history if key in h]
    return max(scored, key=lambda h: (sign(key) * h[key], -h["step"])) if scored else None


class Validator:
    """Scores the model on its own device on `pairs`: the teacher-forced loss, and greedy
    decodings' exact match, BLEU and chrF."""

    def __init__(self, model: EncoderDecoder, tokenizer: SharedTokenizer,
                 pairs: Sequence[tuple[str, str]],
                 score: Callable[..., TranslationScores] | None = None) -> None:
        self.model, self.tokenizer, self.pairs = model, tokenizer, list(pairs)
        self.bleu_tokenize = auto_bleu_tokenize([t for _, t in self.pairs])
        self.score = score
        self.ids = encode_pairs(tokenizer, self.pairs) if self.pairs else []

    def scores(self) -> dict[str, float]:
        """`valid_loss` (teacher forced, in nats per target token, no smoothing), `valid_ppl`,
        `valid_exact` (percent), `valid_bleu` and `valid_chrf`; `{}` without pairs."""
        if not self.pairs:
            return {}
        from ..data.tokenizer import BOS, EOS, PAD
        from ..inference.evaluate import score_translations, translate_sentences

        loss = teacher_forced_nll(self.model, self.ids, pad=PAD, bos=BOS, eos=EOS)
        ppl = math.exp(loss) if loss < 700 else math.inf  # past 700, exp overflows a float
        hyps = translate_sentences(self.model, self.tokenizer, [s for s, _ in self.pairs],
                                   beam_size=1)
        self.model.train()
        scores = (self.score or score_translations)(hyps, [t for _, t in self.pairs],
                                                    bleu_tokenize=self.bleu_tokenize)
        return {"valid_loss": round(loss, 6), "valid_ppl": round(ppl, 4),
                "valid_exact": scores.exact_match, "valid_bleu": round(scores.bleu, 4),
                "valid_chrf": round(scores.chrf, 4)}
