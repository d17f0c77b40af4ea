#!/bin/sh
# tests/bench/gen-program.sh RANKS LAYERS — writes to stdout the synthetic program scenario the
# engine scaling bench runs (issue 29): RANKS ranks in TP-8 groups (one group and one programs
# key per 8 ranks), each rank repeating LAYERS times: compute, all_gather, compute, all_reduce
# in its TP group. A kind: program scenario, so loading and set-up are measured with the run.
set -eu
ranks=$1
layers=${2:-100}
awk -v ranks="$ranks" -v layers="$layers" 'BEGIN {
    printf "name: bench-tp8-%d\nkind: program\nranks: %d\ngroups:\n", ranks, ranks
    for (b = 0; b < ranks; b += 8)
        printf "  tp%d: \"%d-%d\"\n", b / 8, b, b + 7
    printf "programs:\n"
    for (b = 0; b < ranks; b += 8) {
        g = b / 8
        printf "  \"%d-%d\":\n    - op: repeat\n      times: %d\n      ops:\n", b, b + 7, layers
        printf "        - {op: compute, name: attn, us: 60}\n"
        printf "        - {op: all_gather, group: tp%d, count: 1835008}\n", g
        printf "        - {op: compute, name: mlp, us: 90}\n"
        printf "        - {op: all_reduce, group: tp%d, count: 1835008}\n", g
    }
}'
