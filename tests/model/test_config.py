"""ModelConfig: defaults, presets, round trips."""

import inspect

import pytest

from vanilla_transformer import PRESETS, ModelConfig, make_model, make_model_from_config


def test_config_defaults_match_make_model_signature():
    sig = inspect.signature(make_model)
    for name, param in sig.parameters.items():
        if param.default is not inspect.Parameter.empty:
            assert getattr(ModelConfig(1, 1), name) == param.default, name


def test_round_trip_and_rebuild():
    cfg = ModelConfig(7, 7, N=1, d_model=16, d_ff=32, h=2, tie_weights=True, norm_first=False)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    model = make_model_from_config(cfg)
    assert model.config == cfg and model.config.has_final_norm is False
    with pytest.raises(ValueError, match="unknown ModelConfig fields"):
        ModelConfig.from_dict({**cfg.to_dict(), "heads": 3})


def test_presets_are_the_paper_sizes():
    assert PRESETS["base"] == dict(N=6, d_model=512, d_ff=2048, h=8, dropout=0.1)
    assert ModelConfig(37000, 37000, **PRESETS["big"]).d_k == 64
