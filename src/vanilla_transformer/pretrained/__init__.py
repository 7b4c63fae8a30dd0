"""The trained translators that ship inside the package: `numbers-de` and `numbers-fr`.

Each is a run folder as `translate train` writes one: `model.pt` (the average of the last five
checkpoints, section 6.1 of the paper, holding its configuration and its tokenizer) and
`tokenizer.json`. Both were trained with the default settings of `translate train`
(`paper-small`, seed 0) on the number corpus of `translate numbers` (split seed 0), English
number words to German or to French words. `numbers-de` also holds `manifest.json` (its
settings and test score) and `train_numbers.json` (the numbers of 1000 and above it saw in
training). The site's Try it page runs the same weights in the browser.

A name is accepted wherever a run folder is: `vanilla-transformer translate numbers-de
"four hundred and twenty-one"`, `translate eval numbers-de ...`, `translate export numbers-de
...` and [`load_translator`][vanilla_transformer.training.run_folder.load_translator]. How they
were trained is on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TRANSLATORS", "translator_folder", "resolve_run"]

TRANSLATORS = {
    "numbers-de": "English number words to German, 0 to 999,999",
    "numbers-fr": "English number words to French, 0 to 999,999",
}
"""The packaged translators' names and what each translates."""

_HERE = Path(__file__).resolve().parent


def translator_folder(name: str) -> Path:
    """The installed folder of the packaged translator `name`.

    Raises:
        ValueError: if `name` is not one of `TRANSLATORS`.

    Examples:
        >>> sorted(p.name for p in translator_folder("numbers-de").glob("*.*"))[:2]
        ['manifest.json', 'model.pt']
    """
    if name not in TRANSLATORS:
        raise ValueError(f"no packaged translator named {name!r}; the names are "
                         f"{', '.join(TRANSLATORS)}")
    return _HERE / name


def resolve_run(run: str | os.PathLike[str]) -> Path:
    """The run folder `run` names: a folder that exists, else a packaged translator's name.

    A folder of the same name as a packaged translator wins, so that a run trained into
    `numbers-de/` is the one used from its parent folder.

    Examples:
        >>> resolve_run("numbers-fr").name, resolve_run("runs/mine")
        ('numbers-fr', PosixPath('runs/mine'))
    """
    path = Path(os.fspath(run))
    if isinstance(run, str) and run in TRANSLATORS and not path.is_dir():
        return translator_folder(run)
    return path
