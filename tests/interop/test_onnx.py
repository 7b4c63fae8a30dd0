"""Tests of vanilla_transformer.interop.onnx: the exported graphs, run by ONNX Runtime, against
the PyTorch model they came from.

A copy-task model is trained for a few seconds so that greedy decoding means something; its
graphs must give PyTorch's memory, log-probabilities and cross-attention weights within 1e-4 at
batch sizes and lengths other than the export's, and the same greedy tokens on 100 held-out
sequences. A random two-layer model checks that the attention output is the last layer's.
"""

import numpy as np
import pytest
import torch

from vanilla_transformer import keep_attention, make_model
from vanilla_transformer.data.copy_task import PAD, START_SYMBOL, heldout_sequences
from vanilla_transformer.inference.greedy import greedy_decode
from vanilla_transformer.interop import export_onnx, greedy_decode_onnx
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.training.copy_task import (
    COPY_MODEL,
    CopyTaskConfig,
    train_copy_model,
)

ort = pytest.importorskip("onnxruntime")

TOL = 1e-4
VOCAB = 11


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    saved = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    yield
    torch.set_num_threads(saved)


def _sessions(paths):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return tuple(ort.InferenceSession(str(paths[name]), options,
                                      providers=["CPUExecutionProvider"])
                 for name in ("encoder", "decoder"))


@pytest.fixture(scope="module")
def trained(_one_thread):
    config = CopyTaskConfig(model=COPY_MODEL.replace(d_model=32, d_ff=64, h=4), steps=200,
                            batch_size=32, warmup=50)
    return train_copy_model(config).model


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    paths = export_onnx(trained, tmp_path_factory.mktemp("onnx"))
    return paths, _sessions(paths)


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory, _one_thread):
    torch.manual_seed(1)
    model = make_model(VOCAB, VOCAB, N=2, d_model=16, d_ff=32, h=2, dropout=0.0).eval()
    return model, _sessions(export_onnx(model, tmp_path_factory.mktemp("onnx2")))


def _inputs(batch, src_len, tgt_len, seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, VOCAB, (batch, src_len), generator=g)
    lengths = torch.randint(1, src_len + 1, (batch,), generator=g)
    src[torch.arange(src_len) >= lengths[:, None]] = PAD  # right padding, at least one token
    ys = torch.randint(1, VOCAB, (batch, tgt_len), generator=g)
    return src, (src != PAD).unsqueeze(-2), ys


def _torch_step(model, src, src_mask, ys):
    """PyTorch's memory, last-position log-probabilities and mean last-layer cross-attention."""
    with torch.no_grad(), keep_attention(model):
        memory = model.encode(src, src_mask)
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)))
        attn = model.decoder.layers[-1].src_attn.attn[:, :, -1].mean(dim=1)
        return memory, model.generator(out[:, -1]), attn


def _max_diff(a, b):
    return float(np.abs(np.asarray(a) - b.numpy()).max())


def test_graphs_have_the_documented_inputs_outputs_and_dynamic_axes(exported):
    encoder, decoder = exported[1]
    io = lambda args: [(a.name, a.type, a.shape) for a in args]
    assert io(encoder.get_inputs()) == [("src", "tensor(int64)", ["batch", "src_len"]),
                                        ("src_mask", "tensor(bool)", ["batch", 1, "src_len"])]
    assert io(encoder.get_outputs()) == [("memory", "tensor(float)", ["batch", "src_len", 32])]
    assert io(decoder.get_inputs()) == [
        ("memory", "tensor(float)", ["batch", "src_len", 32]),
        ("src_mask", "tensor(bool)", ["batch", 1, "src_len"]),
        ("ys", "tensor(int64)", ["batch", "tgt_len"]),
    ]
    assert io(decoder.get_outputs()) == [("log_probs", "tensor(float)", ["batch", VOCAB]),
                                         ("cross_attention", "tensor(float)", ["batch", "src_len"])]


# the export used (batch, src_len, tgt_len) = (2, 5, 3): every case here differs from it
@pytest.mark.parametrize("batch, src_len, tgt_len", [(1, 1, 1), (3, 10, 10), (7, 4, 12),
                                                     (16, 23, 6)])
