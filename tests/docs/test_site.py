"""Browser tests of the built documentation site.

scripts/test.sh builds the site into site/ (`mkdocs build --strict`) before running pytest; these
tests serve that directory on 127.0.0.1 and open every page in Debian's Chromium through
Playwright. They check what a reader would see and what the strict build cannot:

- every page loads without console errors or uncaught exceptions;
- no page requests anything from another origin (every such request is aborted and reported);
- every formula is typeset by MathJax, on Markdown pages and on notebook pages, without errors;
- every image has loaded and has alt text;
- the search finds the API entries, a cross-reference from an article lands on its API entry, and
  instant navigation typesets the math of the page it brings in;
- every internal link and anchor of every built page resolves (a crawler over the HTML files);
- tables are shown as tables, not as printed text; nothing is wider than the text column at
  1400 px; heatmaps keep their colours in the dark scheme; figures open in a lightbox; every
  notebook page offers its notebook for download.

VANILLA_TRANSFORMER_SITE_DIR points the tests at another build directory.
"""

from __future__ import annotations

import functools
import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 30_000

# Elements whose text is code or markup, not prose: a leftover TeX delimiter in them is fine.
NOT_PROSE = "pre, code, script, style, textarea, mjx-container, .highlight, .jp-InputArea, .jp-OutputArea"


def site_pages(site: Path) -> list[str]:
    """URL paths ("/", "/api/model/masks/", ...) of every page: each index.html except the 404 page."""
    pages = []
    for index in sorted(site.rglob("index.html")):
        rel = index.parent.relative_to(site).as_posix()
        if rel.startswith("assets") or rel == "404":
            continue
        pages.append("/" if rel == "." else f"/{rel}/")
    return pages


# --------------------------------------------------------------------------------------------- #
# In-page checks                                                                               #
# --------------------------------------------------------------------------------------------- #

WAIT_FOR_MATH = "() => document.documentElement.getAttribute('data-math-typeset') === location.pathname"

MATH_PROBLEMS = """(notProse) => {
  const problems = [];
  for (const el of document.querySelectorAll('.arithmatex')) {
    if (!el.querySelector('mjx-container')) {
      problems.push('formula not typeset: ' + el.textContent.trim().slice(0, 80));
    }
  }
  for (const el of document.querySelectorAll('[data-mjx-error], mjx-merror, [data-mml-node="merror"]')) {
    problems.push('MathJax error: ' + (el.getAttribute('data-mjx-error') || el.textContent).slice(0, 120));
  }
  const content = document.querySelector('.md-content');
  if (content) {
    const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement;
      if (!parent || parent.closest(notProse)) continue;
      const text = node.textContent;
      const inNotebook = parent.closest('.jupyter-wrapper') !== null;
      if (/\\\\\\(|\\\\\\[|\\$\\$/.test(text) || (inNotebook && /\\$[^$\\s][^$]*\\$/.test(text))) {
        problems.push('raw TeX left in the text: ' + text.trim().slice(0, 100));
      }
    }
  }
  return {problems, containers: document.querySelectorAll('mjx-container').length};
}"""

IMAGE_PROBLEMS = """async () => {
  const images = Array.from(document.images);
  await Promise.all(images.map((img) => {
    img.loading = 'eager';
    return img.decode().catch(() => null);
  }));
  const problems = [];
  for (const img of images) {
    const name = (img.getAttribute('src') || '').slice(0, 80);
    if (!img.complete || img.naturalWidth === 0) problems.push('image not loaded: ' + name);
    const alt = (img.getAttribute('alt') || '').trim();
    if (!alt) problems.push('image without alt text: ' + name);
    if (alt === 'No description has been provided for this image') {
      problems.push("image with nbconvert's placeholder instead of alt text: " + name);
    }
  }
  return {problems, count: images.length};
}"""

DIAGRAMS = "() => document.querySelectorAll('.mermaid, pre.mermaid, code.language-mermaid, .jp-Mermaid').length"


def check_page(tab, url: str) -> tuple[list[str], dict[str, int]]:
    """Load `url` and return the problems found on it, and a few counts."""
    problems: list[str] = []
    tab.goto(url, wait_until="load")
    try:
        tab.wait_for_function(WAIT_FOR_MATH, timeout=TIMEOUT_MS)
    except Exception:  # noqa: BLE001 - reported as a problem of the page
        problems.append("MathJax never finished typesetting (is assets/vendor/mathjax/tex-svg.js served?)")
    math = tab.evaluate(MATH_PROBLEMS, NOT_PROSE)
    images = tab.evaluate(IMAGE_PROBLEMS)
    if tab.evaluate(DIAGRAMS):
        problems.append(
            "the page has a mermaid diagram, but the site does not ship mermaid: draw the figure "
            "with a docs/figures/*.py script instead"
        )
    problems += math["problems"] + images["problems"]
    return problems, {"formulas": math["containers"], "images": images["count"]}


