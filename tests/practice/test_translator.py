"""The payoff: a full set of correct answers translates; one broken stage is named."""

from __future__ import annotations

import math
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch

from vanilla_transformer.inference.greedy import greedy_decode
from vanilla_transformer.model.encoder_decoder import make_model
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.practice import check
from vanilla_transformer.practice._translator import held_out_numbers

from ._answers import answer

pytest.importorskip("tokenizers", reason="the translator step needs the translate extra")
pytest.importorskip("num2words", reason="the translator step needs the translate extra")


def test_the_package_itself_passes() -> None:
    result = check("translator", SimpleNamespace(make_model=make_model,
                                                 greedy_decode=greedy_decode), quiet=True)
    assert result.passed, result.message


def test_the_correct_answers_translate(capsys: pytest.CaptureFixture[str]) -> None:
    result = check("translator", answer("translator"))
    assert result.passed, result.message
    assert result.inputs == 8
    printed = capsys.readouterr().out
    assert printed.startswith("translator: passed.") and "tausend" in printed


def _learner(model_module: ModuleType, decode: Any = None) -> SimpleNamespace:
    return SimpleNamespace(make_model=model_module.make_model,
                           greedy_decode=decode or answer("greedy_decode").greedy_decode)


def _broken_positions() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class Swapped(module.PositionalEncoding):  # type: ignore[misc, name-defined]
        def __init__(self, d_model: int, dropout: float, max_len: int = 5000) -> None:
            super().__init__(d_model, dropout, max_len)
            self.pe = self.pe[..., [i + 1 if i % 2 == 0 else i - 1 for i in range(d_model)]]

    module.PositionalEncoding = Swapped
    return _learner(module)


def _positions_base_1000() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class Base1000(module.PositionalEncoding):  # type: ignore[misc, name-defined]
        def __init__(self, d_model: int, dropout: float, max_len: int = 5000) -> None:
            super().__init__(d_model, dropout, max_len)
            position = torch.arange(max_len).unsqueeze(1)
            angle = position * torch.exp(torch.arange(0, d_model, 2) * -(math.log(1000.0) / d_model))
            self.pe[0, :, 0::2], self.pe[0, :, 1::2] = torch.sin(angle), torch.cos(angle)

    module.PositionalEncoding = Base1000
    return _learner(module)


def _encoder_without_mask() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class NoMask(module.EncoderLayer):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor, mask: Any) -> torch.Tensor:
            x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x))  # the mask left out
            return self.sublayer[1](x, self.feed_forward)

    module.EncoderLayer = NoMask
    return _learner(module)


def _cross_attention_without_src_mask() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class NoSourceMask(module.DecoderLayer):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: Any,
                    tgt_mask: Any) -> torch.Tensor:
            x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
            x = self.sublayer[1](x, lambda x: self.src_attn(x, memory, memory))  # no src_mask
            return self.sublayer[2](x, self.feed_forward)

    module.DecoderLayer = NoSourceMask
    return _learner(module)


def _broken_embeddings() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class Unscaled(module.Embeddings):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lut(x)

    module.Embeddings = Unscaled
    return _learner(module)


def _broken_encoder_layer() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class FeedForwardFirst(module.EncoderLayer):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor, mask: Any) -> torch.Tensor:
            x = self.sublayer[0](x, self.feed_forward)
            return self.sublayer[1](x, lambda x: self.self_attn(x, x, x, mask))

    module.EncoderLayer = FeedForwardFirst
    return _learner(module)


def _broken_decoder_layer() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class KeysFromDecoder(module.DecoderLayer):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: Any,
                    tgt_mask: Any) -> torch.Tensor:
            x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
            x = self.sublayer[1](x, lambda x: self.src_attn(x, x, x, None))
            return self.sublayer[2](x, self.feed_forward)

    module.DecoderLayer = KeysFromDecoder
    return _learner(module)


def _broken_generator() -> SimpleNamespace:
    module = answer("encoder_decoder")

    class Scaled(module.Generator):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.log_softmax(self.proj(x) + math.pi * torch.arange(x.size(-1) and 250),
                                     dim=-1)

    module.Generator = Scaled
    return _learner(module)


