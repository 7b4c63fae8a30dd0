"""Build hook: the site is self-contained, so its vendored front-end assets must be there.

MathJax and onnxruntime-web are served from `docs/assets/vendor/`, copied from node_modules/ by
scripts/vendor_assets.py (the folder is not in git). Without them a page would typeset nothing or
the translator would not run, so the build stops at once and says how to get them.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError

VENDORED = [
    "assets/vendor/mathjax/tex-svg.js",
    "assets/vendor/onnxruntime-web/ort.wasm.min.js",
    "assets/vendor/onnxruntime-web/ort-wasm-simd-threaded.wasm",
]


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    missing = [path for path in VENDORED if not (Path(config.docs_dir) / path).is_file()]
    if missing:
        raise PluginError(
            f"missing front-end assets: {', '.join('docs/' + m for m in missing)}. "
            "Run ./scripts/setup.sh (or: npm ci && .venv/bin/python scripts/vendor_assets.py)."
        )
    return config
