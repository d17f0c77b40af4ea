#!/bin/sh
# tests/bench/bench-contention.sh BUILD — `make bench`: the contention model at 65,536 ranks
# (issue 27's reproducer, `-- vllm serve M --data-parallel-size 4096 --tensor-parallel-size 16`
# on h100, where every TP16 group spans two nodes and shares their uplinks): start-up only as
# the issue gave it, and with a 4,096-token prefill step, the form whose time was spent in the
# max-min rates (net/fabric-rates.c). CPU seconds (user), since the cores are shared; the bar
# is 5 s each.
set -eu
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "DP4096 x TP16 on h100, 65,536 ranks ($(nproc) cores):"
i=0
run() {
    label=$1
    shift
    i=$((i + 1))
    code=0
    /usr/bin/time -f '%e %U %M' -o "$tmp/t" "$build/ranksim" run -q --hardware h100 \
        --db "$tmp/r$i.db" "$@" >/dev/null 2>&1 || code=$?
    read -r secs user kib <"$tmp/t"
    printf '  %-44s %6.2f s user, %6.2f s wall, %4.0f MiB (exit %d)\n' "$label" "$user" "$secs" \
        "$(awk "BEGIN { print $kib / 1024 }")" "$code"
}
run "GLM-5, start-up only" -- vllm serve zai-org/GLM-5 --data-parallel-size 4096 \
    --tensor-parallel-size 16
run "Llama-3.1-8B, start-up only" -- vllm serve meta-llama/Llama-3.1-8B-Instruct \
    --data-parallel-size 4096 --tensor-parallel-size 16
run "Llama-3.1-8B, --prefill 4096" --prefill 4096 -- vllm serve \
    meta-llama/Llama-3.1-8B-Instruct --data-parallel-size 4096 --tensor-parallel-size 16
run "Llama-3.1-8B, --prefill 4096 --timeline none" --prefill 4096 --timeline none -- vllm \
    serve meta-llama/Llama-3.1-8B-Instruct --data-parallel-size 4096 --tensor-parallel-size 16
echo "  target: under 5 s each (issue 27)"
