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
. "$(dirname "$0")/paired.sh"
echo "served run, default time line (full) vs --timeline none: $scn"
echo "  ($(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
for _ in $(seq "$rounds"); do
    for level in full none; do
        paired_timed "$level" "$0" --run "$build/ranksim" "$level" "$tmp/r.db"
    done
done
printf '  %-32s %6.2f s wall, %6.2f s CPU\n' "full (median of $rounds):" "$(paired_col full 1)" "$(paired_col full 2)"
printf '  %-32s %6.2f s wall, %6.2f s CPU\n' "none:" "$(paired_col none 1)" "$(paired_col none 2)"
printf '  full / none: %.2fx wall, %.2fx CPU (medians of the pairs); load average after: %s\n' \
    "$(paired_ratio full none 1)" "$(paired_ratio full none 2)" "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "  target: at most 1.5x (issue 29)"
