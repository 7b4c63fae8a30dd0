"""Build hook: notebook pages draw their figures on the page.

mkdocs-jupyter executes the notebook pages (`articles/*.py`, `guides/*.py`) in kernels that
inherit the build's environment. A shell that exports another MPLBACKEND (Agg, for instance) would
leave their figures off the page, so the hook sets matplotlib's inline backend for them.
"""

from __future__ import annotations

import os

from mkdocs.config.defaults import MkDocsConfig

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    # Kernels started by mkdocs-jupyter inherit this environment.
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    return config
