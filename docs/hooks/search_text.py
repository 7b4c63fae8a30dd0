"""Build hook: the search index holds plain text.

The search shows a preview of each hit, taken from the index that the search plugin writes after
the build. The hook writes the TeX in it out in Unicode (`tex_to_text`: `\\sqrt{d_k}` becomes
`√d_k`), outside code only, and removes the headings' permalink signs, notebook prompts
(`In [3]:`) and the code blocks' "Copied!" notices (`clean_search_text`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority

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


@event_priority(-100)  # after the search plugin has written the index
def on_post_build(config: MkDocsConfig) -> None:
    index = Path(config.site_dir) / "search" / "search_index.json"
    if not index.is_file():
        return
    data = json.loads(index.read_text(encoding="utf-8"))
    for doc in data.get("docs", []):
        for key in ("title", "text"):
            if isinstance(doc.get(key), str):
                doc[key] = clean_search_text(doc[key])
    index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
