#!/bin/sh
# tests/bench/bench-scaling.sh BUILD — `make bench`: the inputs of issue 27's "bounded time" at
# N and 10 N, so the scaling shows (linear: 10x the input takes about 10x the time; quadratic
# took 100x). Wall time includes the database's fsyncs; CPU time is the program's own work.
# Inputs are written by awk into a temporary folder:
#   - one Flight Recorder JSON dump of rank 0 with N process groups (pg_config only);
#   - NCCL_DEBUG=INFO logs of 4 ranks with N communicators each (Init lines and one AllReduce);
#   - a --requests trace of N requests served on Llama-3.1-70B TP4;
#   - workload.poisson at its ceiling, 10^7 requests, refused before serving by the work limit.
set -eu
build=$1
bin="$build/ranksim"
scn=scenarios/llama70b-tp4-poisson-200.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

secs() { awk "BEGIN { printf \"%.2f\", $2 - $1 }"; }
now() { date +%s.%N; }

fr_dump() { # N DIR
    mkdir -p "$2"
    awk -v n="$1" 'BEGIN {
        printf "{\"comm_lib_version\":\"2.21.5\",\"entries\":[],\"pg_config\":{"
        for (i = 0; i < n; i++)
            printf "%s\"%d\":{\"desc\":\"undefined\",\"name\":\"%d\",\"ranks\":\"[0]\"}", i ? "," : "", i, i
        printf "},\"pg_status\":{},\"version\":\"2.10\"}"
    }' >"$2/nccl_trace_rank_0.json"
}

nccl_logs() { # N DIR
    mkdir -p "$2"
    for r in 0 1 2 3; do
        awk -v n="$1" -v r="$r" 'BEGIN {
            h = "host" r ":" (1000 + r) ":" (1000 + r) " [" r "] NCCL INFO "
            print h "NCCL version 2.21.5+cuda12.4"
            for (c = 0; c < n; c++) {
                comm = sprintf("0x%x%08x", 21760 + r, c * 4096)
                id = sprintf("0x10000000%08x", c)
                print h "ncclCommInitRank comm " comm " rank " r " nranks 4 cudaDev " r " nvmlDev " r " busId 18000 commId " id " - Init START"
                print h "ncclCommInitRank comm " comm " rank " r " nranks 4 cudaDev " r " nvmlDev " r " busId 18000 commId " id " - Init COMPLETE"
                print h "AllReduce: opCount 0 sendbuff 0x7f2e5c000000 recvbuff 0x7f2e5c000000 count 1 datatype 7 op 0 root 0 comm " comm " [nranks=4] stream 0x55d4a8c1d0e0"
            }
        }' >"$2/nccl-rank$r.log"
    done
}

requests() { # N FILE
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"arrival_s\": %.3f, \"prompt\": %d, \"output\": 16}\n", i * 0.001, 64 + i % 50 }' >"$2"
}

timed() { # LABEL N CMD...: one run into a fresh database
    label=$1 n=$2
    shift 2
    t0=$(now)
    code=0
    /usr/bin/time -f '%U %S %M' -o "$tmp/cpu" "$@" >/dev/null 2>"$tmp/err" || code=$?
    t1=$(now)
    cpu=$(tail -n 1 "$tmp/cpu" | awk '{ printf "%.2f s CPU, %d MiB", $1 + $2, $3 / 1024 }')
    printf '  %-28s N = %-8s %7s s wall, %s (exit %d)\n' "$label" "$n" "$(secs "$t0" "$t1")" \
        "$cpu" "$code"
}

echo "scaling with the input, 10x apart ($(nproc) cores):"
for n in 12000 120000; do
    fr_dump "$n" "$tmp/fr$n"
    timed "FR dump, N process groups" "$n" "$bin" import -q --db "$tmp/fr$n.db" "$tmp/fr$n"
done
for n in 3000 30000; do
    nccl_logs "$n" "$tmp/nccl$n"
    timed "NCCL logs, N communicators" "$n" "$bin" import -q --db "$tmp/nccl$n.db" "$tmp/nccl$n"
done
for n in 10000 100000; do
    requests "$n" "$tmp/req$n.jsonl"
    timed "--requests, N lines" "$n" "$bin" run -q --timeline collectives --db "$tmp/req$n.db" \
        --requests "$tmp/req$n.jsonl" "$scn"
done
timed "poisson at its ceiling" 10000000 "$bin" run -q --db "$tmp/p.db" \
    --set workload.poisson.count=10000000 "$scn"
echo "  ($(cat "$tmp/err" | cut -c1-100)...)"
