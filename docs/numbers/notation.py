"""Numbers of the Notation page: the paper's base sizes (the package's preset) and the shipped
translator's sizes, read from docs/assets/translator/ with the package."""

import json
from pathlib import Path

from vanilla_transformer import PRESETS
from vanilla_transformer.training.translation import load_translator

RUN = Path("docs/assets/translator")


def values() -> dict[str, object]:
    paper = PRESETS["paper-base"]
    model, tokenizer = load_translator(RUN)
    config = model.config
    assert config is not None, "the shipped translator records its configuration"
    manifest = json.loads((RUN / "manifest.json").read_text(encoding="utf-8"))
    return {
        "paper_d_model": paper["d_model"],
        "paper_h": paper["h"],
        "paper_d_k": paper["d_model"] // paper["h"],
        "paper_N": paper["N"],
        "paper_d_ff": paper["d_ff"],
        "paper_p_drop": paper["dropout"],
        "d_model": config.d_model,
        "h": config.h,
        "d_k": config.d_model // config.h,
        "N": config.N,
        "d_ff": config.d_ff,
        "V": tokenizer.vocab_size,
        "p_drop": config.dropout,
        "eps_ls": manifest["training"]["smoothing"],
        "max_len": config.max_len,
    }
