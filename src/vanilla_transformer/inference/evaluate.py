"""Translate sentences with a trained model and score them: BLEU, chrF and exact match.

Decoding follows section 6.1: beam search with a beam of 4 and length penalty $\\alpha = 0.6$,
and an output at most 50 tokens longer than its input. BLEU and chrF come from `sacrebleu`. BLEU
is comparable with other papers' only under the same tokenization: the word BLEU of `"13a"`, not
the character BLEU (`bleu_tokenize="char"`) that one-word sentences such as German numbers need.

Sentences are sorted by length and decoded in batches by the batched decoders of
[`inference.fast`][vanilla_transformer.inference.fast]; `fast=False` runs the readable
`greedy_decode` and `beam_search` instead.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch

from .._checks import check_non_negative_int, check_positive_int
from ..data.tokenizer import EOS, SharedTokenizer
from ..model.encoder_decoder import EncoderDecoder
from .batched import best_tokens, each_batch, fast_decoder, readable_decoder, until_end
from .fast import supports_fast

__all__ = ["MAX_EXTRA", "BATCH_SIZE", "MAX_TOKENS", "Translation", "translate_sentences",
           "translate_nbest", "translate_ids", "TranslationScores", "score_translations"]

MAX_EXTRA = 50
"""An output may be this many tokens longer than its input (section 6.1)."""

BATCH_SIZE = 512
"""The most sentences decoded together by default."""

MAX_TOKENS = 8192
"""The most source tokens (padding included) decoded together by default."""


class Translation(NamedTuple):
    """One translation of a sentence, with what an error analysis needs.

    Attributes:
        text: the detokenised translation.
        score: the length-normalised log-probability $\\log P / lp$ (the score beam search
            ranks by; GNMT's penalty with the `alpha` of the call).
        pieces: the generated tokens as the tokenizer writes them, `</s>` last when it was
            generated.
        log_probs: the log-probability of each piece, one per entry of `pieces`.
    """

    text: str
    score: float
    pieces: list[str]
    log_probs: list[float]


def _check_sentences(sentences: Sequence[str]) -> None:
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings, not one string")
    for s in sentences:
        if not isinstance(s, str):
            raise TypeError(f"sentences must hold strings, got {type(s).__name__}")


def _check_batching(batch_size: int, max_tokens: int | None) -> None:
    check_positive_int("batch_size", batch_size)
    if max_tokens is not None:
        check_positive_int("max_tokens", max_tokens)


@torch.no_grad()
def translate_sentences(
    model: EncoderDecoder,
    tokenizer: SharedTokenizer,
    sentences: Sequence[str],
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_extra: int = MAX_EXTRA,
    batch_size: int = BATCH_SIZE,
    max_tokens: int | None = MAX_TOKENS,
    fast: bool = True,
    progress: Callable[[int], object] | None = None,
) -> list[str]:
    """Translate each sentence: encode, decode (greedy when `beam_size == 1`), detokenise.

    Sentences are sorted by length and decoded in batches; the results come back in input
    order. Each output has at most `len(source ids) + max_extra` tokens, where the source ids
    include `</s>`. See [`translate_ids`][vanilla_transformer.inference.evaluate.translate_ids]
    for the batching and the two decoders.

    Args:
        model: an encoder-decoder trained on `tokenizer`'s ids (put in eval mode here).
        tokenizer: the shared vocabulary (`<s>` starts, `</s>` ends every output).
        sentences: source sentences.
        beam_size: the beam (the paper: 4); 1 is greedy decoding.
        alpha: the length penalty's exponent (the paper: 0.6).
        max_extra: an output has at most `input length + max_extra` tokens.
        batch_size: at most this many sentences are decoded together.
        max_tokens: at most this many source tokens (padding included) in a batch; `None`
            for no limit.
        fast: the batched decoders of
            [`inference.fast`][vanilla_transformer.inference.fast] (default, where they can run
            the model), or `False` for the readable `greedy_decode` and `beam_search`.
        progress: called with the number of sentences done after each batch.

    Returns:
        One translation per sentence.

    Raises:
        TypeError: if `sentences` is a single string or holds a non-string.
        ValueError: for a non-positive `beam_size`, `batch_size` or `max_tokens`.

    Examples:
        >>> from vanilla_transformer.data.tokenizer import train_tokenizer
        >>> from vanilla_transformer.inference.evaluate import translate_sentences
        >>> tok = train_tokenizer(["one", "eins"], vocab_size=20)
        >>> model = make_model(tok.vocab_size, tok.vocab_size, N=1, d_model=16, d_ff=32, h=2)
        >>> out = translate_sentences(model, tok, ["one", "one one"], max_extra=3)
        >>> len(out), all(isinstance(s, str) for s in out)
        (2, True)
    """
    _check_sentences(sentences)
    check_positive_int("beam_size", beam_size)
    _check_batching(batch_size, max_tokens)
    check_non_negative_int("max_extra", max_extra)
    ids = [tokenizer.encode(s) + [EOS] for s in sentences]
    outputs = translate_ids(model, ids, beam_size=beam_size, alpha=alpha, max_extra=max_extra,
                            batch_size=batch_size, max_tokens=max_tokens, fast=fast,
                            progress=progress)
    return [tokenizer.decode(row) for row in outputs]


@torch.no_grad()
def translate_nbest(
    model: EncoderDecoder,
    tokenizer: SharedTokenizer,
    sentences: Sequence[str],
    *,
    nbest: int = 1,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_extra: int = MAX_EXTRA,
    batch_size: int = BATCH_SIZE,
    max_tokens: int | None = MAX_TOKENS,
    progress: Callable[[int], object] | None = None,
) -> list[list[Translation]]:
    """The `nbest` best translations of each sentence, with their scores and the
    log-probability of every generated piece.

    Args:
        model: an encoder-decoder trained on `tokenizer`'s ids (put in eval mode here).
        tokenizer: the shared vocabulary.
        sentences: source sentences.
        nbest: translations per sentence, at most `beam_size`.
        beam_size: the beam; 1 is greedy decoding.
        alpha: the length penalty's exponent.
        max_extra: an output has at most `input length + max_extra` tokens.
        batch_size: at most this many sentences are decoded together.
        max_tokens: at most this many source tokens in a batch; `None` for no limit.
        progress: called with the number of sentences done after each batch.

    Returns:
        For each sentence, its translations best first: `nbest` of them, or fewer where the
        beam finished fewer.

    Raises:
        TypeError: if `sentences` is a single string or holds a non-string, or the batched
            decoders cannot run `model` (one not made by `make_model`).
        ValueError: for an `nbest` above `beam_size` or a size that is not positive.

    Examples:
        >>> from vanilla_transformer.data.tokenizer import train_tokenizer
        >>> from vanilla_transformer.inference.evaluate import translate_nbest
        >>> tok = train_tokenizer(["one", "eins"], vocab_size=20)
        >>> model = make_model(tok.vocab_size, tok.vocab_size, N=1, d_model=16, d_ff=32, h=2)
        >>> [best, second] = translate_nbest(model, tok, ["one"], nbest=2, max_extra=3)[0]
        >>> best.score >= second.score, len(best.pieces) == len(best.log_probs)
        (True, True)
    """
    _check_sentences(sentences)
    check_positive_int("nbest", nbest)
    check_positive_int("beam_size", beam_size)
    if nbest > beam_size:
        raise ValueError(f"nbest must be at most the beam ({beam_size}), got {nbest}")
    _check_batching(batch_size, max_tokens)
    check_non_negative_int("max_extra", max_extra)
    ids = [tokenizer.encode(s) + [EOS] for s in sentences]
    decoded = each_batch(model, ids, fast_decoder(beam_size, alpha, nbest),
                         max_extra=max_extra, batch_size=batch_size, max_tokens=max_tokens,
                         progress=progress)
    piece = tokenizer.tokenizer.id_to_token
    return [[Translation(tokenizer.decode(h.tokens), h.score, [str(piece(i)) for i in h.tokens],
                         h.log_probs) for h in row] for row in decoded]


@torch.no_grad()
def translate_ids(
    model: EncoderDecoder,
    sources: Sequence[Sequence[int]],
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_extra: int = MAX_EXTRA,
    batch_size: int = BATCH_SIZE,
    max_tokens: int | None = MAX_TOKENS,
    fast: bool = True,
    progress: Callable[[int], object] | None = None,
) -> list[list[int]]:
    """Decode source id sequences (each ending with `</s>`) into target ids, in input order.

    The sources are sorted by length and cut into batches of at most `batch_size` sentences
    and `max_tokens` padded source tokens. Each output holds at most
    `len(source) + max_extra` tokens after `<s>` and ends at its first `</s>`, if any.
    Decoding runs on the device of the model's parameters.

    By default the batched decoders of [`inference.fast`][vanilla_transformer.inference.fast]
    decode each sentence as if alone, with its own limit. `fast=False` runs the readable
    [`greedy_decode`][vanilla_transformer.inference.greedy.greedy_decode] (with the cache) or
    [`beam_search`][vanilla_transformer.inference.beam.beam_search] on each batch instead,
    with the batch's longest limit (each output is cut to its own). The two give the same
    translations in the tests; the fast one takes a fraction of the time
    (`benchmarks/decode_ct2.py`).

    Args:
        model: the encoder-decoder (put in eval mode here).
        sources: token ids of each source, `</s>` included.
        beam_size: the beam; 1 is greedy decoding.
        alpha: the length penalty's exponent.
        max_extra: how many more tokens than its source an output may have.
        batch_size: at most this many sentences are decoded together.
        max_tokens: at most this many source tokens (padding included) in a batch; `None`
            for no limit.
        fast: the batched decoders (default; a model they cannot run, one not made by
            `make_model`, gets the readable ones) or the readable ones.
        progress: called with the number of sentences done after each batch.

    Returns:
        The generated ids of each sentence, without `<s>`, up to and without `</s>`.

    Raises:
        ValueError: for a size that is not positive or an empty source.

    Examples:
        >>> from vanilla_transformer.inference.evaluate import translate_ids
        >>> model = make_model(9, 9, N=1, d_model=16, d_ff=32, h=2)
        >>> out = translate_ids(model, [[5, 6, 2], [7, 2]], beam_size=1, max_extra=1)
        >>> [len(row) <= n for row, n in zip(out, (4, 3))]
        [True, True]
        >>> out == translate_ids(model, [[5, 6, 2], [7, 2]], beam_size=1, max_extra=1,
        ...                      fast=False)
        True
    """
    check_positive_int("beam_size", beam_size)
    _check_batching(batch_size, max_tokens)
    check_non_negative_int("max_extra", max_extra)
    ids = [list(map(int, s)) for s in sources]
    model.eval()
    # the one place the batched decoders are chosen
    decode = (best_tokens(fast_decoder(beam_size, alpha, 1)) if fast and supports_fast(model)
              else readable_decoder(beam_size, alpha))
    found = each_batch(model, ids, decode, max_extra=max_extra, batch_size=batch_size,
                        max_tokens=max_tokens, progress=progress)
    return [until_end(row) for row in found]


@dataclass(frozen=True)
class TranslationScores:
    """Corpus-level scores of translations against references.

    Attributes:
        bleu: sacrebleu's corpus BLEU, 0 to 100.
        chrf: sacrebleu's corpus chrF, 0 to 100.
        exact_match: percentage of translations equal to their reference (after stripping).
        sentences: number of sentences scored.
    """

    bleu: float
    chrf: float
    exact_match: float
    sentences: int

    def lines(self) -> list[str]:
        """One line each for BLEU, chrF and exact match, as the command line prints them."""
        hits = round(self.exact_match * self.sentences / 100)
        return [f"BLEU {self.bleu:.2f}", f"chrF {self.chrf:.2f}",
                f"exact match {self.exact_match:.2f} % ({hits}/{self.sentences})"]

    def to_dict(self) -> dict[str, Any]:
        """The scores as a plain dict."""
        return asdict(self)


def score_translations(
    hypotheses: Sequence[str], references: Sequence[str], *, bleu_tokenize: str = "13a"
) -> TranslationScores:
    """BLEU and chrF (sacrebleu, default settings) and exact match of `hypotheses`.

    Args:
        hypotheses: the system's translations.
        references: one reference per hypothesis.
        bleu_tokenize: sacrebleu's BLEU tokenizer: `"13a"` (its default, for text with spaces)
            or `"char"` (characters, for one-word sentences such as German numbers, where word
            4-grams do not exist and word BLEU is 0 whatever the quality).

    Returns:
        The [`TranslationScores`][vanilla_transformer.inference.evaluate.TranslationScores].

    Raises:
        ValueError: if the lists are empty or differ in length.

    Examples:
        >>> from vanilla_transformer.inference.evaluate import score_translations
        >>> s = score_translations(["vierhundert eins", "zwei"], ["vierhundert eins", "drei"])
        >>> s.exact_match, s.lines()[2]
        (50.0, 'exact match 50.00 % (1/2)')
    """
    import sacrebleu

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if len(hypotheses) == 0:
        raise ValueError("nothing to score: no hypotheses")
    if bleu_tokenize not in sacrebleu.BLEU.TOKENIZERS:
        raise ValueError(f"bleu_tokenize must be one of {sorted(sacrebleu.BLEU.TOKENIZERS)}, "
                         f"got {bleu_tokenize!r}")
    hyps, refs = [h.strip() for h in hypotheses], [r.strip() for r in references]
    bleu = sacrebleu.corpus_bleu(hyps, [refs], tokenize=bleu_tokenize).score
    chrf = sacrebleu.corpus_chrf(hyps, [refs]).score
    exact = 100.0 * sum(h == r for h, r in zip(hyps, refs)) / len(hyps)
    return TranslationScores(float(bleu), float(chrf), exact, len(hyps))