def navigate_instantly(tab, href: str) -> None:
    """Follow a link the way a reader does, so that Material's instant navigation handles it."""
    tab.evaluate(
        """(href) => {
          const a = document.createElement('a');
          a.href = href;
          document.body.appendChild(a);
          a.click();
        }""",
        href,
    )


# --------------------------------------------------------------------------------------------- #
# Tests                                                                                        #
# --------------------------------------------------------------------------------------------- #


def test_every_page_renders_self_contained(site, origin, tab, capsys):
    pages = site_pages(site)
    assert len(pages) > 1, f"no pages found under {site}"
    failures: dict[str, list[str]] = {}
    blocked_total: list[str] = []
    formulas = images = 0
    for path in pages:
        problems, counts = check_page(tab, origin + path)
        blocked, errors = tab.recorder.take()
        blocked_total += blocked
        problems += errors + [f"request outside the site blocked: {url}" for url in blocked]
        formulas += counts["formulas"]
        images += counts["images"]
        if problems:
            failures[path] = problems
    with capsys.disabled():
        print(
            f"\nsite: checked {len(pages)} pages ({formulas} formulas, {images} images); "
            f"blocked {len(blocked_total)} requests outside the site"
        )
    assert not failures, "problems on the built pages:\n" + "\n".join(
        f"{path}\n    " + "\n    ".join(problems) for path, problems in failures.items()
    )


@pytest.mark.parametrize(
    ("query", "entry"),
    [
        ("MultiHeadedAttention", "/api/model/attention/#vanilla_transformer.model.attention.MultiHeadedAttention"),
        # names with `_` are split by the search's separator (mkdocs.yml), so they are found whole
        ("make_model", "/api/model/encoder_decoder/#vanilla_transformer.model.encoder_decoder.make_model"),
        ("subsequent_mask", "/api/model/masks/#vanilla_transformer.model.masks.subsequent_mask"),
    ],
)
def test_search_finds_api_entries(origin, tab, query, entry):
    tab.goto(origin + "/", wait_until="load")
    tab.fill("input.md-search__input", query)
    results = tab.locator(".md-search-result__item")
    results.first.wait_for(state="attached", timeout=TIMEOUT_MS)
    hrefs = tab.eval_on_selector_all(".md-search-result a", "links => links.map(a => a.href)")
    found = [re.sub(r"\?h=[^#]*", "", href) for href in hrefs]  # without the highlight query
    assert any(href.endswith(entry) for href in found), found
    blocked, errors = tab.recorder.take()
    assert not blocked and not errors, blocked + errors


def article_api_links(site: Path) -> list[tuple[str, str]]:
    """(article path, link) for every cross-reference from an article to the API reference."""
    links = []
    for index in sorted((site / "articles").rglob("index.html")):
        path = "/" + index.parent.relative_to(site).as_posix() + "/"
        links += [(path, href) for href in _parse(index).autorefs if "/api/" in urljoin(path, href)]
    return links


def test_cross_reference_from_an_article_lands_on_its_api_entry(site, origin, tab):
    links = article_api_links(site)
    assert links, "no article links to an entry of the API reference (e.g. [make_model][vanilla_transformer.model.encoder_decoder.make_model])"
    article, href = links[0]
    tab.goto(origin + article, wait_until="load")
    tab.evaluate("() => { window.__sameDocument = true; }")
    absolute = urljoin(origin + article, href)
    # Material rewrites every href to an absolute URL once the page is loaded.
    link = tab.locator(f'.md-content a.autorefs-internal[href="{absolute}"]').first
    link.scroll_into_view_if_needed()
    link.click()
    target = urlsplit(absolute)
    tab.wait_for_function("(path) => location.pathname === path", arg=target.path)
    assert target.path.startswith("/api/"), target.path
    anchor = unquote(target.fragment)
    assert anchor, href
    tab.wait_for_function("(id) => document.getElementById(id) !== null", arg=anchor)
    heading = tab.evaluate("(id) => document.getElementById(id).textContent", anchor)
    assert anchor.rsplit(".", 1)[-1] in heading, (anchor, heading)
    assert tab.evaluate("() => window.__sameDocument === true"), "the link reloaded the page"
    blocked, errors = tab.recorder.take()
    assert not blocked and not errors, blocked + errors


