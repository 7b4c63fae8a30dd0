"""Bad input, one table: every case raises a ValueError or TypeError that names the bad value.

Nothing silently wrong (an inverted mask, truncated ids, a negative loss), no crash deep inside
PyTorch, and no expensive work before the error.
"""

from __future__ import annotations

import math
import pathlib
import signal

import pytest
import torch

from vanilla_transformer import (
    Batch,
    LabelSmoothing,
    beam_search,
    collate_batch,
    data_gen,
    greedy_decode,
    load_checkpoint,
    make_model,
    pad_sequences,
    padding_mask,
    run_epoch,
    save_checkpoint,
    subsequent_mask,
)
from vanilla_transformer.interop import attn_mask_to_keep
from vanilla_transformer.training.copy_task import train_distributed

torch.manual_seed(0)
MODEL = make_model(11, 11, N=1, d_model=16, d_ff=32, h=2, dropout=0.0).eval()
SRC = torch.tensor([[1, 2, 3, 4]])
TGT = torch.tensor([[1, 2, 3]])
CAUSAL = subsequent_mask(3)


def additive_mask() -> torch.Tensor:
    mask = torch.zeros(1, 1, 4)
    mask[..., 2] = -math.inf  # PyTorch's convention: 0 = attend, -inf = blocked
    return mask


def nan_loss_epoch():
    def nan_loss(out, y, norm):
        loss = out.sum() * float("nan")
        return loss.detach(), loss / norm

    optimizer = torch.optim.SGD(MODEL.parameters(), lr=0.0)
    return run_epoch(data_gen(11, 2, 3, seed=0), MODEL, nan_loss, optimizer, progress=False)


def save_path_metadata(tmp_path):
    save_checkpoint(tmp_path / "m.pt", MODEL, data_dir=pathlib.Path("/data/wmt14"))


def load_text_file(tmp_path):
    (tmp_path / "notes.txt").write_text("not a checkpoint\n")
    load_checkpoint(tmp_path / "notes.txt")


