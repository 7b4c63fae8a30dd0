"""The steps that assemble the blocks: sublayer, encoder and decoder layers, make_model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vanilla_transformer.model.decoder import DecoderLayer
from vanilla_transformer.model.encoder import EncoderLayer
from vanilla_transformer.model.encoder_decoder import make_model
from vanilla_transformer.model.layers import SublayerConnection
from vanilla_transformer.practice import OBJECTS, check

from ._answers import answer

REFERENCES = {"sublayer": SublayerConnection, "encoder_layer": EncoderLayer,
              "decoder_layer": DecoderLayer, "encoder_decoder": make_model}


@pytest.mark.parametrize("step", list(REFERENCES))
def test_the_reference_passes(step: str) -> None:
    result = check(step, REFERENCES[step], quiet=True)
    assert result.passed, result.message


@pytest.mark.parametrize("step", list(REFERENCES))
def test_the_correct_answer_passes(step: str) -> None:
    result = check(step, getattr(answer(step), OBJECTS[step]), quiet=True)
    assert result.passed, result.message


def _subclass(step: str, forward: Callable[..., Any]) -> type[nn.Module]:
    base = getattr(answer(step), OBJECTS[step])
    return type("Buggy", (base,), {"forward": forward})


# ---------------------------------------------------------------- sublayer
def sub_swapped(self: Any, x: torch.Tensor, sublayer: Any) -> torch.Tensor:
    if not self.norm_first:
        return x + self.dropout(sublayer(self.norm(x)))
    return self.norm(x + self.dropout(sublayer(x)))


def sub_always_pre(self: Any, x: torch.Tensor, sublayer: Any) -> torch.Tensor:
    return x + self.dropout(sublayer(self.norm(x)))


def sub_always_post(self: Any, x: torch.Tensor, sublayer: Any) -> torch.Tensor:
    return self.norm(x + self.dropout(sublayer(x)))


def sub_no_residual(self: Any, x: torch.Tensor, sublayer: Any) -> torch.Tensor:
    if self.norm_first:
        return self.dropout(sublayer(self.norm(x)))
    return self.norm(self.dropout(sublayer(x)))


def sub_normalised_residual(self: Any, x: torch.Tensor, sublayer: Any) -> torch.Tensor:
    if self.norm_first:
        x = self.norm(x)
        return x + self.dropout(sublayer(x))
    return self.norm(x) + self.norm(self.dropout(sublayer(x)))


def sub_norm_twice(self: Any, x: torch.Tensor, sublayer: Any) -> torch.Tensor:  # not catalogued
    if self.norm_first:
        return x + self.norm(self.dropout(sublayer(self.norm(x))))
    return self.norm(x + self.dropout(sublayer(x)))


# ---------------------------------------------------------------- encoder layer
def enc_no_mask(self: Any, x: torch.Tensor, mask: Any) -> torch.Tensor:
    x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x))
    return self.sublayer[1](x, self.feed_forward)


def enc_swapped(self: Any, x: torch.Tensor, mask: Any) -> torch.Tensor:
    x = self.sublayer[0](x, self.feed_forward)
    return self.sublayer[1](x, lambda x: self.self_attn(x, x, x, mask))


def enc_shared(self: Any, x: torch.Tensor, mask: Any) -> torch.Tensor:
    x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
    return self.sublayer[0](x, self.feed_forward)


def enc_no_feed_forward(self: Any, x: torch.Tensor, mask: Any) -> torch.Tensor:  # not catalogued
    return self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))


# ---------------------------------------------------------------- decoder layer
def dec_keys_from_decoder(self: Any, x: torch.Tensor, memory: torch.Tensor, src_mask: Any,
                          tgt_mask: Any) -> torch.Tensor:
    x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
    x = self.sublayer[1](x, lambda x: self.src_attn(x, x, x, src_mask))
    return self.sublayer[2](x, self.feed_forward)


def dec_no_target_mask(self: Any, x: torch.Tensor, memory: torch.Tensor, src_mask: Any,
                       tgt_mask: Any) -> torch.Tensor:
    x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, None))
    x = self.sublayer[1](x, lambda x: self.src_attn(x, memory, memory, src_mask))
    return self.sublayer[2](x, self.feed_forward)


def dec_masks_swapped(self: Any, x: torch.Tensor, memory: torch.Tensor, src_mask: Any,
                      tgt_mask: Any) -> torch.Tensor:
    x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, src_mask))
    x = self.sublayer[1](x, lambda x: self.src_attn(x, memory, memory, tgt_mask))
    return self.sublayer[2](x, self.feed_forward)


def dec_values_from_decoder(self: Any, x: torch.Tensor, memory: torch.Tensor, src_mask: Any,
                            tgt_mask: Any) -> torch.Tensor:  # not catalogued
    x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
    x = self.sublayer[1](x, lambda y: self.src_attn(y, memory, memory * 0.5, src_mask))
    return self.sublayer[2](x, self.feed_forward)


# ---------------------------------------------------------------- encoder-decoder
def _make_model_with_generator(forward: Callable[[Any, torch.Tensor], torch.Tensor]) -> Any:
    module = answer("encoder_decoder")
    module.Generator = type("Buggy", (module.Generator,), {"forward": forward})
    return module.make_model


def _make_model_with(name: str, method: Callable[..., Any]) -> Any:
    module = answer("encoder_decoder")
    module.EncoderDecoder = type("Buggy", (module.EncoderDecoder,), {name: method})
    return module.make_model


def decode_with_source_embedding(self: Any, memory: Any, src_mask: Any, tgt: Any,
                                 tgt_mask: Any) -> Any:
    return self.decoder(self.src_embed(tgt), memory, src_mask, tgt_mask)


def forward_with_generator(self: Any, src: Any, tgt: Any, src_mask: Any, tgt_mask: Any) -> Any:
    return self.generator(self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask))


CATALOGUED: list[tuple[str, Callable[[], Any], str]] = [
    ("sublayer", lambda: _subclass("sublayer", sub_swapped), "the two arrangements swapped"),
    ("sublayer", lambda: _subclass("sublayer", sub_always_pre),
     "always pre-norm (norm_first ignored)"),
    ("sublayer", lambda: _subclass("sublayer", sub_always_post),
     "always post-norm (norm_first ignored)"),
    ("sublayer", lambda: _subclass("sublayer", sub_no_residual), "no residual connection"),
    ("sublayer", lambda: _subclass("sublayer", sub_normalised_residual),
     "the residual taken from the normalised x"),
    ("encoder_layer", lambda: _subclass("encoder_layer", enc_no_mask),
     "the mask not passed to self-attention"),
    ("encoder_layer", lambda: _subclass("encoder_layer", enc_swapped),
     "the feed-forward network runs before self-attention"),
    ("encoder_layer", lambda: _subclass("encoder_layer", enc_shared),
     "one SublayerConnection used for both sublayers"),
    ("decoder_layer", lambda: _subclass("decoder_layer", dec_keys_from_decoder),
     "cross-attention keys and values taken from the decoder instead of the memory"),
    ("decoder_layer", lambda: _subclass("decoder_layer", dec_no_target_mask),
     "the target mask not passed to self-attention, so positions see the future"),
    ("decoder_layer", lambda: _subclass("decoder_layer", dec_masks_swapped),
     "src_mask and tgt_mask swapped"),
    ("encoder_decoder", lambda: _make_model_with_generator(lambda self, x: self.proj(x)),
     "the generator returns scores, not log-probabilities"),
    ("encoder_decoder",
     lambda: _make_model_with_generator(lambda self, x: self.proj(x).softmax(-1)),
     "the generator returns probabilities (softmax), not log-probabilities"),
    ("encoder_decoder", lambda: _make_model_with("decode", decode_with_source_embedding),
     "decode() embeds the target with the source embedding"),
    ("encoder_decoder", lambda: _make_model_with("forward", forward_with_generator),
     "forward() applies the generator"),
]


@pytest.mark.parametrize(("step", "make", "mistake"), CATALOGUED,
                         ids=[f"{s}: {m}" for s, _, m in CATALOGUED])
def test_each_classic_mistake_is_named(step: str, make: Callable[[], Any], mistake: str) -> None:
    result = check(step, make(), quiet=True)
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert f"Classic mistake: {mistake}" in " ".join(result.message.split())


UNCATALOGUED = [
    ("sublayer", lambda: _subclass("sublayer", sub_norm_twice), "output"),
    ("encoder_layer", lambda: _subclass("encoder_layer", enc_no_feed_forward), "feed-forward"),
    ("decoder_layer", lambda: _subclass("decoder_layer", dec_values_from_decoder),
     "source attention"),
]


@pytest.mark.parametrize(("step", "make", "stage"), UNCATALOGUED, ids=[u[0] for u in UNCATALOGUED])
def test_other_mistakes_name_the_first_stage_that_differs(step: str, make: Callable[[], Any],
                                                          stage: str) -> None:
    result = check(step, make(), quiet=True)
    assert not result.passed and result.mistake is None
    assert result.stage == stage, result.message
    assert f"First stage that differs: {stage} (" in result.message


def test_a_module_never_called_is_said() -> None:
    result = check("encoder_layer", _subclass("encoder_layer", enc_no_feed_forward), quiet=True)
    message = " ".join(result.message.split())
    assert "feed-forward (the output of feed_forward): your code never called it." in message


def test_a_wrong_layer_norm_shows_in_the_sublayer_as_the_norm_stage() -> None:
    module = answer("sublayer")

    class Biased(module.LayerNorm):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            std = x.std(-1, keepdim=True, unbiased=False)
            return self.a_2 * (x - x.mean(-1, keepdim=True)) / (std + self.eps) + self.b_2

    module.LayerNorm = Biased
    result = check("sublayer", module.SublayerConnection, quiet=True)
    assert result.stage == "norm", result.message


def test_a_missing_positional_encoding_is_named() -> None:
    module = answer("encoder_decoder")
    original = module.make_model

    def make_model(*args: Any, **kwargs: Any) -> nn.Module:
        model = original(*args, **kwargs)
        model.tgt_embed = nn.Sequential(model.tgt_embed[0])  # the target positions forgotten
        return model

    message = " ".join(check("encoder_decoder", make_model, quiet=True).message.split())
    assert "your model has no tgt_embed.1 (the target positional encoding)" in message


def test_untied_weights_are_said() -> None:
    module = answer("encoder_decoder")
    original = module.make_model

    def make_model(*args: Any, tie_weights: bool = False, **kwargs: Any) -> nn.Module:
        return original(*args, tie_weights=False, **kwargs)

    message = " ".join(check("encoder_decoder", make_model, quiet=True).message.split())
    assert "with tie_weights=True" in message and "one and the same Parameter" in message


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_any_seed_passes_the_reference_and_names_the_mistake(seed: int) -> None:
    assert check("sublayer", SublayerConnection, seed=seed, quiet=True).passed
    result = check("decoder_layer", _subclass("decoder_layer", dec_keys_from_decoder), seed=seed,
                   quiet=True)
    assert result.mistake == CATALOGUED[8][2]
