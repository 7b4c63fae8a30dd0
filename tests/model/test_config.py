"""ModelConfig: defaults, presets, round trips."""

import inspect

import pytest
import torch

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


def test_attention_dropout_defaults_to_dropout_and_can_be_set_apart():
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2, dropout=0.2)
    attn = [m for m in model.modules() if type(m).__name__ == "MultiHeadedAttention"]
    assert {m.dropout.p for m in attn} == {0.2}
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2, dropout=0.2, attn_dropout=0.0)
    attn = [m for m in model.modules() if type(m).__name__ == "MultiHeadedAttention"]
    residual = {m.dropout.p for m in model.modules() if type(m).__name__ == "SublayerConnection"}
    assert {m.dropout.p for m in attn} == {0.0} and residual == {0.2}
    with pytest.raises(ValueError, match="attn_dropout must be in"):
        ModelConfig(11, 11, attn_dropout=1.5)


def test_feed_forward_dropout_defaults_to_dropout_and_can_be_set_apart():
    def ff_rates(model):
        return {m.dropout.p for m in model.modules() if type(m).__name__ == "PositionwiseFeedForward"}

    assert ff_rates(make_model(11, 11, N=1, d_model=16, d_ff=32, h=2, dropout=0.2)) == {0.2}
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2, dropout=0.2, ff_dropout=0.0)
    residual = {m.dropout.p for m in model.modules() if type(m).__name__ == "SublayerConnection"}
    assert ff_rates(model) == {0.0} and residual == {0.2}
    # with no dropout inside it, the feed-forward network is deterministic in training mode
    ff = next(m for m in model.modules() if type(m).__name__ == "PositionwiseFeedForward").train()
    x = torch.randn(2, 5, 16)
    assert torch.equal(ff(x), ff(x))
    with pytest.raises(ValueError, match="ff_dropout must be in"):
        ModelConfig(11, 11, ff_dropout=-0.1)


@pytest.mark.parametrize("name, expected", [("paper-base", 63_082_496), ("paper-big", 214_245_376)])
def test_paper_presets_build_the_paper_s_model(name, expected):
    config = ModelConfig(37000, 37000, **PRESETS[name])
    assert (config.norm_first, config.tie_weights, config.generator_bias) == (False, True, False)
    assert config.attention_dropout == 0.0 and config.feed_forward_dropout == 0.0
    assert config.dropout > 0 and config.has_final_norm is False
    model = make_model_from_config(config)
    # one matrix for both embeddings and the pre-softmax projection, counted once
    shared = model.src_embed[0].lut.weight
    assert model.tgt_embed[0].lut.weight is shared and model.generator.proj.weight is shared
    assert sum(p.numel() for p in model.parameters()) == expected  # parameters() dedups ties
    # Table 3 gives 65M and 213M: within 3 % and 1 % with a shared vocabulary of 37000
    paper = {"paper-base": 65e6, "paper-big": 213e6}[name]
    assert abs(expected / paper - 1) < 0.03
