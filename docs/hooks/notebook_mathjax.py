"""Build hook: notebook pages load no MathJax of their own.

nbconvert puts a MathJax 2 loader (by default from a CDN) and its configuration into every
notebook page. The site loads MathJax 3 once, for every page (docs/javascripts/mathjax.js, served
from assets/vendor/), so the hook removes that block: nothing is fetched from another site and the
formulas are typeset once.
"""

from __future__ import annotations

import re

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

_NBCONVERT_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if "jupyter-wrapper" in html:
        html = _NBCONVERT_MATHJAX.sub("", html)
    return html