def pages_with_math(site: Path) -> tuple[list[str], list[str]]:
    """Markdown pages with a formula, and notebook pages with `$` in a Markdown cell."""
    markdown, notebooks = [], []
    for path in site_pages(site):
        html = _read(site / path.lstrip("/") / "index.html")
        if "jupyter-wrapper" in html:
            cells = re.findall(r'class="[^"]*jp-RenderedMarkdown[^"]*"[^>]*>(.*?)</div>', html, re.DOTALL)
            if any("$" in cell for cell in cells):
                notebooks.append(path)
        elif 'class="arithmatex"' in html:
            markdown.append(path)
    return markdown, notebooks


def test_instant_navigation_typesets_math(site, origin, tab):
    markdown, notebooks = pages_with_math(site)
    assert markdown, "no Markdown page of the site has math"
    chosen = [page for page in markdown if page != "/"][:1] + notebooks[:1]
    tab.goto(origin + "/", wait_until="load")
    tab.wait_for_function(WAIT_FOR_MATH)
    tab.evaluate("() => { window.__sameDocument = true; }")
    for path in chosen:
        navigate_instantly(tab, origin + path)
        tab.wait_for_function("(path) => location.pathname === path", arg=path)
        tab.wait_for_function(WAIT_FOR_MATH)
        assert tab.evaluate("() => window.__sameDocument === true"), (
            f"navigating to {path} reloaded the page: instant navigation is off"
        )
        math = tab.evaluate(MATH_PROBLEMS, NOT_PROSE)
        assert not math["problems"], (path, math["problems"])
        assert math["containers"] > 0, f"{path}: no formula typeset after instant navigation"
    blocked, errors = tab.recorder.take()
    assert not blocked and not errors, blocked + errors


def test_dark_mode_follows_the_reader(browser, origin):
    context = browser.new_context(color_scheme="dark")
    try:
        page = context.new_page()
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(origin) else route.abort())
        page.goto(origin + "/", wait_until="load")
        scheme = "() => document.body.getAttribute('data-md-color-scheme')"
        assert page.evaluate(scheme) == "slate"
        # The toggle in the header switches to the light scheme.
        page.evaluate(
            """() => Array.from(document.querySelectorAll('[data-md-component=palette] label'))
                       .find((label) => label.offsetParent !== null).click()"""
        )
        page.wait_for_function(f"() => ({scheme})() === 'default'")
    finally:
        context.close()


# --------------------------------------------------------------------------------------------- #
# Links and anchors of the built HTML (no browser)                                             #
# --------------------------------------------------------------------------------------------- #


@functools.cache
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


class _LinksAndIds(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.autorefs: list[str] = []  # cross-references made by mkdocs-autorefs

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href") and "autorefs-internal" in (attrs.get("class") or "").split():
            self.autorefs.append(attrs["href"])
        for attr in ("href", "src"):
            if attrs.get(attr) and tag in ("a", "img", "script", "link", "source", "iframe"):
                self.links.append(attrs[attr])


@functools.cache
def _parse(path: Path) -> _LinksAndIds:
    parser = _LinksAndIds()
    parser.feed(_read(path))
    return parser


def _target_file(site: Path, path: str) -> Path | None:
    rel = posixpath.normpath(unquote(path)).lstrip("/")
    candidate = site / rel if rel not in ("", ".") else site
    if candidate.is_dir():
        candidate = candidate / "index.html"
    return candidate if candidate.is_file() else None


def test_every_internal_link_and_anchor_resolves(site):
    broken = []
    pages = 0
    for html_file in sorted(site.rglob("*.html")):
        if html_file.relative_to(site).parts[0] == "assets":
            continue
        pages += 1
        page_url = "/" + html_file.relative_to(site).as_posix()
        for link in _parse(html_file).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue
            resolved = urlsplit(urljoin(page_url, link))
            target = _target_file(site, resolved.path)
            if target is None:
                broken.append(f"{page_url}: {link} (no such file)")
                continue
            if (resolved.fragment and target.suffix == ".html"
                    and unquote(resolved.fragment) not in _parse(target).ids):
                broken.append(f"{page_url}: {link} (no id {resolved.fragment!r} on the target page)")
    assert pages > 1
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:100])


def test_pages_are_discovered(site):
    pages = site_pages(site)
    assert "/" in pages and "/api/model/attention/" in pages, pages
    assert all(not p.startswith("/404") for p in pages)


# --------------------------------------------------------------------------------------------- #
# The figures hook (no browser)                                                                #
# --------------------------------------------------------------------------------------------- #


