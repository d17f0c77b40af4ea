#!/bin/sh
# tests/bench/bench-scale.sh BUILD [LAYERS] [SIZES...] — `make bench`: the engine's scaling curve
# (issue 29). For each size, the synthetic TP-8 program of gen-program.sh (per layer: compute,
# all_gather, compute, all_reduce) runs from its YAML to a stored run with `ranksim run`, with
# --timeline none and with the default (full) time line: CPU seconds (user + system, since the
# machine's cores are shared), rank-ops per CPU second and peak RSS. A small size is run
# several times over (a fresh database each time) until at least ~8 M rank-ops were simulated,
# and the figures are per run: `time` counts CPU in 10 ms ticks, which at 1,024 ranks (~50 ms a
# run) was a 20 % step in the rate.
# Targets: >= 8 M rank-ops/s at every size from 1,024 to 65,536 ranks; 65,536 ranks x 100
# layers under 3.5 s; 1,048,576 ranks under 60 s and 4 GiB.
set -eu
build=$1
layers=${2:-100}
shift 2 2>/dev/null || shift $#
sizes=${*:-1024 4096 16384 65536}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "engine scaling: synthetic TP-8 program, $layers layers x 4 ops per rank ($(nproc) cores);"
echo "  figures per run (sizes under 8 M rank-ops repeated until 8 M were run)"
printf '%10s %-9s %12s %9s %9s %14s %10s\n' ranks timeline rank-ops "wall s" "cpu s" \
    "rank-ops/cpu-s" "peak MiB"
for n in $sizes; do
    "$here/gen-program.sh" "$n" "$layers" >"$tmp/p.yaml"
    ops=$((n * layers * 4))
    reps=$(( (8000000 + ops - 1) / ops ))
    for tl in none full; do
        # each repetition stores into its own fresh file, so none finds a schema made before
        /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" sh -c '
            i=0
            while [ "$i" -lt "$1" ]; do
                "$2" run -q --timeline "$3" --max-rank-ops 0 --db "$4/r$i.db" "$4/p.yaml" || exit 1
                i=$((i + 1))
            done' sh "$reps" "$build/ranksim" "$tl" "$tmp"
        rm -f "$tmp"/r*.db*
        read -r wall user sys kib <"$tmp/t"
        awk -v n="$n" -v tl="$tl" -v ops="$ops" -v r="$reps" -v w="$wall" -v u="$user" -v s="$sys" \
            -v k="$kib" \
            'BEGIN { c = (u + s) / r; if (c <= 0) c = 0.01;
                     printf "%10d %-9s %12d %9.3f %9.3f %14.0f %10.0f\n", n, tl, ops, w / r, c, ops / c,
                            k / 1024 }'
    done
done
echo "  targets: >= 8,000,000 rank-ops/s from 1,024 to 65,536 ranks; 65,536 x 100 layers under 3.5 s;"
echo "  1,048,576 ranks under 60 s and 4 GiB (tests/bench/bench-scale.sh BUILD 100 1048576)"
