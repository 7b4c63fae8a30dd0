"""The Command line guide page: every command it shows parses with the real parsers, and every
`--help` on it is rendered from the package at build time (docs/hooks/cli_help.py)."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from vanilla_transformer.cli import build_parser, main
from vanilla_transformer.cli.translate import ACTIONS, build_translate_parser

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guides" / "command-line.md"


def _hook():
    spec = importlib.util.spec_from_file_location("cli_help", ROOT / "docs/hooks/cli_help.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands() -> list[list[str]]:
    """The arguments of each `$ vanilla-transformer ...` line in the page's console blocks."""
    blocks = re.findall(r"^```console\n(.*?)^```", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [shlex.split(line)[2:] for line in lines if line.startswith("$ vanilla-transformer")]


def _parse(argv: list[str]) -> object:
    args = build_parser().parse_args(argv)
    if args.command != "translate":
        return args
    words = args.words
    action = words[0] if words[0] in ACTIONS else "run"
    return build_translate_parser(action).parse_intermixed_args(
        words[1:] if action != "run" else words)


COMMANDS = _commands()


def test_the_page_has_no_code_line_over_88():
    blocks = re.findall(r"^```console\n(.*?)^```", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    assert max(len(line) for block in blocks for line in block.splitlines()) <= 88


def test_the_page_shows_a_session():
    shown = {" ".join(argv[:2]) for argv in COMMANDS}
    assert {"translate numbers", "translate train", "translate eval", "translate RUN",
            "translate export", "--version"} <= shown
    flags = {word for argv in COMMANDS for word in argv if word.startswith("--")}
    assert {"--resume", "--keep-best", "--json", "--output", "--input", "--max-len"} <= flags


@pytest.mark.parametrize("argv", [a for a in COMMANDS if a != ["--version"]], ids=shlex.join)
def test_every_command_on_the_page_parses(argv):
    try:
        args = _parse(argv)
    except SystemExit as exit_:  # argparse refused it (the message is on stderr)
        pytest.fail(f"vanilla-transformer {shlex.join(argv)}: exit {exit_.code}")
    assert args is not None


def test_version_on_the_page(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("vanilla-transformer ")


def test_a_misspelt_flag_would_be_caught():
    with pytest.raises(SystemExit):
        _parse(["translate", "export", "RUN", "--out", "X", "--max-length", "64"])


def test_every_help_is_rendered_from_the_package():
    hook = _hook()
    text = PAGE.read_text()
    markers = hook.MARKER.findall(text)
    assert sorted(markers) == sorted(["", "params", "copy-task", "translate",
                                      *(f"translate {a}" for a in ACTIONS), "translate RUN"])
    rendered = hook.render(text)
    assert "<!-- cli-help" not in rendered
    for args in markers:
        usage = "usage: " + " ".join(["vanilla-transformer", args]).strip()
        assert usage in rendered, usage
    assert "$ vanilla-transformer translate train --help\nusage:" in rendered
    assert "--keep-best" in rendered and "--max-len MAX_LEN" in rendered
    helps = [hook.help_text(shlex.split(args)) for args in markers]
    assert max(len(line) for text in helps for line in text.splitlines()) <= 88


def test_a_failing_help_stops_the_build():
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="vanilla-transformer no-such-command --help"):
        _hook().render("<!-- cli-help: no-such-command -->")


def test_mkdocs_registers_the_hook_and_the_page():
    config = (ROOT / "mkdocs.yml").read_text()
    assert "  - docs/hooks/cli_help.py\n" in config
    nav = config[config.index("  - Guides:"):config.index("  - For contributors:")]
    assert nav.index("guides/translator.py") < nav.index("guides/command-line.md")
