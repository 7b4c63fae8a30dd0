"""Data: batches with their masks, padding and collation, the copy task's sequences, the
number-words corpus, the shared byte-pair tokenizer, and batches by token count."""

from .batching import Batch, collate_batch, pad_sequences
from .copy_task import PAD, START_SYMBOL, data_gen, heldout_sequences

__all__ = [
    "Batch",
    "pad_sequences",
    "collate_batch",
    "START_SYMBOL",
    "PAD",
    "heldout_sequences",
    "data_gen",
]

from .numbers import LANGUAGES, number_corpus, number_pairs, number_words, read_tsv, split_numbers, write_tsv
from .token_batches import epoch_order, make_token_batches, token_buckets
from .tokenizer import SPECIAL_TOKENS, SharedTokenizer, train_tokenizer

__all__ += [
    "LANGUAGES",
    "number_words",
    "number_pairs",
    "split_numbers",
    "number_corpus",
    "read_tsv",
    "write_tsv",
    "SPECIAL_TOKENS",
    "SharedTokenizer",
    "train_tokenizer",
    "token_buckets",
    "make_token_batches",
    "epoch_order",
]
