"""Tests of vanilla_transformer.analysis.tracing: records, filtering, hook clean-up, the table."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vanilla_transformer import greedy_decode, make_model, subsequent_mask
from vanilla_transformer.analysis import ShapeRecord, format_shape_table, trace_shapes


def tiny_model(N: int = 1) -> nn.Module:
    torch.manual_seed(0)
    return make_model(11, 11, N=N, d_model=32, d_ff=64, h=4).eval()


def copy_inputs(seq_len: int = 6):
    src = torch.arange(1, seq_len + 1).unsqueeze(0)
    return src, src.clone(), torch.ones(1, 1, seq_len), subsequent_mask(seq_len)


def assert_no_hooks(model: nn.Module) -> None:
    for name, module in model.named_modules():
        assert not module._forward_hooks, name
        assert not module._forward_pre_hooks, name
        assert not getattr(module, "_forward_hooks_with_kwargs", {}), name


@pytest.fixture(scope="module")
def annotated_model():
    """The Annotated Transformer's example model: make_model(11, 11, 2), default widths."""
    torch.manual_seed(0)
    return make_model(11, 11, 2).eval()


def test_encode_of_the_annotated_transformers_example(annotated_model):
    src = torch.arange(1, 11).unsqueeze(0)
    records = trace_shapes(annotated_model, src, torch.ones(1, 1, 10), fn=annotated_model.encode)
    by_path = {r.path: r for r in records}
    assert by_path["src_embed.0.lut"].inputs == ((1, 10),)
    assert by_path["src_embed.0"].output == (1, 10, 512)
    assert by_path["encoder.layers.0.self_attn"].module == "MultiHeadedAttention"
    assert by_path["encoder.layers.0.self_attn"].output == (1, 10, 512)
    assert by_path["encoder.layers.1.feed_forward.w_1"].output == (1, 10, 2048)
    assert by_path["encoder.layers.1.feed_forward.w_2"].output == (1, 10, 512)
    assert by_path["encoder.norm"].output == (1, 10, 512)
    # encode never touches the decoder side
    assert not any(r.path.startswith(("decoder", "tgt_embed", "generator")) for r in records)
    assert_no_hooks(annotated_model)


def test_full_forward_records_every_called_module_in_call_order():
    model = tiny_model(N=2)
    records = trace_shapes(model, *copy_inputs())
    paths = [r.path for r in records]
    assert paths[0] == "" and records[0].module == "EncoderDecoder"
    assert records[0].output == (1, 6, 32)
    # parents start before their children, and the encoder runs before the decoder
    assert paths.index("encoder") < paths.index("encoder.layers.0") < paths.index("encoder.layers.1")
    assert paths.index("encoder.norm") < paths.index("tgt_embed") < paths.index("decoder")
    sublayers = [p for p in paths if p.startswith("decoder.layers.0.sublayer.") and p.count(".") == 4]
    assert sublayers == [f"decoder.layers.0.sublayer.{i}" for i in range(3)]
    # every recorded path names a real module of that class
    modules = dict(model.named_modules())
    for r in records:
        assert type(modules[r.path]).__name__ == r.module
    # the generator is not part of forward
    assert "generator" not in paths


def test_inputs_skip_non_tensors_and_keep_masks():
    model = tiny_model()
    records = trace_shapes(model, *copy_inputs(5))
    by_path = {r.path: r for r in records}
    # SublayerConnection gets (x, a callable): only x is recorded
    assert by_path["encoder.layers.0.sublayer.0"].inputs == ((1, 5, 32),)
    # the decoder gets x, memory, src_mask, tgt_mask
    assert by_path["decoder"].inputs == ((1, 5, 32), (1, 5, 32), (1, 1, 5), (1, 5, 5))


def test_fn_traces_decode_and_generator():
    model = tiny_model()
    src, tgt, src_mask, _ = copy_inputs(5)
    memory = model.encode(src, src_mask)
    records = trace_shapes(model, memory, src_mask, tgt[:, :3], subsequent_mask(3), fn=model.decode)
    assert {r.path.split(".")[0] for r in records} == {"tgt_embed", "decoder"}
    assert records[-1].path == "decoder.norm" and records[-1].output == (1, 3, 32)
    gen = trace_shapes(model, torch.zeros(2, 32), fn=model.generator)
    assert [(r.path, r.output) for r in gen] == [("generator", (2, 11)), ("generator.proj", (2, 11))]


def test_repeated_calls_get_one_record_each():
    model = tiny_model()
    src = torch.tensor([[1, 2, 3, 4]])
    records = trace_shapes(
        model, fn=lambda: greedy_decode(model, src, torch.ones(1, 1, 4), max_len=4, start_symbol=1)
    )
    decoder_calls = [r for r in records if r.path == "decoder"]
    assert [r.inputs[0] for r in decoder_calls] == [(1, 1, 32), (1, 2, 32), (1, 3, 32)]
    assert [r.output for r in records if r.path == "generator"] == [(1, 11)] * 3


