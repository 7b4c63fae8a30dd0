"""The names of the copy task's data-parallel training, where older code imports them from:
the training itself is in [`copy_task`][vanilla_transformer.training.copy_task], the processes
in [`ranks`][vanilla_transformer.training.ranks]."""

from .copy_task import DistributedRun, run_local, shard_batches, train_distributed
from .ranks import DEFAULT_TIMEOUT, default_backend, free_port

__all__ = ["DEFAULT_TIMEOUT", "default_backend", "shard_batches", "DistributedRun",
           "train_distributed", "free_port", "run_local"]
