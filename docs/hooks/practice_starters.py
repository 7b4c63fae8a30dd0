"""Build hook: the starter files of the *Rebuild it yourself* page, downloadable from the site.

Writes `assets/practice/rebuild-starters.zip` (a folder `rebuild-starters/` with one starter file
per step and a README) and each starter file under `assets/practice/starters/`, from the package's own
[`STARTERS`][vanilla_transformer.practice.STARTERS], so the site and
`vanilla-transformer practice start` hand out the same files. The zip is the same bytes on every
build (fixed file dates and order).
"""

from __future__ import annotations

import io
import zipfile

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

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


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from vanilla_transformer.practice import STARTERS

    files.append(File.generated(config, f"{FOLDER}/{ZIP_NAME}.zip", content=starters_zip(STARTERS)))
    for name, text in STARTERS.items():
        if not name.endswith(".py"):  # the README would become a page; the zip has it
            continue
        files.append(File.generated(config, f"{FOLDER}/starters/{name}", content=text.encode("utf-8")))
    return files
