"""Incremental (key/value cached) greedy decoding gives the tokens that recomputing gives."""

from __future__ import annotations

import pytest
import torch

from vanilla_transformer import MultiHeadedAttention, greedy_decode, keep_attention, make_model
from vanilla_transformer.data import heldout_sequences
from vanilla_transformer.model import subsequent_mask
from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig, train_copy_model

PAD, START = 0, 1
V = 11


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """These models are tiny: one thread avoids the cost of sharing small operations out."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def trained_model(one_thread):
    """A small copy-task model trained for a few seconds until it copies held-out sequences
    exactly: its outputs vary from token to token, which a random model's mostly do not."""
    config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=32, d_ff=64, h=4), batch_size=32,
                            steps=300, warmup=60, factor=2.0, seed=0)
    return train_copy_model(config).model


def padded_sources(seed: int, batch: int = 6, src_len: int = 9) -> torch.Tensor:
    """Random sources with a different amount of right padding in every row."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(2, V, (batch, src_len), generator=g)
    src[:, 0] = START
    for row in range(batch):
        length = int(torch.randint(2, src_len + 1, (1,), generator=g))
        src[row, length:] = PAD
    assert (src == PAD).any()
    return src


def random_model(seed: int, **kwargs) -> torch.nn.Module:
    torch.manual_seed(seed)
    options = dict(N=2, d_model=32, d_ff=64, h=4) | kwargs
    return make_model(V, V, **options).eval()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("end_symbol", [None, 3], ids=["no-end", "end-3"])
def test_trained_model_same_tokens_with_and_without_cache(trained_model, seed, end_symbol):
    src = padded_sources(seed)
    mask = src != PAD
    kwargs = dict(max_len=14, start_symbol=START, end_symbol=end_symbol, pad_symbol=PAD)
    cached = greedy_decode(trained_model, src, mask, use_cache=True, **kwargs)
    full = greedy_decode(trained_model, src, mask, use_cache=False, **kwargs)
    assert torch.equal(cached, full)
    assert len(set(cached[:, 1:].flatten().tolist())) >= 2  # not a degenerate constant output


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "recompute"])
def test_trained_model_copies_and_stops_at_the_end_symbol(trained_model, use_cache):
    src = heldout_sequences(40, vocab=V, seq_len=10, seed=7)
    copied = greedy_decode(trained_model, src, None, 10, START, use_cache=use_cache)
    assert torch.equal(copied, src)
    end = 3  # any token: the copy of a row stops right after its first 3
    out = greedy_decode(trained_model, src, None, 10, START, end_symbol=end, pad_symbol=PAD,
                        use_cache=use_cache)
    rows = src.tolist()
    assert any(end in r[1:] for r in rows) and any(end not in r[1:] for r in rows)
    for source, output in zip(rows, out.tolist()):
        n = source.index(end, 1) + 1 if end in source[1:] else len(source)
        assert output[:n] == source[:n]
        assert all(t == PAD for t in output[n:])


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(
    "options",
    [dict(), dict(norm_first=False), dict(layer_norm="torch", N=1), dict(tie_weights=True)],
    ids=["pre-norm", "post-norm", "torch-layernorm", "tied"],
)
def test_random_models_same_tokens_with_and_without_cache(seed, options):
    model = random_model(seed, **options)
    src = padded_sources(seed + 10)
    for end_symbol in (None, 4):
        kwargs = dict(max_len=12, start_symbol=START, end_symbol=end_symbol)
        cached = greedy_decode(model, src, src != PAD, use_cache=True, **kwargs)
        full = greedy_decode(model, src, src != PAD, use_cache=False, **kwargs)
        assert torch.equal(cached, full)


@pytest.mark.parametrize("reference_path", [False, True], ids=["sdpa", "reference"])
def test_cached_decoder_states_match_the_full_prefix(trained_model, reference_path):
    model = trained_model
    src = padded_sources(3)
    mask = (src != PAD).unsqueeze(-2)
    ys = torch.randint(2, V, (src.size(0), 9), generator=torch.Generator().manual_seed(0))
    ys[:, 0] = START
    with torch.no_grad(), keep_attention(model, enabled=reference_path):
        memory = model.encode(src, mask)
        full = model.decode(memory, mask, ys, subsequent_mask(ys.size(1)))
        cache = model.decoder.init_cache()
        for t in range(ys.size(1)):
            x = model.tgt_embed(ys[:, : t + 1])[:, -1:]  # eval mode: no dropout
            step = model.decoder(x, memory, mask, None, cache)
            torch.testing.assert_close(step[:, 0], full[:, t], rtol=1e-5, atol=1e-5)
            assert cache[0][0].k.shape == (src.size(0), 4, t + 1, 8)  # grows by one position
            assert cache[0][1].k.shape == (src.size(0), 4, src.size(1), 8)  # computed once


def test_cached_decoding_feeds_one_position_per_step():
    model = random_model(0)
    src = padded_sources(0)
    lengths = []
    hooks = [m.register_forward_hook(lambda mod, args, out: lengths.append(args[0].size(1)))
             for name, m in model.decoder.named_modules()
             if name.endswith("self_attn") and isinstance(m, MultiHeadedAttention)]
    try:
        greedy_decode(model, src, src != PAD, 8, START, use_cache=True)
        assert lengths and set(lengths) == {1}
        lengths.clear()
        greedy_decode(model, src, src != PAD, 8, START, use_cache=False)
        assert max(lengths) == 7  # recomputing feeds the whole prefix
    finally:
        for h in hooks:
            h.remove()


def test_cache_respects_the_positional_table_length():
    torch.manual_seed(0)
    model = make_model(V, V, N=1, d_model=16, d_ff=32, h=2, max_len=6).eval()
    src = padded_sources(0, src_len=5)
    with pytest.raises(ValueError, match="max_len"):
        greedy_decode(model, src, src != PAD, 8, START, use_cache=True)
