"""Build hook: the tables of the Code map page, read from the package's source at every build.

docs/code-map.md holds three placeholders, each an HTML comment alone on its line:

- `<!-- code-map:layers -->` becomes a table of the layers, bottom to top: each sub-package with
  the first paragraph of its docstring and the names of all its modules, linked to the API
  reference;
- `<!-- code-map:modules -->` becomes one table per sub-package: each module with its number of
  lines and the first line of its docstring, in the order the sub-package's `__init__.py` imports
  them;
- `<!-- code-map:imports -->` becomes a table of the sub-packages in layer order, each with its
  modules, its lines and the sub-packages it imports from.

docs/api/index.md may hold `<!-- code-map:api-index -->`, which becomes the same list of
sub-packages and modules with links to their API pages.

Everything comes from walking src/vanilla_transformer with `ast`: nothing is imported and no number
or module name is typed by hand, so a new module shows up in every table. A placeholder missing
from the Code map page fails the build.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError

log = logging.getLogger("mkdocs.hooks.code_map")

PAGE = "code-map.md"
PACKAGE = "vanilla_transformer"
# The layers, bottom to top: a module may import only from its own layer and those before it.
LAYERS = ["_checks", "_io", "pretrained", "config", "model", "data", "inference", "analysis",
          "training", "interop", "practice", "cli"]
LAYERS_MARK = "<!-- code-map:layers -->"
MODULES_MARK = "<!-- code-map:modules -->"
API_INDEX_PAGE = "api/index.md"
API_INDEX_MARK = "<!-- code-map:api-index -->"
IMPORTS_MARK = "<!-- code-map:imports -->"


@dataclass
class Module:
    name: str  # dotted, e.g. vanilla_transformer.model.attention
    path: Path
    lines: int
    summary: str
    imports: set[str] = field(default_factory=set)  # dotted names of the package's modules

    @property
    def layer(self) -> str | None:
        """The sub-package (or `_checks`, `_io`) the module belongs to; `None` for the top level."""
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def package_dir(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).parent / "src" / PACKAGE


def _module_name(root: Path, path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(name: str, path: Path, tree: ast.Module) -> set[str]:
    """The package's modules imported anywhere in `tree` (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            # `from . import copy_task` imports a module, not a name
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {n for n in found if n == PACKAGE or n.startswith(PACKAGE + ".")}


def walk(root: Path) -> list[Module]:
    """Every module of the package under `root`, with its imports of the package's modules."""
    # a .py file in a folder without __init__.py is data (the practice starters), not a module
    paths = sorted(p for p in root.rglob("*.py") if (p.parent / "__init__.py").is_file())
    names = {_module_name(root, p) for p in paths}
    modules = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        doc = ast.get_docstring(tree) or ""
        name = _module_name(root, path)
        imports = {n if n in names else n.rpartition(".")[0] for n in _imported(name, path, tree)}
        modules.append(
            Module(
                name=name,
                path=path,
                lines=len(source.splitlines()),
                summary=" ".join(doc.strip().split("\n\n")[0].split()),
                imports={n for n in imports if n in names and n != name},
            )
        )
    return modules


def _reading_order(root: Path, layer: str, modules: list[Module]) -> list[Module]:
    """The modules of a sub-package in the order its `__init__.py` imports them."""
    init = root / layer / "__init__.py"
    order: list[str] = []
    if init.is_file():
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                order.append(f"{PACKAGE}.{layer}.{node.module}")
    rank = {name: i for i, name in enumerate(order)}
    return sorted(modules, key=lambda m: (m.path.name != "__init__.py", rank.get(m.name, len(rank)), m.name))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _api_link(module: Module, docs_dir: Path) -> str:
    """`name` linked to its API entry (`[name][dotted.name]`), or plain for a module without one.

    Sub-packages are rendered on api/index.md (`cli`, which is a module too, on api/cli/index.md),
    the other public modules each on api/<sub-package>/<module>.md.
    """
    short = module.name.removeprefix(PACKAGE + ".")
    parts = short.split(".")
    rendered = (
        module.layer is not None and not module.layer.startswith("_")
        and not any(part.startswith("_") for part in parts)
        and (len(parts) == 1 or (docs_dir / "api" / Path(*parts)).with_suffix(".md").is_file())
    )
    return f"[`{short}`][{module.name}]" if rendered else f"`{short}`"


