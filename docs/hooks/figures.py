"""Build hook: draw every figure of the site from code.

Each `docs/figures/<name>.py` defines `draw()`, which builds what it shows from the real package and
returns a matplotlib `Figure`. At every build this hook calls it, renders the figure to SVG in
memory and adds the result to the site as `assets/figures/<name>.svg`, which pages reference as
`![alt text](../assets/figures/<name>.svg)`. Nothing is written into docs/, so `mkdocs serve` does
not rebuild in a loop, and the files exist for the strict link check.

Legible on every screen: the hook records the smallest font size of each figure (in pt, which is the
SVG's user unit) on its root element as `data-min-font-pt`, and gives every `<img>` of the figure a
`min-width` at which that text is `MIN_TEXT_PX` CSS pixels; below it the figure scrolls sideways
(docs/stylesheets/extra.css) instead of shrinking. The background is transparent, so the page's
colour shows through, and the dark scheme inverts the drawing with a CSS filter.

The SVG is deterministic: a fixed hash salt for element ids, no date in the metadata, text drawn as
paths (no font is needed to view it), and the random number generators seeded before each `draw()`.
A figure script that raises, or whose `draw()` does not return a `Figure`, fails the build with the
script's name and its traceback.
"""

from __future__ import annotations

import io
import logging
import math
import random
import re
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
MIN_TEXT_PX = 11  # the smallest text of a figure, as displayed, in CSS pixels

# min-width in CSS pixels of each figure drawn by this build, by name (filled by on_files).
_min_widths: dict[str, int] = {}


def seed_generators() -> None:
    """Seed Python's, NumPy's and PyTorch's generators with 0, as before every figure and numbers script."""
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

def figure_scripts(docs_dir: str | Path) -> list[Path]:
    """The figure scripts under `docs_dir/figures/`, sorted by name."""
    return sorted(p for p in (Path(docs_dir) / FIGURES_DIR).glob("*.py") if not p.name.startswith("_"))


def smallest_font_pt(fig) -> float:
    """The smallest font size, in points, of the visible non-empty text of a drawn figure."""
    from matplotlib.text import Text

    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())
    ]
    return min(sizes) if sizes else 0.0


def svg_size_pt(svg: bytes) -> tuple[float, float]:
    """The width and height of an SVG written by matplotlib, from its viewBox (in points)."""
    match = re.search(rb'viewBox="0 0 ([0-9.]+) ([0-9.]+)"', svg)
    if match is None:
        raise ValueError("the SVG has no viewBox")
    return float(match.group(1)), float(match.group(2))


def min_width_px(svg: bytes) -> int:
    """The displayed width, in CSS pixels, at which the smallest text of `svg` is MIN_TEXT_PX."""
    match = re.search(rb'data-min-font-pt="([0-9.]+)"', svg)
    if match is None or float(match.group(1)) <= 0:
        return 0
    return math.ceil(MIN_TEXT_PX * svg_size_pt(svg)[0] / float(match.group(1)))


def render_svg(script: Path) -> bytes:
    """Run `script`, call its `draw()` and return the figure as SVG bytes.

    The background is transparent and the root `<svg>` carries `data-min-font-pt`, the smallest
    font size of the figure.

    Raises:
        PluginError: the script failed, has no `draw()`, or `draw()` did not return a Figure.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    name = script.name
    seed_generators()

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
            fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight",
                        transparent=True)
            smallest = smallest_font_pt(fig)  # after savefig: tick labels exist once drawn
    except PluginError:
        raise
    except BaseException as exc:  # any failure of a figure must stop the build
        details = "".join(traceback.format_exception(exc))
        raise PluginError(
            f"figure script docs/{FIGURES_DIR}/{name} failed: {type(exc).__name__}: {exc}\n{details}"
        ) from exc
    finally:
        if fig is not None:
            plt.close(fig)
        plt.close("all")
    return buffer.getvalue().replace(b"<svg ", f'<svg data-min-font-pt="{smallest:g}" '.encode(), 1)


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
        svg = render_svg(script)
        _min_widths[script.stem] = min_width_px(svg)
        files.append(File.generated(config, src_uri, content=svg))
    if scripts:
        log.info("figures: rendered %d figure(s) to %s/", len(scripts), OUTPUT_DIR)
    return files


_FIGURE_IMG = re.compile(r'<img\b[^>]*?\bsrc="[^"]*?\bassets/figures/(?P<name>[\w-]+)\.svg"[^>]*?>')


def on_page_content(html: str, **kwargs) -> str:
    """Give each figure's `<img>` the min-width at which its smallest text is MIN_TEXT_PX."""

    def add_min_width(match: re.Match) -> str:
        width = _min_widths.get(match.group("name"))
        if not width or " style=" in match.group(0):
            return match.group(0)
        return match.group(0).replace("<img", f'<img style="min-width: {width}px"', 1)

    return _FIGURE_IMG.sub(add_min_width, html)
