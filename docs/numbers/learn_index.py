"""Numbers of the Learn path's index page: the shipped translator's corpus."""

import json
from pathlib import Path


def values() -> dict[str, int]:
    manifest = json.loads(Path("docs/assets/translator/manifest.json").read_text())
    sizes = manifest["corpus"]["sizes"]
    return {"train": sizes["train"], "valid": sizes["valid"], "test": sizes["test"]}
