#!/usr/bin/env bash
# Run the package as a reader does, outside the repository: build the wheel, install it with the
# `translate` extra into a fresh virtual environment, and from an empty folder run
#   - every lesson's downloadable notebook (from the built site: build it first), top to bottom
#     with nbclient, its install cell pointed at the wheel just built;
#   - the README's Quick start and the Getting started page's Python blocks;
#   - `vanilla-transformer translate numbers-de "four hundred and twenty-one"`;
#   - `practice start`, the Rebuild page's starters zip, and `practice check translator` with the
#     reference answers (tests/practice/solutions/).
# Usage: scripts/reader_test.sh [quick|all]   (default all; quick leaves out the notebooks)
# scripts/test.sh runs `all` after the site build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SCOPE=${1:-all}
SITE=${SITE:-$ROOT/site}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
start=$(date +%s)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
say() { echo "reader test: $* ($(( $(date +%s) - start )) s)"; }

# The wheel, from a copy of the sources (no build/ left in the checkout).
mkdir -p "$WORK/source" "$WORK/dist"
cp pyproject.toml README.md LICENSE "$WORK/source/"
cp -r src "$WORK/source/src"
find "$WORK/source" -name __pycache__ -prune -exec rm -rf {} +
.venv/bin/python -m pip wheel "$WORK/source" --no-deps --no-build-isolation -q -w "$WORK/dist"
WHEEL=$(ls "$WORK"/dist/*.whl)
say "built $(basename "$WHEEL"): $(stat -c %s "$WHEEL") bytes"

# A fresh environment: the pinned CPU PyTorch, then the wheel with its translate extra only.
"$PYTHON" -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install -q --no-compile -c constraints.txt torch
"$PY" -m pip install -q --no-compile -c constraints.txt "vanilla-transformer[translate] @ file://$WHEEL"
[ "$SCOPE" = quick ] || "$PY" -m pip install -q nbclient ipykernel
say "installed into a fresh venv"

READER="$WORK/reader"  # the reader's empty folder
mkdir "$READER"
cd "$READER"
export PATH="$WORK/venv/bin:$PATH" MPLBACKEND=Agg

# The README's Quick start and the Getting started page's blocks, in page order, as one script
# each (a page's later blocks use the names of its earlier ones, as a reader's session does).
"$PY" - "$ROOT" <<'EOF'
import re, subprocess, sys
from pathlib import Path

root = Path(sys.argv[1])
readme = (root / "README.md").read_text(encoding="utf-8")
quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
page = (root / "docs" / "getting-started.md").read_text(encoding="utf-8")
for name, text in (("quick_start", quick), ("getting_started", page)):
    found = re.findall(r"^( *)```python\n(.*?)^\1```", text, flags=re.M | re.S)
    assert found, f"no python block in {name}"
    code = "\n\n".join("\n".join(line[len(indent):] for line in body.splitlines())
                       for indent, body in found)
    Path(f"{name}.py").write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, f"{name}.py"], capture_output=True, text=True)
    assert done.returncode == 0, f"{name}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    print(f"{name}: {len(found)} blocks ran")
EOF
say "README Quick start and Getting started ran"

german=$(vanilla-transformer translate numbers-de "four hundred and twenty-one")
[ "$german" = vierhunderteinundzwanzig ] || { echo "translate numbers-de printed: $german"; exit 1; }
say "translate numbers-de: $german"

vanilla-transformer practice start starters >/dev/null
status=0
vanilla-transformer practice check subsequent_mask starters/subsequent_mask.py >/dev/null || status=$?
[ "$status" = 1 ] || { echo "an untouched starter should fail its check (1), got $status"; exit 1; }
if [ -f "$SITE/assets/practice/rebuild-starters.zip" ]; then
    "$PY" -m zipfile -e "$SITE/assets/practice/rebuild-starters.zip" zip
    cmp zip/rebuild-starters/attention.py starters/attention.py
    grep -q "pip install" zip/rebuild-starters/README.md
fi
mkdir answers
cp "$ROOT"/tests/practice/solutions/*.py answers/
vanilla-transformer practice check translator answers/translator.py
say "practice start and practice check translator passed"

[ "$SCOPE" = quick ] && { say "quick: done"; exit 0; }

# Every lesson's notebook, as downloaded from the site, its install cell aimed at this wheel.
notebooks=$(find "$SITE/learn" -name "*.ipynb" | sort)
[ -n "$notebooks" ] || { echo "no lesson notebooks under $SITE/learn: build the site first"; exit 1; }
for notebook in $notebooks; do
    "$PY" - "$notebook" "$WHEEL" <<'EOF'
import re, sys, time
import nbformat
from nbclient import NotebookClient

path, wheel = sys.argv[1], sys.argv[2]
notebook = nbformat.read(path, as_version=4)
install = [c for c in notebook.cells if "install" in c.metadata.get("tags", [])]
assert len(install) == 1, f"{path}: {len(install)} install cells"
assert re.search(r"@ https?://\S+\.whl", install[0].source), install[0].source
install[0].source = re.sub(r"@ https?://\S+\.whl", f"@ file://{wheel}", install[0].source)
began = time.time()
NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=False,
               resources={"metadata": {"path": "."}}).execute()
code = [c for c in notebook.cells if c.cell_type == "code"]
assert all(c.execution_count for c in code), path
print(f"{path.rsplit('/', 1)[-1]}: {len(code)} cells ran in {time.time() - began:.0f} s")
EOF
done
say "every lesson notebook ran"
