#!/bin/sh
# tests/bench/bench-serve-timeline.sh BUILD [ROUNDS] — `make bench`: what the default time line
# costs a served run (issue 29: the README's 200-request scenario, within 1.5x of its time with
# --timeline none). The run with the default time line (full) and the run with --timeline none
# go in turn ROUNDS times (default 7), each into a fresh database; the medians of wall and CPU
# (user + system) seconds are printed, and the ratios round by round (pairs taken together keep
# the ratio meaningful while a shared machine's speed drifts).
set -eu
scn=scenarios/llama70b-tp4-poisson-200.yaml
if [ "$1" = --run ]; then # one measured command: BIN LEVEL DB
    "$2" run -q --timeline "$3" --db "$4" "$scn" >/dev/null
    exit
fi
build=$1
rounds=${2:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
# one timed run at LEVEL into a fresh database: appends "wall cpu" to $tmp/LEVEL
timed() {
    rm -f "$tmp"/*.db "$tmp"/*.db-*
    t0=$(now)
    /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$0" --run "$build/ranksim" "$1" "$tmp/r.db"
    t1=$(now)
    read -r u s <"$tmp/cpu"
    echo "$t0 $t1 $u $s" | awk '{ printf "%.3f %.3f\n", $2 - $1, $3 + $4 }' >>"$tmp/$1"
}
echo "served run, default time line (full) vs --timeline none: $scn"
echo "  ($(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
for _ in $(seq "$rounds"); do
    timed full
    timed none
done
med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { cut -d' ' -f"$2" "$tmp/$1" | med; }
ratio() { paste -d' ' "$tmp/full" "$tmp/none" | awk -v c="$1" '{ print $c / $(c + 2) }' | med; }
printf '  %-32s %6.2f s wall, %6.2f s CPU\n' "full (median of $rounds):" "$(col full 1)" "$(col full 2)"
printf '  %-32s %6.2f s wall, %6.2f s CPU\n' "none:" "$(col none 1)" "$(col none 2)"
printf '  full / none: %.2fx wall, %.2fx CPU (medians of the pairs); load average after: %s\n' \
    "$(ratio 1)" "$(ratio 2)" "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "  target: at most 1.5x (issue 29)"
