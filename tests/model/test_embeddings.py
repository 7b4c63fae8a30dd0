"""Embeddings, PositionalEncoding and Generator."""

import math

import torch

from vanilla_transformer import Embeddings, Generator, PositionalEncoding, sinusoid_table


def test_embeddings_scale_by_sqrt_d_model():
    emb = Embeddings(16, 11)
    x = torch.tensor([[1, 2, 3]])
    torch.testing.assert_close(emb(x), emb.lut.weight[x] * math.sqrt(16))


def test_positional_table_values():
    pe = sinusoid_table(100, 8)
    pos, i = 7, 2  # feature 2i = 4 is a sine, 2i + 1 = 5 a cosine
    assert math.isclose(pe[pos, 2 * i].item(), math.sin(pos / 10000 ** (2 * i / 8)), rel_tol=1e-5)
    assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(pos / 10000 ** (2 * i / 8)), rel_tol=1e-5)
    assert sinusoid_table(10, 7).shape == (10, 7)  # odd widths work


def test_positional_encoding_is_a_buffer_not_a_parameter():
    pos = PositionalEncoding(16, 0.1, max_len=50)
    assert list(pos.parameters()) == []
    assert "pe" in dict(pos.named_buffers()) and pos.pe.shape == (1, 50, 16)
    assert "pe" in pos.state_dict()


def test_positional_encoding_adds_table():
    pos = PositionalEncoding(16, 0.0, max_len=50).eval()
    x = torch.randn(2, 5, 16)
    torch.testing.assert_close(pos(x), x + pos.pe[:, :5])


def test_generator_returns_log_probabilities():
    gen = Generator(16, 11)
    out = gen(torch.randn(2, 3, 16))
    assert out.shape == (2, 3, 11)
    torch.testing.assert_close(out.exp().sum(-1), torch.ones(2, 3))
    assert Generator(16, 11, bias=False).proj.bias is None
