"""Build hook: a docstring can link to a heading of a notebook page, and the link survives rewording.

mkdocs-autorefs registers the headings of Markdown pages, so a docstring can link to a section
with `[text][some-id]` (`## A heading { #some-id }` on the page). Notebook pages are not Markdown,
and nbconvert gives each heading an id made from its text. The hook registers those ids with
autorefs, and gives the headings named in `NOTEBOOK_ANCHORS` a stable id of their own, so the
docstrings' links survive a heading's rewording: the build warns (and the strict build fails) if a
named heading is no longer on its page.

It reads the headings from the page's table of contents, which docs/hooks/notebook_toc.py has
rebuilt from the rendered page just before (the hooks run in the order mkdocs.yml lists them).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from html import unescape as html_unescape

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink

log = logging.getLogger("mkdocs.hooks.notebook_anchors")

# Cross-reference ids for headings of notebook pages: id -> (page source, heading text).
NOTEBOOK_ANCHORS = {
    "training-guide": ("guides/training-copy-task.py", "Training the copy task"),
    "decoding-guide": ("guides/training-copy-task.py", "Greedy decoding of held-out sequences"),
    "interop-guide": ("articles/pytorch-nn-transformer.py", "PyTorch's nn.Transformer and its masks"),
    "translator-guide": ("guides/translator.py", "Training a real translator"),
}


def _headings(items: Iterable[AnchorLink]) -> list[tuple[str, str]]:
    """(id, text) of every entry of a table of contents, in page order."""
    out: list[tuple[str, str]] = []
    for item in items:
        out.append((item.id, html_unescape(item.title)))
        out += _headings(item.children)
    return out


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if "jupyter-wrapper" not in html:
        return html
    autorefs = config.plugins.get("autorefs")
    if autorefs is None or not hasattr(autorefs, "register_anchor"):
        log.warning("notebook_anchors hook: mkdocs-autorefs has changed; headings are not registered")
        return html
    by_name: dict[str, str] = {}
    for identifier, title in _headings(page.toc):
        autorefs.register_anchor(page, identifier, title=title, primary=True)
        by_name.setdefault(title, identifier)
    for identifier, (src_path, name) in NOTEBOOK_ANCHORS.items():
        if page.file.src_uri != src_path:
            continue
        if name in by_name:
            autorefs.register_anchor(page, identifier, by_name[name], title=name, primary=True)
        else:
            log.warning(
                f"notebook_anchors hook: {src_path} has no heading {name!r} for the cross-reference "
                f"id {identifier!r}; update NOTEBOOK_ANCHORS in docs/hooks/notebook_anchors.py"
            )
    return html
