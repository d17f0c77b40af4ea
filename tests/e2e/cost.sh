#!/usr/bin/env bash
# tests/e2e/cost.sh — `ranksim cost` as a user runs it: a priced kernel exits 0 (its --json has
# time_us, tflops, gbps, bound, source), bad input exits 2 with one line that names what is wrong
# and writes nothing else (TAP output for meson).
#   cost.sh RANKSIM
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }

# case|expected exit|text the output must hold|arguments after "ranksim cost"
cases=(
  "gemm text|0|us, |--hardware h100 gemm m=1 n=4096 k=4096"
  "gemm json|0|\"source\":\"analytic\"|--hardware h200 --json gemm m=4096 n=4096 k=4096 dtype=fp8"
  "moe json|0|\"bound\"|--hardware h100 --json moe tokens=64 hidden=7168 inter=2048 topk=8 experts=256 ep=8 dtype=fp8_block"
  "ep json|0|\"detail\":\"DeepEP low-latency\"|--hardware h100 --json ep op=dispatch mode=low_latency ep=8 tokens=128 hidden=7168 topk=8"
  "ep across nodes|2|one node only|--hardware h100 ep op=combine ep=16 tokens=8 hidden=7168 topk=8 nodes=2"
  "unknown kind|2|unknown kind 'gemv'|--hardware h100 gemv m=1"
  "unknown key|2|unknown key 'q'|--hardware h100 gemm m=1 n=1 k=1 q=1"
  "bad dtype|2|'fp6' is not one of|--hardware h100 gemm m=1 n=1 k=1 dtype=fp6"
  "missing key|2|key 'k' missing|--hardware h100 gemm m=1 n=1"
  "no hardware|2|--hardware missing|gemm m=1 n=1 k=1"
  "unknown hardware|2|h1000|--hardware h1000 gemm m=1 n=1 k=1"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name want has args <<<"$c"
  # shellcheck disable=SC2086
  "$bin" cost $args >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" != "$want" ]; then
    no "$name: exit $got, expected $want: $(cat "$tmp/err")"
    continue
  fi
  if [ "$want" = 0 ]; then
    grep -qF -- "$has" "$tmp/out" && [ ! -s "$tmp/err" ] && ok "$name" ||
      no "$name: '$has' not in: $(cat "$tmp/out" "$tmp/err")"
  else
    lines=$(wc -l <"$tmp/err")
    grep -qF -- "$has" "$tmp/err" && [ "$lines" = 1 ] && [ ! -s "$tmp/out" ] && ok "$name" ||
      no "$name: expected one line with '$has', got: $(cat "$tmp/out" "$tmp/err")"
  fi
done
echo "1..$n"
exit $fail
