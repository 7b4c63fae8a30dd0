"""Code pasted from the source articles runs unchanged after `from vanilla_transformer import *`.

The snippets below are the sources' example programs (the untrained greedy loop, the copy-task
batches through `forward`, `make_model(11, 11, 2)`), kept as the sources wrote them, including
their float `0/1` masks and `.type_as(src)` masks.
"""

import textwrap

import pytest

UNTRAINED_GREEDY_LOOP = """
src_vocab_size = 10000
tgt_vocab_size = 15000

src = torch.LongTensor([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]])
src_mask = torch.ones(1, 1, 10)
ys = torch.zeros(1, 1).type_as(src)
test_model = make_model(src_vocab_size, tgt_vocab_size)
test_model.eval()
memory = test_model.encode(src, src_mask)
for i in range(8):
    t = subsequent_mask(ys.size(1)).type_as(src.data)
    out = test_model.decode(
        memory, src_mask, ys, subsequent_mask(ys.size(1)).type_as(src.data)
        )
    t = out[:, -1]
    prob = test_model.generator(out[:, -1])
    _, next_word = torch.max(prob, dim=1)
    next_word = next_word.item()
    ys = torch.cat(
            [ys, torch.empty(1, 1).type_as(src.data).fill_(next_word)], dim=1
        )
"""

COPY_TASK_BATCHES = """
V = 11
batch_size = 80
data_iter = data_gen(V, batch_size, 20)

model = make_model(V, V)
for i, batch in enumerate(data_iter):
    out = model.forward(
        batch.src, batch.tgt, batch.src_mask, batch.tgt_mask
    )
    if i == 0:
        first = out
    if i == 2:
        break
"""

TRACE_EXAMPLE = """
test_model = make_model(11, 11, 2) # src_vocab, tgt_vocab, N=2
test_model.eval()

src = torch.LongTensor([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]])
src_mask = torch.ones(1, 1, 10)

memory = test_model.encode(src, src_mask)
ys = torch.zeros(1, 1).type_as(src)
for i in range(9):
    out = test_model.decode(
        memory, src_mask, ys, subsequent_mask(ys.size(1)).type_as(src.data)
    )
    prob = test_model.generator(out[:, -1])
    _, next_word = torch.max(prob, dim=1)
    next_word = next_word.data[0]
    ys = torch.cat(
        [ys, torch.empty(1, 1).type_as(src.data).fill_(next_word)], dim=1
    )
"""


# The imports the Annotated Transformer's own first cell makes, then the package's names.
PREAMBLE = """
import copy, math
import torch
from torch import nn
from vanilla_transformer import *
torch.manual_seed(0)
"""


def run(snippet):
    namespace = {}
    exec(PREAMBLE + textwrap.dedent(snippet), namespace)
    return namespace


def test_untrained_greedy_loop():
    ns = run(UNTRAINED_GREEDY_LOOP)
    assert ns["memory"].shape == (1, 10, 512)
    assert ns["ys"].shape == (1, 9) and ns["ys"].dtype.is_floating_point is False
    assert int(ns["ys"].max()) < 15000


def test_copy_task_batches_through_forward():
    ns = run(COPY_TASK_BATCHES)
    assert ns["first"].shape == (80, 9, 512)


def test_make_model_11_11_2_trace_example():
    ns = run(TRACE_EXAMPLE)
    assert ns["ys"].shape == (1, 10)
    assert ns["memory"].shape == (1, 10, 512)


@pytest.mark.parametrize("name", ["make_model", "Batch", "subsequent_mask", "data_gen",
                                  "MultiHeadedAttention", "LabelSmoothing", "greedy_decode"])
def test_star_import_provides_the_names_pasted_code_uses(name):
    ns = {}
    exec("from vanilla_transformer import *", ns)
    assert name in ns


def test_star_import_gives_only_the_package_s_own_names():
    import vanilla_transformer

    ns = {}
    exec("from vanilla_transformer import *", ns)
    assert set(ns) - {"__builtins__"} == set(vanilla_transformer.__all__)
    for module in ("torch", "nn", "math", "copy"):  # importable, but not star-exported
        assert module not in ns and hasattr(vanilla_transformer, module)
