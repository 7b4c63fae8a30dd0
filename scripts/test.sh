#!/usr/bin/env bash
# Run every test: the type check (mypy, strict, on src/) and the linter (ruff, on src/ and tests/),
# the package's unit and property tests, the docstring examples, every code block in README.md and
# the Markdown pages, a strict build of the site (which executes the notebook pages), and the
# browser tests of the built site. pytest's "no tests collected" (exit 5) fails. Last, the
# reader's job, in its quick form: the built wheel in a fresh virtual environment, run from an
# empty folder (scripts/reader_test.sh; `scripts/reader_test.sh all` also runs every lesson's
# notebook, which does not fit in CI's time).
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_MKDOCS_2_WARNING=1  # Material's banner about its successor, printed at every build
start=$(date +%s)
.venv/bin/python -m mypy  # files and options: [tool.mypy] in pyproject.toml
.venv/bin/python -m ruff check src tests
.venv/bin/python -m mkdocs build --strict --site-dir site
.venv/bin/python -m pytest -p no:cacheprovider "$@"
./scripts/reader_test.sh quick
echo "all tests passed in $(( $(date +%s) - start )) s"
