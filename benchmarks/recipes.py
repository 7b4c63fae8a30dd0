"""The paper's recipe and the Annotated Transformer's against `torch.nn.Transformer`.

A training step (forward, backward, Adam) of the base size with about 2048 tokens per batch at
source and target lengths 64, 256 and 1024, for:

- `paper`: `make_model(V, V, **PRESETS["paper-base"])`: post-norm, tied weights, dropout 0.1 on
  sublayer outputs and embeddings and none on the attention weights, so attention runs in
  PyTorch's fused kernel in training too;
- `annotated`: `make_model(V, V)`: the Annotated Transformer's arrangement, dropout 0.1 on the
  attention weights as well;
- `torch-post`, `torch-post-nodrop`: `nn.Transformer(norm_first=False)` of the same size with
  dropout 0.1 and 0 (a floor no dropout can beat), between the paper model's embeddings and
  generator;
- `torch-pre`: `nn.Transformer(norm_first=True)` with dropout 0.1, for `annotated`.

Implementations take turns, one step each per round; ratios compare medians within one run.

    .venv/bin/python benchmarks/recipes.py --threads 2

Results: `benchmarks/results/recipes.json`.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch
from torch import nn

from vanilla_transformer import PRESETS, Batch, make_model
from vanilla_transformer._io import atomic_write

RESULTS = Path(__file__).resolve().parent / "results" / "recipes.json"
VOCAB = 1000
TOKENS = 2048
IMPLEMENTATIONS = ("paper", "annotated", "torch-post", "torch-post-nodrop", "torch-pre")
PAIRS = {"paper / torch-post": ("paper", "torch-post"),
         "paper / torch-post-nodrop": ("paper", "torch-post-nodrop"),
         "annotated / torch-pre": ("annotated", "torch-pre")}


class TorchCore(nn.Module):
    """`nn.Transformer` between a package model's embeddings and generator."""

    def __init__(self, model: nn.Module, dropout: float, norm_first: bool) -> None:
        super().__init__()
        c = model.config
        self.src_embed, self.tgt_embed, self.generator = (model.src_embed, model.tgt_embed,
                                                          model.generator)
        self.core = nn.Transformer(c.d_model, c.h, c.N, c.N, c.d_ff, dropout,
                                   batch_first=True, norm_first=norm_first)

    def forward(self, src, tgt, src_mask, tgt_mask):  # the package's keep-masks, inverted
        pad = ~src_mask[:, 0]
        return self.core(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=~tgt_mask[0],
                         src_key_padding_mask=pad, memory_key_padding_mask=pad)


def build(impl: str) -> nn.Module:
    torch.manual_seed(0)
    if impl == "annotated" or impl == "torch-pre":
        model = make_model(VOCAB, VOCAB)
    else:
        model = make_model(VOCAB, VOCAB, **PRESETS["paper-base"])
    if impl.startswith("torch"):
        return TorchCore(model, 0.0 if impl.endswith("nodrop") else 0.1, impl == "torch-pre")
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = {}
    for length in args.lengths:
        g = torch.Generator().manual_seed(length)
        data = torch.randint(1, VOCAB, (max(1, TOKENS // length), length + 1), generator=g)
        batch = Batch(data[:, :length], data, pad=0)
        steps = {}
        for impl in IMPLEMENTATIONS:
            model = build(impl).train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

            def step(model=model, opt=opt):
                logp = model.generator(model(batch.src, batch.tgt, batch.src_mask,
                                             batch.tgt_mask))
                nn.functional.nll_loss(logp.reshape(-1, VOCAB), batch.tgt_y.reshape(-1)).backward()
                opt.step()
                opt.zero_grad(set_to_none=True)

            step()  # warm-up
            steps[impl] = step
        times = {impl: [] for impl in IMPLEMENTATIONS}
        for r in range(args.rounds):
            for impl in IMPLEMENTATIONS if r % 2 == 0 else IMPLEMENTATIONS[::-1]:
                t0 = time.perf_counter()
                steps[impl]()
                times[impl].append(time.perf_counter() - t0)
        med = {impl: statistics.median(t) for impl, t in times.items()}
        rows[str(length)] = {"median_s": med,
                             "ratios": {k: med[a] / med[b] for k, (a, b) in PAIRS.items()}}
        print(f"length {length:5d}  " + "  ".join(f"{k} {v:.2f}"
                                                  for k, v in rows[str(length)]["ratios"].items()),
              flush=True)
    record = {"machine": {"platform": platform.platform(), "threads": torch.get_num_threads(),
                          "torch": torch.__version__},
              "config": {"vocab": VOCAB, "tokens_per_batch": TOKENS, "rounds": args.rounds},
              "date": time.strftime("%Y-%m-%d"), "lengths": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out, lambda f: f.write(json.dumps(record, indent=2).encode()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
