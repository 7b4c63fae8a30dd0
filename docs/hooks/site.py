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
- Notebook pages are reworked after nbconvert (see `rework_notebook_html`): every figure gets the
  alt text its code cell gives in its metadata (`# %% alt="..."` in the jupytext source; a list
  of strings for a cell that draws several figures), and the build fails on a figure without one;
  cell tags and In/Out prompts leave the page; the "Copied!" notice and the headings' "¶" links
  stay out of the search index; and an exercise, a Markdown cell that starts with
  `**Exercise: title**` followed by cells tagged "answer", becomes the same HTML as an exercise
  of a Markdown page: `div.admonition.exercise` holding a closed `details.answer`.
- Tables of three to five columns are marked (`data-stack`, each cell with its column's header as
  `data-label`) so that on a phone they are shown as one card per row instead of scrolling
  (docs/stylesheets/extra.css).
- The search index holds plain text: after the build, TeX in it is written out in Unicode
  (`tex_to_text`) and permalink signs, prompts and copy notices are removed
  (`clean_search_text`).
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
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|#])")


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
    # angle brackets as entities: Markdown has no backslash escape for them (`</s>` stays text)
    text = _MD_SPECIAL.sub(r"\\\1", text.strip()).replace("<", "&lt;").replace(">", "&gt;")
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


# --------------------------------------------------------------------------------------------- #
# Notebook pages: alt text, no tags or prompts, exercises                                      #
# --------------------------------------------------------------------------------------------- #

NO_ALT = "No description has been provided for this image"  # what nbconvert writes without one
_EXERCISE_TITLE = re.compile(r"^\s*Exercise:\s*\S")


def _soup(html: str):
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "html.parser")


def _alt_texts(metadata: dict, count: int) -> list[str]:
    """The alt texts a code cell's metadata gives its `count` figures ("" where it gives none)."""
    alt = metadata.get("alt")
    if isinstance(alt, str):
        alt = [alt] * count if count == 1 else [alt]
    alt = [a.strip() for a in (alt or []) if isinstance(a, str)]
    return (alt + [""] * count)[:count]


def _tags(element) -> set[str]:
    """The cell tags of a rendered cell (nbconvert writes each as a class `celltag_<tag>`)."""
    classes = list(element.get("class") or [])
    for inner in element.select(".jp-RenderedMarkdown"):
        classes += inner.get("class") or []
    return {c.removeprefix("celltag_") for c in classes if c.startswith("celltag_")}


def _wrap_exercises(soup, where: str) -> int:
    """Wrap each question cell and the "answer" cells after it into an exercise box."""
    cells = soup.select("div.jp-Notebook > div.jp-Cell")
    count, i = 0, 0
    while i < len(cells):
        if "answer" not in _tags(cells[i]):
            i += 1
            continue
        question = cells[i - 1] if i else None
        rendered = question.select_one(".jp-RenderedMarkdown") if question else None
        first = rendered.find(["p", "h2", "h3", "h4"]) if rendered else None
        strong = first.find("strong") if first else None
        if strong is None or not _EXERCISE_TITLE.match(strong.get_text()):
            raise PluginError(
                f"{where}: a cell tagged \"answer\" must follow a Markdown cell that starts with "
                "**Exercise: <title>** (the question)"
            )
        answers = []
        while i < len(cells) and "answer" in _tags(cells[i]):
            answers.append(cells[i])
            i += 1
        title = " ".join(strong.get_text().split()).rstrip(".")
        strong.decompose()
        if not first.get_text().strip():
            first.decompose()
        box = soup.new_tag("div", attrs={"class": "admonition exercise"})
        heading = soup.new_tag("p", attrs={"class": "admonition-title"})
        heading.string = title
        details = soup.new_tag("details", attrs={"class": "answer"})
        summary = soup.new_tag("summary")
        summary.string = "Answer"
        question.insert_before(box)
        box.append(heading)
        box.append(question.extract())
        box.append(details)
        details.append(summary)
        for cell in answers:
            details.append(cell.extract())
        count += 1
    return count


