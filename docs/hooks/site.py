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
- A table printed by a Markdown page's code block is checked as text (its expected output,
  ```` ```table ```` instead of ```` ```text ````) and shown as a table: the hook turns each such
  block into Markdown, one table per run of lines whose columns are separated by two or more
  spaces, the other lines as text. See `printed_table_markdown`.
- Each notebook page offers its notebook for download: the hook writes `<page>.ipynb` (converted
  from the page's jupytext source, without outputs) next to the page and puts a download button
  at the top of the page, beside Material's own page actions.
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

VENDORED = [
    "assets/vendor/mathjax/tex-svg.js",
    "assets/vendor/onnxruntime-web/ort.wasm.min.js",
    "assets/vendor/onnxruntime-web/ort-wasm-simd-threaded.wasm",
]
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


# A fenced block of printed output to show as a table (```table ... ```, alone on their lines).
_TABLE_FENCE = re.compile(r"^```table[ \t]*\n(?P<body>.*?)\n```[ \t]*$", re.MULTILINE | re.DOTALL)
_RULE = re.compile(r"^\s*-{3,}\s*$")
_GUTTER = 2  # columns of printed tables are separated by at least this many spaces
_NUMBER = re.compile(r"^[-+]?[\d,.]+(e[-+]?\d+)?( ?(%|B|KiB|MiB|GiB|TiB|x|s|ms))?$")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|<>#])")


def _is_row(line: str) -> bool:
    return len(re.split(r" {2,}", line.strip())) >= 2


def _columns(lines: list[str]) -> list[tuple[int, int]]:
    """The (start, end) character spans of the columns of aligned text lines."""
    width = max(len(line) for line in lines)
    used = [any(i < len(line) and line[i] != " " for line in lines) for i in range(width)]
    spans, start, blank = [], None, 0
    for i, filled in enumerate(used + [False] * _GUTTER):
        if filled:
            if start is None:
                start = i
            blank = 0
        elif start is not None:
            blank += 1
            if blank == _GUTTER:
                spans.append((start, i - _GUTTER + 1))
                start = None
    return spans


def _cell(text: str, bold: bool = False) -> str:
    text = _MD_SPECIAL.sub(r"\\\1", text.strip())
    return f"**{text}**" if bold and text else text


def _table(lines: list[str]) -> list[str]:
    """A Markdown table from aligned lines. The first line is the header when a rule follows it
    or when it holds no digit; a row after a later rule (a total) is bold."""
    rows = [line for line in lines if not _RULE.match(line)]
    spans = _columns(rows)
    cells = [[line[a:b].strip() for a, b in spans] for line in rows]
    header_given = (len(lines) > 1 and _RULE.match(lines[1])) or not re.search(r"\d", lines[0])
    header = cells.pop(0) if header_given else [""] * len(spans)
    body_lines = lines[2:] if header_given and _RULE.match(lines[1]) else lines[1 if header_given else 0:]
    bold_from = None
    for i, line in enumerate(body_lines):
        if _RULE.match(line):
            bold_from = sum(1 for l in body_lines[:i] if not _RULE.match(l))
    numeric = [all(_NUMBER.match(row[j]) for row in cells if row[j]) and any(row[j] for row in cells)
               for j in range(len(spans))]
    out = ["| " + " | ".join(_cell(h) for h in header) + " |",
           "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    for i, row in enumerate(cells):
        bold = bold_from is not None and i >= bold_from
        out.append("| " + " | ".join(_cell(c, bold) for c in row) + " |")
    return out


def printed_table_markdown(text: str) -> str:
    """Printed output as Markdown: each run of two or more lines with aligned columns (rules of
    dashes included) becomes a table, every other line a line of text."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and (_is_row(lines[j]) or (_RULE.match(lines[j]) and j > i)):
            j += 1
        if j - i >= 2:
            out += ["", *_table(lines[i:j]), ""]
            i = j
            continue
        if lines[i].strip():
            out.append(_cell(lines[i]) + "<br>")
        else:
            out.append("")
        i += 1
    body = "\n".join(out).replace("<br>\n\n", "\n\n").strip()
    body = body.removesuffix("<br>")
    return f'<div class="printed-table" markdown>\n\n{body}\n\n</div>'


def on_page_markdown(markdown: str, page, config: MkDocsConfig, files) -> str:
    return _TABLE_FENCE.sub(lambda m: printed_table_markdown(m.group("body")), markdown)


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


# Notebooks to write at the end of the build: (jupytext source, destination in the site).
_notebooks: list[tuple[Path, Path]] = []
# Material's "download" icon (Material Design Icons, Apache 2.0).
_DOWNLOAD_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" aria-hidden="true">'
    '<path d="M5 20h14v-2H5m14-9h-4V3H9v6H5l7 7 7-7Z"/></svg>'
)


def notebook_name(page) -> str:
    """The file name of a notebook page's downloadable notebook."""
    return Path(page.file.src_uri).stem + ".ipynb"


def _download_button(page, config: MkDocsConfig) -> str:
    name = notebook_name(page)
    site_dir = Path(config.site_dir)
    _notebooks.append((Path(page.file.abs_src_path), site_dir / Path(page.file.dest_uri).parent / name))
    return (
        f'<a href="{name}" download class="md-content__button md-icon notebook-download" '
        f'title="Download this page as a Jupyter notebook ({name})" '
        f'aria-label="Download this page as a Jupyter notebook">{_DOWNLOAD_ICON}</a>\n'
    )


def on_page_content(html: str, page, config: MkDocsConfig, files) -> str:
    if "jupyter-wrapper" in html:
        html = _download_button(page, config) + _NBCONVERT_MATHJAX.sub("", html)
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


def on_pre_build(config: MkDocsConfig) -> None:
    _notebooks.clear()


def on_post_build(config: MkDocsConfig) -> None:
    """Write each notebook page's notebook (jupytext source to .ipynb, without outputs)."""
    import jupytext

    for source, target in _notebooks:
        target.parent.mkdir(parents=True, exist_ok=True)
        jupytext.write(jupytext.read(source), target, fmt="ipynb")
    if _notebooks:
        log.info("site hook: wrote %d notebook(s) for download", len(_notebooks))


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
