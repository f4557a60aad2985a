#!/bin/sh
# Regenerates docs/duplicates.txt: the `duplicates` tool's pairs of places in src/, bench/
# and test/ that share six or more lines (cross-folder pairs included: the tool reads the
# whole tree, rows elsewhere are dropped), each with why it stays, from
# docs/duplicates-reasons.txt (scripts/duplicates-annotate.mjs). Prints how many pairs
# have no reason yet.
set -eu
cd "$(dirname "$0")/.."
duplicates --most 200 --seconds 120 |
  awk '!/^D[0-9]+ / || $2 ~ /^(src|bench|test)\// && $4 ~ /^(src|bench|test)\//' |
  node scripts/duplicates-annotate.mjs >docs/duplicates.txt
