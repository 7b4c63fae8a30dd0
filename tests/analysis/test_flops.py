"""Forward FLOPs against PyTorch's FlopCounterMode on the real model."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from vanilla_transformer import ModelConfig, MultiHeadedAttention, make_model, subsequent_mask
from vanilla_transformer.analysis import FLOP_FORMULA, forward_flops, forward_flops_for


def _set_fast(model, fast):
    for m in model.modules():
        if isinstance(m, MultiHeadedAttention):
            m.fast = fast


def _cpu_sdpa_flops(query_shape, key_shape, value_shape, *args, **kwargs):
    return flop_counter.sdpa_flop_count(query_shape, key_shape, value_shape)


# FlopCounterMode has formulas for the fused attention kernels of GPUs, not for the one PyTorch
# picks on CPU when no dropout is applied (eval mode, or dropout=0); give it the same formula.
CPU_SDPA = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa_flops}
MATMULS = {"aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm",
           "aten._scaled_dot_product_flash_attention_for_cpu"}


@st.composite
def configs(draw):
    """Random small configurations; every option that could change a matrix product."""
    h = draw(st.sampled_from([1, 2, 4]))
    tie = draw(st.booleans())
    vocab = draw(st.integers(1, 20))
    return dict(
        src_vocab=vocab, tgt_vocab=vocab if tie else draw(st.integers(1, 20)),
        N=draw(st.integers(1, 2)), d_model=h * draw(st.integers(2, 32 // h + 1)),
        d_ff=draw(st.integers(1, 48)), h=h, dropout=draw(st.sampled_from([0.0, 0.1])),
        tie_weights=tie, norm_first=draw(st.booleans()),
        generator_bias=draw(st.booleans()),
    )


@settings(max_examples=25, deadline=None)
@given(configs(), st.integers(1, 3), st.integers(1, 6), st.integers(1, 6),
       st.booleans(), st.booleans())
def test_forward_flops_match_flop_counter_mode(kwargs, batch, src_len, tgt_len, fast, train):
    model = make_model(**kwargs).train(train)
    _set_fast(model, fast)
    src = torch.randint(0, kwargs["src_vocab"], (batch, src_len))
    tgt = torch.randint(0, kwargs["tgt_vocab"], (batch, tgt_len))
    src_mask = torch.ones(batch, 1, src_len, dtype=torch.bool)
    with FlopCounterMode(display=False, custom_mapping=CPU_SDPA) as counter:
        model.generator(model(src, tgt, src_mask, subsequent_mask(tgt_len)))
    assert set(map(str, counter.get_flop_counts()["Global"])) <= MATMULS
    fc = forward_flops(**kwargs, batch=batch, src_len=src_len, tgt_len=tgt_len)
    assert fc.total == counter.get_total_flops()


def test_each_component_matches_its_modules():
    # the reference path runs each projection as its own nn.Linear, so FlopCounterMode's
    # per-module counts separate projections from scores
    sizes = dict(N=2, d_model=24, d_ff=40, h=4)
    model = make_model(7, 9, **sizes).train()
    _set_fast(model, False)
    src, tgt = torch.randint(0, 7, (2, 5)), torch.randint(0, 9, (2, 6))
    with FlopCounterMode(display=False) as counter:
        model.generator(model(src, tgt, None, subsequent_mask(6)))
    counts = {name.removeprefix("EncoderDecoder."): sum(ops.values())
              for name, ops in counter.get_flop_counts().items()}
    enc, dec = "encoder.layers.0.", "decoder.layers.0."

    def linears(prefix, *indices):
        return sum(counts[f"{prefix}linears.{i}"] for i in indices)

    measured = {
        "encoder_self_attn_proj": linears(enc + "self_attn.", 0, 1, 2, 3),
        "encoder_self_attn_scores": counts[enc + "self_attn"] - linears(enc + "self_attn.", 0, 1, 2, 3),
        "encoder_feed_forward": counts[enc + "feed_forward"],
        "decoder_self_attn_proj": linears(dec + "self_attn.", 0, 1, 2, 3),
        "decoder_self_attn_scores": counts[dec + "self_attn"] - linears(dec + "self_attn.", 0, 1, 2, 3),
        "cross_attn_q_o_proj": linears(dec + "src_attn.", 0, 3),
        "cross_attn_kv_proj": linears(dec + "src_attn.", 1, 2),
        "cross_attn_scores": counts[dec + "src_attn"] - linears(dec + "src_attn.", 0, 1, 2, 3),
        "decoder_feed_forward": counts[dec + "feed_forward"],
        "generator": counts["Global"] - counts["EncoderDecoder"],
    }
    fc = forward_flops(7, 9, **sizes, batch=2, src_len=5, tgt_len=6)
    assert {c.name: c.per_block for c in fc.components} == measured
    assert [c.blocks for c in fc.components] == [2] * 9 + [1]


@pytest.mark.parametrize("fast", [True, False])
def test_forward_flops_in_training_mode_with_plain_flop_counter_mode(fast):
    # with dropout in training mode, every kernel that runs on CPU has a FLOP formula
    kwargs = dict(N=2, d_model=32, d_ff=48, h=4, dropout=0.1)
    model = make_model(7, 9, **kwargs).train()
    _set_fast(model, fast)
    src, tgt = torch.randint(0, 7, (2, 6)), torch.randint(0, 9, (2, 5))
    with FlopCounterMode(display=False) as counter:
        model.generator(model(src, tgt, None, subsequent_mask(5)))
    assert forward_flops(7, 9, **kwargs, batch=2, src_len=6, tgt_len=5).total == (
        counter.get_total_flops())


@pytest.mark.parametrize("fast", [True, False])
def test_training_total_is_forward_plus_backward(fast):
    kwargs = dict(N=2, d_model=16, d_ff=24, h=4, tie_weights=True)
    model = make_model(9, 9, **kwargs).train()
    _set_fast(model, fast)
    src, tgt = torch.randint(0, 9, (2, 5)), torch.randint(0, 9, (2, 4))
    with FlopCounterMode(display=False) as counter:
        model.generator(model(src, tgt, None, subsequent_mask(4))).sum().backward()
    fc = forward_flops(9, 9, **kwargs, batch=2, src_len=5, tgt_len=4)
    assert fc.training_total == counter.get_total_flops()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(2, 64), st.integers(1, 128), st.integers(1, 32),
       st.integers(1, 16), st.integers(1, 16), st.integers(1, 100))
def test_flop_formula_is_the_sum_of_the_components(latex_value, N, d, d_ff, B, S, T, V):
    fc = forward_flops_for(ModelConfig(V, V, N, d, d_ff, 1), batch=B, src_len=S, tgt_len=T)
    assert latex_value(FLOP_FORMULA, N=N, B=B, d=d, F=d_ff, S=S, T=T, C=V) == fc.total


def test_table_dict_and_validation():
    fc = forward_flops(7, 9, N=1, d_model=8, d_ff=16, h=2, batch=2, src_len=5, tgt_len=6)
    assert fc.table().splitlines()[-1] == (
        f"training step (about 3x forward): {fc.training_total:,} FLOPs")
    data = fc.to_dict()
    assert sum(c["subtotal"] for c in data["components"].values()) == data["total"] == fc.total
    assert fc["generator"] is fc.breakdown["generator"]
    with pytest.raises(ValueError, match="batch"):
        forward_flops(7, 9, batch=0, src_len=5, tgt_len=6)
    with pytest.raises(ValueError, match="max_len"):
        forward_flops(7, 9, max_len=10, batch=1, src_len=11, tgt_len=6)
    with pytest.raises(TypeError, match="ModelConfig"):
        forward_flops_for(dict(src_vocab=7, tgt_vocab=9), batch=1, src_len=1, tgt_len=1)
