"""Tests of vanilla_transformer.interop: weights and masks shared with torch.nn.Transformer.

The equivalence tests build random tiny configurations with dropout off, random masks with
padding in both the source and the target, and compare the encoder and decoder outputs of the
package and of torch.nn at every position (padded ones included), in training mode and in eval
mode with PyTorch's fast path switched off (its nested-tensor path writes zeros at padded
positions), through both of the package's attention paths.
"""

import random

import pytest
import torch
from torch import nn

from vanilla_transformer import Batch, collate_batch, keep_attention, make_model
from vanilla_transformer.interop import (
    TorchMasks,
    batch_masks_to_torch,
    forward_with_torch_masks,
    load_from_torch,
    to_torch,
    torch_masks_to_keep,
)
from vanilla_transformer.model import (
    DecoderLayer,
    EncoderLayer,
    MultiHeadedAttention,
    PositionwiseFeedForward,
)

TOL = 1e-5

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")


@pytest.fixture(autouse=True)
def _no_torch_fast_path():
    saved = torch.backends.mha.get_fastpath_enabled(), torch.get_num_threads()
    torch.backends.mha.set_fastpath_enabled(False)
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    yield
    torch.backends.mha.set_fastpath_enabled(saved[0])
    torch.set_num_threads(saved[1])


def tiny_model(d_model=16, h=2, d_ff=32, N=1, norm_first=False, **kw):
    kw.setdefault("layer_norm", "torch")
    kw.setdefault("final_norm", True)
    kw.setdefault("max_len", 16)
    return make_model(7, 7, N=N, d_model=d_model, d_ff=d_ff, h=h, dropout=0.0,
                      norm_first=norm_first, **kw)


def tiny_torch(d_model=16, h=2, d_ff=32, N=1, norm_first=False, **kw):
    kw.setdefault("batch_first", True)
    return nn.Transformer(d_model, h, N, N, d_ff, dropout=0.0, norm_first=norm_first, **kw)


def random_case(rng: random.Random):
    """A random tiny configuration and random PyTorch-convention masks.

    Padding may fall anywhere except position 0 and the attn_masks never block key 0, so no
    query row is fully masked (PyTorch and the package answer such rows differently on purpose).
    """
    h = rng.choice([1, 2, 4])
    cfg = dict(h=h, d_model=h * rng.choice([2, 4, 8]), d_ff=rng.choice([8, 16, 32]),
               N=rng.choice([1, 2]), norm_first=rng.choice([True, False]))
    b, S, T = rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 6)
    g = torch.Generator().manual_seed(rng.randrange(2**31))

    def key_padding(n, length):
        kpm = torch.rand(n, length, generator=g) < 0.4
        kpm[:, 0] = False
        return kpm

    def attn(q, k, causal=False):
        blocked = torch.triu(torch.ones(q, k, dtype=torch.bool), 1) if causal else (
            torch.rand(q, k, generator=g) < 0.3)
        if rng.random() < 0.4:  # a per-item mask (batch * h, q, k)
            blocked = blocked | (torch.rand(b, q, k, generator=g) < 0.3)
            blocked = blocked.repeat_interleave(h, dim=0)  # each item's mask once per head
        blocked[..., 0] = False
        if rng.random() < 0.5:  # float additive form
            return torch.zeros(blocked.shape).masked_fill(blocked, float("-inf"))
        return blocked

    masks = dict(
        src_mask=attn(S, S) if rng.random() < 0.5 else None,
        tgt_mask=attn(T, T, causal=True),
        memory_mask=attn(T, S) if rng.random() < 0.5 else None,
    )
    src_kpm = key_padding(b, S)
    for prefix, kpm in (("src", src_kpm), ("tgt", key_padding(b, T)), ("memory", src_kpm)):
        other = masks[f"{prefix}_mask"]
        if other is not None and other.is_floating_point():
            # PyTorch deprecates mixing a bool key_padding_mask with a float attn_mask
            kpm = torch.zeros(kpm.shape).masked_fill(kpm, float("-inf"))
        masks[f"{prefix}_key_padding_mask"] = kpm
    src = torch.randn(b, S, cfg["d_model"], generator=g)
    tgt = torch.randn(b, T, cfg["d_model"], generator=g)
    return cfg, src, tgt, masks


