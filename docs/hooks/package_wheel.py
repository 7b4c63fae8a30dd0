"""Build hook: the site serves the package's own wheel, so a downloaded notebook installs itself.

The wheel is built from this checkout (`pip wheel`, without its dependencies) into
`assets/wheels/` of the site at the end of every build; the trained translators and the
practice starters are inside it. A lesson's notebook opens with one cell that installs it,
with the `translate` extra, from the address `install_command` gives: `site_url` (the
`SITE_URL` variable of the build) followed by the wheel's path. A reader needs nothing but
the notebook and a network. A page shows the same command where it writes `{{ wheel_install }}`
(Getting started, Rebuild it yourself), over two lines so that it fits a phone.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.package_wheel")

WHEEL_DIR = "assets/wheels/"
EXTRA = "translate"
_SOURCES = ("pyproject.toml", "README.md", "LICENSE")
PLACEHOLDER = "{{ wheel_install }}"


def project_root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).parent


def wheel_name(root: Path) -> str:
    """The file name of the wheel `pip wheel` builds from the project at `root`."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"


def wheel_url(config: MkDocsConfig) -> str:
    """Where the built site serves the wheel."""
    base = config.site_url or ""
    return (base if base.endswith("/") else base + "/") + WHEEL_DIR + wheel_name(project_root(config))


def install_command(config: MkDocsConfig) -> str:
    """The one command that installs the package, with its `translate` extra, from the site."""
    return f'pip install "vanilla-transformer[{EXTRA}] @ {wheel_url(config)}"'


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if PLACEHOLDER not in markdown:
        return markdown
    wrapped = f'pip install "vanilla-transformer[{EXTRA}] @ \\\n    {wheel_url(config)}"'
    return markdown.replace(PLACEHOLDER, wrapped)


def build_wheel(root: Path, out: Path) -> Path:
    """Build the wheel of the project at `root` into `out`, from a copy of its sources (so that
    no build/ folder is left in the checkout); return its path."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        source.mkdir()
        for name in _SOURCES:
            shutil.copy(root / name, source / name)
        shutil.copytree(root / "src", source / "src",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                               "--no-build-isolation", "-q", "-w", str(out)],
                              capture_output=True, text=True, check=False)
    path = out / wheel_name(root)
    if done.returncode != 0 or not path.is_file():
        raise PluginError(f"package_wheel hook: pip wheel failed:\n{done.stderr[-2000:]}")
    return path


@event_priority(-50)  # before the lesson notebooks are written, which name it
def on_post_build(config: MkDocsConfig) -> None:
    path = build_wheel(project_root(config), Path(config.site_dir) / WHEEL_DIR)
    log.info("package_wheel hook: wrote %s (%s bytes)", path.name, f"{path.stat().st_size:,}")
