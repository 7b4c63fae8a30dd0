#!/bin/bash
# `translate train` on 2,000,000 pairs to its first optimizer step: wall time and peak memory.
#
#   benchmarks/translate_train_2m.sh NAME SRC_DIR [extra options]
#
# The corpus is benchmarks/streaming.py's make_corpus (one to three spelled numbers a line,
# German targets): big.tsv 2,000,000 pairs (405 MB, seed 0), small.tsv 200 pairs (seed 1), in
# $WORK (default /tmp/stream2m). SRC_DIR is put first on PYTHONPATH, so the same command
# measures two checkouts. Each stdout line is stamped with the clock; the line "step 1: ..."
# comes after the first optimizer step (and one validation sentence). /usr/bin/time -v's
# report goes to $WORK/NAME.time, the stamped lines to $WORK/NAME.stamps.
set -euo pipefail
name=$1; src=$2; shift 2
work=${WORK:-/tmp/stream2m}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
if [ ! -f "$work/big.tsv" ]; then
  PYTHONPATH=$here/src:$here/benchmarks "$here/.venv/bin/python" -c "
from pathlib import Path
from streaming import make_corpus
make_corpus(Path('$work/big.tsv'), 2_000_000, seed=0)
make_corpus(Path('$work/small.tsv'), 200, seed=1)"
fi
rm -rf "$work/run-$name"
echo "start $(date +%s.%N)" > "$work/$name.stamps"
PYTHONPATH=$src timeout "${TLIMIT:-2400}" /usr/bin/time -v "$here/.venv/bin/vanilla-transformer" \
  translate train --train "$work/big.tsv" --valid "$work/small.tsv" --out "$work/run-$name" \
  --max-steps 1 --eval-size 1 --log-every 1 --no-progress --threads 2 "$@" \
  2> "$work/$name.time" | while IFS= read -r line; do echo "$(date +%s.%N) $line"; done \
  >> "$work/$name.stamps"
grep -E "Elapsed|Maximum resident" "$work/$name.time"
awk 'NR==1{t0=$2} /step 1:/{printf "first step after %.1f s\n", $1 - t0}' "$work/$name.stamps"
