"""Data: batches with their masks, padding and collation, the copy task's sequences, the
number-words corpus, the shared byte-pair tokenizer, and batches by token count."""

from .batching import Batch, pad_sequences, collate_batch
from .copy_task import START_SYMBOL, PAD, heldout_sequences, data_gen

__all__ = [
    "Batch",
    "pad_sequences",
    "collate_batch",
    "START_SYMBOL",
    "PAD",
    "heldout_sequences",
    "data_gen",
]

from .numbers import LANGUAGES, number_words, number_pairs, split_numbers, number_corpus, read_tsv, write_tsv
from .tokenizer import SPECIAL_TOKENS, SharedTokenizer, train_tokenizer
from .token_batches import token_buckets, make_token_batches, epoch_order

__all__ += ["LANGUAGES", "number_words", "number_pairs", "split_numbers", "number_corpus", "read_tsv", "write_tsv", "SPECIAL_TOKENS", "SharedTokenizer", "train_tokenizer", "token_buckets", "make_token_batches", "epoch_order"]
