"""Decoding refuses a model whose scores are not finite, and wrong masks get a ValueError."""

import pytest
import torch

from vanilla_transformer import beam_search, greedy_decode, make_model


def _model_with_nan_weights():
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
    with torch.no_grad():
        model.generator.proj.weight.fill_(float("nan"))
    return model


SRC = torch.tensor([[1, 2, 3, 4], [1, 5, 6, 7]])


@pytest.mark.parametrize("use_cache", [False, True])
@pytest.mark.parametrize("end_symbol", [None, 2])
def test_greedy_decode_refuses_nan_scores(use_cache, end_symbol):
    with pytest.raises(ValueError, match=r"batch row\(s\) \[0, 1\] are not finite"):
        greedy_decode(_model_with_nan_weights(), SRC, None, 5, 1, end_symbol=end_symbol,
                      use_cache=use_cache)


@pytest.mark.parametrize("end_symbol", [None, 2])
def test_beam_search_refuses_nan_scores(end_symbol):
    with pytest.raises(ValueError, match="batch row 0 are not finite"):
        beam_search(_model_with_nan_weights(), SRC, None, 5, 1, end_symbol, beam_size=3)


def test_finite_scores_decode_as_before():
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
    ys = greedy_decode(model, SRC, None, 6, 1, end_symbol=2)
    tokens, _ = beam_search(model, SRC, None, 6, 1, 2, beam_size=1, length_penalty=0.0)
    assert torch.equal(tokens, ys)


def test_beam_search_makes_one_host_sync_a_step(monkeypatch):
    """Every read of a tensor's value on the host goes through `.tolist()` once a step."""
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
    calls = {"tolist": 0, "item": 0}
    tolist, item = torch.Tensor.tolist, torch.Tensor.item

    def counting_tolist(self):
        calls["tolist"] += 1
        return tolist(self)

    def counting_item(self):
        calls["item"] += 1
        return item(self)

    monkeypatch.setattr(torch.Tensor, "tolist", counting_tolist)
    monkeypatch.setattr(torch.Tensor, "item", counting_item)
    max_len = 7
    beam_search(model, SRC, None, max_len, 1, None, beam_size=4)  # no end: every step runs
    assert calls == {"tolist": max_len - 1, "item": 0}


def test_a_mask_with_a_head_axis_works_like_one_without():
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
    src, tgt = SRC, SRC[:, :3]
    mask3 = torch.tensor([[[True, True, True, False]], [[True, True, True, True]]])
    out3 = model(src, tgt, mask3, None)
    out4 = model(src, tgt, mask3.unsqueeze(1), None)  # (batch, 1, 1, src_len)
    torch.testing.assert_close(out4, out3)


def test_a_sparse_mask_is_refused_with_a_value_error():
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
    mask = torch.ones(2, 1, 4).to_sparse()
    with pytest.raises(ValueError, match="src_mask must be a dense tensor.*to_dense"):
        model.encode(SRC, mask)


def test_a_mask_of_the_wrong_rank_is_refused_with_a_value_error():
    model = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2).eval()
    with pytest.raises(ValueError, match="src_mask"):
        model.encode(SRC, torch.ones(1, 1, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="src_mask"):
        model.encode(SRC, torch.ones(1, 2, 1, 4, dtype=torch.bool))  # a head axis of 2
