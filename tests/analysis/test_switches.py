"""The switches of `analysis.switches`: each changes the one piece it names, as the same change
made by hand to a copy of the weights, and nothing is left changed after the block."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import torch

from vanilla_transformer.analysis.switches import (
    ATTENTION_KINDS,
    SWITCHES,
    attention_modules,
    record_attention,
    switched,
)
from vanilla_transformer.data.batching import pad_sequences
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, SharedTokenizer
from vanilla_transformer.inference.beam import beam_search
from vanilla_transformer.inference.evaluate import translate_ids, translate_sentences
from vanilla_transformer.inference.fast import batch_beam_search, batch_greedy
from vanilla_transformer.inference.greedy import greedy_decode
from vanilla_transformer.model import make_model
from vanilla_transformer.model.attention import keep_attention
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.training.checkpoints import load_checkpoint

ASSETS = Path(__file__).resolve().parents[2] / "docs" / "assets" / "translator"
V = 13


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return make_model(V, V, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()


SRC = torch.tensor([[3, 4, 5, 6, 7, 2]])
TGT = torch.tensor([[1, 8, 9, 10]])


@torch.no_grad()
def log_probs(model, src=SRC, tgt=TGT):
    mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
    out = model(src, tgt, mask, subsequent_mask(tgt.size(1)))
    return model.generator(out)


def test_none_changes_nothing_and_every_switch_is_undone_on_exit(model):
    before = log_probs(model)
    for name in SWITCHES:
        with switched(model, name, kind="decoder-self", layer=1, head=2):
            during = log_probs(model)
        assert (name == "none") == torch.equal(during, before), name
        assert torch.equal(log_probs(model), before), name


def test_no_cross_attention_gives_the_same_output_for_every_source(model):
    other = torch.tensor([[9, 9, 3, 2]])
    assert not torch.allclose(log_probs(model), log_probs(model, other))
    with switched(model, "no-cross-attention"):
        assert torch.allclose(log_probs(model), log_probs(model, other), atol=1e-6)


def test_no_positions_makes_the_encoder_blind_to_word_order(model):
    permuted = SRC[:, [4, 2, 0, 3, 1, 5]]
    assert not torch.allclose(log_probs(model), log_probs(model, permuted), atol=1e-4)
    with switched(model, "no-positions"):
        assert torch.allclose(log_probs(model), log_probs(model, permuted), atol=1e-5)
        # the target side keeps its positions: a permuted prefix is another input
        assert not torch.allclose(log_probs(model)[0, -1],
                                  log_probs(model, SRC, TGT[:, [0, 2, 1, 3]])[0, -1], atol=1e-4)


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_silence_head_equals_zeroing_its_columns_of_w_o_by_hand(model, kind):
    for layer, head in [(0, 0), (1, 3)]:
        by_hand = copy.deepcopy(model)
        w_o = attention_modules(by_hand)[kind, layer].linears[3]
        d_k = w_o.in_features // 4
        with torch.no_grad():
            w_o.weight[:, head * d_k:(head + 1) * d_k] = 0
        with switched(model, "silence-head", kind=kind, layer=layer, head=head):
            hooked = log_probs(model)
        assert torch.allclose(hooked, log_probs(by_hand), atol=1e-6)
        assert not torch.allclose(hooked, log_probs(model), atol=1e-4)


def test_no_scale_equals_query_weights_multiplied_by_root_d_k(model):
    by_hand = copy.deepcopy(model)
    with torch.no_grad():
        for mha in attention_modules(by_hand).values():
            mha.linears[0].weight *= math.sqrt(mha.d_k)
            mha.linears[0].bias *= math.sqrt(mha.d_k)
    with switched(model, "no-scale"):
        assert torch.allclose(log_probs(model), log_probs(by_hand), atol=1e-5)


def test_recorded_maps_are_the_models_and_no_scale_drops_the_division(model):
    mask = torch.ones(1, 1, SRC.size(1), dtype=torch.bool)
    with keep_attention(model), record_attention(model) as maps, torch.no_grad():
        model(SRC, TGT, mask, subsequent_mask(TGT.size(1)))
        kept = {where: mha.attn for where, mha in attention_modules(model).items()}
    assert set(maps) == set(kept)
    for where, (_, weights) in maps.items():
        assert torch.allclose(weights, kept[where], atol=1e-6), where
    masked = maps["decoder-self", 0][0][0, :, 0, 1:]  # the first position sees only itself
    assert bool((masked == -1e9).all())
    with record_attention(model) as scaled_off, switched(model, "no-scale"), torch.no_grad():
        model(SRC, TGT, mask, subsequent_mask(TGT.size(1)))
    # the first attention of the encoder has the same input either way
    d_k = attention_modules(model)["encoder-self", 0].d_k
    first = "encoder-self", 0
    assert torch.allclose(scaled_off[first][0], maps[first][0] * math.sqrt(d_k), atol=1e-5)
    assert scaled_off[first][1].max() > maps[first][1].max()  # the weights sharpen


@pytest.mark.parametrize("bad, error, match", [
    (dict(switch="no-softmax"), ValueError, "switch must be one of"),
    (dict(switch="silence-head", kind="self"), ValueError, "kind must be one of"),
    (dict(switch="silence-head", layer=2), ValueError, r"layer must be in \[0, 2\)"),
    (dict(switch="silence-head", head=4), ValueError, r"head must be in \[0, 4\)"),
    (dict(switch="silence-head", head=1.0), TypeError, "head must be an int"),
])
def test_bad_switches_are_refused_before_any_hook(model, bad, error, match):
    with pytest.raises(error, match=match), switched(model, **bad):
        pass
    linear = torch.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="EncoderDecoder"), switched(linear, "none"):  # type: ignore[arg-type]
        pass
    assert all(not mha.linears[3]._forward_pre_hooks for mha in attention_modules(model).values())


@pytest.fixture(scope="module")
def translator():
    return load_checkpoint(ASSETS / "model.pt")[0].eval(), SharedTokenizer.load(
        ASSETS / "tokenizer.json")


def greedy(translator, text: str) -> str:
    model, tokenizer = translator
    (out,) = translate_ids(model, [tokenizer.encode(text) + [EOS]], beam_size=1, batch_size=1)
    return tokenizer.decode(out)


def test_the_translator_without_positions_reads_the_same_pieces_in_any_order(translator):
    a, b = "four hundred and twenty-one", "twenty-one and four hundred"
    tokenizer = translator[1]
    assert sorted(tokenizer.encode(a)) == sorted(tokenizer.encode(b))
    assert greedy(translator, a) != greedy(translator, b)
    with switched(translator[0], "no-positions"):
        assert greedy(translator, a) == greedy(translator, b)


def test_the_translator_without_cross_attention_writes_one_output_for_all(translator):
    texts = ["seven", "four hundred and forty-one", "ninety thousand and one"]
    assert len({greedy(translator, t) for t in texts}) == len(texts)
    with switched(translator[0], "no-cross-attention"):
        assert len({greedy(translator, t) for t in texts}) == 1


def test_every_decoding_path_sees_the_switch(translator):
    """The batched decoders and the readable ones write the same, switched or not."""
    model, tokenizer = translator
    texts = ["twenty-one and four hundred", "three hundred and six"]
    for name, options in [("no-positions", {}), ("no-scale", {}), ("no-cross-attention", {}),
                          ("silence-head", dict(kind="cross", layer=1, head=2))]:
        plain = translate_sentences(model, tokenizer, texts, beam_size=1)
        with switched(model, name, **options):
            fast = translate_sentences(model, tokenizer, texts, beam_size=1)
            readable = translate_sentences(model, tokenizer, texts, beam_size=1, fast=False)
        assert fast == readable != plain, name


PARITY = [("none", {}), ("no-positions", {}), ("no-scale", {}), ("no-cross-attention", {}),
          ("silence-head", dict(kind="cross", layer=1, head=2)),
          ("silence-head", dict(kind="decoder-self", layer=0, head=1)),
          ("silence-head", dict(kind="encoder-self", layer=1, head=3))]
PARITY_TEXTS = ["seven", "twenty-one and four hundred", "three hundred and six",
                "ninety thousand and one"]


@torch.no_grad()
def forward_log_probs(model, src: torch.Tensor, tokens: list[int]) -> list[float]:
    """Each token's log-probability from one plain forward pass over the whole prefix."""
    ys = torch.tensor([[BOS, *tokens]])
    out = model(src, ys[:, :-1], None, subsequent_mask(len(tokens)))
    return model.generator(out)[0].gather(-1, ys[0, 1:, None]).squeeze(-1).tolist()


