#!/bin/sh
# tests/bench/bench-run.sh BUILD SCENARIO — `make bench`: `ranksim run` with the default time line
# (full), from start to stored run, three times into one database: the wall time of each and
# what each run adds to the file (the database after a checkpoint, so the WAL is counted in).
# Targets (issue 14): the 1,024-rank GLM-5 prefill under 1.5 s and 10 MB per run.
set -eu
build=$1
scenario=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db="$tmp/run.db"
echo "ranksim run $scenario, default time line ($(nproc) cores):"
prev=0
for i in 1 2 3; do
    sync
    start=$(date +%s.%N)
    code=0
    "$build/ranksim" run -q --db "$db" "$scenario" >/dev/null || code=$?
    end=$(date +%s.%N)
    sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
    size=$(stat -c %s "$db")
    rows=$(sqlite3 "$db" "SELECT rank_ops FROM runs WHERE id = $i")
    stored=$(sqlite3 "$db" "SELECT count(*) FROM timeline_ops WHERE run_id = $i")
    printf '  run %d: %.2f s wall (exit %d), +%.1f MB (%s rank rows stored as %s)\n' "$i" \
        "$(awk "BEGIN { print $end - $start }")" "$code" \
        "$(awk "BEGIN { print ($size - $prev) / 1e6 }")" "$rows" "$stored"
    prev=$size
done
echo "  targets: under 1.5 s and 10 MB per run"