def _figures_hook():
    import importlib.util

    spec = importlib.util.spec_from_file_location("figures_hook", ROOT / "docs" / "hooks" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figure_hook_renders_deterministic_svg(tmp_path):
    hook = _figures_hook()
    (tmp_path / "figures").mkdir()
    script = tmp_path / "figures" / "noise.py"
    script.write_text(
        "import matplotlib.pyplot as plt\n"
        "import torch\n"
        "def draw():\n"
        "    fig, ax = plt.subplots(figsize=(2, 2))\n"
        "    ax.plot(torch.randn(5).tolist(), label='noise')\n"
        "    ax.legend()\n"
        "    return fig\n",
        encoding="utf-8",
    )
    assert hook.figure_scripts(tmp_path) == [script]
    first, second = hook.render_svg(script), hook.render_svg(script)
    assert first.startswith(b"<?xml") and b"<svg" in first
    assert first == second  # seeded, no date, fixed ids
    assert b"<dc:date>" not in first


def test_a_failing_figure_script_fails_the_build_with_its_name(tmp_path):
    from mkdocs.exceptions import PluginError

    hook = _figures_hook()
    (tmp_path / "figures").mkdir()
    broken = tmp_path / "figures" / "broken.py"
    broken.write_text("def draw():\n    raise RuntimeError('no data')\n", encoding="utf-8")
    with pytest.raises(PluginError, match=r"docs/figures/broken\.py failed: RuntimeError: no data"):
        hook.render_svg(broken)
    not_a_figure = tmp_path / "figures" / "number.py"
    not_a_figure.write_text("def draw():\n    return 3\n", encoding="utf-8")
    with pytest.raises(PluginError, match=r"number\.py: draw\(\) returned int"):
        hook.render_svg(not_a_figure)


# --------------------------------------------------------------------------------------------- #
# Legible on a phone and a desktop, light and dark                                             #
# --------------------------------------------------------------------------------------------- #

PHONE, DESKTOP = 390, 1400
MIN_TEXT_PX = 11  # the smallest figure text, as displayed

LAYOUT = """() => {
  const content = document.querySelector('.md-content__inner');
  const out = {scrollWidth: document.scrollingElement.scrollWidth, innerWidth: innerWidth,
               content: content ? content.getBoundingClientRect().width : 0,
               formulas: [], pres: [], figures: [], editors: [], prompts: 0, blocks: [], tables: []};
  const column = content ? content.getBoundingClientRect().right : innerWidth;
  const blocks = '.md-content pre, .md-content pre > code, .md-content .md-typeset__scrollwrap, '
    + '.md-content table, '
    + '.jupyter-wrapper .jp-OutputArea-output';
  for (const el of document.querySelectorAll(blocks)) {
    if (el.offsetParent === null) continue;
    const box = el.getBoundingClientRect();
    out.blocks.push({what: el.tagName.toLowerCase() + '.' + (el.className || '').split(' ')[0],
                     text: el.textContent.trim().slice(0, 60), past: box.right - column,
                     scrolls: el.scrollWidth > el.clientWidth + 1});
  }
  for (const el of document.querySelectorAll('.md-content div.arithmatex, .jupyter-wrapper mjx-container[display="true"]')) {
    const svg = el.querySelector('svg');
    out.formulas.push({tex: el.textContent.trim().slice(0, 60), width: svg ? svg.getBoundingClientRect().width : 0});
  }
  for (const pre of document.querySelectorAll('.md-content pre')) {
    if (pre.offsetParent === null) continue;
    const box = pre.getBoundingClientRect();
    out.pres.push({text: pre.textContent.trim().slice(0, 60), overflows: pre.scrollWidth > pre.clientWidth + 1,
                   overflowX: getComputedStyle(pre).overflowX, whiteSpace: getComputedStyle(pre).whiteSpace,
                   right: box.right});
  }
  for (const img of document.querySelectorAll('.md-content img[src*="assets/figures/"]')) {
    const holder = img.parentElement;
    out.figures.push({name: img.getAttribute('src').split('/').pop(), width: img.getBoundingClientRect().width,
                      scrolls: holder.scrollWidth > holder.clientWidth + 1});
  }
  for (const editor of document.querySelectorAll('.jupyter-wrapper .jp-CodeCell .jp-InputArea-editor')) {
    // an exercise's answer is folded, and indented inside its box when open
    if (editor.closest('.admonition, details')) continue;
    out.editors.push(editor.getBoundingClientRect().width);
  }
  for (const table of document.querySelectorAll('.md-content table')) {
    if (table.offsetParent === null && getComputedStyle(table).display !== 'block') continue;
    const columns = Math.max(0, ...Array.from(table.rows).map((row) => row.cells.length));
    const wrap = table.closest('.md-typeset__scrollwrap, .jp-OutputArea-output');
    const scrolls = (el) => el !== null && el.scrollWidth > el.clientWidth + 1;
    out.tables.push({columns, text: table.textContent.trim().slice(0, 60),
                     scrolls: scrolls(table) || scrolls(wrap),
                     right: table.getBoundingClientRect().right});
  }
  out.prompts = Array.from(document.querySelectorAll('.jp-InputPrompt, .jp-OutputPrompt'))
    .filter((el) => el.offsetWidth > 0 && el.textContent.trim()).length;
  return out;
}"""


def _figure_facts(site: Path) -> dict[str, tuple[float, float]]:
    """name.svg -> (viewBox width, smallest font size) of every figure drawn by docs/figures/."""
    facts = {}
    for svg in (site / "assets" / "figures").glob("*.svg"):
        head = svg.read_text(encoding="utf-8")[:2000]
        box = re.search(r'viewBox="0 0 ([0-9.]+) [0-9.]+"', head)
        font = re.search(r'data-min-font-pt="([0-9.]+)"', head)
        assert box and font, f"{svg.name}: no viewBox or data-min-font-pt on its <svg>"
        facts[svg.name] = (float(box.group(1)), float(font.group(1)))
    return facts


def _layouts(browser, origin, pages, width, scheme="light"):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(origin) else route.abort())
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    layouts = {}
    try:
        for path in pages:
            page.goto(origin + path, wait_until="load")
            page.wait_for_function(WAIT_FOR_MATH, timeout=TIMEOUT_MS)
            layouts[path] = page.evaluate(LAYOUT)
    finally:
        context.close()
    return layouts


