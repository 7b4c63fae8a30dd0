"""Inference: greedy decoding and beam search, both able to use the key/value cache, and translating
and scoring sentences with a trained model."""

from .greedy import embed_last_position, greedy_decode
from .beam import Hypothesis, length_penalty, sequence_log_prob, beam_search

__all__ = [
    "embed_last_position",
    "greedy_decode",
    "Hypothesis",
    "length_penalty",
    "sequence_log_prob",
    "beam_search",
]

from .evaluate import translate_sentences, translate_ids, TranslationScores, score_translations

__all__ += ["translate_sentences", "translate_ids", "TranslationScores", "score_translations"]