def modules_tables(root: Path, modules: list[Module], docs_dir: Path) -> str:
    out = []
    for layer in LAYERS:
        members = [m for m in modules if m.layer == layer]
        if not layer.startswith("_"):
            members = _reading_order(root, layer, members)
        heading = f"`{layer}.py`" if layer.startswith("_") else f"`{layer}/`"
        out += [f"**{heading}**", "", "| module | lines | what it is |", "| --- | ---: | --- |"]
        out += [f"| {_api_link(m, docs_dir)} | {m.lines} | {_cell(m.summary)} |" for m in members]
        out.append("")
    return "\n".join(out)


def _layer_name(layer: str) -> str:
    return f"`{layer}.py`" if layer.startswith("_") else f"`{layer}/`"


def _summary_of_layer(root: Path, layer: str, modules: list[Module]) -> str:
    """The first paragraph of the layer's docstring (its `__init__.py`, or the module itself)."""
    own = [m for m in modules if m.name == f"{PACKAGE}.{layer}"]
    return own[0].summary if own else ""


def _members(root: Path, layer: str, modules: list[Module]) -> list[Module]:
    """The public modules of a layer other than its `__init__.py`, in reading order."""
    members = [
        m for m in modules
        if m.layer == layer and not m.name.rpartition(".")[2].startswith("_")
    ]
    if not layer.startswith("_"):
        members = _reading_order(root, layer, members)
    return [m for m in members if m.name != f"{PACKAGE}.{layer}"]


def layers_table(root: Path, modules: list[Module], docs_dir: Path) -> str:
    """The layers, bottom to top: what each is for, in its own docstring, and all its modules."""
    out = ["| layer | sub-package | what it is for | modules |", "| ---: | --- | --- | --- |"]
    for i, layer in enumerate(LAYERS):
        members = _members(root, layer, modules)
        names = []
        for m in members:
            link = _api_link(m, docs_dir)
            short = m.name.rpartition(".")[2]
            names.append(link.replace(f"`{m.name.removeprefix(PACKAGE + '.')}`", f"`{short}`", 1))
        summary = _cell(_summary_of_layer(root, layer, modules))
        listed = ", ".join(names) or "(this one file)"
        out.append(f"| {i} | {_layer_name(layer)} | {summary} | {listed} |")
    return "\n".join(out)


def api_index_table(root: Path, modules: list[Module], docs_dir: Path) -> str:
    """The sub-packages with links, relative to api/index.md, to each module's API page."""
    out = ["| sub-package | what it holds | modules |", "| --- | --- | --- |"]
    for layer in LAYERS:
        if layer.startswith("_"):
            continue
        links = []
        if (docs_dir / "api" / layer / "index.md").is_file():
            links.append(f"[`{layer}`]({layer}/index.md)")
        for m in _members(root, layer, modules):
            short = m.name.rpartition(".")[2]
            page = docs_dir / "api" / layer / f"{short}.md"
            links.append(f"[`{short}`]({layer}/{short}.md)" if page.is_file() else f"`{short}`")
        summary = _cell(_summary_of_layer(root, layer, modules))
        out.append(f"| `{layer}` | {summary} | {', '.join(links)} |")
    return "\n".join(out)


def imports_table(modules: list[Module]) -> str:
    out = ["| layer | sub-package | modules | lines | imports from |", "| ---: | --- | ---: | ---: | --- |"]
    layer_of = {m.name: m.layer for m in modules}
    for i, layer in enumerate(LAYERS):
        members = [m for m in modules if m.layer == layer]
        used = {layer_of[n] for m in members for n in m.imports} - {layer, None}
        used_text = ", ".join(f"`{u}`" for u in LAYERS if u in used) or "(nothing of the package)"
        name = f"`{layer}.py`" if layer.startswith("_") else f"`{layer}/`"
        out.append(f"| {i} | {name} | {len(members)} | {sum(m.lines for m in members):,} | {used_text} |")
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config: MkDocsConfig, files) -> str:
    root, docs_dir = package_dir(config), Path(config.docs_dir)
    if page.file.src_uri == API_INDEX_PAGE and API_INDEX_MARK in markdown:
        return markdown.replace(API_INDEX_MARK, api_index_table(root, walk(root), docs_dir))
    if page.file.src_uri != PAGE:
        return markdown
    for mark in (LAYERS_MARK, MODULES_MARK, IMPORTS_MARK):
        if mark not in markdown:
            raise PluginError(f"code-map hook: docs/{PAGE} has no {mark} placeholder")
    modules = walk(root)
    markdown = markdown.replace(LAYERS_MARK, layers_table(root, modules, docs_dir))
    markdown = markdown.replace(MODULES_MARK, modules_tables(root, modules, docs_dir))
    return markdown.replace(IMPORTS_MARK, imports_table(modules))