def compare(model, torch_model, src, tgt, masks):
    """Largest |difference| of the encoder, decoder and full outputs of the two models."""
    h = torch_model.nhead
    memory = torch_model.encoder(src, mask=masks["src_mask"],
                                 src_key_padding_mask=masks["src_key_padding_mask"])
    ours_memory = model.encoder(
        src, torch_masks_to_keep(masks["src_mask"], masks["src_key_padding_mask"], num_heads=h))
    out = torch_model.decoder(tgt, memory, tgt_mask=masks["tgt_mask"],
                              memory_mask=masks["memory_mask"],
                              tgt_key_padding_mask=masks["tgt_key_padding_mask"],
                              memory_key_padding_mask=masks["memory_key_padding_mask"])
    ours_out = model.decoder(
        tgt, memory,
        torch_masks_to_keep(masks["memory_mask"], masks["memory_key_padding_mask"], num_heads=h),
        torch_masks_to_keep(masks["tgt_mask"], masks["tgt_key_padding_mask"], num_heads=h),
    )
    full = torch_model(src, tgt, **masks)
    ours_full = forward_with_torch_masks(model, src, tgt, **masks)
    for a in (memory, out, full):
        assert torch.isfinite(a).all()
    return max(float((a - b).abs().max()) for a, b in
               ((memory, ours_memory), (out, ours_out), (full, ours_full)))


@pytest.mark.parametrize("direction", ["load_from_torch", "to_torch"])
@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("reference_path", [False, True])
def test_random_configurations_agree(direction, mode, reference_path):
    rng = random.Random(f"{direction}-{mode}-{reference_path}")
    largest = 0.0
    for _ in range(8):
        cfg, src, tgt, masks = random_case(rng)
        if direction == "load_from_torch":
            torch_model = tiny_torch(**cfg)
            model = load_from_torch(tiny_model(**cfg), torch_model)
        else:
            model = tiny_model(**cfg)
            torch_model = to_torch(model)
        model.train(mode == "train")
        torch_model.train(mode == "train")
        with torch.no_grad(), keep_attention(model, reference_path):
            largest = max(largest, compare(model, torch_model, src, tgt, masks))
    print(f"{direction} {mode} reference_path={reference_path}: largest |difference| {largest:.3g}")
    assert largest < TOL


@pytest.mark.parametrize("norm_first", [True, False])
def test_weights_round_trip_exactly(norm_first):
    model = tiny_model(N=2, norm_first=norm_first)
    back = load_from_torch(tiny_model(N=2, norm_first=norm_first), to_torch(model))
    ours, theirs = model.state_dict(), back.state_dict()
    for name in ours:
        if name.startswith(("encoder.", "decoder.")):
            assert torch.equal(ours[name], theirs[name]), name


