"""Build hook: keep the site self-contained and its notebook pages and cross-references right.

- The vendored front-end assets (MathJax, copied from node_modules/ by scripts/vendor_assets.py)
  must exist, or the build stops and says how to get them.
- Notebook pages are executed with matplotlib's inline backend, whatever MPLBACKEND the shell has,
  so their figures appear on the page.
- nbconvert puts a MathJax 2 loader (by default from a CDN) and its configuration into every
  notebook page. The site loads MathJax 3 once, for every page (docs/javascripts/mathjax.js), so the
  hook removes that block.
- mkdocs-jupyter builds a notebook page's table of contents from a Markdown copy of the notebook
  without its inline code, so a heading such as "`clones`: N copies" gets a contents link that
  matches no id on the page. The hook rebuilds that table from the headings of the rendered page,
  and records the page's ids so that the strict build checks links to its anchors too.
- mkdocs-autorefs registers the headings of Markdown pages, so a docstring can link to a section
  with `[text][some-id]` (`## A heading { #some-id }` on the page). Notebook pages are not
  Markdown, and nbconvert gives each heading an id made from its text. The hook registers those
  ids with autorefs, and gives the headings named in `NOTEBOOK_ANCHORS` a stable id of their own,
  so the docstrings' links survive a heading's rewording: the build warns (and the strict build
  fails) if a named heading is no longer on its page.
- A page may render an object of the package a second time (`::: vanilla_transformer.x.y` in an
  article, to show its docstring and source there). Cross-references to that object keep going to
  its entry in the API reference.
"""

from __future__ import annotations

import logging
import os
import re
from html import escape as html_escape
from html import unescape as html_unescape
from html.parser import HTMLParser
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.toc import get_toc

log = logging.getLogger("mkdocs.hooks.site")

VENDORED = ["assets/vendor/mathjax/tex-svg.js"]
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
API_PREFIX = "api/"

# Cross-reference ids for headings of notebook pages: id -> (page source, heading text).
NOTEBOOK_ANCHORS = {
    "training-guide": ("guides/training-copy-task.py", "Training the copy task"),
    "decoding-guide": ("guides/training-copy-task.py", "Greedy decoding of held-out sequences"),
    "interop-guide": ("articles/pytorch-nn-transformer.py", "PyTorch's nn.Transformer and its masks"),
    "translator-guide": ("guides/translator.py", "Training a real translator"),
}

_NBCONVERT_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    missing = [path for path in VENDORED if not (Path(config.docs_dir) / path).is_file()]
    if missing:
        raise PluginError(
            f"missing front-end assets: {', '.join('docs/' + m for m in missing)}. "
            "Run ./scripts/setup.sh (or: npm ci && .venv/bin/python scripts/vendor_assets.py)."
        )
    # Kernels started by mkdocs-jupyter inherit this environment.
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    return config


class _Headings(HTMLParser):
    """The ids of a page, and its headings as table-of-contents tokens."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.headings: list[dict] = []
        self._heading: dict | None = None
        self._skip = 0  # depth inside a heading's permalink

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if re.fullmatch(r"h[1-6]", tag) and attrs.get("id"):
            self._heading = {"level": int(tag[1]), "id": attrs["id"], "text": []}
        elif self._heading is not None and (self._skip or "anchor-link" in (attrs.get("class") or "")):
            self._skip += 1

    def handle_endtag(self, tag):
        if self._heading is None:
            return
        if self._skip:
            self._skip -= 1
        elif re.fullmatch(r"h[1-6]", tag):
            name = " ".join("".join(self._heading.pop("text")).split())
            self.headings.append({**self._heading, "name": html_escape(name, quote=False), "children": []})
            self._heading = None

    def handle_data(self, data):
        if self._heading is not None and not self._skip:
            self._heading["text"].append(data)


def _nest(headings: list[dict]) -> list[dict]:
    roots: list[dict] = []
    stack: list[dict] = []
    for heading in headings:
        while stack and stack[-1]["level"] >= heading["level"]:
            stack.pop()
        (stack[-1]["children"] if stack else roots).append(heading)
        stack.append(heading)
    return roots


def on_page_content(html: str, page, config: MkDocsConfig, files) -> str:
    if "jupyter-wrapper" in html:
        html = _NBCONVERT_MATHJAX.sub("", html)
        parser = _Headings()
        parser.feed(html)
        page.toc = get_toc(_nest(parser.headings))
        page.present_anchor_ids = parser.ids
        _register_notebook_anchors(page, parser.headings, config)
    return html


def _register_notebook_anchors(page, headings: list[dict], config: MkDocsConfig) -> None:
    """Make a notebook page's headings targets of `[text][id]` cross-references."""
    autorefs = config.plugins.get("autorefs")
    if autorefs is None or not hasattr(autorefs, "register_anchor"):
        log.warning("site hook: mkdocs-autorefs has changed; notebook headings are not registered")
        return
    by_name = {}
    for heading in headings:
        title = html_unescape(heading["name"])
        autorefs.register_anchor(page, heading["id"], title=title, primary=True)
        by_name.setdefault(title, heading["id"])
    for identifier, (src_path, name) in NOTEBOOK_ANCHORS.items():
        if page.file.src_uri != src_path:
            continue
        if name in by_name:
            autorefs.register_anchor(page, identifier, by_name[name], title=name, primary=True)
        else:
            log.warning(
                f"site hook: {src_path} has no heading {name!r} for the cross-reference id "
                f"{identifier!r}; update NOTEBOOK_ANCHORS in docs/hooks/site.py"
            )


@event_priority(0)  # before autorefs applies the cross-references (its on_env runs at -50)
def on_env(env, config: MkDocsConfig, files):
    autorefs = config.plugins.get("autorefs")
    url_map = getattr(autorefs, "_primary_url_map", None)
    if not isinstance(url_map, dict):
        log.warning("site hook: mkdocs-autorefs has changed; API entries may not be preferred")
        return env
    for identifier, urls in url_map.items():
        if len(urls) > 1:
            api_urls = [url for url in urls if url.startswith(API_PREFIX)]
            if api_urls:
                url_map[identifier] = api_urls
    return env