CASES = [
    # silently wrong before
    ("additive float src_mask", lambda _: MODEL(SRC, TGT, additive_mask(), CAUSAL),
     ValueError, r"src_mask .* holds the value -inf.*attn_mask_to_keep"),
    ("additive mask to encode", lambda _: MODEL.encode(SRC, additive_mask()),
     ValueError, r"holds the value -inf"),
    ("NaN in a float mask", lambda _: MODEL.encode(SRC, torch.tensor([[[1.0, math.nan, 1, 1]]])),
     ValueError, r"holds the value nan"),
    ("float tgt_mask of 0.5", lambda _: MODEL(SRC, TGT, None, CAUSAL * 0.5),
     ValueError, r"tgt_mask .* holds the value 0.5"),
    ("collate float ids", lambda _: collate_batch([([1.7, 2.9], [3.5, 4.2])], pad=0),
     TypeError, r"pairs\[0\] source .* 1\.7 \(float\)"),
    ("pad_sequences float ids", lambda _: pad_sequences([[1, 2], [3.5]], pad=0),
     TypeError, r"sequence 1 .* 3\.5"),
    ("Batch pad=1.5", lambda _: Batch(SRC, SRC, pad=1.5), TypeError, r"pad .* got 1\.5"),
    ("padding_mask on float tokens", lambda _: padding_mask(torch.tensor([[1.5, 0.0]]), 0),
     TypeError, r"tokens .* got dtype torch\.float32"),
    ("greedy start_symbol=1.7", lambda _: greedy_decode(MODEL, SRC, None, 5, 1.7),
     TypeError, r"start_symbol must be an int, got 1\.7"),
    ("zero-length source", lambda _: greedy_decode(MODEL, SRC[:, :0], None, 5, 1),
     ValueError, r"src of shape \(1, 0\) is empty"),
    ("probabilities to LabelSmoothing",
     lambda _: LabelSmoothing(5, 0, 0.1)(torch.softmax(torch.randn(3, 5), -1),
                                          torch.tensor([1, 2, 3])),
     ValueError, r"log-probabilities .* got values in \[0\.\d+, 0\.\d+\].*probabilities"),
    ("NaN loss in run_epoch", lambda _: nan_loss_epoch(),
     ValueError, r"loss is nan at batch 1 .*training step 1"),
    ("pathlib.Path in checkpoint metadata", save_path_metadata,
     TypeError, r"metadata 'data_dir' is a pathlib\.\w*Path.*str\(path\)"),
    # crashed deep inside PyTorch before
    ("uint8 ids", lambda _: MODEL(SRC.to(torch.uint8), TGT, None, CAUSAL),
     TypeError, r"src .* got dtype torch\.uint8.*src\.long\(\)"),
    ("int16 ids", lambda _: MODEL(SRC, TGT.short(), None, CAUSAL),
     TypeError, r"tgt .* got dtype torch\.int16"),
    ("ids on the meta device", lambda _: MODEL(SRC.to("meta"), TGT.to("meta"), None, CAUSAL),
     ValueError, r"src is on device meta but the model's embedding is on cpu"),
    ("a batch of 0 rows", lambda _: MODEL(SRC[:0], TGT[:0], None, CAUSAL),
     ValueError, r"src of shape \(0, 4\) is empty"),
    ("a Batch of 0 rows", lambda _: Batch(SRC[:0], SRC[:0], pad=0),
     ValueError, r"src of shape \(0, 4\) is empty"),
    ("greedy on 0 rows", lambda _: greedy_decode(MODEL, SRC[:0], None, 5, 1),
     ValueError, r"src of shape \(0, 4\) is empty"),
    ("float64 memory on a float32 model",
     lambda _: MODEL.decode(MODEL.encode(SRC, None).double(), None, TGT, CAUSAL),
     TypeError, r"memory has dtype torch\.float64 .* torch\.float32"),
    ("memory that is not a tensor", lambda _: MODEL.decode([[0.0]], None, TGT, CAUSAL),
     TypeError, r"memory must be a float tensor .* got list"),
    ("a Python list as src", lambda _: MODEL([[1, 2]], TGT, None, CAUSAL),
     TypeError, r"src must be a torch\.Tensor .* got list"),
    ("a Python list to greedy_decode", lambda _: greedy_decode(MODEL, [[1, 2]], None, 5, 1),
     TypeError, r"src must be a torch\.Tensor .* got list"),
    ("pad='0'", lambda _: Batch(SRC, SRC, pad="0"), TypeError, r"pad .* got '0' \(str\)"),
    ("pad=None", lambda _: Batch(SRC, SRC, pad=None), TypeError, r"pad .* got None"),
    ("collate pad=None", lambda _: collate_batch([([1], [2, 3])], pad=None),
     TypeError, r"pad .* got None"),
    ("pad=-1", lambda _: pad_sequences([[1]], pad=-1), ValueError, r"pad .* got -1"),
    ("load_checkpoint on a text file", load_text_file,
     ValueError, r"notes\.txt' is not a checkpoint written by save_checkpoint"),
    # hung, or did expensive work, before the error
    ("greedy max_len=10**9", lambda _: greedy_decode(MODEL, SRC, None, 10**9, 1),
     ValueError, r"max_len 1000000000 .* positional-encoding table's max_len 5000"),
    ("beam max_len=10**9", lambda _: beam_search(MODEL, SRC, None, 10**9, 1),
     ValueError, r"max_len 1000000000"),
    ("beam_size=10**6", lambda _: beam_search(MODEL, SRC, None, 5, 1, beam_size=10**6),
     ValueError, r"beam_size must be at most 1024, got 1000000"),
    ("seed=10**20", lambda _: next(data_gen(11, 2, 1, seed=10**20)),
     ValueError, r"seed must be at most .* got 100000000000000000000"),
    ("distributed timeout=0", lambda _: train_distributed(timeout=0),
     ValueError, r"timeout must be a positive, finite number of seconds, got 0"),
]


@pytest.mark.parametrize("call, error, match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error_at_once(call, error, match, tmp_path):
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("no error within 20 s"))
    signal.alarm(20)
    try:
        with pytest.raises(error, match=match):
            call(tmp_path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_the_mask_error_names_the_conversion_that_works():
    keep = attn_mask_to_keep(additive_mask()[0])  # (1, 1, 4), True = may attend
    out = MODEL.encode(SRC, keep)
    assert out.shape == (1, 4, 16)
    assert keep.int().tolist() == [[[1, 1, 0, 1]]]


def test_good_inputs_still_pass():
    # float and integer keep-masks of 0 and 1, as the Annotated Transformer writes them
    ones = torch.ones(1, 1, 4)
    assert torch.equal(MODEL(SRC, TGT, ones, CAUSAL.float()), MODEL(SRC, TGT, ones.long(), CAUSAL))
    assert MODEL(SRC.int(), TGT.int(), None, CAUSAL).shape == (1, 3, 16)  # int32 ids
    assert collate_batch([(torch.tensor([4, 5], dtype=torch.uint8), [6])], pad=0, bos=1).src.dtype \
        == torch.long
    logp = torch.log_softmax(torch.randn(3, 5), -1)
    assert LabelSmoothing(5, 0, 0.1)(logp, torch.tensor([1, 2, 0])) >= 0
