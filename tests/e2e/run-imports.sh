#!/usr/bin/env bash
# tests/e2e/run-imports.sh — `ranksim import` on every dump and log fixture of tests/data/import/
# and `ranksim match` on seed 004, each against the exit code its case promises
# (tests/data/import/README.md), optionally under valgrind (TAP output for meson).
#   run-imports.sh RANKSIM SOURCE_DIR [--valgrind]
set -u
bin=$1
src=$2
vg=""
[ "${3:-}" = "--valgrind" ] && vg="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fr=$src/tests/data/import/fr
nccl=$src/tests/data/import/nccl

# case|expected exit|command arguments after "ranksim"
cases=(
  "seed004-json|3|import --db $tmp/a.db -q $fr/seed004-json"
  "seed004-p2|3|import --db $tmp/b.db -q $fr/seed004-p2"
  "seed004-p5|3|import --db $tmp/b.db -q $fr/seed004-p5"
  "tp-one-fewer|3|import --db $tmp/b.db -q $fr/tp-one-fewer"
  "cycle4|3|import --db $tmp/b.db -q $fr/cycle4"
  "missing-rank|3|import --db $tmp/b.db -q $fr/missing-rank"
  "nccl seed004|3|import --db $tmp/b.db -q $nccl/seed004"
  "nccl interleaved|3|import --db $tmp/b.db -q $nccl/seed004-interleaved.log"
  "fr_trace tests' shape|3|import --db $tmp/b.db -q $src/tests/data/import/fr-other/fr-tests-shape"
  "torchcomms hook dumps|3|import --db $tmp/b.db -q $src/tests/data/import/fr-other/torchcomms"
  "empty ring buffers: inconclusive|4|import --db $tmp/b.db -q $src/tests/data/import/fr-other/empty-buffers"
  "inspector: one rank behind|3|import --db $tmp/b.db -q $src/tests/data/import/inspector/one-behind"
  "inspector: level ranks are inconclusive|4|import --db $tmp/b.db -q $src/tests/data/import/inspector/all-level"
  "ras: one rank behind|3|import --db $tmp/b.db -q $src/tests/data/import/ras/one-behind"
  "nccl ordering deadlock|3|import --db $tmp/o.db -q $nccl/ordering/two-comms.log"
  "bad truncated|2|import --db $tmp/c.db -q $fr/bad/truncated"
  "bad forbidden|2|import --db $tmp/c.db -q $fr/bad/forbidden"
  "bad other-schema|2|import --db $tmp/c.db -q $fr/bad/other-schema"
  "bad rank-twice|2|import --db $tmp/c.db -q $fr/bad/rank-twice"
  "bad nccl mixed jobs|2|import --db $tmp/c.db -q $nccl/bad/mixed-jobs"
  "match flashinfer|0|match 1 $src/scenarios/glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml --db $tmp/a.db"
  "match flashmla|3|match 1 $src/scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml --db $tmp/a.db"
  "explain import|0|explain 1 --db $tmp/a.db --dot $tmp/w.dot"
  "trace import|0|trace 1 --db $tmp/a.db -o $tmp/t.json"
)
echo "1..$(( ${#cases[@]} + 1 ))"
n=0
fail=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  IFS='|' read -r name want args <<<"$c"
  # shellcheck disable=SC2086
  $vg "$bin" $args >"$tmp/out.txt" 2>"$tmp/err.txt"
  got=$?
  if [ "$got" != "$want" ]; then
    echo "not ok $n - $name: exit $got, expected $want"
    sed 's/^/# /' "$tmp/err.txt" | head -20
    fail=1
    continue
  fi
  echo "ok $n - $name (exit $got)"
done
# The cross-communicator ordering deadlock (NVIDIA/nccl#899) is found from COLL lines alone,
# as a cycle, and named.
n=$((n + 1))
if "$bin" report latest --db "$tmp/o.db" 2>&1 | tr -s ' \n' ' ' |
    grep -q "cross-communicator ordering deadlock"; then
  echo "ok $n - the ordering deadlock is told as such"
else
  echo "not ok $n - the ordering deadlock is not told as such"; fail=1
fi
[ -f "$tmp/c.db" ] && { echo "# a bad input left a database behind"; fail=1; }
exit $fail
