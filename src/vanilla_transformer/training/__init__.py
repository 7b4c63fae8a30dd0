"""Training: the learning-rate schedule, label smoothing, the loop (`run_epoch`, and `fit`
with its callbacks), checkpoints, the processes of a run, the copy task, distributed training,
and training a translator on parallel text.
"""

from .checkpoints import CHECKPOINT_FORMAT, load_checkpoint, save_checkpoint
from .copy_task import (
    COPY_MODEL,
    CopyTaskConfig,
    CopyTaskRun,
    DistributedRun,
    exact_match,
    run_local,
    shard_batches,
    train_copy_model,
    train_distributed,
)
from .fit_loop import FitProgress, fit
from .loop import MODES, TrainState, run_epoch
from .loss import LabelSmoothing, SimpleLossCompute, label_smoothed_kl
from .ranks import default_backend, free_port
from .schedule import make_optimizer, rate
from .translation import (
    TRANSLATION_PRESETS,
    TranslationConfig,
    TranslationRun,
    average_checkpoints,
    load_translator,
    train_translation,
)

__all__ = [
    "rate", "make_optimizer", "LabelSmoothing", "SimpleLossCompute", "label_smoothed_kl",
    "MODES", "TrainState", "run_epoch", "FitProgress", "fit", "CHECKPOINT_FORMAT",
    "save_checkpoint", "load_checkpoint", "COPY_MODEL", "CopyTaskConfig", "CopyTaskRun",
    "train_copy_model", "exact_match", "default_backend", "shard_batches", "DistributedRun",
    "train_distributed", "free_port", "run_local", "TRANSLATION_PRESETS", "TranslationConfig",
    "TranslationRun", "train_translation", "average_checkpoints", "load_translator",
]