def test_graphs_match_pytorch_at_other_sizes(exported, trained, batch, src_len, tgt_len):
    encoder, decoder = exported[1]
    src, src_mask, ys = _inputs(batch, src_len, tgt_len, seed=batch)
    memory, log_probs, attn = _torch_step(trained, src, src_mask, ys)
    (onnx_memory,) = encoder.run(None, {"src": src.numpy(), "src_mask": src_mask.numpy()})
    onnx_log_probs, onnx_attn = decoder.run(
        None, {"memory": memory.numpy(), "src_mask": src_mask.numpy(), "ys": ys.numpy()})
    assert onnx_memory.shape == (batch, src_len, 32)
    assert onnx_log_probs.shape == (batch, VOCAB) and onnx_attn.shape == (batch, src_len)
    assert _max_diff(onnx_memory, memory) < TOL
    assert _max_diff(onnx_log_probs, log_probs) < TOL
    assert _max_diff(onnx_attn, attn) < TOL
    assert not onnx_attn[~src_mask[:, 0].numpy()].any()  # padding gets no attention


def test_cross_attention_is_the_last_layers(two_layers):
    model, (encoder, decoder) = two_layers
    src, src_mask, ys = _inputs(4, 9, 5, seed=3)
    memory, log_probs, attn = _torch_step(model, src, src_mask, ys)
    with torch.no_grad(), keep_attention(model):
        model.decode(memory, src_mask, ys, subsequent_mask(5))
        first = model.decoder.layers[0].src_attn.attn[:, :, -1].mean(dim=1)
    (onnx_memory,) = encoder.run(None, {"src": src.numpy(), "src_mask": src_mask.numpy()})
    onnx_log_probs, onnx_attn = decoder.run(
        None, {"memory": onnx_memory, "src_mask": src_mask.numpy(), "ys": ys.numpy()})
    assert _max_diff(onnx_log_probs, log_probs) < TOL
    assert _max_diff(onnx_attn, attn) < TOL
    assert _max_diff(onnx_attn, first) > 10 * TOL


def test_greedy_tokens_are_identical_on_100_heldout_sequences(exported, trained):
    src = heldout_sequences(100, vocab=VOCAB, seq_len=10, seed=1)  # trained with seed 0
    expected = greedy_decode(trained, src, src != PAD, src.size(1), START_SYMBOL)
    got = greedy_decode_onnx(*exported[1], src, src != PAD, src.size(1), START_SYMBOL)
    assert got.dtype == np.int64 and got.shape == (100, 10)
    np.testing.assert_array_equal(got, expected.numpy())
    assert (expected == src).all(dim=1).float().mean() >= 0.9  # the model really copies


def test_greedy_stops_at_the_end_symbol_as_pytorch_does(exported, trained):
    src = heldout_sequences(20, vocab=VOCAB, seq_len=8, seed=2)
    src[:5, 4:] = PAD  # some padded rows, passed as a (batch, src_len) mask
    expected = greedy_decode(trained, src, src != PAD, 12, START_SYMBOL, end_symbol=3,
                             pad_symbol=PAD)
    got = greedy_decode_onnx(*exported[1], src.numpy(), (src != PAD).numpy(), 12, START_SYMBOL,
                             end_symbol=3, pad_symbol=PAD)
    np.testing.assert_array_equal(got, expected.numpy())


def test_greedy_opens_sessions_from_paths(exported, trained):
    paths, _ = exported
    src = heldout_sequences(3, vocab=VOCAB, seq_len=6, seed=4)
    expected = greedy_decode(trained, src, None, 6, START_SYMBOL)
    got = greedy_decode_onnx(paths["encoder"], str(paths["decoder"]), src, None, 6, START_SYMBOL)
    np.testing.assert_array_equal(got, expected.numpy())


def test_without_attention_weights_the_decoder_has_one_output(trained, tmp_path):
    paths = export_onnx(trained, tmp_path, attention_weights=False)
    assert {p.name for p in tmp_path.iterdir()} == {"encoder.onnx", "decoder.onnx"}
    _, decoder = _sessions(paths)
    assert [o.name for o in decoder.get_outputs()] == ["log_probs"]


