"""Parameter counts against the real model and PyTorch's own modules."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer import (
    LayerNorm,
    ModelConfig,
    MultiHeadedAttention,
    PositionwiseFeedForward,
    make_model,
)
from vanilla_transformer.analysis import (
    PARAMETER_FORMULA,
    count_parameters,
    forward_flops,
    memory_estimate,
    parameter_count,
    parameter_count_for,
    source_closed_form,
    source_terms,
)


@st.composite
def configs(draw):
    """Small random ModelConfig keyword arguments covering every make_model option."""
    h = draw(st.sampled_from([1, 2, 4]))
    tie = draw(st.booleans())
    src_vocab = draw(st.integers(1, 20))  # a model needs a token; 0 is test_empty_vocabularies'
    return dict(
        src_vocab=src_vocab,
        tgt_vocab=src_vocab if tie else draw(st.integers(1, 20)),
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


@settings(max_examples=25, deadline=None)
@given(configs())
def test_parameter_count_matches_the_real_model(latex_value, kwargs):
    model = make_model(**kwargs)
    pc = parameter_count(**kwargs)
    real = count_parameters(model)
    assert pc.total == real.total == sum(p.numel() for p in model.parameters())
    assert pc.buffers == real.buffers == sum(b.numel() for b in model.buffers())
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
    # the closed forms, general and specialised, evaluated from their LaTeX
    c = ModelConfig(**kwargs)
    symbols = dict(N=c.N, d=c.d_model, F=c.d_ff, A=c.src_vocab, C=c.tgt_vocab, V=c.tgt_vocab,
                   f=int(c.has_final_norm), t=int(c.tie_weights), b=int(c.generator_bias))
    assert latex_value(PARAMETER_FORMULA, **symbols) == pc.total
    assert latex_value(pc.formula, **symbols) == pc.total


def test_positional_sizes_are_make_models():
    # src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout by position, the rest by name
    args, options = (7, 9, 1, 16, 24, 2, 0.0), dict(norm_first=False, generator_bias=False)
    model = make_model(*args, **options)
    assert model.config == ModelConfig(*args, **options)
    assert parameter_count(*args, **options) == parameter_count_for(model.config)
    assert parameter_count(*args, **options).total == count_parameters(model).total
    assert forward_flops(*args, **options, batch=1, src_len=3, tgt_len=2).config == model.config
    assert memory_estimate(*args, **options).config == model.config


def test_tied_weights_are_counted_once_in_src_embedding():
    kwargs = dict(N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    model = make_model(13, 13, **kwargs)
    real = count_parameters(model)
    naive = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    shared = model.src_embed[0].lut.weight
    assert model.tgt_embed[0].lut.weight is shared and model.generator.proj.weight is shared
    assert real.total == naive - 2 * shared.numel()
    assert real.breakdown["src_embed"] == shared.numel()
    assert real.breakdown["tgt_embed"] == 0
    assert real.breakdown["generator"] == model.generator.proj.bias.numel()
    pc = parameter_count(13, 13, **kwargs)
    assert (pc.src_embedding.subtotal, pc.tgt_embedding.subtotal, pc.generator.subtotal) == (
        real.breakdown["src_embed"], real.breakdown["tgt_embed"], real.breakdown["generator"])


@pytest.mark.parametrize("kwargs", [
    dict(src_vocab=0, tgt_vocab=0),
    dict(src_vocab=0, tgt_vocab=5, generator_bias=False),
    dict(src_vocab=0, tgt_vocab=0, tie_weights=True),
])
def test_empty_vocabularies(kwargs):
    sizes = dict(N=1, d_model=8, d_ff=16, h=2)
    with pytest.raises(ValueError, match="vocab must be at least 1 to build a model"):
        make_model(**kwargs, **sizes)
    # a count is affine in each vocabulary, so the count at 0 is 2 * (count at 1) - (count at 2)
    # for each side with 0 tokens; those two are checked against real models
    ones = {k: v or 1 if k.endswith("vocab") else v for k, v in kwargs.items()}
    twos = {k: v or 2 if k.endswith("vocab") else v for k, v in kwargs.items()}
    real = [count_parameters(make_model(**kw, **sizes)).total for kw in (ones, twos)]
    assert [parameter_count(**kw, **sizes).total for kw in (ones, twos)] == real
    assert parameter_count(**kwargs, **sizes).total == 2 * real[0] - real[1]


@pytest.mark.parametrize("bad, error", [
    (dict(d_model=30, h=4), ValueError),
    (dict(N=0), ValueError),
    (dict(d_ff=-1), ValueError),
    (dict(dropout=1.0), ValueError),
    (dict(layer_norm="rms"), ValueError),
    (dict(tie_weights=True, tgt_vocab=12), ValueError),
    (dict(N=2.0), TypeError),
    (dict(no_such_option=1), TypeError),
])
@pytest.mark.parametrize("estimate", [
    parameter_count,
    memory_estimate,
    lambda **kwargs: forward_flops(**kwargs, batch=1, src_len=2, tgt_len=2),
], ids=["parameter_count", "memory_estimate", "forward_flops"])
def test_bad_arguments_raise_what_make_model_raises(bad, error, estimate):
    kwargs = dict(src_vocab=11, tgt_vocab=11, N=1, d_model=32, d_ff=64, h=4)
    kwargs.update(bad)
    with pytest.raises(error) as from_model:
        make_model(**kwargs)
    with pytest.raises(error) as from_estimate:
        estimate(**kwargs)
    assert str(from_estimate.value) == str(from_model.value)


def test_parameter_count_for_needs_a_config():
    with pytest.raises(TypeError, match="ModelConfig"):
        parameter_count_for(dict(src_vocab=11, tgt_vocab=11))


def test_table_and_dict_list_every_component_and_the_total():
    pc = parameter_count(11, 11, N=2, tie_weights=True)
    lines = pc.table().splitlines()
    for c in pc.components:
        assert any(line.split()[:4] == [c.name, f"{c.per_block:,}", str(c.blocks),
                                        f"{c.subtotal:,}"] for line in lines), c.name
    assert [line for line in lines if line.startswith("total")][0].split() == [
        "total", f"{pc.total:,}"]
    data = pc.to_dict()
    assert sum(c["subtotal"] for c in data["components"].values()) == data["total"] == pc.total


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
    assert counted.breakdown == {name: sum(p.numel() for p in child.parameters())
                                 for name, child in t.named_children()}


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
    assert counted.total == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert counted.frozen == sum(p.numel() for p in frozen.parameters())
    assert count_parameters(nn.Linear(4, 3)).children == (("(direct)", 15),)
    assert counted.table().splitlines()[-2].split() == ["total", "18"]
    with pytest.raises(TypeError):
        count_parameters("not a module")


# ---- the source-code tour's closed form --------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 8).map(lambda k: 8 * k), st.integers(1, 50))
def test_source_closed_form_holds_only_for_tied_weights_without_generator_bias(d, v):
    closed = source_closed_form(d, v)
    tied = make_model(v, v, 6, d, 4 * d, 8, tie_weights=True, generator_bias=False)
    assert count_parameters(tied).total == closed
    terms = source_terms(d, v)
    kinds = dict(attention=MultiHeadedAttention, feed_forward=PositionwiseFeedForward,
                 layer_norm=LayerNorm)
    for name, kind in kinds.items():
        assert terms[name] == _unique_numel(m for m in tied.modules() if isinstance(m, kind))
    assert terms["embedding"] == tied.src_embed[0].lut.weight.numel()
    untied = make_model(v, v, 6, d, 4 * d, 8)  # the Annotated Transformer's make_model
    assert count_parameters(untied).total - closed == 2 * v * d + v


def test_source_terms_reject_bad_sizes():
    with pytest.raises(ValueError):
        source_terms(0, 10)
    with pytest.raises(ValueError):
        source_closed_form(512, -1)
