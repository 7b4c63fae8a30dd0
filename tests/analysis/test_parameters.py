"""The calculator: parameter counts, FLOPs and memory against the real model and PyTorch."""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from vanilla_transformer import (
    LayerNorm,
    ModelConfig,
    MultiHeadedAttention,
    PositionwiseFeedForward,
    make_model,
    subsequent_mask,
)
from vanilla_transformer.analysis import (
    PARAMETER_FORMULA,
    count_parameters,
    parameter_count,
    parameter_count_for,
    source_closed_form,
    source_terms,
)
from vanilla_transformer.analysis import forward_flops, forward_flops_for
from vanilla_transformer.analysis import (
    dtype_bytes,
    memory_estimate,
    memory_estimate_for,
)


@st.composite
def configs(draw, min_vocab=0):
    """Small random ModelConfig keyword arguments covering every make_model option."""
    h = draw(st.sampled_from([1, 2, 4]))
    tie = draw(st.booleans())
    src_vocab = draw(st.integers(min_vocab, 20))
    return dict(
        src_vocab=src_vocab,
        tgt_vocab=src_vocab if tie else draw(st.integers(min_vocab, 20)),
        N=draw(st.integers(1, 2)),
        d_model=h * draw(st.integers(2 if h == 1 else 1, 32 // h)),  # annotated LN: d >= 2
        d_ff=draw(st.integers(1, 48)),
        h=h,
        dropout=draw(st.sampled_from([0.0, 0.1])),
        tie_weights=tie,
        norm_first=draw(st.booleans()),
        layer_norm=draw(st.sampled_from(["annotated", "torch"])),
        final_norm=draw(st.sampled_from([None, True, False])),
        generator_bias=draw(st.booleans()),
        max_len=draw(st.integers(6, 40)),
    )


def _unique_numel(modules):
    params = {id(p): p for m in modules for p in m.parameters()}
    return sum(p.numel() for p in params.values())


def _evaluate(latex: str, **symbols: int) -> int:
    """Evaluate one of the calculator's LaTeX formulas (a small, fixed vocabulary)."""
    expr = latex.split("=", 1)[1]
    for old, new in [(r"\,", "*"), ("d_{ff}", "F"), ("V_{src}", "A"), ("V_{tgt}", "C"),
                     ("^2", "**2"), (r"\big", ""), ("[", "("), ("]", ")")]:
        expr = expr.replace(old, new)
    expr = re.sub(r"(\d)([A-Za-z(])", r"\1*\2", expr)  # 12d -> 12*d, 2(1 - t) -> 2*(1 - t)
    expr = re.sub(r"([A-Za-z)])\s*([A-Za-z(])", r"\1*\2", expr)  # fd -> f*d, )( -> )*(
    expr = re.sub(r"([A-Za-z)])\s*([A-Za-z(])", r"\1*\2", expr)
    return eval(expr, {}, symbols)  # noqa: S307 - our own formula strings


# ---- parameters ----------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(configs())
def test_parameter_count_matches_the_real_model(kwargs):
    model = make_model(**kwargs)
    pc = parameter_count(**kwargs)
    real = count_parameters(model)
    assert pc.total == real.total == sum(p.numel() for p in model.parameters())
    assert pc.buffers == real.buffers == 2 * kwargs["max_len"] * kwargs["d_model"]
    # every component against the modules it describes
    kinds = {
        "attention": MultiHeadedAttention,
        "feed_forward": PositionwiseFeedForward,
        "layer_norm": (LayerNorm, nn.LayerNorm),
    }
    for name, kind in kinds.items():
        modules = [m for m in model.modules() if isinstance(m, kind)]
        assert pc[name].blocks == len(modules)
        assert pc[name].subtotal == _unique_numel(modules)
    assert pc.src_embedding.subtotal == real.breakdown["src_embed"]
    assert pc.tgt_embedding.subtotal == real.breakdown["tgt_embed"]
    assert pc.generator.subtotal == real.breakdown["generator"]
    # the closed forms, general and specialised, evaluated
    c = ModelConfig(**kwargs)
    symbols = dict(N=c.N, d=c.d_model, F=c.d_ff, A=c.src_vocab, C=c.tgt_vocab, V=c.tgt_vocab,
                   f=int(c.has_final_norm), t=int(c.tie_weights), b=int(c.generator_bias))
    assert _evaluate(PARAMETER_FORMULA, **symbols) == pc.total
    assert _evaluate(pc.formula, **symbols) == pc.total


def test_parameter_count_for_a_config_and_the_sources_example():
    assert parameter_count_for(ModelConfig(11, 11, N=2)).total == 14_731_787
    assert parameter_count(11, 11, N=2).total == 14_731_787  # make_model(11, 11, 2)


def test_tied_weights_are_counted_once_in_src_embedding():
    kwargs = dict(N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    model = make_model(13, 13, **kwargs)
    real = count_parameters(model)
    naive = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    assert real.total == naive - 2 * 13 * 32
    assert real.breakdown["src_embed"] == 13 * 32
    assert real.breakdown["tgt_embed"] == 0 and real.breakdown["generator"] == 13
    pc = parameter_count(13, 13, **kwargs)
    assert (pc.src_embedding.subtotal, pc.tgt_embedding.subtotal, pc.generator.subtotal) == (
        13 * 32, 0, 13)


@pytest.mark.parametrize("kwargs", [
    dict(src_vocab=0, tgt_vocab=0),
    dict(src_vocab=0, tgt_vocab=5, generator_bias=False),
    dict(src_vocab=0, tgt_vocab=0, tie_weights=True),
])
def test_empty_vocabularies(kwargs):
    model = make_model(**kwargs, N=1, d_model=8, d_ff=16, h=2)
    assert parameter_count(**kwargs, N=1, d_model=8, d_ff=16, h=2).total == count_parameters(
        model).total


@pytest.mark.parametrize("bad, error", [
    (dict(d_model=30, h=4), ValueError),
    (dict(N=0), ValueError),
    (dict(d_ff=-1), ValueError),
    (dict(dropout=1.0), ValueError),
    (dict(layer_norm="rms"), ValueError),
    (dict(tie_weights=True, tgt_vocab=12), ValueError),
    (dict(N=2.0), TypeError),
])
def test_bad_arguments_raise_what_make_model_raises(bad, error):
    kwargs = dict(src_vocab=11, tgt_vocab=11, N=1, d_model=32, d_ff=64, h=4)
    kwargs.update(bad)
    with pytest.raises(error) as from_model:
        make_model(**kwargs)
    with pytest.raises(error) as from_count:
        parameter_count(**kwargs)
    assert str(from_count.value) == str(from_model.value)
    with pytest.raises(TypeError):
        parameter_count_for(kwargs)


def test_table_lists_every_component_and_the_total():
    pc = parameter_count(11, 11, N=2, tie_weights=True)
    text = pc.table()
    for c in pc.components:
        assert c.name in text
    assert f"{pc.total:,}" in text and "tied: bias only" in text


# ---- count_parameters on PyTorch's own modules ------------------------------------------------


NESTED_TENSOR_NOTE = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


@NESTED_TENSOR_NOTE
@pytest.mark.parametrize("kwargs", [
    dict(num_encoder_layers=1, num_decoder_layers=1),
    dict(num_encoder_layers=2, num_decoder_layers=1, norm_first=True),
    dict(num_encoder_layers=1, num_decoder_layers=2, bias=False),
    dict(num_encoder_layers=2, num_decoder_layers=2, bias=False, norm_first=True),
])
def test_count_parameters_equals_pytorchs_sum_on_nn_transformer(kwargs):
    t = nn.Transformer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, **kwargs)
    counted = count_parameters(t)
    assert counted.total == sum(p.numel() for p in t.parameters())
    assert [name for name, _ in counted.children] == ["encoder", "decoder"]


@NESTED_TENSOR_NOTE
@pytest.mark.parametrize("norm_first", [False, True])
def test_parameter_count_matches_nn_transformer_with_the_same_arrangement(norm_first):
    # nn.Transformer has biases everywhere and a final LayerNorm per stack; no embeddings.
    t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                       dim_feedforward=24, norm_first=norm_first)
    pc = parameter_count(0, 0, N=2, d_model=16, d_ff=24, h=2, norm_first=norm_first,
                         final_norm=True, layer_norm="torch")
    assert pc.total == sum(p.numel() for p in t.parameters())


def test_count_parameters_shared_frozen_and_direct():
    a, b = nn.Linear(4, 3), nn.Linear(4, 3)
    b.weight = a.weight
    frozen = nn.Linear(2, 2)
    frozen.requires_grad_(False)
    model = nn.Sequential(a, b, frozen)
    counted = count_parameters(model)
    assert counted.children == (("0", 15), ("1", 3), ("2", 0))
    assert counted.total == 18 and counted.frozen == 6
    assert count_parameters(nn.Linear(4, 3)).children == (("(direct)", 15),)
    assert "total" in counted.table()
    with pytest.raises(TypeError):
        count_parameters("not a module")


# ---- the source's closed form ------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 128).map(lambda k: 8 * k), st.integers(0, 50_000))
def test_source_closed_form_holds_only_for_tied_weights_without_generator_bias(d, v):
    closed = source_closed_form(d, v)
    assert closed == 168 * d * d + 196 * d + v * d
    tied = parameter_count(v, v, 6, d, 4 * d, 8, tie_weights=True, generator_bias=False)
    assert tied.total == closed
    terms = source_terms(d, v)
    assert terms["attention"] == tied.attention.subtotal
    assert terms["feed_forward"] == tied.feed_forward.subtotal
    assert terms["layer_norm"] == tied.layer_norm.subtotal
    assert terms["embedding"] == tied.src_embedding.subtotal
    untied = parameter_count(v, v, 6, d, 4 * d, 8)  # the sources' own make_model
    assert untied.total - closed == 2 * v * d + v


# ---- FLOPs ----------------------------------------------------------------------------------


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


@settings(max_examples=25, deadline=None)
@given(configs(min_vocab=1), st.integers(1, 3), st.integers(1, 6), st.integers(1, 6),
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
    assert fc.training_total == 3 * fc.total == counter.get_total_flops()


def test_flop_formula_and_components():
    from vanilla_transformer.analysis import FLOP_FORMULA

    fc = forward_flops(7, 9, N=3, d_model=24, d_ff=40, h=4, batch=2, src_len=5, tgt_len=6)
    assert _evaluate(FLOP_FORMULA, N=3, B=2, d=24, F=40, S=5, T=6, C=9) == fc.total
    assert fc["cross_attn_kv_proj"].per_block == 4 * 2 * 5 * 24 * 24  # per source token
    assert fc["generator"].subtotal == 2 * 2 * 6 * 24 * 9
    assert fc.total == forward_flops_for(ModelConfig(7, 9, 3, 24, 40, 4), batch=2, src_len=5,
                                         tgt_len=6).total
    assert "training step" in fc.table()
    with pytest.raises(ValueError, match="batch"):
        forward_flops(7, 9, batch=0, src_len=5, tgt_len=6)
    with pytest.raises(ValueError, match="max_len"):
        forward_flops(7, 9, max_len=10, batch=1, src_len=11, tgt_len=6)


# ---- memory ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, size", [("float32", 4), ("bf16", 2), (torch.float16, 2),
                                         ("double", 8), ("torch.bfloat16", 2)])
