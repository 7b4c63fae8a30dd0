"""Build hook: the starter files of the *Rebuild it yourself* page, downloadable from the site.

Writes `assets/practice/rebuild-starters.zip` (a folder `rebuild-starters/` with one starter file
per step and a README) and each starter file under `assets/practice/starters/`, from the package's own
[`STARTERS`][vanilla_transformer.practice.STARTERS], so the site and
`vanilla-transformer practice start` hand out the same files. The zip is the same bytes on every
build (fixed file dates and order). The zip's README opens with the one command that installs
the package from the wheel this site serves (docs/hooks/package_wheel.py), for a learner who
has nothing else.
"""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

if str(Path(__file__).parent) not in sys.path:  # loaded by path, as mkdocs and the tests do
    sys.path.append(str(Path(__file__).parent))
from package_wheel import install_command  # the wheel hook, beside this file

FOLDER = "assets/practice"
ZIP_NAME = "rebuild-starters"


def starters_zip(starters: dict[str, str]) -> bytes:
    """The zip of the starter files, with fixed dates so that every build writes the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in starters.items():
            info = zipfile.ZipInfo(f"{ZIP_NAME}/{name}", date_time=(2017, 6, 12, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, text.encode("utf-8"), zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def with_install(readme: str, command: str) -> str:
    """The README with the install command after its title."""
    title, _, rest = readme.partition("\n\n")
    install = (f"Install the package first (Python 3.11 or later; it brings PyTorch):\n\n"
               f"    {command}")
    return f"{title}\n\n{install}\n\n{rest}"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from vanilla_transformer.practice import STARTERS

    starters = {**STARTERS, "README.md": with_install(STARTERS["README.md"], install_command(config))}
    files.append(File.generated(config, f"{FOLDER}/{ZIP_NAME}.zip", content=starters_zip(starters)))
    for name, text in STARTERS.items():
        if not name.endswith(".py"):  # the README would become a page; the zip has it
            continue
        files.append(File.generated(config, f"{FOLDER}/starters/{name}", content=text.encode("utf-8")))
    return files
