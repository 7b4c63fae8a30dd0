"""Every setting of the package, in dataclasses that import without PyTorch.

- [`ModelConfig`][vanilla_transformer.model.config.ModelConfig] and `PRESETS`: a model's
  hyperparameters (`config.model`);
- [`CopyTaskConfig`][vanilla_transformer.training.copy_task.CopyTaskConfig],
  [`TranslationConfig`][vanilla_transformer.training.translation.TranslationConfig] and
  `RunOptions`: what a training run does and
  keeps (`config.tasks`).

Each field's `metadata["help"]` is its help on the command line, which builds its options from
the fields, so `--help` needs no PyTorch.
"""

from __future__ import annotations

from .model import LAYER_NORMS, MAX_SEED, PAPER_OPTIONS, PRESETS, ModelConfig
from .tasks import (
    AMP_MODES,
    BEST_METRICS,
    COPY_MODEL,
    DEFAULT_PRESET,
    DEFAULT_TIMEOUT,
    DEVICES,
    LOWER_IS_BETTER,
    MAX_COUNT,
    RUN_OPTIONS,
    TRANSLATE_TIMEOUT,
    TRANSLATION_PRESETS,
    CopyTaskConfig,
    RunOptions,
    TranslationConfig,
)

__all__ = ["LAYER_NORMS", "MAX_SEED", "PAPER_OPTIONS", "PRESETS", "ModelConfig", "AMP_MODES",
           "BEST_METRICS", "COPY_MODEL", "DEFAULT_PRESET", "DEFAULT_TIMEOUT", "DEVICES",
           "LOWER_IS_BETTER", "MAX_COUNT", "RUN_OPTIONS", "TRANSLATE_TIMEOUT", "TRANSLATION_PRESETS",
           "CopyTaskConfig", "RunOptions", "TranslationConfig"]
