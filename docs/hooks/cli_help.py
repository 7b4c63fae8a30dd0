"""Build hook: the Command line page shows each command's real `--help`.

A line `<!-- cli-help: translate train -->` on a page becomes a console block holding
`$ vanilla-transformer translate train --help` and what that prints, taken from the installed
package at build time (80 columns wide), so the page cannot fall behind the command. A marker
whose command fails to print its help stops the build.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"^<!-- cli-help: *(?P<args>[^>]*?) *-->$", re.MULTILINE)
WIDTH = 80


def help_text(args: list[str]) -> str:
    """What `vanilla-transformer ARGS --help` prints, `WIDTH` columns wide."""
    from vanilla_transformer.cli import main

    out, err = io.StringIO(), io.StringIO()
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([*args, "--help"])
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    if status != 0 or not out.getvalue().strip():
        raise PluginError(f"cli-help: 'vanilla-transformer {shlex.join(args)} --help' failed "
                          f"with status {status}: {err.getvalue().strip()}")
    return out.getvalue().rstrip()


def render(markdown: str) -> str:
    """`markdown` with each cli-help marker replaced by its console block."""

    def block(match: re.Match[str]) -> str:
        args = shlex.split(match["args"])
        command = shlex.join(["vanilla-transformer", *args, "--help"])
        return f"```console\n$ {command}\n{help_text(args)}\n```"

    return MARKER.sub(block, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- cli-help:" not in markdown:
        return markdown
    return render(markdown)
