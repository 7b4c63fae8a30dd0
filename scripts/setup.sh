#!/usr/bin/env bash
# Set up a fresh machine (Debian, Python 3.11): a virtual environment with the pinned CPU build of
# PyTorch, the package with its docs and test extras, Chromium for the browser tests, and the
# site's front-end assets from the npm lockfile. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The CPU wheel, pinned: an open-ended torch requirement would pull several GB of CUDA packages.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[docs,test]"

# Browser tests use Debian's Chromium (never `playwright install`).
if [ ! -x /usr/bin/chromium ] && [ "${SKIP_CHROMIUM:-0}" != 1 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi

# Front-end assets (MathJax) pinned by package-lock.json, copied into the site's sources.
if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund --silent
    .venv/bin/python scripts/vendor_assets.py
fi
echo "setup complete"