@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize(("switch", "options"), PARITY)
def test_the_batched_decoders_score_as_a_forward_pass_under_every_switch(
        translator, switch, options, beam):
    """Under each switch, every token the batched decoders write has the log-probability a
    plain forward pass gives it, and the readable decoders write the same tokens."""
    model, tokenizer = translator
    ids = [tokenizer.encode(text) + [EOS] for text in PARITY_TEXTS]
    src = pad_sequences(ids, PAD)
    limits = [len(row) + 10 for row in ids]
    with switched(model, switch, **options):
        if beam == 1:
            found = batch_greedy(model, src, src != PAD, limits, BOS, EOS)
        else:
            found = [row[0] for row in batch_beam_search(model, src, src != PAD, limits, BOS,
                                                         EOS, beam_size=beam)]
        for row, limit, hyp in zip(ids, limits, found, strict=True):
            one = torch.tensor([row])
            expected = forward_log_probs(model, one, hyp.tokens)
            assert max(abs(a - b) for a, b in zip(hyp.log_probs, expected, strict=True)) < 1e-4
            if beam == 1:
                ys = greedy_decode(model, one, None, limit, BOS, end_symbol=EOS)[0, 1:]
            else:
                tokens, scores = beam_search(model, one, None, limit, BOS, EOS, beam)
                ys = tokens[0, 1:]
                assert scores.item() == pytest.approx(hyp.score, abs=1e-4)
            assert ys[: len(hyp.tokens)].tolist() == hyp.tokens, (switch, row)
