#!/usr/bin/env bash
# tests/e2e/perf-db.sh — measured tables as input (issue 23): `ranksim cost --perf-db` answers a
# covered shape from the table (source "table", the row's time) and an uncovered one from the
# model (saying why); a bad table exits 2 with one line naming file, line and column; a run with
# --perf-db and one with hardware.calibration store bound 'table' for the ops the table covers.
#   perf-db.sh RANKSIM SOURCE_DIR   (TAP output for meson; needs sqlite3 for the run checks)
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
table=$src/tests/data/times/gemm-h100.csv
echo "1..6"
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }

# 1: a row of the table, reproduced (gemm-h100.csv: m=16 n=4096 k=4096 bf16, 15.543 us)
out=$("$bin" cost --hardware h100 --perf-db "$table" --json gemm m=16 n=4096 k=4096 dtype=bf16)
if echo "$out" | grep -q '"source":"table"' && echo "$out" | grep -q '"bound":"table"' &&
   echo "$out" | grep -Eq '"time_us":15\.54(2999|3)'; then
  ok "cost --perf-db: a covered row is the table's ($out)"
else
  no "cost --perf-db: a covered row is the table's ($out)"
fi

# 2: outside the table's range: the model, saying so
out=$("$bin" cost --hardware h100 --perf-db "$table" --json gemm m=16 n=4096 k=999999 dtype=bf16)
if echo "$out" | grep -q '"source":"analytic (outside the table'\''s range)"'; then
  ok "cost --perf-db: outside the table, the model says why"
else
  no "cost --perf-db: outside the table, the model says why ($out)"
fi

# 3: a bad table: exit 2, one line naming file, line and column
printf 'kind,device,args,measured_us\ngemm,h100,m=1 n=2 k=3,fast\n' > "$tmp/bad.csv"
err=$("$bin" cost --hardware h100 --perf-db "$tmp/bad.csv" gemm m=1 n=2 k=3 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] &&
   printf '%s' "$err" | grep -q "bad.csv:2: column 'measured_us'"; then
  ok "a bad table exits 2 with one line"
else
  no "a bad table exits 2 with one line (rc $rc: $err)"
fi

# 4-6: runs: the linears the table covers are priced from it
cat > "$tmp/t.csv" <<'CSV'
kind,device,args,measured_us,source
gemm,*,m=8 n=4096 k=4096 dtype=bf16,50,made-up: o_proj of Llama-3.1-8B at 8 rows
CSV
cat > "$tmp/s.yaml" <<'YAML'
name: perf-db-check
model: llama-3.1-8b
hardware: {preset: h100, calibration: t.csv}
workload:
  steps:
    - {decode: [1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024]}
YAML
sed 's/hardware: .*/hardware: h100/' "$tmp/s.yaml" > "$tmp/plain.yaml"
if ! command -v sqlite3 >/dev/null; then
  for i in 4 5 6; do n=$((n + 1)); echo "ok $n - # SKIP no sqlite3"; done
  exit $fail
fi
q="select count(*) from ops where name = 'o_proj' and bound = 'table' and abs(end_us - start_us - 50) < 1e-6"
"$bin" run "$tmp/s.yaml" --db "$tmp/a.db" -q && got=$(sqlite3 "$tmp/a.db" "$q") && [ "$got" -gt 0 ] &&
  ok "hardware.calibration: o_proj from the table ($got ops)" || no "hardware.calibration: o_proj from the table"
"$bin" run "$tmp/plain.yaml" --perf-db "$tmp/t.csv" --db "$tmp/b.db" -q && got=$(sqlite3 "$tmp/b.db" "$q") &&
  [ "$got" -gt 0 ] && ok "run --perf-db: o_proj from the table ($got ops)" || no "run --perf-db: o_proj from the table"
"$bin" run "$tmp/plain.yaml" --db "$tmp/c.db" -q && got=$(sqlite3 "$tmp/c.db" "select count(*) from ops where bound = 'table'") &&
  [ "$got" -eq 0 ] && ok "without a table no op says table" || no "without a table no op says table"
exit $fail
