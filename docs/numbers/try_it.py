"""Numbers of the Try it page, from the shipped translator's manifest and its checkpoints' scores.

The training slider's checkpoints were kept without their validation scores, so
`checkpoint_stats()` measures each one (and the page's own model) on the corpus's validation
split: the loss per target token, teacher-forced, and the greedy exact match. Measuring takes a
few seconds per checkpoint, so it is written once into
`docs/assets/translator/checkpoint_stats.json`, which the page reads:

    .venv/bin/python docs/numbers/try_it.py

and `tests/docs/test_explorer.py` measures again in PyTorch what the page shows.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

ASSETS = Path("docs/assets/translator")
STATS_FILE = ASSETS / "checkpoint_stats.json"
PAGE_MODEL = "final"  # the key of the page's own model, beside the replay's step folders


def values() -> dict[str, Any]:
    manifest = json.loads((ASSETS / "manifest.json").read_text())
    steps = [entry["step"] for entry in manifest["training_steps"]]
    # the untrained model, four steps on the way, and the final average
    assert steps[0] == 0 and len(steps) == 6 and steps[-1] == manifest["steps"]
    stats = json.loads(STATS_FILE.read_text())
    folders = [entry["folder"].split("/")[1] for entry in manifest["training_steps"]]
    assert sorted(stats["checkpoints"]) == sorted(folders + [PAGE_MODEL])
    files = manifest["files"]
    return {
        "step_1": steps[1],
        "step_2": steps[2],
        "step_3": steps[3],
        "step_4": steps[4],
        "parameters": manifest["parameters"],
        "vocab": manifest["vocab_size"],
        "train": manifest["corpus"]["sizes"]["train"],
        "valid": stats["pairs"],
        "steps": manifest["steps"],
        "averaged": len(manifest["averaged"]),
        "test_exact": manifest["test_exact_match"],
        "test_size": manifest["test_size"],
        "encoder_kb": round(files["encoder.onnx"]["bytes"] / 1000),
        "decoder_kb": round(files["decoder.onnx"]["bytes"] / 1000),
    }


def validation_scores(model_file: Path, pairs: list[tuple[str, str]]) -> dict[str, float]:
    """The mean cross-entropy per target token (`</s>` included, no label smoothing) with the
    reference prefix fed in, and the percentage of sources greedy decoding gets exactly right."""
    import torch

    from vanilla_transformer.data.batching import Batch
    from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, SharedTokenizer
    from vanilla_transformer.inference.evaluate import translate_sentences
    from vanilla_transformer.training.checkpoints import load_checkpoint

    model = load_checkpoint(model_file)[0].eval()
    tokenizer = SharedTokenizer.load(ASSETS / "tokenizer.json")

    def pad(rows: list[list[int]]) -> torch.Tensor:
        return torch.nn.utils.rnn.pad_sequence([torch.tensor(r) for r in rows],
                                               batch_first=True, padding_value=PAD)

    src = pad([tokenizer.encode(s) + [EOS] for s, _ in pairs])
    tgt = pad([[BOS] + tokenizer.encode(t) + [EOS] for _, t in pairs])
    batch = Batch(src, tgt, pad=PAD)
    with torch.no_grad():
        log_probs = model.generator(model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask))
    loss = torch.nn.functional.nll_loss(log_probs.flatten(0, 1), batch.tgt_y.flatten(),
                                        ignore_index=PAD)
    hyps = translate_sentences(model, tokenizer, [s for s, _ in pairs], beam_size=1)
    exact = 100 * sum(h == t for h, (_, t) in zip(hyps, pairs)) / len(pairs)
    return {"loss": round(float(loss), 4), "exact": round(exact, 1)}


def checkpoint_stats() -> dict[str, Any]:
    """The validation scores of every checkpoint of the slider and of the page's model."""
    from vanilla_transformer.data.numbers import number_corpus

    manifest = json.loads((ASSETS / "manifest.json").read_text())
    corpus = manifest["corpus"]
    pairs = number_corpus(manifest["target_language"], seed=corpus["seed"])["valid"]
    assert len(pairs) == corpus["sizes"]["valid"]
    checkpoints = {PAGE_MODEL: validation_scores(ASSETS / "model.pt", pairs)}
    for entry in manifest["training_steps"]:
        scores = validation_scores(ASSETS / entry["folder"] / "model.pt", pairs)
        checkpoints[entry["folder"].split("/")[1]] = {"step": entry["step"], **scores}
    return {"split": "valid", "pairs": len(pairs),
            "loss": "mean cross-entropy per target token, </s> included, no label smoothing",
            "exact": "greedy exact match, percent", "checkpoints": checkpoints}


def write_stats() -> None:
    """Write `checkpoint_stats.json` atomically."""
    text = json.dumps(checkpoint_stats(), indent=1) + "\n"
    with tempfile.NamedTemporaryFile("w", dir=ASSETS, delete=False, suffix=".tmp") as f:
        f.write(text)
    os.replace(f.name, STATS_FILE)


if __name__ == "__main__":
    write_stats()
    print(STATS_FILE.read_text())
