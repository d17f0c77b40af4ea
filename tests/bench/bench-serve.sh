#!/bin/sh
# tests/bench/bench-serve.sh BUILD SCENARIO — `make bench`: a served workload from load to stored
# run, three times, each into a fresh database: wall time, requests and steps simulated per
# second of wall time, and the step cache's reuse. Then the same with --exact (every step
# simulated). The scenario's own timeline choice is not used: --timeline collectives, as the
# e2e runs store.
set -eu
build=$1
scenario=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "serving $scenario ($(nproc) cores):"
for mode in cached cached cached exact; do
    flag=""
    [ "$mode" = exact ] && flag="--exact"
    db="$tmp/$mode-$$-$(date +%s%N).db"
    start=$(date +%s.%N)
    code=0
    "$build/ranksim" run -q --timeline collectives $flag --db "$db" "$scenario" || code=$?
    end=$(date +%s.%N)
    wall=$(awk "BEGIN { print $end - $start }")
    reqs=$(sqlite3 "$db" "SELECT requests FROM serve_runs" 2>/dev/null || echo 0)
    steps=$(sqlite3 "$db" "SELECT steps FROM serve_runs" 2>/dev/null || echo 0)
    reused=$(sqlite3 "$db" "SELECT reused_steps FROM serve_runs" 2>/dev/null || echo 0)
    done_=$(sqlite3 "$db" "SELECT count(*) FROM requests WHERE finish_us IS NOT NULL" 2>/dev/null || echo 0)
    printf '  %-6s %.2f s wall (exit %d): %s of %s requests finished, %s steps (%s reused); %.0f requests/s, %.0f steps/s\n' \
        "$mode" "$wall" "$code" "$done_" "$reqs" "$steps" "$reused" \
        "$(awk "BEGIN { print $reqs / $wall }")" "$(awk "BEGIN { print $steps / $wall }")"
done
