"""A byte-pair vocabulary shared by the source and the target language (paper section 5.1).

Byte-pair encoding starts from single characters and merges the most frequent adjacent pair
until the vocabulary has the size asked for. One vocabulary for both languages is what lets the
paper tie the embeddings and the pre-softmax projection (section 3.4). Words are marked with
`▁` (Metaspace), so decoding gives back the spaces between words, doubled ones included; a
space at the very start is dropped. Ids 0 to 3 are the special tokens
`<pad>`, `<s>`, `</s>` and `<unk>`.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._checks import check_positive_int
from .._io import atomic_write

__all__ = ["SPECIAL_TOKENS", "PAD", "BOS", "EOS", "UNK", "SharedTokenizer", "train_tokenizer",
           "check_tokenizer_file", "load_trained_tokenizer"]

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
"""The special tokens, in id order."""

PAD, BOS, EOS, UNK = 0, 1, 2, 3
"""Ids of `<pad>`, `<s>` (the decoder's start symbol), `</s>` and `<unk>`."""


class SharedTokenizer:
    """A trained byte-pair tokenizer (a `tokenizers.Tokenizer`) with the package's special ids.

    Args:
        tokenizer: a `tokenizers.Tokenizer` whose first four ids are `SPECIAL_TOKENS`.

    Raises:
        ValueError: if the special tokens do not have ids 0 to 3.

    Examples:
        >>> from vanilla_transformer.data.tokenizer import train_tokenizer
        >>> tok = train_tokenizer(["twenty-one", "einundzwanzig", "one", "eins"], vocab_size=40)
        >>> ids = tok.encode("twenty-one")
        >>> tok.decode(ids), tok.decode([1, *ids, 2, 0])
        ('twenty-one', 'twenty-one')
        >>> [tok.decode(tok.encode(t)) for t in ("one  eins ", " one")]
        ['one  eins ', 'one']
    """

    def __init__(self, tokenizer: object) -> None:
        from tokenizers import Tokenizer

        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(tokenizer).__name__}")
        ids = [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS]
        if ids != list(range(len(SPECIAL_TOKENS))):
            raise ValueError(f"the special tokens {SPECIAL_TOKENS} must have ids 0-3, got {ids}")
        self.tokenizer = tokenizer

    @property
    def vocab_size(self) -> int:
        """Number of ids, the special tokens included."""
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """The ids of `text`, without special tokens."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each text (faster than one `encode` a text)."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of `ids`; stops at the first `</s>` and drops `<s>` and `<pad>`."""
        kept = []
        for i in ids:
            i = int(i)
            if i == EOS:
                break
            if i not in (PAD, BOS):
                kept.append(i)
        return self.tokenizer.decode(kept, skip_special_tokens=False).replace("<unk>", "\ufffd")

    def tokens(self, text: str) -> list[str]:
        """The byte-pair pieces of `text` (for display).

        Examples:
            >>> from vanilla_transformer.data.tokenizer import train_tokenizer
            >>> train_tokenizer(["one one one"], vocab_size=40).tokens("one")
            ['▁one']
        """
        return self.tokenizer.encode(text, add_special_tokens=False).tokens

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the tokenizer as `tokenizer.json` text, atomically."""
        data = self.tokenizer.to_str().encode("utf-8")
        return atomic_write(path, lambda f: f.write(data))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SharedTokenizer:
        """Read a tokenizer written by `save`.

        Raises:
            ValueError: if the file is missing or not such a tokenizer.
        """
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(os.fspath(path))
        except Exception as error:  # noqa: BLE001 - tokenizers raises a plain Exception
            raise ValueError(f"{os.fspath(path)}: not a tokenizer file ({error})") from None
        return cls(tokenizer)

    def __repr__(self) -> str:
        return f"SharedTokenizer(vocab_size={self.vocab_size})"


def train_tokenizer(texts: Iterable[str], vocab_size: int = 400) -> SharedTokenizer:
    """Learn a byte-pair vocabulary of at most `vocab_size` ids from `texts`.

    Feed it the sentences of both languages to get the shared vocabulary of section 5.1.

    Args:
        texts: training sentences.
        vocab_size: the largest vocabulary (special tokens included); fewer ids result if the
            texts have fewer merges to make.

    Returns:
        The [`SharedTokenizer`][vanilla_transformer.data.tokenizer.SharedTokenizer].

    Raises:
        ValueError: if `vocab_size` is too small for the special tokens, or `texts` is empty.

    Examples:
        >>> from vanilla_transformer.data.tokenizer import train_tokenizer
        >>> tok = train_tokenizer(["vierhundert", "four hundred"] * 5, vocab_size=60)
        >>> tok.tokens("vier hundred")  # pieces learned from either language
        ['▁vier', '▁hundred']
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    check_positive_int("vocab_size", vocab_size)
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must exceed the {len(SPECIAL_TOKENS)} special tokens, "
                         f"got {vocab_size}")
    texts = [t for t in texts if t]
    if not texts:
        raise ValueError("texts must hold at least one non-empty sentence")
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  show_progress=False)
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return SharedTokenizer(tokenizer)


_PARTS = ("normalizer", "pre_tokenizer", "post_processor", "decoder", "truncation", "padding")


def _parts(data: dict[str, Any]) -> dict[str, Any]:
    model = data.get("model")
    model = {k: v for k, v in model.items() if k not in ("vocab", "merges")} if isinstance(
        model, dict) else None
    return {**{k: data.get(k) for k in _PARTS}, "model": model}


@functools.cache
def _trained_parts() -> dict[str, Any]:
    """The parts of a `tokenizer.json` that `train_tokenizer` writes whatever the data."""
    return _parts(json.loads(train_tokenizer(["a b", "c"], 10).tokenizer.to_str()))


def check_tokenizer_file(path: str | os.PathLike[str]) -> None:
    """Refuse a `tokenizer.json` with parts that `train_tokenizer` never writes (a normalizer,
    another pre-tokenizer or model), before the tokenizer library reads it.

    Raises:
        ValueError: naming the file and the first part that differs.
    """
    name = repr(os.fspath(path))
    try:
        data = json.loads(Path(os.fspath(path)).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{name} is not a tokenizer file ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise ValueError(f"{name} is not a tokenizer file written by training")
    found = _parts(data)
    for part, value in _trained_parts().items():
        if found[part] != value:
            raise ValueError(f"{name} has a {part} that training never writes; restore the "
                             "run's own tokenizer.json")


def load_trained_tokenizer(path: str | os.PathLike[str]) -> SharedTokenizer:
    """`SharedTokenizer.load`, after `check_tokenizer_file`."""
    check_tokenizer_file(path)
    return SharedTokenizer.load(path)
