"""Build hook: draw every figure of the site from code.

Each `docs/figures/<name>.py` defines `draw()`, which builds what it shows from the real package and
returns a matplotlib `Figure`. At every build this hook calls it, renders the figure to SVG in
memory and adds the result to the site as `assets/figures/<name>.svg`, which pages reference as
`![alt text](../assets/figures/<name>.svg)`. Nothing is written into docs/, so `mkdocs serve` does
not rebuild in a loop, and the files exist for the strict link check.

The SVG is deterministic: a fixed hash salt for element ids, no date in the metadata, text drawn as
paths (no font is needed to view it), and the random number generators seeded before each `draw()`.
A figure script that raises, or whose `draw()` does not return a `Figure`, fails the build with the
script's name and its traceback.
"""

from __future__ import annotations

import io
import logging
import random
import runpy
import traceback
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.figures")

FIGURES_DIR = "figures"
OUTPUT_DIR = "assets/figures"
SVG_RC = {"svg.hashsalt": "vanilla-transformer", "svg.fonttype": "path"}


def figure_scripts(docs_dir: str | Path) -> list[Path]:
    """The figure scripts under `docs_dir/figures/`, sorted by name."""
    return sorted(p for p in (Path(docs_dir) / FIGURES_DIR).glob("*.py") if not p.name.startswith("_"))


def render_svg(script: Path) -> bytes:
    """Run `script`, call its `draw()` and return the figure as SVG bytes.

    Raises:
        PluginError: the script failed, has no `draw()`, or `draw()` did not return a Figure.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    name = script.name
    random.seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except ImportError:  # pragma: no cover - matplotlib depends on numpy
        pass
    try:
        import torch

        torch.manual_seed(0)
    except ImportError:  # pragma: no cover
        pass

    fig = None
    try:
        with matplotlib.rc_context(SVG_RC):
            namespace = runpy.run_path(str(script), run_name=f"figure_{script.stem}")
            draw = namespace.get("draw")
            if not callable(draw):
                raise PluginError(f"figure script docs/{FIGURES_DIR}/{name} defines no draw() function")
            fig = draw()
            if not isinstance(fig, Figure):
                raise PluginError(
                    f"figure script docs/{FIGURES_DIR}/{name}: draw() returned "
                    f"{type(fig).__name__}, not a matplotlib Figure"
                )
            buffer = io.BytesIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    except PluginError:
        raise
    except BaseException as exc:  # noqa: BLE001 - any failure of a figure must stop the build
        details = "".join(traceback.format_exception(exc))
        raise PluginError(
            f"figure script docs/{FIGURES_DIR}/{name} failed: {type(exc).__name__}: {exc}\n{details}"
        ) from exc
    finally:
        if fig is not None:
            plt.close(fig)
        plt.close("all")
    return buffer.getvalue()


def on_files(files: Files, config: MkDocsConfig) -> Files:
    scripts = figure_scripts(config.docs_dir)
    for script in scripts:
        src_uri = f"{OUTPUT_DIR}/{script.stem}.svg"
        existing = files.get_file_from_path(src_uri)
        if existing is not None:
            raise PluginError(
                f"docs/{src_uri} exists as a file, but it is drawn by docs/{FIGURES_DIR}/{script.name}; "
                "delete the file"
            )
        files.append(File.generated(config, src_uri, content=render_svg(script)))
    if scripts:
        log.info("figures: rendered %d figure(s) to %s/", len(scripts), OUTPUT_DIR)
    return files