def test_weights_gradients_and_adam_state(dtype, size):
    m = memory_estimate(11, 13, N=1, d_model=32, d_ff=64, h=4, dtype=dtype)
    total = parameter_count(11, 13, N=1, d_model=32, d_ff=64, h=4).total
    assert dtype_bytes(dtype) == size
    assert (m.weights, m.gradients, m.optimizer_state) == (size * total, size * total,
                                                           2 * size * total)
    assert m.buffers == size * 2 * 5000 * 32
    assert m.activations == m.kv_cache == 0 and m.src_len is None


def test_adam_state_is_what_torch_optim_adam_allocates():
    model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    opt = torch.optim.Adam(model.parameters())
    model.generator(model(torch.ones(1, 3, dtype=torch.long), torch.ones(1, 2, dtype=torch.long),
                          None, subsequent_mask(2))).sum().backward()
    opt.step()
    state = sum(t.numel() * t.element_size() for s in opt.state.values()
                for name, t in s.items() if name != "step")
    m = memory_estimate(11, 11, N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    assert state == m.optimizer_state
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    assert grads == m.gradients


def test_kv_cache_matches_the_decoders_cache():
    N, d, batch, src_len, steps = 2, 16, 3, 7, 5
    model = make_model(11, 11, N=N, d_model=d, d_ff=32, h=4).eval()
    memory = model.encode(torch.randint(1, 11, (batch, src_len)), None)
    cache = model.decoder.init_cache()
    for _ in range(steps):  # one new position per step
        model.decoder(model.tgt_embed(torch.ones(batch, 1, dtype=torch.long)), memory, None,
                      None, cache)
    held = [sum(t.numel() * t.element_size() for t in (c.k, c.v)) for pair in cache for c in pair]
    m = memory_estimate(11, 11, N=N, d_model=d, d_ff=32, h=4, batch=batch, src_len=src_len,
                        tgt_len=steps)
    assert sum(held[0::2]) == m.kv_cache_self == 2 * N * batch * steps * d * 4
    assert sum(held[1::2]) == m.kv_cache_cross == 2 * N * batch * src_len * d * 4


def _saved_activation_bytes(model, src, tgt):
    """Bytes of the tensors autograd keeps for backward, parameters and buffers excluded."""
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    kept = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in own:
            kept[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model.generator(model(src, tgt, None, subsequent_mask(tgt.size(1))))
    return sum(kept.values())


@pytest.mark.parametrize("options", [
    dict(layer_norm="torch"),
    dict(layer_norm="annotated", norm_first=False),
    dict(layer_norm="torch", dropout=0.0, final_norm=True, norm_first=False),
    dict(layer_norm="annotated", tie_weights=True, generator_bias=False),
])
def test_activation_estimate_is_close_to_what_autograd_keeps(options):
    kwargs = dict(N=2, d_model=32, d_ff=64, h=4, **options)
    model = make_model(13, 13, **kwargs).train()
    _set_fast(model, False)  # the reference path materialises the attention weights
    src, tgt = torch.randint(0, 13, (3, 9)), torch.randint(0, 13, (3, 6))
    measured = _saved_activation_bytes(model, src, tgt)
    # on CPU a dropout mask is a float32 tensor
    estimate = memory_estimate(13, 13, **kwargs, batch=3, src_len=9, tgt_len=6, mask_bytes=4)
    assert estimate.activations <= measured <= 1.02 * estimate.activations


def test_memory_validation_and_table():
    with pytest.raises(ValueError, match="unknown dtype"):
        dtype_bytes("int3")
    with pytest.raises(TypeError):
        dtype_bytes(4)
    with pytest.raises(ValueError, match="both"):
        memory_estimate(11, 11, src_len=5)
    m = memory_estimate_for(ModelConfig(11, 11, N=1), batch=2, src_len=4, tgt_len=3, dtype="bf16")
    assert m.training_total == (m.weights + m.buffers + m.gradients + m.optimizer_state
                                + m.activations)
    assert m.inference_total == m.weights + m.buffers + m.kv_cache
    assert "Korthikanti" in m.table() and m.to_dict()["dtype"] == "bfloat16"


def test_flops_and_memory_are_importable_from_the_calculator():
    from vanilla_transformer import calculator
    from vanilla_transformer.analysis import forward_flops as ff
    from vanilla_transformer.analysis import memory_estimate as me

    assert ff is forward_flops and me is memory_estimate
    with pytest.raises(AttributeError):
        calculator.no_such_name  # noqa: B018
