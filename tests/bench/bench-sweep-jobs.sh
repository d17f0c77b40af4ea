#!/bin/sh
# tests/bench/bench-sweep-jobs.sh BUILD [ROUNDS] — `make bench`: does `sweep -j 2` scale with
# cores (issue 29: at least 1.8x over -j 1)? The README's sweep (glm52-b200-tp1-pcp4-dcp4-flashmla,
# --vary parallel.prefill_context_parallel_size=1,2,4 --vary workload.prefill=...) with 68
# prompt lengths, 64..4352, instead of the README's 3: 204 variants. -j 1 and -j 2 run in turn
# ROUNDS times (default 5), each into a fresh database; the medians of wall and CPU (user +
# system) seconds are printed, and the ratio of the -j 1 wall to the -j 2 wall, round by round.
# A shared machine limits what any program can gain from a second core, so each round also
# runs two whole -j 1 sweeps at once, each into its own database: twice the work in the wall
# time W2 gives 2 x (-j 1 wall) / W2, what this machine gives two copies of this very work at
# that moment (its ceiling for -j 2, which pays the process's start and the database's close
# once, as -j 1 does). The load average is printed: -j 2 is judged against both.
set -eu
scn=scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml
pcp=parallel.prefill_context_parallel_size=1,2,4
all=$(seq 64 64 4352 | paste -sd, -)
sweep() { # BIN JOBS PREFILLS DB
    "$1" sweep -q "$scn" --vary "$pcp" --vary "workload.prefill=$3" -j "$2" --db "$4" >/dev/null
}
if [ "$1" = --run ]; then # one measured command, run by /usr/bin/time below: BIN WHAT DIR
    case $3 in
    j1) sweep "$2" 1 "$all" "$4/a.db" ;;
    j2) sweep "$2" 2 "$all" "$4/b.db" ;;
    two)
        sweep "$2" 1 "$all" "$4/c1.db" &
        p=$!
        sweep "$2" 1 "$all" "$4/c2.db"
        wait "$p"
        ;;
    esac
    exit
fi
build=$1
rounds=${2:-5}
bin="$build/ranksim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/paired.sh"
echo "sweep -j 1 vs -j 2: $scn, $pcp x 68 prompt lengths = 204 variants"
echo "  ($(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
for _ in $(seq "$rounds"); do
    for what in j1 j2 two; do
        paired_timed "$what" "$0" --run "$bin" "$what" "$tmp"
    done
done
j1_wall=$(paired_col j1 1) j1_cpu=$(paired_col j1 2) j2_wall=$(paired_col j2 1)
j2_cpu=$(paired_col j2 2) two_wall=$(paired_col two 1) two_cpu=$(paired_col two 2)
ratio_j2=$(paired_ratio j1 j2 1)
ratio_two=$(paired_ratio j1 two 1 2)
line() { printf '  %-30s %6.2f s wall, %6.2f s CPU\n' "$1" "$2" "$3"; }
line "-j 1 (median of $rounds):" "$j1_wall" "$j1_cpu"
line "-j 2:" "$j2_wall" "$j2_cpu"
line "two whole -j 1 sweeps at once:" "$two_wall" "$two_cpu"
printf '  -j 2 speed-up: %.2fx (two copies at once: %.2fx the work of one, the machine'"'"'s ceiling now); ' \
    "$ratio_j2" "$ratio_two"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  target: -j 2 at least 1.8x on 2 idle cores (issue 29)"