def test_batch_first_false_loads_the_same_weights():
    torch_model = tiny_torch(batch_first=False).eval()
    model = load_from_torch(tiny_model(), torch_model).eval()
    src, tgt = torch.randn(2, 5, 16), torch.randn(2, 3, 16)
    kpm = torch.tensor([[False, False, False, True, True], [False] * 5])
    causal = nn.Transformer.generate_square_subsequent_mask(3)
    # (seq_len, batch, d_model) in, (tgt_len, batch, d_model) out
    theirs = torch_model(src.transpose(0, 1), tgt.transpose(0, 1), tgt_mask=causal,
                         src_key_padding_mask=kpm, memory_key_padding_mask=kpm).transpose(0, 1)
    ours = forward_with_torch_masks(model, src, tgt, tgt_mask=causal,
                                    src_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    assert torch.allclose(ours, theirs, atol=TOL)


@pytest.mark.parametrize("norm_first", [True, False])
def test_single_modules_convert_both_ways(norm_first):
    torch.manual_seed(0)
    x, memory = torch.randn(2, 4, 16), torch.randn(2, 5, 16)
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    keep = torch_masks_to_keep(causal)

    mha = nn.MultiheadAttention(16, 2, batch_first=True)
    ours = load_from_torch(MultiHeadedAttention(2, 16, 0.0), mha)
    assert torch.allclose(ours(x, memory, memory), mha(x, memory, memory)[0], atol=TOL)
    back = to_torch(ours)
    assert torch.allclose(back(x, memory, memory)[0], mha(x, memory, memory)[0], atol=TOL)

    def parts():
        return dict(feed_forward=PositionwiseFeedForward(16, 32, 0.0), dropout=0.0,
                    norm_first=norm_first, layer_norm="torch")

    enc = nn.TransformerEncoderLayer(16, 2, 32, 0.0, batch_first=True, norm_first=norm_first)
    ours_enc = load_from_torch(EncoderLayer(16, MultiHeadedAttention(2, 16, 0.0), **parts()), enc)
    assert torch.allclose(ours_enc(x, keep), enc(x, src_mask=causal), atol=TOL)
    assert torch.allclose(to_torch(ours_enc)(x, src_mask=causal), enc(x, src_mask=causal), atol=TOL)

    dec = nn.TransformerDecoderLayer(16, 2, 32, 0.0, batch_first=True, norm_first=norm_first)
    ours_dec = load_from_torch(DecoderLayer(16, MultiHeadedAttention(2, 16, 0.0),
                                            MultiHeadedAttention(2, 16, 0.0), **parts()), dec)
    expected = dec(x, memory, tgt_mask=causal)
    assert torch.allclose(ours_dec(x, memory, None, keep), expected, atol=TOL)
    assert torch.allclose(to_torch(ours_dec)(x, memory, tgt_mask=causal), expected, atol=TOL)


def test_stacks_convert_with_and_without_final_norm():
    model = tiny_model(N=2, final_norm=None)  # post-norm, no final norm: the paper
    enc = to_torch(model.encoder)
    assert enc.norm is None and len(enc.layers) == 2
    x = torch.randn(2, 3, 16)
    assert torch.allclose(enc(x), model.encoder(x, None), atol=TOL)
    dec = to_torch(tiny_model(N=2).decoder)
    assert isinstance(dec.norm, nn.LayerNorm)


def test_batch_masks_reproduce_the_package_model_at_every_position():
    torch.manual_seed(0)
    model = tiny_model(N=2, norm_first=True).eval()
    torch_model = to_torch(model)
    batch = collate_batch([([3, 4, 5, 6], [4, 5]), ([5], [6, 3, 3, 4])], pad=0, bos=1, eos=2)
    masks = batch_masks_to_torch(batch)
    assert isinstance(masks, TorchMasks)
    assert masks.src_key_padding_mask.tolist() == [[False] * 4, [False, True, True, True]]
    # targets [1, 4, 5, 2, 0, 0] and [1, 6, 3, 3, 4, 2]; the decoder input drops the last token
    assert masks.tgt_key_padding_mask.tolist() == [[False] * 4 + [True], [False] * 5]
    assert masks.memory_key_padding_mask is masks.src_key_padding_mask
    src = model.src_embed(batch.src)
    tgt = model.tgt_embed(batch.tgt)
    theirs = torch_model(src, tgt, **masks._asdict())
    ours = model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
    assert torch.allclose(ours, theirs, atol=TOL)


def test_batch_masks_need_a_target():
    with pytest.raises(ValueError, match="no target"):
        batch_masks_to_torch(Batch(torch.tensor([[1, 2]]), pad=0))


def test_batch_masks_check_the_target_mask():
    batch = Batch(torch.tensor([[1, 2]]), torch.tensor([[1, 2, 0]]), pad=0)
    batch.tgt_mask = torch.ones_like(batch.tgt_mask)
    with pytest.raises(ValueError, match="causal"):
        batch_masks_to_torch(batch)


def test_to_torch_keeps_dropout_mode_dtype_and_layout():
    model = make_model(7, 7, N=1, d_model=16, d_ff=32, h=2, dropout=0.25, layer_norm="torch",
                       norm_first=True).double().eval()
    t = to_torch(model)
    assert t.batch_first and not t.training
    assert t.encoder.layers[0].dropout.p == 0.25 and t.encoder.layers[0].norm_first
    assert t.encoder.layers[0].linear1.weight.dtype == torch.float64


# --- what cannot be converted ----------------------------------------------------------------


@pytest.mark.parametrize(
    "model_kw, torch_kw, match",
    [
        (dict(layer_norm="annotated"), {}, "annotated"),
        (dict(d_model=32), {}, "d_model"),
        (dict(h=4), {}, "heads"),
        (dict(d_ff=64), {}, "d_ff"),
        (dict(N=2), {}, "number of layers"),
        (dict(norm_first=True), {}, "norm_first"),
        (dict(final_norm=None), {}, "final LayerNorm"),  # post-norm without final norm
        ({}, dict(activation="gelu"), "relu"),
        ({}, dict(activation=torch.tanh), "relu"),
        ({}, dict(bias=False), "bias=False"),
        ({}, dict(layer_norm_eps=1e-6), "eps"),
        ({}, dict(custom_encoder=nn.Identity()), "custom"),
    ],
)
def test_load_from_torch_rejects_incompatible_configurations(model_kw, torch_kw, match):
    model = tiny_model(**model_kw)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match=match):
        load_from_torch(model, tiny_torch(**torch_kw))
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # nothing was copied


