#!/bin/sh
# tests/bench/bench-import.sh BUILD [N [ENTRIES]] — `make bench`: the time `ranksim import` takes
# on an N-rank Flight Recorder set (default 1,024 ranks x 2,000 entries each, the default ring
# buffer, ~1 GiB of JSON; written once by gen-fr-dumps into BUILD/fr-N-ENTRIES and reused), three
# runs, each into a fresh database.
set -eu
build=$1
n=${2:-1024}
entries=${3:-2000}
set_dir="$build/fr-$n-$entries"
if [ ! -f "$set_dir/nccl_trace_rank_$((n - 1)).json" ]; then
    rm -rf "$set_dir"
    "$build/tests/gen-fr-dumps" "$n" "$set_dir" "$entries" >/dev/null
fi
bytes=$(du -sb "$set_dir" | cut -f1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "import of $n Flight Recorder dumps of $entries entries ($((bytes / 1048576)) MiB of JSON, $(nproc) cores):"
for i in 1 2 3; do
    # each run on a quiet disk: the previous run's database (~95 MiB) is written back first,
    # so its write-back does not land in this run's commit
    sync
    start=$(date +%s.%N)
    code=0
    "$build/ranksim" import -q --db "$tmp/r$i.db" "$set_dir" || code=$?
    end=$(date +%s.%N)
    rows=$(sqlite3 "$tmp/r$i.db" "SELECT count(*) FROM rank_ops" 2>/dev/null || echo "?")
    printf '  run %d: %.2f s wall (exit %d, %s collective rows)\n' "$i" \
        "$(awk "BEGIN { print $end - $start }")" "$code" "$rows"
done
# What it found (the generator's hang: TP rank 5 of group N/8*3/5 brings 17 rows, not 16).
if command -v sqlite3 >/dev/null 2>&1; then
    echo "  found: $(sqlite3 "$tmp/r1.db" "SELECT kind || ' in group ' || group_name || ' seq ' ||
        seq || ', culprits ' || json_extract(detail, '$.culprits') FROM diagnostics
        WHERE kind = 'mismatch' LIMIT 1")"
fi
# Where the time goes in one more run.
RANKSIM_TIMING=1 "$build/ranksim" import -q --db "$tmp/t.db" "$set_dir" || true