@pytest.fixture(scope="module")
def phone(site, browser, origin):
    """The layout of every page at 390 px, loaded once."""
    return _layouts(browser, origin, site_pages(site), PHONE)


@pytest.fixture(scope="module")
def desktop(site, browser, origin):
    """The layout of every page at 1400 px, loaded once."""
    return _layouts(browser, origin, site_pages(site), DESKTOP)


def test_display_formulas_are_visible_on_a_phone(phone):
    collapsed = [f"{path}: {f['tex']!r} is {f['width']:.0f} px wide"
                 for path, layout in phone.items() for f in layout["formulas"] if f["width"] <= 50]
    assert sum(len(layout["formulas"]) for layout in phone.values()) > 0
    assert not collapsed, "display formulas collapsed at 390 px:\n" + "\n".join(collapsed)


def test_no_page_scrolls_sideways_on_a_phone(phone):
    wide = {path: layout["scrollWidth"] for path, layout in phone.items()
            if layout["scrollWidth"] > layout["innerWidth"] + 1}
    assert not wide, f"pages wider than the {PHONE} px screen (scrollWidth): {wide}"


def test_code_wraps_and_output_scrolls_inside_itself_on_a_phone(phone):
    """At 390 px the code of a Markdown page wraps its long lines (docs/stylesheets/extra.css),
    so no character hides behind a sideways scroll; a block that is still wider than the screen
    (a notebook's printed output) scrolls inside itself, and nothing reaches past the screen."""
    problems = []
    for path, layout in phone.items():
        for pre in layout["pres"]:
            if pre["overflows"] and pre["overflowX"] not in ("auto", "scroll"):
                problems.append(f"{path}: {pre['text']!r} is cut off (overflow-x: {pre['overflowX']})")
            if pre["right"] > PHONE + 1:
                problems.append(f"{path}: {pre['text']!r} reaches past the screen ({pre['right']:.0f} px)")
        for block in layout["blocks"]:
            if block["what"].startswith("code") and block["scrolls"]:
                problems.append(f"{path}: code {block['text']!r} scrolls sideways instead of wrapping")
    assert not problems, "\n".join(problems[:50])


# The API reference shows the package's source, whose lines are longer than the text column.
API_PAGES = "/api/"


def _too_wide(desktop, kinds) -> list[str]:
    return [
        f"{path}: {block['what']} {block['text']!r} "
        + ("scrolls sideways" if block["scrolls"] else f"reaches {block['past']:.0f} px past the text")
        for path, layout in desktop.items() for block in layout["blocks"]
        if (block["scrolls"] or block["past"] > 1) and not path.startswith(API_PAGES)
        and block["what"].split(".")[0] in kinds
    ]


