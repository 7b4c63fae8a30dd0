"""Inference: greedy decoding and beam search, both able to use the key/value cache, their batched
form for translating many sentences (`fast.py`), and translating and scoring sentences with a
trained model."""

from .beam import Hypothesis, beam_search, length_penalty, sequence_log_prob
from .greedy import embed_last_position, greedy_decode

__all__ = [
    "embed_last_position",
    "greedy_decode",
    "Hypothesis",
    "length_penalty",
    "sequence_log_prob",
    "beam_search",
]

from .evaluate import (
    Translation,
    TranslationScores,
    score_translations,
    translate_ids,
    translate_nbest,
    translate_sentences,
)

__all__ += ["translate_sentences", "translate_nbest", "translate_ids", "Translation",
            "TranslationScores", "score_translations"]
