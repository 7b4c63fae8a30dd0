#!/usr/bin/env bash
# Build the site (executing every notebook page) and serve it locally.
set -euo pipefail
cd "$(dirname "$0")/.."
ADDR=${ADDR:-127.0.0.1:8000}
export SITE_URL="http://$ADDR/"  # instant navigation needs the address the site is served at
export NO_MKDOCS_2_WARNING=1
.venv/bin/python -m mkdocs build --strict --site-dir site
echo "serving the site at http://$ADDR/"
exec .venv/bin/python -m http.server --bind "${ADDR%:*}" --directory site "${ADDR#*:}"
