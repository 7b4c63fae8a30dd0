"""Checkpoints: a round trip, errors, and the files saved by version 0.1.0."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from vanilla_transformer import data_gen, make_model, subsequent_mask
from vanilla_transformer.training import load_checkpoint, save_checkpoint

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V = 7


def tiny_model(seed: int = 0, vocab: int = V) -> nn.Module:
    torch.manual_seed(seed)
    return make_model(vocab, vocab, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_round_trip_gives_the_same_outputs(tmp_path):
    model = tiny_model(seed=3).eval()
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, steps=5, note="hello")
    again, meta = load_checkpoint(path)
    assert meta == {"steps": 5, "note": "hello"}
    assert not again.training and again.config == model.config
    b = next(data_gen(V, 3, 1, seq_len=5, seed=0))
    with torch.no_grad():
        torch.testing.assert_close(again(b.src, b.tgt, b.src_mask, b.tgt_mask),
                                   model(b.src, b.tgt, b.src_mask, b.tgt_mask), rtol=0, atol=0)


def test_checkpoint_errors(tmp_path):
    bare = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="config"):
        save_checkpoint(tmp_path / "x.pt", bare)
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(tmp_path / "other.pt")


@pytest.mark.parametrize("name, tied, norm_first", [
    ("checkpoint-0.1.0-prenorm.pt", False, True),
    ("checkpoint-0.1.0-postnorm-tied.pt", True, False),
])
def test_checkpoints_of_version_0_1_0_reproduce_their_outputs(name, tied, norm_first):
    model, meta = load_checkpoint(FIXTURES / name)
    assert not model.training
    assert (model.config.tie_weights, model.config.norm_first) == (tied, norm_first)
    if tied:  # one matrix, shared after loading too
        assert model.generator.proj.weight is model.src_embed[0].lut.weight
    src = meta["src"]
    keep = torch.ones(src.size(0), 1, src.size(1), dtype=torch.bool)
    with torch.no_grad():
        logp = model.generator(model(src, src, keep, subsequent_mask(src.size(1))))
    torch.testing.assert_close(logp, meta["logp"], rtol=0, atol=1e-5)
