"""The hyperparameters of a model: [`ModelConfig`][vanilla_transformer.model.config.ModelConfig],
defined in the torch-free `vanilla_transformer.config` and
importable from here too."""

from __future__ import annotations

from ..config.model import PAPER_OPTIONS, PRESETS, ModelConfig

__all__ = ["ModelConfig", "PAPER_OPTIONS", "PRESETS"]
