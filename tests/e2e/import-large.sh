#!/usr/bin/env bash
# tests/e2e/import-large.sh — a large import's report stays short (issue 28, item 8): 256 ranks
# of Flight Recorder dumps with a hang (gen-fr-dumps) print well under 100 lines at 80 columns:
# the rank table folded by state, strided rank sets as "0,8,...,N", no line broken inside a
# number, a "next:" hint; `report --all-ranks` still gives every rank. TAP output.
#   import-large.sh RANKSIM GEN-FR-DUMPS
set -u
bin=$1
gen=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "1..6"
"$gen" 256 "$tmp/set" 20 >/dev/null || { echo "Bail out! gen-fr-dumps failed"; exit 1; }
code=0
COLUMNS=80 "$bin" import --db "$tmp/r.db" "$tmp/set" >"$tmp/out" 2>"$tmp/err" || code=$?
lines=$(wc -l <"$tmp/out")
if [ "$code" = 3 ] && [ "$lines" -lt 100 ]; then echo "ok 1 - exit 3 in $lines lines"
else echo "not ok 1 - exit $code, $lines lines (want 3, < 100)"; head -c 600 "$tmp/err"; fi
if grep -q "folded by state" "$tmp/out" && grep -q -- "--all-ranks" "$tmp/out"; then
  echo "ok 2 - the rank table is folded by state and says how to see each rank"
else echo "not ok 2 - no folded rank table"; fi
if grep -q "0,8,\.\.\.," "$tmp/out"; then echo "ok 3 - strided rank sets are brief"
else echo "not ok 3 - no brief strided rank set"; grep -m2 "arrived" "$tmp/out"; fi
# a continuation line that starts with a digit right after a line ending in a digit: a number cut
bad=$(awk 'prev ~ /[0-9]$/ && $0 ~ /^ +[0-9]/ { print NR; exit } { prev = $0 }' "$tmp/out")
if [ -z "$bad" ]; then echo "ok 4 - no number broken across lines"
else echo "not ok 4 - a number broken at line $bad"; fi
if grep -q "^next: ranksim explain 1" "$tmp/out"; then echo "ok 5 - a next: hint"
else echo "not ok 5 - no next: hint"; tail -3 "$tmp/out"; fi
rows=$("$bin" report --db "$tmp/r.db" --all-ranks 1 | grep -c "^  [0-9][0-9-]* *blocked")
if [ "$rows" -ge 200 ]; then echo "ok 6 - report --all-ranks lists $rows rows"
else echo "not ok 6 - report --all-ranks lists $rows rows"; fi
