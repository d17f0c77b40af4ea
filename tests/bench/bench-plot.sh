#!/bin/sh
# tests/bench/bench-plot.sh BUILD SCENARIO DP — `make bench`: the time and memory `ranksim plot`
# takes on a large run stored with the full time line (issue 28: the 65,536-rank run, GLM-5
# prefill at data_parallel_size 4096 x TP16; the bar is 10 s and 1 GiB). The run is stored
# once into BUILD/plot-DP.db and reused; the plot is drawn three times.
set -eu
build=$1
scenario=$2
dp=${3:-4096}
db="$build/plot-$dp.db"
if [ ! -f "$db" ]; then
    "$build/ranksim" run -q "$scenario" --set "parallel.data_parallel_size=$dp" \
        --max-rank-ops 0 --db "$db.tmp" || [ $? = 3 ]
    mv "$db.tmp" "$db"
fi
ranks=$(sqlite3 "$db" "SELECT ranks FROM runs ORDER BY id DESC LIMIT 1")
rows=$(sqlite3 "$db" "SELECT count(*) FROM timeline_ops")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "plot of a $ranks-rank run ($rows shared time-line rows; $(nproc) cores):"
for i in 1 2 3; do
    /usr/bin/time -f '%e %M' -o "$tmp/t" "$build/ranksim" plot latest --db "$db" \
        -o "$tmp/p.png" >/dev/null
    read -r secs kib <"$tmp/t"
    printf '  run %d: %.2f s wall, %.0f MiB peak RSS\n' "$i" "$secs" "$(awk "BEGIN { print $kib / 1024 }")"
done