@pytest.mark.parametrize("max_depth", [0, 1, 2, 3])
def test_max_depth_filters_by_dotted_depth(max_depth):
    model = tiny_model()
    full = trace_shapes(model, *copy_inputs())
    cut = trace_shapes(model, *copy_inputs(), max_depth=max_depth)
    assert cut == [r for r in full if r.depth <= max_depth]
    assert max(r.depth for r in cut) == max_depth


def test_max_depth_one_lists_the_top_level_parts():
    model = tiny_model()
    records = trace_shapes(model, *copy_inputs(), max_depth=1)
    assert [r.path for r in records] == ["", "src_embed", "encoder", "tgt_embed", "decoder"]


def test_leaf_only_keeps_modules_without_children():
    model = tiny_model()
    records = trace_shapes(model, *copy_inputs(), leaf_only=True)
    assert records
    modules = dict(model.named_modules())
    assert all(not list(modules[r.path].children()) for r in records)
    assert {r.module for r in records} == {"Embedding", "Dropout", "LayerNorm", "Linear"}


def test_hooks_removed_after_success():
    model = tiny_model()
    before = {name: dict(m._forward_hooks) for name, m in model.named_modules()}
    trace_shapes(model, *copy_inputs())
    assert_no_hooks(model)
    assert before == {name: dict(m._forward_hooks) for name, m in model.named_modules()}


def test_errors_propagate_and_hooks_are_removed():
    model = tiny_model()
    src, tgt, src_mask, tgt_mask = copy_inputs()
    bad = torch.tensor([[1, 2, 99]])  # id 99 is outside the vocabulary of 11
    with pytest.raises(ValueError, match="99|vocab|range"):
        trace_shapes(model, bad, tgt, src_mask, tgt_mask)
    assert_no_hooks(model)

    def boom():
        model.encode(src, src_mask)
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        trace_shapes(model, fn=boom)
    assert_no_hooks(model)


def test_existing_hooks_are_kept():
    model = tiny_model()
    seen = []
    handle = model.encoder.register_forward_hook(lambda m, a, out: seen.append(tuple(out.shape)))
    try:
        trace_shapes(model, *copy_inputs())
        assert seen == [(1, 6, 32)]
        assert len(model.encoder._forward_hooks) == 1
    finally:
        handle.remove()


def test_no_grad_and_mode_unchanged():
    model = tiny_model().train()
    trace_shapes(model, *copy_inputs())
    assert model.training
    assert all(p.grad is None for p in model.parameters())


def test_tuple_outputs_and_none():
    class Pair(nn.Module):
        def forward(self, x):
            return x, x.sum(-1)

    class Nothing(nn.Module):
        def forward(self, x):
            return None

    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.pair = Pair()
            self.nothing = Nothing()

        def forward(self, x, *, extra=None):
            self.nothing(x)
            return self.pair(x)

    records = trace_shapes(Wrapper(), torch.zeros(2, 3), extra=torch.zeros(4))
    assert records[0] == ShapeRecord("", "Wrapper", ((2, 3), (4,)), ((2, 3), (2,)))
    assert records[1] == ShapeRecord("nothing", "Nothing", ((2, 3),), None)
    assert records[2].output == ((2, 3), (2,))


def test_bad_arguments():
    model = tiny_model()
    with pytest.raises(TypeError):
        trace_shapes(lambda x: x, torch.zeros(1))
    with pytest.raises(TypeError):
        trace_shapes(model, fn=42)
    with pytest.raises(ValueError):
        trace_shapes(model, *copy_inputs(), max_depth=-1)
    assert_no_hooks(model)


def test_record_depth_and_name():
    assert ShapeRecord("", "M", (), None).depth == 0
    r = ShapeRecord("decoder.layers.1.src_attn", "MultiHeadedAttention", (), (1, 2, 3))
    assert (r.depth, r.name) == (4, "src_attn")
    with pytest.raises(AttributeError):
        r.path = "x"  # frozen


def test_format_shape_table_alignment():
    model = tiny_model()
    records = trace_shapes(model, *copy_inputs(), max_depth=1)
    table = format_shape_table(records)
    lines = table.splitlines()
    assert len(lines) == len(records) + 1
    assert lines[0].split() == ["path", "module", "inputs", "output"]
    assert lines[1].startswith("(model)")
    # every column starts at the same offset on every line
    col = lines[0].index("module")
    assert all(line[col - 2 : col] == "  " and line[col] != " " for line in lines)
    assert all(line == line.rstrip() for line in lines)
    short = format_shape_table(records, inputs=False)
    assert "inputs" not in short.splitlines()[0]
    table = format_shape_table([ShapeRecord("x", "M", (), None)])
    assert table.splitlines()[1].split() == ["x", "M", "-", "-"]