def test_export_leaves_the_model_as_it_was(tmp_path):
    model = make_model(VOCAB, VOCAB, N=1, d_model=16, d_ff=32, h=2)  # training mode
    model.decoder.layers[0].self_attn.fast = False
    before = [(m.training, getattr(m, "fast", None), getattr(m, "keep_attn", None),
               getattr(m, "attn", None)) for m in model.modules()]
    export_onnx(model, tmp_path)
    after = [(m.training, getattr(m, "fast", None), getattr(m, "keep_attn", None),
              getattr(m, "attn", None)) for m in model.modules()]
    assert after == before


def test_a_failed_export_leaves_the_old_graphs_whole(tmp_path, monkeypatch):
    model = make_model(VOCAB, VOCAB, N=1, d_model=16, d_ff=32, h=2)
    export_onnx(model, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def half_then_fail(graph, args, f, **options):
        with open(f, "wb") as out:
            out.write(b"half a graph")
        raise RuntimeError("killed halfway")

    monkeypatch.setattr(torch.onnx, "export", half_then_fail)
    with pytest.raises(RuntimeError, match="killed halfway"):
        export_onnx(model, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("model, out_dir, options, error, match", [
    ("not a model", None, {}, TypeError, "EncoderDecoder"),
    (torch.nn.Linear(2, 2), None, {}, TypeError, "EncoderDecoder"),
    (None, "missing", {}, ValueError, "does not exist"),
    (None, "a-file", {}, ValueError, "is not a folder"),
    (None, 3, {}, TypeError, "out_dir"),
    (None, None, {"opset": 9}, ValueError, "opset"),
    (None, None, {"opset": "18"}, TypeError, "opset"),
    (None, None, {"attention_weights": "yes"}, TypeError, "attention_weights"),
])
def test_bad_export_arguments_are_refused_before_exporting(tmp_path, model, out_dir, options,
                                                           error, match):
    (tmp_path / "a-file").write_text("")
    model = make_model(VOCAB, VOCAB, N=1, d_model=16, d_ff=32, h=2) if model is None else model
    out_dir = tmp_path if out_dir is None else tmp_path / out_dir if isinstance(out_dir, str) \
        else out_dir
    with pytest.raises(error, match=match):
        export_onnx(model, out_dir, **options)
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_bad_decoding_arguments_are_refused(exported):
    encoder, decoder = exported[1]
    src = np.ones((2, 4), dtype=np.int64)
    with pytest.raises(ValueError, match="src must be"):
        greedy_decode_onnx(encoder, decoder, src[0], None, 5, START_SYMBOL)
    with pytest.raises(TypeError, match="integer"):
        greedy_decode_onnx(encoder, decoder, src.astype(np.float32), None, 5, START_SYMBOL)
    with pytest.raises(ValueError, match="src_mask"):
        greedy_decode_onnx(encoder, decoder, src, np.ones((2, 1, 3), bool), 5, START_SYMBOL)
    with pytest.raises(ValueError, match="max_len"):
        greedy_decode_onnx(encoder, decoder, src, None, 0, START_SYMBOL)
    with pytest.raises(TypeError, match="InferenceSession"):
        greedy_decode_onnx(object(), decoder, src, None, 5, START_SYMBOL)


def test_the_dynamo_exporter_gives_the_same_graphs(two_layers, tmp_path):
    pytest.importorskip("onnxscript")
    model, (encoder, decoder) = two_layers
    dynamo_encoder, dynamo_decoder = _sessions(export_onnx(model, tmp_path, dynamo=True))
    src, src_mask, ys = _inputs(6, 13, 7, seed=5)
    feeds = {"src": src.numpy(), "src_mask": src_mask.numpy()}
    (memory,), (dynamo_memory,) = encoder.run(None, feeds), dynamo_encoder.run(None, feeds)
    feeds = {"memory": memory, "src_mask": src_mask.numpy(), "ys": ys.numpy()}
    for ours, theirs in zip(decoder.run(None, feeds), dynamo_decoder.run(None, feeds)):
        np.testing.assert_allclose(theirs, ours, atol=TOL, rtol=0)
    np.testing.assert_allclose(dynamo_memory, memory, atol=TOL, rtol=0)