def rework_notebook_html(html: str, code_cells: list[dict], where: str) -> str:
    """A notebook page's HTML with alt text, without tags and prompts, with exercise boxes.

    `code_cells` are the metadata of the page's code cells, in order (from its jupytext source).
    Raises PluginError for a figure without alt text and for a malformed exercise.
    """
    soup = _soup(html)
    rendered = soup.select("div.jp-Notebook > div.jp-Cell.jp-CodeCell")
    if len(rendered) != len(code_cells):
        raise PluginError(
            f"{where}: {len(rendered)} rendered code cells, but the source has {len(code_cells)}"
        )
    missing = []
    for number, (cell, metadata) in enumerate(zip(rendered, code_cells), start=1):
        images = cell.select(".jp-RenderedImage img")
        for img, alt in zip(images, _alt_texts(metadata, len(images))):
            if alt and alt != NO_ALT:
                img["alt"] = alt
            else:
                missing.append(number)
    if missing:
        raise PluginError(
            f"{where}: code cell(s) {sorted(set(missing))} draw a figure without alt text; "
            'give the cell an alt text in its metadata (`# %% alt="What the figure shows"`, '
            "or a list of strings for several figures)"
        )
    # Cell tags are for the build (hide-input, heatmap, answer), not for the reader.
    for toolbar in soup.select(".celltoolbar"):
        toolbar.decompose()
    for prompt in soup.select(".jp-InputPrompt, .jp-OutputPrompt"):
        prompt.clear()
    # Kept on the page, left out of the search index (Material drops the attribute afterwards).
    for element in soup.select(".zeroclipboard-container, a.anchor-link"):
        element["data-search-exclude"] = ""
    _wrap_exercises(soup, where)
    return str(soup)


def _code_cell_metadata(path: Path) -> list[dict]:
    import jupytext

    return [dict(c.metadata) for c in jupytext.read(path).cells if c.cell_type == "code"]


# --------------------------------------------------------------------------------------------- #
# Tables that stack on a phone                                                                  #
# --------------------------------------------------------------------------------------------- #

STACK_COLUMNS = range(3, 6)  # tables of 3 to 5 columns become one card per row on a phone
_TABLE = re.compile(r"<table(?P<attrs>[^>]*)>(?P<body>.*?)</table>", re.DOTALL)
_HEADER_CELL = re.compile(r"<th\b[^>]*>(?P<text>.*?)</th>", re.DOTALL)
_ROW = re.compile(r"<tr\b[^>]*>.*?</tr>", re.DOTALL)
_DATA_CELL = re.compile(r"<td\b(?P<attrs>[^>]*)>")


def _text(html: str) -> str:
    return " ".join(html_unescape(re.sub(r"<[^>]+>", "", html)).split())


def mark_stackable_tables(html: str) -> str:
    """Give each plain table of 3 to 5 columns `data-stack` and its cells `data-label`."""

    def mark(match: re.Match) -> str:
        attrs, body = match.group("attrs"), match.group("body")
        if "class=" in attrs or "data-stack" in attrs or "<table" in body:
            return match.group(0)
        head = re.search(r"<thead>(.*?)</thead>", body, re.DOTALL)
        labels = [_text(m.group("text")) for m in _HEADER_CELL.finditer(head.group(1))] if head else []
        if len(labels) not in STACK_COLUMNS:
            return match.group(0)

        def label_row(row: re.Match) -> str:
            cells = iter(labels)

            def label(cell: re.Match) -> str:
                name = next(cells, "")
                return f'<td data-label="{html_escape(name)}"{cell.group("attrs")}>'

            return _DATA_CELL.sub(label, row.group(0))

        return f"<table data-stack{attrs}>" + _ROW.sub(label_row, body) + "</table>"

    return _TABLE.sub(mark, html)


# --------------------------------------------------------------------------------------------- #
# The search index as plain text                                                                #
# --------------------------------------------------------------------------------------------- #

_TEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "eta": "η", "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ",
    "phi": "φ", "omega": "ω", "Sigma": "Σ", "Omega": "Ω", "Delta": "Δ", "top": "ᵀ",
    "cdot": "·", "cdots": "⋯", "ldots": "…", "dots": "…", "times": "×", "odot": "⊙",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠", "approx": "≈", "in": "∈",
    "to": "→", "rightarrow": "→", "leftarrow": "←", "infty": "∞", "sum": "Σ", "prod": "∏",
    "pm": "±", "mid": "|", "lVert": "‖", "rVert": "‖", "Vert": "‖", "ell": "ℓ", "partial": "∂",
    "nabla": "∇", "sqrt": "√", "quad": " ", "qquad": " ", "lfloor": "⌊", "rfloor": "⌋",
    "lceil": "⌈", "rceil": "⌉", "langle": "⟨", "rangle": "⟩", "%": "%", "_": "_", "{": "{",
    "}": "}", "$": "$", "#": "#", "&": "&", ",": " ", ";": " ", ":": " ", "!": "", " ": " ",
}
_TEX_MATH = re.compile(
    r"\\\((?P<a>.+?)\\\)|\\\[(?P<b>.+?)\\\]|\$\$(?P<c>.+?)\$\$|(?<![\w$\\])\$(?=[^\s$])(?P<d>[^$]+?)(?<=\S)\$(?![\w$])",
    re.DOTALL,
)
_GROUP = r"\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}"  # up to two levels of nested braces


def tex_to_text(tex: str) -> str:
    """A TeX formula written out in plain Unicode text, for the search index."""
    text = tex
    for _ in range(3):  # nested \frac and \sqrt
        text = re.sub(r"\\[dt]?frac\s*" + _GROUP + r"\s*" + _GROUP,
                      lambda m: f"{_paren(m.group(1))}/{_paren(m.group(2))}", text)
        text = re.sub(r"\\sqrt\s*" + _GROUP, lambda m: "√" + _paren(m.group(1)), text)
        text = re.sub(r"\\(?:mathrm|text|textrm|mathbf|mathit|boldsymbol|operatorname|textbf|"
                      r"mathcal|mathsf|texttt|emph)\s*" + _GROUP, r"\1", text)
    text = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)\b\s*", "", text)
    text = re.sub(r"\\begin\{\w+\*?\}|\\end\{\w+\*?\}", " ", text)
    text = text.replace("\\\\", " ").replace("&", " ")
    text = re.sub(r"\\([A-Za-z]+|.)", lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), text)
    text = re.sub(r"\^\{?ᵀ\}?", "ᵀ", text)
    text = text.replace("{", "").replace("}", "")
    return " ".join(text.split())


def _paren(text: str) -> str:
    text = text.strip()
    return text if re.fullmatch(r"[^\s+\-*/()=,]+", text) else f"({text})"


_PROMPT = re.compile(r"\b(?:In|Out)\s?\[[\d ]*\]:\s?")
_CODE_SPAN = re.compile(r"(<pre\b.*?</pre>|<code\b.*?</code>)", re.DOTALL)


def clean_search_text(text: str) -> str:
    """Text of the search index without TeX (outside code), "¶", prompts or copy notices."""
    parts = _CODE_SPAN.split(text)
    for i in range(0, len(parts), 2):  # the even parts are outside code
        part = _TEX_MATH.sub(
            lambda m: tex_to_text(next(g for g in m.groups() if g is not None)), parts[i]
        )
        parts[i] = _PROMPT.sub("", part)
    text = "".join(parts).replace("¶", "").replace("Copied!", "")
    return re.sub(r"[ \t]{2,}", " ", text).strip()




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
        html = _NBCONVERT_MATHJAX.sub("", html)
        html = rework_notebook_html(
            html, _code_cell_metadata(Path(page.file.abs_src_path)), page.file.src_uri
        )
        html = _download_button(page, config) + html
        parser = _Headings()
        parser.feed(html)
        page.toc = get_toc(_nest(parser.headings))
        page.present_anchor_ids = parser.ids
        _register_notebook_anchors(page, parser.headings, config)
    return mark_stackable_tables(html)


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


def _write_notebooks() -> None:
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


@event_priority(-100)  # after the search plugin has written the index
def on_post_build(config: MkDocsConfig) -> None:
    _write_notebooks()
    index = Path(config.site_dir) / "search" / "search_index.json"
    if index.is_file():
        import json

        data = json.loads(index.read_text(encoding="utf-8"))
        for doc in data.get("docs", []):
            for key in ("title", "text"):
                if isinstance(doc.get(key), str):
                    doc[key] = clean_search_text(doc[key])
        index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                         encoding="utf-8")
