"""The model compiles as one graph: no check or host synchronisation inside the forward pass."""

import pytest
import torch

from vanilla_transformer import make_model, subsequent_mask


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_training_step_compiles_as_one_graph_and_matches_eager():
    torch.manual_seed(0)
    # the paper's arrangement (post-norm, tied weights); dropout 0 so both runs are comparable
    model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, dropout=0.0, norm_first=False,
                       tie_weights=True, generator_bias=False)
    src = torch.randint(1, 11, (2, 6))
    tgt = torch.randint(1, 11, (2, 5))
    src_mask = (src != 0).unsqueeze(-2)
    tgt_mask = subsequent_mask(5)

    def step(model):
        logp = model.generator(model(src, tgt, src_mask, tgt_mask))
        loss = -logp.gather(-1, tgt.unsqueeze(-1)).mean()
        loss.backward()
        return loss

    compiled = torch.compile(model, fullgraph=True)  # raises on any graph break
    loss = step(compiled)
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch.testing.assert_close(loss, step(model), rtol=1e-4, atol=1e-5)
    for g, p in zip(grads, model.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-3, atol=1e-5)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_default_training_step_with_dropout_and_padding_compiles_as_one_graph():
    """The default step: dropout 0.1 on the CPU, bool keep-masks with padding in the batch."""
    torch.manual_seed(0)
    model = make_model(11, 11, N=1, d_model=32, d_ff=64, h=4, dropout=0.1)
    src = torch.tensor([[3, 4, 5, 6, 0, 0], [7, 8, 9, 10, 2, 1]])
    tgt = torch.tensor([[1, 5, 6, 0, 0], [1, 4, 3, 2, 9]])
    src_mask = (src != 0).unsqueeze(-2)
    tgt_mask = (tgt != 0).unsqueeze(-2) & subsequent_mask(5)
    assert not bool(src_mask.all())  # the padding branch of the attention is reached

    def step(model):
        logp = model.generator(model(src, tgt, src_mask, tgt_mask))
        loss = -logp.gather(-1, tgt.unsqueeze(-1))[tgt != 0].mean()
        loss.backward()
        return loss

    compiled = torch.compile(model, fullgraph=True)  # raises on any graph break
    model.train()
    loss = step(compiled)
    assert torch.isfinite(loss)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    # without dropout the compiled step is the eager one, padding and all
    model.eval()
    model.zero_grad()
    loss = step(compiled)
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch.testing.assert_close(loss, step(model), rtol=1e-4, atol=1e-5)
    for g, p in zip(grads, model.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-3, atol=1e-5)
