"""`export_onnx(..., attention_weights="all")`: every attention map of every layer and head,
equal to the weights PyTorch's model keeps, at lengths other than the export's examples."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vanilla_transformer import make_model, subsequent_mask
from vanilla_transformer.interop.onnx import export_onnx
from vanilla_transformer.model.attention import keep_attention

ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    model = make_model(13, 13, N=2, d_model=16, d_ff=32, h=4).eval()
    paths = export_onnx(model, tmp_path_factory.mktemp("graphs"), attention_weights="all")
    sessions = {name: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
                for name, path in paths.items()}
    return model, sessions


@pytest.mark.parametrize("src_len, tgt_len", [(7, 4), (2, 9)])
def test_every_map_equals_the_pytorch_models(exported, src_len, tgt_len):
    model, sessions = exported
    gen = torch.Generator().manual_seed(src_len)
    src = torch.randint(3, 13, (2, src_len), generator=gen)
    ys = torch.randint(3, 13, (2, tgt_len), generator=gen)
    mask = torch.ones(2, 1, src_len, dtype=torch.bool)
    mask[1, 0, -1] = False  # padding in the second sentence
    memory, enc = sessions["encoder"].run(None, {"src": src.numpy(), "src_mask": mask.numpy()})
    names = [o.name for o in sessions["decoder"].get_outputs()]
    assert names == ["log_probs", "cross_attention", "decoder_self_attention",
                     "decoder_cross_attention"]
    log_probs, last, dec_self, dec_cross = sessions["decoder"].run(
        None, {"memory": memory, "src_mask": mask.numpy(), "ys": ys.numpy()})
    with keep_attention(model), torch.no_grad():
        out = model.decode(model.encode(src, mask), mask, ys, subsequent_mask(tgt_len))
        expected_log_probs = model.generator(out[:, -1])
    stack = lambda layers, name: torch.stack([getattr(l, name).attn for l in layers], 1).numpy()
    np.testing.assert_allclose(enc, stack(model.encoder.layers, "self_attn"), atol=1e-5)
    np.testing.assert_allclose(dec_self, stack(model.decoder.layers, "self_attn"), atol=1e-5)
    np.testing.assert_allclose(dec_cross, stack(model.decoder.layers, "src_attn"), atol=1e-5)
    np.testing.assert_allclose(log_probs, expected_log_probs.numpy(), atol=1e-4)
    assert enc.shape == (2, 2, 4, src_len, src_len)
    assert dec_cross.shape == (2, 2, 4, tgt_len, src_len)
    # the averaged output is the last layer's last row, as with attention_weights=True
    np.testing.assert_allclose(last, dec_cross[:, -1, :, -1].mean(axis=1), atol=1e-6)
    assert np.all(dec_cross[1, :, :, :, -1] < 1e-6)  # nothing on the padded key


@pytest.mark.parametrize("bad", ["every", 1, None])
def test_other_modes_are_refused(exported, tmp_path, bad):
    with pytest.raises(TypeError, match="attention_weights must be True, False or 'all'"):
        export_onnx(exported[0], tmp_path, attention_weights=bad)
