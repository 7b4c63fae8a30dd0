"""Build hook: numbers in prose are written by the build from what code computed.

A page never types a number that code computes. It writes a placeholder instead,

    the query of `one` gives {{ n.attention.forty_weight }} of its weight to `forty`

and this hook replaces it with the value that `docs/numbers/attention.py` computed in this build.
Each `docs/numbers/<name>.py` defines `values()`, which returns a dict from a key to a value (a
number or a string): the same computation as the page's code, or a number read from a results file
under `benchmarks/results/`. A format spec after a colon formats the value:
`{{ n.attention.forty_weight:.2f }}`, `{{ n.training.steps:, }}`.

A script runs once per build, on first use, with Python's, NumPy's and PyTorch's generators seeded
as the figure scripts are. An unknown script or key, a script that raises, or a bad format spec
fails the build with the page's name. Placeholders are replaced in a page's Markdown (so alt text,
tables and admonitions get them) and, for notebook pages, in their HTML.

`tests/docs/test_prose_numbers.py` fails on any decimal, percentage or number of three or more
digits in the prose of `docs/` that is neither such a placeholder nor on its short allow-list.
"""

from __future__ import annotations

import re
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.pages import Page

if str(Path(__file__).parent) not in sys.path:  # loaded by path, as mkdocs and the tests do
    sys.path.append(str(Path(__file__).parent))
from figures import seed_generators  # the figures hook, beside this file

NUMBERS_DIR = "numbers"
PLACEHOLDER = re.compile(r"\{\{\s*n\.(?P<script>\w+)\.(?P<key>\w+)(?::(?P<spec>[^}\s]*))?\s*\}\}")

_values: dict[str, dict[str, Any]] = {}  # script name -> its values, for this build
_docs_dir: Path = Path("docs")


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _docs_dir
    _docs_dir = Path(config.docs_dir)
    _values.clear()  # `mkdocs serve` computes them again at each rebuild
    return config


def script_values(name: str, docs_dir: Path | None = None) -> dict[str, Any]:
    """The values that `docs/numbers/<name>.py` computes (computed once per build)."""
    if name in _values:
        return _values[name]
    script = (docs_dir or _docs_dir) / NUMBERS_DIR / f"{name}.py"
    if not script.is_file():
        raise PluginError(f"numbers: docs/{NUMBERS_DIR}/{name}.py does not exist")
    seed_generators()
    try:
        values = runpy.run_path(str(script), run_name=f"numbers_{name}")["values"]()
    except BaseException as exc:  # a failing script must stop the build
        details = "".join(traceback.format_exception(exc))
        raise PluginError(f"numbers: docs/{NUMBERS_DIR}/{name}.py failed: {exc}\n{details}") from exc
    if not isinstance(values, dict):
        raise PluginError(
            f"numbers: values() of docs/{NUMBERS_DIR}/{name}.py returned {type(values).__name__}"
        )
    _values[name] = values
    return values


def substitute(text: str, where: str, docs_dir: Path | None = None) -> str:
    """`text` with every `{{ n.script.key[:spec] }}` replaced by its formatted value."""

    def replace(match: re.Match[str]) -> str:
        script, key, spec = match.group("script"), match.group("key"), match.group("spec") or ""
        values = script_values(script, docs_dir)
        if key not in values:
            known = ", ".join(sorted(values))
            raise PluginError(f"numbers: {where} asks for n.{script}.{key}; the script gives {known}")
        try:
            return format(values[key], spec)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"numbers: {where}: n.{script}.{key}:{spec}: {exc}") from exc

    return PLACEHOLDER.sub(replace, text)


def on_page_markdown(markdown: str, page: Page, **kwargs: Any) -> str:
    return substitute(markdown, page.file.src_uri)


def on_page_content(html: str, page: Page, **kwargs: Any) -> str:
    return substitute(html, page.file.src_uri)