def test_load_from_torch_rejects_a_different_decoder_depth():
    t = nn.Transformer(16, 2, 1, 2, 32, dropout=0.0, batch_first=True)
    with pytest.raises(ValueError, match=r"decoder.*number of layers"):
        load_from_torch(tiny_model(), t)


def test_load_from_torch_rejects_custom_layer_classes():
    class MyLayer(nn.TransformerEncoderLayer):
        pass

    t = tiny_torch()
    t.encoder.layers[0] = MyLayer(16, 2, 32, 0.0, batch_first=True)
    with pytest.raises(ValueError, match="MyLayer"):
        load_from_torch(tiny_model(), t)


def test_load_from_torch_rejects_mismatched_module_kinds():
    with pytest.raises(ValueError, match="nn.Transformer"):
        load_from_torch(tiny_model(), nn.Linear(2, 2))
    with pytest.raises(TypeError, match="cannot map"):
        load_from_torch(nn.Linear(2, 2), tiny_torch())


def test_to_torch_rejects_annotated_layer_norm_and_missing_final_norm():
    with pytest.raises(ValueError, match="annotated"):
        to_torch(tiny_model(layer_norm="annotated"))
    paper = tiny_model(final_norm=None)
    with pytest.raises(ValueError, match="allow_no_final_norm"):
        to_torch(paper)
    with pytest.raises(TypeError, match="cannot build"):
        to_torch(nn.Linear(2, 2))


def test_post_norm_without_final_norm_round_trips_when_allowed():
    paper = tiny_model(N=2, final_norm=None).eval()
    t = to_torch(paper, allow_no_final_norm=True)
    assert t.encoder.norm is None and t.decoder.norm is None
    src, tgt = torch.randn(2, 4, 16), torch.randn(2, 3, 16)
    causal = nn.Transformer.generate_square_subsequent_mask(3)
    assert torch.allclose(t(src, tgt, tgt_mask=causal),
                          forward_with_torch_masks(paper, src, tgt, tgt_mask=causal), atol=TOL)
    fresh = load_from_torch(tiny_model(N=2, final_norm=None), t)
    assert torch.equal(fresh.encoder.layers[1].sublayer[1].norm.weight,
                       paper.encoder.layers[1].sublayer[1].norm.weight)


# --- checks at the boundary ------------------------------------------------------------------


@pytest.mark.parametrize(
    "src, tgt, masks, error, match",
    [
        (torch.ones(2, 5, 16, dtype=torch.long), torch.randn(2, 3, 16), {}, TypeError, "src"),
        (torch.randn(2, 5, 8), torch.randn(2, 3, 16), {}, ValueError, "d_model=16"),
        (torch.randn(2, 5, 16), torch.randn(3, 3, 16), {}, ValueError, "tgt"),
        (torch.randn(2, 5, 16), torch.randn(2, 3, 16),
         dict(tgt_mask=nn.Transformer.generate_square_subsequent_mask(4)), ValueError, "tgt_mask"),
        (torch.randn(2, 5, 16), torch.randn(2, 3, 16),
         dict(src_key_padding_mask=torch.zeros(3, 5, dtype=torch.bool)), ValueError, "src_mask"),
        (torch.randn(2, 5, 16), torch.randn(2, 3, 16),
         dict(memory_key_padding_mask=torch.zeros(2, 3, dtype=torch.bool)), ValueError,
         "memory_mask"),
    ],
)
def test_forward_with_torch_masks_checks_its_inputs(src, tgt, masks, error, match):
    with pytest.raises(error, match=match):
        forward_with_torch_masks(tiny_model(), src, tgt, **masks)


def test_load_from_torch_and_to_torch_check_their_arguments():
    with pytest.raises(TypeError, match="torch_module"):
        load_from_torch(tiny_model(), "nn.Transformer")
    with pytest.raises(TypeError, match="cannot build"):
        to_torch(nn.Module())  # no parameters: refused by type, before anything is read
    with pytest.raises(TypeError, match="allow_no_final_norm"):
        to_torch(tiny_model(), allow_no_final_norm="yes")
