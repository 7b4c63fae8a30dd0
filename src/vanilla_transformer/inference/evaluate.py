"""Translate sentences with a trained model and score them: BLEU, chrF and exact match.

Decoding follows section 6.1: beam search with a beam of 4 and length penalty $\\alpha = 0.6$,
and an output at most 50 tokens longer than its input. BLEU and chrF come from `sacrebleu`. BLEU
is comparable with other papers' only under the same tokenization: the word BLEU of `"13a"`, not
the character BLEU (`bleu_tokenize="char"`) that one-word sentences such as German numbers need.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from .._checks import check_non_negative_int, check_positive_int
from ..data.batching import pad_sequences
from ..data.tokenizer import BOS, EOS, PAD, SharedTokenizer
from ..model.encoder_decoder import EncoderDecoder
from .beam import beam_search
from .greedy import _model_device, greedy_decode

__all__ = ["MAX_EXTRA", "translate_sentences", "translate_ids", "TranslationScores", "score_translations"]

MAX_EXTRA = 50
"""An output may be this many tokens longer than its input (section 6.1)."""


@torch.no_grad()
def translate_sentences(
    model: EncoderDecoder,
    tokenizer: SharedTokenizer,
    sentences: Sequence[str],
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_extra: int = MAX_EXTRA,
    batch_size: int = 64,
) -> list[str]:
    """Translate each sentence: encode, decode (greedy when `beam_size == 1`), detokenise.

    Sentences are decoded in batches of similar length; the results come back in input order.
    Each output is cut to its own sentence's limit, `len(source ids) + max_extra` tokens,
    where the source ids include `</s>`.

    Args:
        model: an encoder-decoder trained on `tokenizer`'s ids (put in eval mode here).
        tokenizer: the shared vocabulary (`<s>` starts, `</s>` ends every output).
        sentences: source sentences.
        beam_size: the beam (the paper: 4); 1 is greedy decoding.
        alpha: the length penalty's exponent (the paper: 0.6).
        max_extra: an output has at most `input length + max_extra` tokens.
        batch_size: sentences decoded together.

    Returns:
        One translation per sentence.

    Raises:
        TypeError: if `sentences` is a single string or holds a non-string.
        ValueError: for a non-positive `beam_size` or `batch_size`.

    Examples:
        >>> from vanilla_transformer.data.tokenizer import train_tokenizer
        >>> from vanilla_transformer.inference.evaluate import translate_sentences
        >>> tok = train_tokenizer(["one", "eins"], vocab_size=20)
        >>> model = make_model(tok.vocab_size, tok.vocab_size, N=1, d_model=16, d_ff=32, h=2)
        >>> out = translate_sentences(model, tok, ["one", "one one"], max_extra=3)
        >>> len(out), all(isinstance(s, str) for s in out)
        (2, True)
    """
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings, not one string")
    for s in sentences:
        if not isinstance(s, str):
            raise TypeError(f"sentences must hold strings, got {type(s).__name__}")
    check_positive_int("beam_size", beam_size)
    check_positive_int("batch_size", batch_size)
    check_non_negative_int("max_extra", max_extra)
    ids = [tokenizer.encode(s) + [EOS] for s in sentences]
    outputs = translate_ids(model, ids, beam_size=beam_size, alpha=alpha, max_extra=max_extra,
                            batch_size=batch_size)
    return [tokenizer.decode(row) for row in outputs]


@torch.no_grad()
def translate_ids(
    model: EncoderDecoder,
    sources: Sequence[Sequence[int]],
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_extra: int = MAX_EXTRA,
    batch_size: int = 64,
) -> list[list[int]]:
    """Decode source id sequences (each ending with `</s>`) into target ids, in input order.

    Each output holds at most `len(source) + max_extra` tokens after `<s>` (the limit is each
    sentence's own, also in a batch with longer ones) and ends at its first `</s>`, if any.
    Decoding runs on the device of the model's parameters.

    Args:
        model: the encoder-decoder (put in eval mode here).
        sources: token ids of each source, `</s>` included.
        beam_size: the beam; 1 is greedy decoding.
        alpha: the length penalty's exponent.
        max_extra: how many more tokens than its source an output may have.
        batch_size: sentences decoded together.

    Returns:
        The generated ids of each sentence, without `<s>`, up to and without `</s>`.

    Examples:
        >>> from vanilla_transformer.inference.evaluate import translate_ids
        >>> model = make_model(9, 9, N=1, d_model=16, d_ff=32, h=2)
        >>> out = translate_ids(model, [[5, 6, 2], [7, 2]], beam_size=1, max_extra=1)
        >>> [len(row) <= n for row, n in zip(out, (4, 3))]
        [True, True]
    """
    check_positive_int("beam_size", beam_size)
    check_positive_int("batch_size", batch_size)
    check_non_negative_int("max_extra", max_extra)
    model.eval()
    ids = [list(map(int, s)) for s in sources]
    if any(len(s) == 0 for s in ids):
        raise ValueError("every source needs at least one token (its </s>)")
    device = _model_device(model) or torch.device("cpu")
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[list[int]] = [[] for _ in ids]
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        with device:  # the batch is made where the model is
            src = pad_sequences([ids[i] for i in rows], PAD)
        src_mask = (src != PAD).unsqueeze(-2)  # (batch, 1, src_len)
        max_len = src.size(1) + max_extra + 1  # + 1: the start symbol
        if beam_size == 1:
            ys = greedy_decode(model, src, src_mask, max_len, BOS, end_symbol=EOS,
                               pad_symbol=PAD, use_cache=True)
        else:
            ys, _ = beam_search(model, src, src_mask, max_len, BOS, EOS, beam_size, alpha,
                                pad_symbol=PAD)
        for i, row in zip(rows, ys.tolist()):
            # the limit is each sentence's own: a shorter one in the batch gets fewer tokens
            row = row[1: 1 + len(ids[i]) + max_extra]
            out[i] = row[: row.index(EOS)] if EOS in row else row
    return out


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
