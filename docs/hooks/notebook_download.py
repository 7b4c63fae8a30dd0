"""Build hook: each notebook page offers its notebook for download.

A notebook page (`articles/*.py`, `guides/*.py`) is a jupytext percent-format source that
mkdocs-jupyter executes and renders. The hook writes `<page>.ipynb`, converted from that source
without outputs, next to the page, and puts a download button at the top of the page, beside
Material's own page actions (docs/stylesheets/extra.css floats it right).
"""

from __future__ import annotations

import logging
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.notebook_download")

# Notebooks to write at the end of the build: (jupytext source, destination in the site).
_notebooks: list[tuple[Path, Path]] = []
# Material's "download" icon (Material Design Icons, Apache 2.0).
DOWNLOAD_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" aria-hidden="true">'
    '<path d="M5 20h14v-2H5m14-9h-4V3H9v6H5l7 7 7-7Z"/></svg>'
)


def notebook_name(page: Page) -> str:
    """The file name of a page's downloadable notebook."""
    return Path(page.file.src_uri).stem + ".ipynb"


def download_button(name: str) -> str:
    """The button that downloads the notebook `name`, a file next to the page."""
    return (
        f'<a href="{name}" download class="md-content__button md-icon notebook-download" '
        f'title="Download this page as a Jupyter notebook ({name})" '
        f'aria-label="Download this page as a Jupyter notebook">{DOWNLOAD_ICON}</a>\n'
    )


def on_pre_build(config: MkDocsConfig) -> None:
    _notebooks.clear()


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if "jupyter-wrapper" not in html:
        return html
    name = notebook_name(page)
    target = Path(config.site_dir) / Path(page.file.dest_uri).parent / name
    source = page.file.abs_src_path
    assert source is not None, "a notebook page is a file of docs/"
    _notebooks.append((Path(source), target))
    return download_button(name) + html


@event_priority(-100)  # at the end of the build, when the site directory is complete
def on_post_build(config: MkDocsConfig) -> None:
    """Write each notebook page's notebook (jupytext source to .ipynb, without outputs)."""
    import jupytext  # type: ignore[import-untyped]

    for source, target in _notebooks:
        target.parent.mkdir(parents=True, exist_ok=True)
        notebook = jupytext.read(source)
        for number, cell in enumerate(notebook.cells, start=1):
            cell.id = f"cell-{number}"  # the same from build to build (nbformat draws random ones)
        jupytext.write(notebook, target, fmt="ipynb")
    if _notebooks:
        log.info("notebook_download hook: wrote %d notebook(s) for download", len(_notebooks))
