"""Memory estimates against what PyTorch allocates: parameters, Adam, the cache, autograd."""

import json

import pytest
import torch

from vanilla_transformer import ModelConfig, MultiHeadedAttention, make_model, subsequent_mask
from vanilla_transformer.analysis import (
    dtype_bytes,
    format_bytes,
    memory_estimate,
    memory_estimate_for,
)


def _bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.mark.parametrize("dtype, torch_dtype", [
    ("float32", torch.float32), ("bf16", torch.bfloat16), (torch.float16, torch.float16),
    ("double", torch.float64), ("torch.bfloat16", torch.bfloat16),
])
def test_weights_and_buffers_are_what_the_model_holds_in_that_dtype(dtype, torch_dtype):
    kwargs = dict(N=1, d_model=32, d_ff=64, h=4, max_len=50)
    model = make_model(11, 13, **kwargs).to(torch_dtype)
    m = memory_estimate(11, 13, **kwargs, dtype=dtype)
    assert dtype_bytes(dtype) == torch.empty((), dtype=torch_dtype).element_size()
    assert m.weights == _bytes(model.parameters())
    assert m.buffers == _bytes(model.buffers())
    assert m.activations == m.kv_cache == 0 and m.src_len is None


def test_gradients_and_adam_state_are_what_torch_optim_adam_allocates():
    model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    opt = torch.optim.Adam(model.parameters())
    model.generator(model(torch.ones(1, 3, dtype=torch.long), torch.ones(1, 2, dtype=torch.long),
                          None, subsequent_mask(2))).sum().backward()
    opt.step()
    m = memory_estimate(11, 11, N=1, d_model=32, d_ff=64, h=4, tie_weights=True)
    assert m.optimizer_state == _bytes(t for s in opt.state.values()
                                       for name, t in s.items() if name != "step")
    assert m.gradients == _bytes(p.grad for p in model.parameters())


def test_kv_cache_matches_the_decoders_cache():
    N, d, batch, src_len, steps = 2, 16, 3, 7, 5
    model = make_model(11, 11, N=N, d_model=d, d_ff=32, h=4).eval()
    memory = model.encode(torch.randint(1, 11, (batch, src_len)), None)
    cache = model.decoder.init_cache()
    with torch.no_grad():
        for _ in range(steps):  # one new position per step
            model.decoder(model.tgt_embed(torch.ones(batch, 1, dtype=torch.long)), memory, None,
                          None, cache)
    held = [_bytes((c.k, c.v)) for pair in cache for c in pair]
    m = memory_estimate(11, 11, N=N, d_model=d, d_ff=32, h=4, batch=batch, src_len=src_len,
                        tgt_len=steps)
    assert sum(held[0::2]) == m.kv_cache_self
    assert sum(held[1::2]) == m.kv_cache_cross


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
    dict(layer_norm="annotated", dropout=0.0),
    dict(layer_norm="torch", norm_first=False, attn_dropout=0.0, ff_dropout=0.0),
])
def test_activation_estimate_is_close_to_what_autograd_keeps(options):
    kwargs = dict(N=2, d_model=32, d_ff=64, h=4, **options)
    model = make_model(13, 13, **kwargs).train()
    for m in model.modules():
        if isinstance(m, MultiHeadedAttention):
            m.fast = False  # the reference path materialises the attention weights
    src, tgt = torch.randint(0, 13, (3, 9)), torch.randint(0, 13, (3, 6))
    measured = _saved_activation_bytes(model, src, tgt)
    # on CPU a dropout mask is a float32 tensor
    estimate = memory_estimate(13, 13, **kwargs, batch=3, src_len=9, tgt_len=6, mask_bytes=4)
    # what is left out (token ids, masks) is O(batch * length) bytes
    assert estimate.activations <= measured <= 1.01 * estimate.activations


def test_validation():
    with pytest.raises(ValueError, match="unknown dtype"):
        dtype_bytes("int3")
    with pytest.raises(TypeError):
        dtype_bytes(4)
    with pytest.raises(ValueError, match="both"):
        memory_estimate(11, 11, src_len=5)
    with pytest.raises(ValueError, match="mask_bytes"):
        memory_estimate(11, 11, mask_bytes=0)
    with pytest.raises(TypeError, match="ModelConfig"):
        memory_estimate_for(dict(src_vocab=11, tgt_vocab=11))


def test_table_and_dict_show_every_figure():
    m = memory_estimate_for(ModelConfig(11, 11, N=1), batch=2, src_len=4, tgt_len=3, dtype="bf16")
    data = json.loads(json.dumps(m.to_dict()))
    assert data["dtype"] == "bfloat16" and data["bytes_per_element"] == 2
    assert {k: data[k] for k in m.summary()} == m.summary()
    assert sum(c["subtotal"] for c in data["activation_components"].values()) == m.activations
    table = m.table()
    for n in m.summary().values():
        assert f"{n:,} B" in table and format_bytes(n) in table


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"),
                                     (5 * 2**20, "5.0 MiB"), (2**50, "1024.0 TiB")])
def test_format_bytes(n, text):
    assert format_bytes(n) == text
