#!/usr/bin/env bash
# Set up a fresh machine (Debian, Python 3.11): a virtual environment with the pinned CPU build of
# PyTorch, the package with its docs and test extras, Chromium for the browser tests, and the
# site's front-end assets from the npm lockfile. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_install() {
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq "$@" >/dev/null
}

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -c "import ensurepip" 2>/dev/null || apt_install python3-venv  # Debian splits it off
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The CPU wheel, pinned: an open-ended torch requirement would pull several GB of CUDA packages.
.venv/bin/python -m pip install --quiet -c constraints.txt torch
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[docs,test]"

# Browser tests use Debian's Chromium (never `playwright install`).
if [ ! -x /usr/bin/chromium ] && [ "${SKIP_CHROMIUM:-0}" != 1 ]; then
    apt_install chromium
fi

# Front-end assets (MathJax) pinned by package-lock.json, copied into the site's sources.
if [ -f package-lock.json ]; then
    command -v npm >/dev/null 2>&1 || apt_install nodejs npm
    npm ci --no-audit --no-fund --silent
    .venv/bin/python scripts/vendor_assets.py
fi
echo "setup complete"
