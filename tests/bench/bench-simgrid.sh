#!/bin/sh
# tests/bench/bench-simgrid.sh BUILD [LAYERS] [SIZES...] — issue 29's side-by-side: the synthetic
# TP-8 program of gen-program.sh (per layer: compute 60 us, all_gather, compute 90 us, all_reduce
# of 1,835,008 bf16 elements per rank in groups of 8) simulated by ranksim (`ranksim run
# --timeline none`) and by SimGrid SMPI (tests/bench/smpi/tp-program.c, the same program as MPI
# code) at the same sizes: wall and CPU seconds (user + system, since the cores are shared),
# rank-ops per CPU second and peak RSS. SimGrid is an optional tool: without smpicc/smpirun
# (Debian: libsimgrid-dev) the bench says it is skipped and exits 0.
#
# SMPI set-up (stated in doc/performance.md): a <cluster> of RANKS hosts, each with a private
# 450 GBps, 1 us link to a non-blocking crossbar (NVLink 4 per H100: 18 links x 25 GB/s per
# direction, NVIDIA H100 datasheet; 1 us is an assumed per-hop latency), no backbone, so TP
# groups never share a link; smpi/simulate-computation:no with smpi_execute() for the compute
# durations; smpi/privatization:no (the program has no globals); ring all_gather and
# reduce-scatter+all_gather ring all_reduce (allgather:ring, allreduce:lr), NCCL's ring choice;
# buffers from SMPI_SHARED_MALLOC with smpi/shared-malloc:local (the default, global, took 7x the
# CPU at 256 ranks x 10 layers). Environment: SMPI_OP=noop|sum, the reduction: noop (default) is
# a user operation that does nothing, so SMPI's own cost is measured; sum makes SMPI add the
# 2-byte elements for real (3.3x the CPU at 1,024 ranks x 10 layers). SMPI_CPU_CAP=CPU seconds a
# SimGrid run may use (ulimit -t, default 300: CPU, not wall, since the cores are shared; a run
# cut short is marked so and its row is a lower bound).
set -eu
if ! command -v smpicc >/dev/null 2>&1 || ! command -v smpirun >/dev/null 2>&1; then
    echo "ranksim vs SimGrid SMPI: skipped (smpicc/smpirun not installed; Debian: libsimgrid-dev)"
    exit 0
fi
build=$1
layers=${2:-100}
shift 2 2>/dev/null || shift $#
sizes=${*:-256 1024}
op=${SMPI_OP:-noop}
cap=${SMPI_CPU_CAP:-300}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
smpicc -O2 -o "$tmp/tp-program" "$here/smpi/tp-program.c"
version=$(smpirun --version 2>/dev/null | head -n 1)
echo "ranksim vs SimGrid SMPI ($version): synthetic TP-8 program, $layers layers x 4 ops per rank" \
    "($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
printf '%10s %7s %-13s %12s %9s %9s %14s %10s\n' ranks layers tool rank-ops "wall s" "cpu s" \
    "rank-ops/cpu-s" "peak MiB"

# row N TOOL TIMEFILE STATUS — one line of the table from /usr/bin/time's "%e %U %S %M" (its last
# line: a failed command's file starts with "Command exited with non-zero status").
row() {
    tail -n 1 "$3" | awk -v n="$1" -v l="$layers" -v tool="$2" -v ops=$(($1 * layers * 4)) \
        -v st="$4" '{ c = $2 + $3; if (c <= 0) c = 0.01;
                      printf "%10d %7d %-13s %12d %9.2f %9.2f %14.0f %10.0f%s\n", n, l, tool, ops,
                             $1, c, ops / c, $4 / 1024, st }'
}

# platform N — SMPI platform and host file for N hosts (see the header for the figures).
platform() {
    cat >"$tmp/platform.xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="nvl" prefix="gpu-" radical="0-$(($1 - 1))" suffix="" speed="1Gf"
           bw="450GBps" lat="1us"/>
</platform>
XML
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "gpu-%d\n", i }' >"$tmp/hosts"
}

for n in $sizes; do
    "$here/gen-program.sh" "$n" "$layers" >"$tmp/p.yaml"
    rm -f "$tmp"/r.db*
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$build/ranksim" run -q --timeline none \
        --max-rank-ops 0 --db "$tmp/r.db" "$tmp/p.yaml"
    row "$n" ranksim "$tmp/t" ""
    platform "$n"
    status=""
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" sh -c 'ulimit -t "$0"; exec smpirun "$@"' "$cap" \
        -np "$n" \
        -platform "$tmp/platform.xml" -hostfile "$tmp/hosts" \
        --cfg=smpi/simulate-computation:no --cfg=smpi/privatization:no \
        --cfg=smpi/allgather:ring --cfg=smpi/allreduce:lr --cfg=smpi/shared-malloc:local \
        "$tmp/tp-program" "$layers" "$op" >"$tmp/smpi.out" 2>&1 ||
        status=" (cut at $cap cpu-s, or failed)"
    row "$n" "smpi-$op" "$tmp/t" "$status"
    grep '^tp-program:' "$tmp/smpi.out" | sed 's/^/    smpi: /' || true
done