def test_no_table_is_wider_than_the_text_column_on_a_desktop(desktop):
    """At 1400 px no table of the pages people read needs a scroll bar or reaches past the text
    column (on a phone tables scroll inside themselves, which is fine there)."""
    assert sum(block["what"] == "table." for layout in desktop.values() for block in layout["blocks"]) > 10
    problems = _too_wide(desktop, ("table", "div"))
    assert not problems, f"wider than the text column at {DESKTOP} px:\n" + "\n".join(problems[:60])


def test_no_code_block_is_wider_than_the_text_column_on_a_desktop(desktop):
    """At 1400 px no code or output block of the pages people read needs a scroll bar."""
    problems = _too_wide(desktop, ("pre", "code"))
    assert not problems, f"wider than the text column at {DESKTOP} px:\n" + "\n".join(problems[:60])


def test_figure_text_is_at_least_11_px(site, phone, desktop):
    facts = _figure_facts(site)
    assert facts, "no figure drawn under assets/figures/"
    problems, shown = [], 0
    for width, layouts in ((PHONE, phone), (DESKTOP, desktop)):
        for path, layout in layouts.items():
            for fig in layout["figures"]:
                shown += 1
                box_width, font_pt = facts[fig["name"]]
                displayed = font_pt * fig["width"] / box_width
                if displayed < MIN_TEXT_PX - 0.05:
                    problems.append(f"{width} px {path}: {fig['name']} text at {displayed:.1f} px")
                if width == DESKTOP and fig["scrolls"]:
                    problems.append(f"{width} px {path}: {fig['name']} is wider than the text column")
    assert shown, "no page shows a figure"
    assert not problems, "\n".join(problems)


def test_notebook_cells_use_the_full_width_without_prompts(phone, desktop):
    notebooks = 0
    for width, layouts in ((PHONE, phone), (DESKTOP, desktop)):
        for path, layout in layouts.items():
            if not layout["editors"]:
                continue
            notebooks += 1
            assert layout["prompts"] == 0, f"{width} px {path}: {layout['prompts']} In/Out prompts shown"
            narrow = [w for w in layout["editors"] if w < layout["content"] - 2]
            assert not narrow, (
                f"{width} px {path}: {len(narrow)} code cells narrower than the text column "
                f"({min(narrow):.0f} < {layout['content']:.0f} px)"
            )
    assert notebooks, "no notebook page found"


HEATMAP_IMG = ".jupyter-wrapper .celltag_heatmap .jp-RenderedImage img"
OTHER_IMG = (".md-content img[src*='assets/figures/'], "
             ".jupyter-wrapper .jp-Cell:not(.celltag_heatmap) .jp-RenderedImage img")


def _pages_with(site: Path, fragment: str) -> list[str]:
    return [p for p in site_pages(site) if fragment in _read(site / p.lstrip("/") / "index.html")]


def _context(browser, origin, scheme):
    context = browser.new_context(viewport={"width": DESKTOP, "height": 900}, color_scheme=scheme)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(origin) else route.abort())
    return context


