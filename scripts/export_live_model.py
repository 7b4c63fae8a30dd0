"""Write the translator's weights for the live model of the docs (docs/javascripts/live_model.js).

The live model is a forward pass written in JavaScript over the committed `model.pt` of the
number translator. It returns what the exported ONNX graphs do not: every attention map's
scores before the softmax, and the model with a part switched off (the switches of
`vanilla_transformer.analysis.switches`). This script writes its weights beside each
`model.pt` it is given:

- `live_model.bin`: every tensor of the state dict as little-endian float32, one after the
  other, each stored once (the tied embedding and generator matrix, and the two copies of the
  positional table, share one entry);
- `live_model.json`: the model's configuration, each tensor's offset (in floats) and shape, the
  names that share a tensor, and the size and SHA-256 of the binary file.

Only the arrangement of the shipped translator is supported (post-norm, `torch` LayerNorm, no
final LayerNorm, a generator without bias, tied weights); anything else is refused.

    .venv/bin/python scripts/export_live_model.py                 # the German and French models

tests/docs/test_live_model.py checks that the committed files hold the weights of `model.pt`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import torch

from vanilla_transformer._io import atomic_write
from vanilla_transformer.training.checkpoints import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "docs" / "assets" / "translator"
FORMAT = "vanilla-transformer-live-model"
VERSION = 1
LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default, which make_layer_norm(..., "torch") keeps


def live_arrays(checkpoint: Path) -> tuple[dict, bytes]:
    """The JSON description and the binary weights of the model in `checkpoint`."""
    model, _ = load_checkpoint(checkpoint)
    config = model.config
    if config is None:
        raise ValueError(f"{checkpoint} holds no ModelConfig")
    wanted = {"norm_first": False, "layer_norm": "torch", "has_final_norm": False,
              "generator_bias": False, "tie_weights": True}
    found = {key: getattr(config, key) for key in wanted}
    if found != wanted:
        raise ValueError(f"{checkpoint}: the live model runs {wanted}, this model has {found}")
    state = model.state_dict()
    tensors: dict[str, dict[str, object]] = {}
    aliases: dict[str, str] = {}
    chunks: list[np.ndarray] = []
    stored: list[tuple[str, torch.Tensor]] = []
    offset = 0
    for name, tensor in state.items():
        tensor = tensor.detach().to(torch.float32).contiguous()
        same = next((kept for kept, t in stored
                     if t.shape == tensor.shape and torch.equal(t, tensor)), None)
        if same is not None:
            aliases[name] = same
            continue
        stored.append((name, tensor))
        tensors[name] = {"offset": offset, "shape": list(tensor.shape)}
        chunks.append(tensor.numpy().astype("<f4").ravel())
        offset += tensor.numel()
    data = np.concatenate(chunks).tobytes()
    description = {
        "format": FORMAT,
        "version": VERSION,
        "config": {"N": config.N, "d_model": config.d_model, "d_ff": config.d_ff, "h": config.h,
                   "src_vocab": config.src_vocab, "tgt_vocab": config.tgt_vocab,
                   "max_len": config.max_len, "layer_norm_eps": LAYER_NORM_EPS},
        "tensors": tensors,
        "aliases": aliases,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "checkpoint_sha256": hashlib.sha256(checkpoint.read_bytes()).hexdigest(),
    }
    return description, data


def export(folder: Path) -> None:
    """Write `live_model.json` and `live_model.bin` beside `folder/model.pt`, atomically."""
    description, data = live_arrays(folder / "model.pt")
    text = json.dumps(description, indent=1) + "\n"
    atomic_write(folder / "live_model.bin", lambda f: f.write(data))
    atomic_write(folder / "live_model.json", lambda f: f.write(text.encode("utf-8")))
    print(f"wrote {folder.relative_to(ROOT)}/live_model.bin: {len(data):,} bytes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path,
                        help="folders holding a model.pt (default: the German and French models)")
    args = parser.parse_args(argv)
    folders = args.folders or [ASSETS, ASSETS / "fr"]
    for folder in folders:
        if not (folder / "model.pt").is_file():
            parser.error(f"{folder} holds no model.pt")
        export(folder.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
