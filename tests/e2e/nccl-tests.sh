#!/usr/bin/env bash
# tests/e2e/nccl-tests.sh — `ranksim nccl-tests` prints nccl-tests' table (header lines, one row
# per size from -b to -e by -f, busbw = algbw x the bus factor, the trailer), `--impl custom`
# is faster than NCCL on small all-reduces, and bad flags exit 2 with one line naming the flag
# (TAP output).
#   nccl-tests.sh RANKSIM
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }
echo "1..10"

"$bin" nccl-tests --hardware h100 --op all_reduce -b 8 -e 8G -f 2 -g 8 >"$tmp/ar" 2>"$tmp/err"
[ $? = 0 ] && ok "all_reduce 8 .. 8G exits 0" || no "all_reduce exit: $(cat "$tmp/err")"
rows=$(grep -vc '^#' "$tmp/ar")
[ "$rows" = 31 ] && ok "31 sizes from 8 B to 8 GiB" || no "rows: $rows"
grep -q '^#       size         count      type   redop    root     time   algbw   busbw #wrong' \
  "$tmp/ar" && grep -q '^# Avg bus bandwidth    : ' "$tmp/ar" &&
  grep -q '^# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor)' "$tmp/ar" &&
  ok "nccl-tests' header and trailer lines" || no "header: $(head -3 "$tmp/ar")"
# a row: size count type redop root time algbw busbw #wrong (out-of-place), then in-place
awk '!/^#/ { if (NF != 13 || $3 != "float" || $4 != "sum" || $5 != -1) bad = 1 }
     END { exit bad }' "$tmp/ar" && ok "13 columns per row, float sum root -1" ||
  no "row layout: $(grep -v '^#' "$tmp/ar" | head -2)"
# busbw = algbw x 2(n-1)/n, algbw = size / time; the time grows with the size
awk '!/^#/ { if ($1 > 0) { a = $1 / $6 / 1e3; if (($7 - a) ^ 2 > 0.02 ^ 2 + (0.01 * a) ^ 2 ||
                                               ($8 - a * 1.75) ^ 2 > 0.02 ^ 2 + (0.01 * $8) ^ 2) bad = 1 }
             if ($6 < last) bad = 1; last = $6 }
     END { exit bad }' "$tmp/ar" && ok "busbw = algbw x 2(n-1)/n; time grows with size" ||
  no "bandwidth columns"
# 1 GiB on 8 x H100: busbw below NVLink's 450 GB/s
big=$(awk '$1 == 1073741824 { print $8 }' "$tmp/ar")
awk -v b="$big" 'BEGIN { exit !(b > 250 && b < 450) }' && ok "busbw at 1 GiB $big GB/s < 450" ||
  no "busbw at 1 GiB: $big"

"$bin" nccl-tests --hardware h100 --op all_gather -b 1K -e 1M -f 4 -t 2 -g 2 --nodes 2 -n 20 -d half -w 5 \
  -c 0 >"$tmp/ag"
rows=$(grep -vc '^#' "$tmp/ag")
ranks=$(grep -c '^#  Rank' "$tmp/ag")
[ "$rows" = 6 ] && [ "$ranks" = 8 ] && ok "all_gather 1K..1M x4 on 2 nodes x 4: 6 rows, 8 ranks" ||
  no "all_gather rows $rows ranks $ranks"

"$bin" nccl-tests --hardware h100 -b 16K -e 16K -g 8 --impl custom >"$tmp/c"
"$bin" nccl-tests --hardware h100 -b 16K -e 16K -g 8 --impl nccl >"$tmp/x"
tc=$(awk '!/^#/ { print $6 }' "$tmp/c"); tx=$(awk '!/^#/ { print $6 }' "$tmp/x")
awk -v c="$tc" -v x="$tx" 'BEGIN { exit !(c * 2 < x) }' &&
  ok "vLLM's custom all-reduce at 16 KiB ($tc us) beats NCCL ($tx us)" || no "custom $tc nccl $tx"

bad=0
for args in "--op all_sum" "-b 8X" "-e 1K -b 2K" "-f 1" "-g 9" "--impl mscclpp" "-d float8" \
            "--bogus" "--hardware no-such-gpu"; do
  # shellcheck disable=SC2086
  "$bin" nccl-tests --hardware h100 $args >"$tmp/o" 2>"$tmp/e"
  code=$?
  lines=$(wc -l <"$tmp/e")
  if [ "$code" != 2 ] || [ "$lines" != 1 ] || [ -s "$tmp/o" ]; then
    bad=1; echo "# $args: exit $code, $lines lines: $(cat "$tmp/e")"
  fi
done
[ $bad = 0 ] && ok "bad flags: exit 2, one line, nothing on stdout" || no "bad flags"
"$bin" nccl-tests --hardware h100 -g 3 -t 3 2>&1 | grep -q -- "-g 9: valid: 1..8" &&
  ok "-g beyond the node names the valid range" || no "-g message"
exit $fail
