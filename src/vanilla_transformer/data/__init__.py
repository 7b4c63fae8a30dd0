"""Data: batches with their masks, padding and collation, and the copy task's sequences."""

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
