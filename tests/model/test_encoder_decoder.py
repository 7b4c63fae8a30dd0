"""The assembled model: structure, options, padding invariance, training steps, determinism."""

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vanilla_transformer import (
    Batch,
    EncoderDecoder,
    LayerNorm,
    make_model,
    subsequent_mask,
)

TINY = dict(N=1, d_model=16, d_ff=32, h=2)


def test_make_model_11_11_2_structure():
    torch.manual_seed(0)
    model = make_model(11, 11, 2)
    assert isinstance(model, EncoderDecoder)
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 2
    assert model.src_embed[0].lut.weight.shape == (11, 512)
    assert model.generator.proj.weight.shape == (11, 512)
    assert model.encoder.layers[0].self_attn.h == 8 and model.encoder.layers[0].self_attn.d_k == 64
    assert model.decoder.layers[0].feed_forward.w_1.weight.shape == (2048, 512)
    assert sum(p.numel() for p in model.parameters()) == 14_731_787


def test_state_dict_keys_follow_the_annotated_transformer():
    keys = set(make_model(5, 5, **TINY).state_dict())
    for key in [
        "encoder.layers.0.self_attn.linears.3.weight",
        "encoder.layers.0.feed_forward.w_1.weight",
        "encoder.layers.0.sublayer.1.norm.a_2",
        "encoder.norm.b_2",
        "decoder.layers.0.src_attn.linears.0.bias",
        "src_embed.0.lut.weight",
        "src_embed.1.pe",
        "generator.proj.weight",
    ]:
        assert key in keys, key


def test_xavier_initialisation_of_matrices():
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=64, d_ff=128, h=4)
    w = model.encoder.layers[0].self_attn.linears[0].weight
    bound = (6 / (64 + 64)) ** 0.5
    assert w.abs().max() <= bound and w.abs().max() > 0.9 * bound


def test_tied_weights_are_one_tensor_counted_once():
    model = make_model(13, 13, tie_weights=True, **TINY)
    w = model.src_embed[0].lut.weight
    assert model.tgt_embed[0].lut.weight is w and model.generator.proj.weight is w
    untied = make_model(13, 13, **TINY)
    unique = sum(p.numel() for p in model.parameters())  # parameters() yields shared tensors once
    assert unique == sum(p.numel() for p in untied.parameters()) - 2 * 13 * 16


def test_generator_bias_option():
    assert make_model(7, 7, generator_bias=False, **TINY).generator.proj.bias is None


@pytest.mark.parametrize("norm_first", [True, False])
def test_final_norm_follows_the_arrangement(norm_first):
    model = make_model(7, 7, norm_first=norm_first, **TINY)
    assert isinstance(model.encoder.norm, LayerNorm) == norm_first
    forced = make_model(7, 7, norm_first=norm_first, final_norm=True, layer_norm="torch", **TINY)
    assert isinstance(forced.decoder.norm, torch.nn.LayerNorm)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("layer_norm", ["annotated", "torch"])
def test_both_arrangements_train_a_step_without_nans(norm_first, layer_norm):
    torch.manual_seed(0)
    model = make_model(11, 11, norm_first=norm_first, layer_norm=layer_norm, **TINY)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.randint(1, 11, (4, 6))
    batch = Batch(data, data, pad=0)
    before = [p.detach().clone() for p in model.parameters()]
    out = model.generator(model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask))
    loss = torch.nn.functional.nll_loss(out.reshape(-1, 11), batch.tgt_y.reshape(-1))
    loss.backward()
    opt.step()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_same_seed_same_output():
    def run():
        torch.manual_seed(42)
        model = make_model(11, 11, **TINY)
        src = torch.randint(1, 11, (2, 5))
        return model(src, src, None, subsequent_mask(5))

    assert torch.equal(run(), run())


@pytest.mark.parametrize("fast", [True, False])
def test_changing_a_padded_source_token_changes_no_real_output(fast):
    torch.manual_seed(0)
    model = make_model(11, 11, dropout=0.0, **TINY).eval()
    for m in model.modules():
        if hasattr(m, "fast"):
            m.fast = fast
    src = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 8, 9, 10]])
    tgt = torch.tensor([[1, 3, 4], [1, 6, 7]])
    batch = Batch(src, None, pad=0)
    mask = batch.src_mask
    memory = model.encode(src, mask)
    out = model(src, tgt, mask, subsequent_mask(3))
    changed = src.clone()
    changed[0, 3:] = 7  # overwrite the padding with a real token id
    memory2 = model.encode(changed, mask)
    out2 = model(changed, tgt, mask, subsequent_mask(3))
    torch.testing.assert_close(memory2[0, :3], memory[0, :3], atol=1e-6, rtol=0)
    torch.testing.assert_close(out2, out, atol=1e-6, rtol=0)
    assert not torch.allclose(memory2[0, 3:], memory[0, 3:])


@settings(max_examples=20, deadline=None)
@given(
    N=st.integers(1, 2),
    h=st.sampled_from([1, 2, 4]),
    d_k=st.integers(1, 6),
    d_ff=st.integers(1, 24),
    batch=st.integers(1, 3),
    src_len=st.integers(1, 7),
    tgt_len=st.integers(1, 7),
    src_vocab=st.integers(1, 9),
    tgt_vocab=st.integers(1, 9),
    norm_first=st.booleans(),
    layer_norm=st.sampled_from(["annotated", "torch"]),
)
def test_shapes_over_random_configurations(
    N, h, d_k, d_ff, batch, src_len, tgt_len, src_vocab, tgt_vocab, norm_first, layer_norm
):
    d_model = h * d_k
    assume(layer_norm == "torch" or d_model >= 2)  # the unbiased std needs two features
    model = make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h, 0.0,
                       norm_first=norm_first, layer_norm=layer_norm).eval()
    src = torch.randint(0, src_vocab, (batch, src_len))
    tgt = torch.randint(0, tgt_vocab, (batch, tgt_len))
    src_mask = torch.ones(batch, 1, src_len, dtype=torch.bool)
    out = model(src, tgt, src_mask, subsequent_mask(tgt_len))
    assert out.shape == (batch, tgt_len, d_model)
    logp = model.generator(out)
    assert logp.shape == (batch, tgt_len, tgt_vocab)
    assert torch.isfinite(logp).all()
