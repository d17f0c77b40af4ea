#!/bin/sh
# tests/bench/bench-concurrent.sh BUILD [N [ENTRIES]] — `make bench`: how long a second writer and
# the readers take while another ranksim works on the same database (the speed the unit tests
# no longer assert; tests/src/cli/test-reliability.c asserts the ordering facts). Two cases:
#  - a long simulation (8 ranks x 10^7 ops, --timeline none): a second `run`, then `runs`;
#  - an import of an N-rank Flight Recorder set (gen-fr-dumps): a `run` started meanwhile.
# Targets (issue 27): the second run and the readers under 1 s beside a simulation; a run beside
# an import waits at most for the import's one commit, never for its reading.
set -eu
build=$1
n=${2:-256}
entries=${3:-2000}
tmp=$(mktemp -d)
trap 'kill $bg 2>/dev/null || true; rm -rf "$tmp"' EXIT
bg=
db="$tmp/c.db"
now() { date +%s.%N; }
took() { awk "BEGIN { printf \"%.2f\", $2 - $1 }"; }
cat >"$tmp/long.yaml" <<'YAML'
name: long-sim
kind: program
ranks: 8
programs:
  "*": [{op: repeat, times: 10000000, ops: [{op: compute, name: step, us: 1}]}]
YAML
"$build/ranksim" run -q --db "$db" scenarios/healthy-tp-layers.yaml >/dev/null || true
"$build/ranksim" run -q --db "$db" --timeline none "$tmp/long.yaml" >/dev/null 2>&1 &
bg=$!
sleep 0.3
t0=$(now)
"$build/ranksim" run -q --db "$db" scenarios/lse-size-mismatch.yaml >/dev/null || true
t1=$(now)
"$build/ranksim" runs --db "$db" >/dev/null
t2=$(now)
running=yes
kill -0 "$bg" 2>/dev/null || running="no (the figures prove nothing)"
echo "beside a simulating run: second run $(took "$t0" "$t1") s, runs $(took "$t1" "$t2") s" \
    "(first still running: $running); target under 1 s"
wait "$bg" || true
bg=
set_dir="$build/fr-$n-$entries"
if [ ! -f "$set_dir/nccl_trace_rank_$((n - 1)).json" ]; then
    rm -rf "$set_dir"
    "$build/tests/gen-fr-dumps" "$n" "$set_dir" "$entries" >/dev/null
fi
"$build/ranksim" import -q --db "$db" "$set_dir" >/dev/null 2>&1 &
bg=$!
sleep 0.5
t0=$(now)
"$build/ranksim" run -q --db "$db" scenarios/lse-size-mismatch.yaml >/dev/null || true
t1=$(now)
running=yes
kill -0 "$bg" 2>/dev/null || running="no (the figure proves nothing)"
echo "beside an import of $n x $entries FR entries: a run $(took "$t0" "$t1") s" \
    "(import still running: $running)"
wait "$bg" || true
bg=