def _broken_decoding() -> SimpleNamespace:
    @torch.no_grad()
    def first_position(model: Any, src: Any, src_mask: Any, max_len: int, start_symbol: int,
                       *, end_symbol: int, pad_symbol: int) -> torch.Tensor:
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), start_symbol)
        for _ in range(max_len - 1):
            out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)))
            next_word = model.generator(out[:, 0]).argmax(-1)  # the first position's
            ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        return ys

    return _learner(answer("encoder_decoder"), first_position)


def test_decoding_that_ignores_the_end_symbol_still_translates() -> None:
    """The words end at the first </s> whatever follows it, so this passes (the
    greedy_decode step names the mistake)."""
    decode = answer("greedy_decode").greedy_decode

    def no_end(model: Any, src: Any, src_mask: Any, max_len: int, start_symbol: int,
               **symbols: Any) -> torch.Tensor:
        return decode(model, src, src_mask, max_len, start_symbol)

    assert check("translator", _learner(answer("encoder_decoder"), no_end), quiet=True).passed


BROKEN = [
    (_broken_embeddings, "source embeddings", "embeddings"),
    (_broken_positions, "source positional encoding", "positional_encoding"),
    (_broken_encoder_layer, "encoder layer 0", "encoder_layer"),
    (_broken_decoder_layer, "decoder layer 0", "decoder_layer"),
    (_broken_generator, "generator", "encoder_decoder (the Generator)"),
    (_broken_decoding, "decoding", "greedy_decode"),
    (_positions_base_1000, "source positional encoding", "positional_encoding"),
    (_encoder_without_mask, "encoder layer 0", "encoder_layer"),
    (_cross_attention_without_src_mask, "decoder layer 0", "decoder_layer"),
]


@pytest.mark.parametrize(("make", "stage", "step"), BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_one_broken_stage_is_named(make: Any, stage: str, step: str) -> None:
    result = check("translator", make(), quiet=True)
    assert not result.passed
    assert result.stage == stage, result.message
    message = " ".join(result.message.split())
    assert f"the first stage that differs: {stage}." in message
    assert f"Check again: {step}" in message


def test_an_error_in_the_forward_pass_names_the_stage_and_the_learners_function() -> None:
    module = answer("encoder_decoder")

    class ValuesFromDecoder(module.DecoderLayer):  # type: ignore[misc, name-defined]
        def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: Any,
                    tgt_mask: Any) -> torch.Tensor:
            x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
            x = self.sublayer[1](x, lambda x: self.src_attn(x, memory, x, src_mask))
            return self.sublayer[2](x, self.feed_forward)

    module.DecoderLayer = ValuesFromDecoder
    result = check("translator", _learner(module), quiet=True)
    message = " ".join(result.message.split())
    assert not result.passed and result.stage == "decoder layer 0"
    assert "translates, decoder layer 0 raised. Your attention (attention.py, line " in message
    assert "Check again: decoder_layer" in message


def test_a_model_that_cannot_take_the_weights_is_said() -> None:
    module = answer("encoder_decoder")

    def make_model(src_vocab: int, tgt_vocab: int, **sizes: Any) -> Any:
        sizes["tie_weights"] = False
        sizes["generator_bias"] = True  # a bias the trained model does not have
        return module.make_model(src_vocab, tgt_vocab, **sizes)

    result = check("translator", _learner(SimpleNamespace(make_model=make_model)), quiet=True)
    message = " ".join(result.message.split())
    assert not result.passed and "building your model failed" in message
    assert "generator.proj.bias" in message


def test_a_learner_without_decoding_is_refused() -> None:
    result = check("translator", SimpleNamespace(make_model=make_model), quiet=True)
    assert not result.passed and "lacks greedy_decode" in result.message


def test_held_out_numbers_avoid_the_seen_ones() -> None:
    seen = set(range(1000, 5000))
    numbers = held_out_numbers(seen, 20, seed=3, below=6000)
    assert len(set(numbers)) == 20 and all(5000 <= n < 6000 for n in numbers)