def test_figures_are_not_white_cards_in_dark_mode(site, browser, origin):
    """In the dark scheme no figure is a light card. Drawings are inverted by CSS; heatmaps are
    not (inverting a colour map flips "bright = high"): they are drawn on a transparent background,
    so the page shows through their margins."""
    from io import BytesIO

    from PIL import Image, ImageStat

    pages = [(p, OTHER_IMG) for p in _pages_with(site, "assets/figures/")[:2]]
    pages += [(p, OTHER_IMG) for p in _pages_with(site, "jp-RenderedImage")[:1]]
    pages += [(p, HEATMAP_IMG) for p in _pages_with(site, "celltag_heatmap")[:2]]
    assert len(pages) == 5, "expected pages with drawings, notebook figures and heatmaps"
    context = _context(browser, origin, "dark")
    page = context.new_page()
    problems = []
    try:
        for path, selector in pages:
            page.goto(origin + path, wait_until="load")
            assert page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == "slate"
            image = page.locator(selector).first
            image.scroll_into_view_if_needed()
            inverted = "invert" in image.evaluate("(img) => getComputedStyle(img).filter")
            if inverted != (selector == OTHER_IMG):
                problems.append(f"{path}: {selector} is {'' if inverted else 'not '}inverted")
            shot = Image.open(BytesIO(image.screenshot())).convert("L")
            width, height = shot.size
            margin = shot.crop((0, 0, width, max(2, height // 50)))  # the top edge: background
            for name, region in (("figure", shot), ("top margin", margin)):
                mean = ImageStat.Stat(region).mean[0]
                if mean > 110:
                    problems.append(f"{path}: {name} of the first figure has brightness {mean:.0f} of 255")
    finally:
        context.close()
    assert not problems, "figures shown as light cards in dark mode:\n" + "\n".join(problems)


def test_printed_tables_are_shown_as_tables(site):
    """No page shows a table as printed text: an output block of three or more lines that each
    hold three columns or more, separated by runs of spaces, is a table printed as code."""
    output = re.compile(
        r'<div class="(?:language-text highlight|jp-RenderedText[^"]*)"[^>]*>\s*<pre>(.*?)</pre>', re.DOTALL
    )
    problems, tables = [], 0
    for path in site_pages(site):
        html = _read(site / path.lstrip("/") / "index.html")
        tables += html.count("<table")
        for match in output.finditer(html):
            text = re.sub(r"<[^>]+>", "", match.group(1))
            rows = [line for line in text.splitlines() if len(re.findall(r"\S {2,}(?=\S)", line)) >= 2]
            if len(rows) >= 3 and "tensor(" not in text:
                problems.append(f"{path}: {rows[0].strip()[:70]!r}")
    assert tables > 10, "the pages show fewer tables than expected"
    assert not problems, "tables printed as text:\n" + "\n".join(problems)


def test_figures_open_in_a_lightbox(site, browser, origin):
    """Clicking a figure opens it in the lightbox at least as large as on the page, in both
    schemes, without a console error."""
    pages = _pages_with(site, "assets/figures/")[:1] + _pages_with(site, "celltag_heatmap")[:1]
    assert len(pages) == 2
    selector = "a.glightbox img[src*='assets/figures/'], .celltag_heatmap a.glightbox img"
    problems, errors = [], []
    for scheme in ("light", "dark"):
        context = _context(browser, origin, scheme)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            for path in pages:
                page.goto(origin + path, wait_until="load")
                image = page.locator(selector).first
                image.scroll_into_view_if_needed()
                shown = image.bounding_box()["width"]
                image.click()
                big = page.locator(".glightbox-container .gslide.current img")
                big.wait_for(state="visible")
                page.wait_for_timeout(800)  # the opening animation
                box = big.bounding_box()
                if box is None or box["width"] < shown - 1:
                    problems.append(f"{scheme} {path}: the lightbox shows the figure smaller than the page")
                # figures have transparent backgrounds and dark text: not on the dark overlay
                if big.evaluate("(img) => getComputedStyle(img).backgroundColor") in ("rgba(0, 0, 0, 0)", "transparent"):
                    problems.append(f"{scheme} {path}: the enlarged figure has no background of its own")
                page.keyboard.press("Escape")
                page.locator(".glightbox-container").wait_for(state="detached")
        finally:
            context.close()
    problems += [f"console error: {e}" for e in errors]
    assert not problems, "\n".join(problems)


def test_notebook_pages_offer_their_notebook(site, origin, tab):
    """Every notebook page has a download button for its .ipynb, which is served and is a valid
    notebook with the page's cells."""
    import urllib.request

    import nbformat

    pages = _pages_with(site, "jupyter-wrapper")
    assert len(pages) >= 4
    for path in pages:
        tab.goto(origin + path, wait_until="load")
        link = tab.locator("a.notebook-download[download]")
        assert link.count() == 1, f"{path}: no download button"
        assert link.is_visible(), f"{path}: the download button is hidden"
        url = link.evaluate("(a) => a.href")
        assert url.endswith(".ipynb"), url
        with urllib.request.urlopen(url) as response:
            notebook = nbformat.reads(response.read().decode("utf-8"), as_version=4)
        nbformat.validate(notebook)
        title = tab.evaluate("() => document.querySelector('.jupyter-wrapper h1').textContent")
        first = next(c for c in notebook.cells if c.cell_type == "markdown")
        assert title.replace("¶", "").strip() in first.source, f"{path}: {url} holds another page"
        assert sum(c.cell_type == "code" for c in notebook.cells) >= 3


def test_no_narrow_table_scrolls_sideways_on_a_phone(phone):
    """At 390 px a table of 5 columns or fewer shows all of its columns: its last column, often
    the one that holds its meaning (a total, what `True` means), is not hidden behind a sideways
    scroll. Such tables stack into one card per row (docs/stylesheets/extra.css)."""
    tables = [(path, table) for path, layout in phone.items() for table in layout["tables"]]
    assert sum(table["columns"] <= 5 for _, table in tables) > 10
    problems = [
        f"{path}: a table of {table['columns']} columns "
        + ("scrolls sideways" if table["scrolls"] else f"reaches {table['right']:.0f} px")
        + f": {table['text']!r}"
        for path, table in tables
        if table["columns"] <= 5 and (table["scrolls"] or table["right"] > PHONE + 1)
    ]
    assert not problems, f"at {PHONE} px:\n" + "\n".join(problems[:40])


# --------------------------------------------------------------------------------------------- #
# Reading path, search previews and exercises                                                   #
# --------------------------------------------------------------------------------------------- #


def _page_path(href: str, base: str = "/") -> str:
    """The URL path of the page a link leads to, without its anchor."""
    path = urlsplit(urljoin(base, href)).path
    return path if path.endswith("/") else path.rsplit("/", 1)[0] + "/"


def _start_here_links(site: Path) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_read(site / "index.html"), "html.parser")
    content = soup.select_one(".md-content")
    heading = next((h for h in content.find_all("h2") if "Start here" in h.get_text()), None)
    assert heading is not None, "Home has no \"Start here\" heading"
    links = []
    for element in heading.find_next_siblings():
        if element.name == "h2":
            break
        links += [_page_path(a["href"]) for a in element.select("a[href]")
                  if not a.get("href", "").startswith(("#", "http")) and "headerlink" not in (a.get("class") or [])]
    return list(dict.fromkeys(links))


def _sidebar_pages(tab, origin) -> list[str]:
    tab.goto(origin + "/", wait_until="load")
    hrefs = tab.eval_on_selector_all(
        "nav.md-nav--primary a.md-nav__link[href]", "links => links.map(a => a.getAttribute('href'))"
    )
    return list(dict.fromkeys(_page_path(href) for href in hrefs if not href.startswith("#")))


def test_sidebar_order_is_home_s_start_here_order(site, origin, tab):
    """Home's "Start here" list links the site's pages in the order of the sidebar: every page of
    the navigation except Home itself and the API reference's module pages (the list links the
    API reference's index), so that reading the list and reading the sidebar are one path."""
    listed = _start_here_links(site)
    sidebar = [page for page in _sidebar_pages(tab, origin)
               if page != "/" and (not page.startswith("/api/") or page == "/api/")]
    assert len(sidebar) > 10, sidebar
    assert listed == sidebar, (
        "Home's \"Start here\" list and the sidebar differ:\n"
        f"  Start here: {listed}\n  sidebar:    {sidebar}"
    )


def test_search_previews_are_plain_text(site):
    """The search index (what the search shows as previews) holds no permalink sign, no
    notebook prompt, no copy notice and no TeX outside code (docs/hooks/search_text.py cleans it)."""
    import json

    docs = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    assert len(docs) > 50
    problems = []
    for doc in docs:
        text = doc["title"] + " " + doc["text"]
        prose = re.sub(r"<pre\b.*?</pre>|<code\b.*?</code>", "", text, flags=re.DOTALL)
        for bad, pattern in (("¶", "¶"), ("a prompt", r"\b(In|Out) ?\[\d*\]:"),
                             ("Copied!", "Copied!"), ("TeX", r"\\\(|\\\[|\$\$|\\frac|\\sqrt")):
            if re.search(pattern, text if bad == "¶" else prose):
                problems.append(f"{doc['location']}: {bad}")
    assert not problems, "search previews with markup:\n" + "\n".join(problems[:40])


def test_exercises_fold_their_answers(site, origin, tab):
    """Every exercise, on Markdown and notebook pages alike, is a `div.admonition.exercise` with
    a title and a closed `details.answer` that holds the answering code."""
    pages = _pages_with(site, "admonition exercise")
    assert pages, "no page has an exercise"
    problems, count = [], 0
    for path in pages:
        tab.goto(origin + path, wait_until="load")
        found = tab.evaluate("""() => Array.from(document.querySelectorAll('.admonition.exercise'))
          .map((box) => {
            const answer = box.querySelector(':scope > details.answer');
            return {title: (box.querySelector(':scope > .admonition-title') || {}).textContent || '',
                    answer: answer !== null, open: answer !== null && answer.open,
                    summary: answer && answer.querySelector('summary') ? answer.querySelector('summary').textContent.trim() : '',
                    code: answer !== null && answer.querySelector('pre') !== null};
          })""")
        for box in found:
            count += 1
            where = f"{path}: {box['title'].strip()!r}"
            if not box["title"].strip().startswith("Exercise:"):
                problems.append(f"{where}: the title does not start with 'Exercise:'")
            if not box["answer"]:
                problems.append(f"{where}: no details.answer inside")
            elif box["open"] or box["summary"] != "Answer" or not box["code"]:
                problems.append(f"{where}: the answer is open, not titled 'Answer', or has no code")
    assert count >= 4, f"only {count} exercises found"
    assert not problems, "\n".join(problems)
