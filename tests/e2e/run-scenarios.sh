#!/usr/bin/env bash
# tests/e2e/run-scenarios.sh — runs every scenario of the library and every bad input, and
# checks each against what its header comment promises (TAP output for meson).
#   run-scenarios.sh RANKSIM SCENARIO_DIR [BAD_DIR] [--valgrind]
# Headers:  "# expect-exit: N"  and optionally  "# expect-diag: kind kind ..." (each kind must
# appear among the run's diagnostics) and "# valgrind: skip" (too large to run under valgrind). Bad inputs must exit 2 with one message on stderr that
# names the file and a line ("FILE:LINE:") — or "--set" for override errors.
set -u
bin=$1
dir=$2
bad=${3:-$(dirname "$0")/bad}
vg=""
[ "${4:-}" = "--valgrind" ] && vg="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db="$tmp/e2e.db"

files=("$dir"/*.yaml)
badfiles=("$bad"/*.yaml)
echo "1..$(( ${#files[@]} + ${#badfiles[@]} + 2 ))"
n=0
fail=0
skipped=0

for f in "${files[@]}"; do
  n=$((n + 1))
  name=$(basename "$f")
  want=$(sed -n 's/^# expect-exit: *\([0-9]\+\).*/\1/p' "$f" | head -1)
  diags=$(sed -n 's/^# expect-diag: *//p' "$f" | head -1)
  if [ -z "$want" ]; then
    echo "not ok $n - $name: no '# expect-exit:' header"; fail=1; continue
  fi
  if [ -n "$vg" ] && grep -q '^# valgrind: skip' "$f"; then
    echo "ok $n - $name # SKIP too large for valgrind (header says so)"; skipped=$((skipped + 1)); continue
  fi
  $vg "$bin" run "$f" --db "$db" --json --timeline collectives >"$tmp/out.json" 2>"$tmp/err.txt"
  got=$?
  if [ "$got" != "$want" ]; then
    echo "not ok $n - $name: exit $got, header expects $want"
    sed 's/^/# /' "$tmp/err.txt" | head -20
    fail=1; continue
  fi
  missing=""
  for k in $diags; do
    grep -Eq "\"kind\" *: *\"$k\"" "$tmp/out.json" || missing="$missing $k"
  done
  if [ -n "$missing" ]; then
    echo "not ok $n - $name: diagnostics missing:$missing"; fail=1; continue
  fi
  echo "ok $n - $name (exit $got${diags:+; $diags})"
done

for f in "${badfiles[@]}"; do
  n=$((n + 1))
  name=$(basename "$f")
  $vg "$bin" run "$f" --db "$db" >"$tmp/out.txt" 2>"$tmp/err.txt"
  got=$?
  lines=$(wc -l <"$tmp/err.txt")
  if [ "$got" != 2 ]; then
    echo "not ok $n - bad/$name: exit $got, expected 2"; sed 's/^/# /' "$tmp/err.txt" | head; fail=1; continue
  fi
  if [ "$lines" != 1 ] || ! grep -Eq "$name:[0-9]+:" "$tmp/err.txt"; then
    echo "not ok $n - bad/$name: expected one message naming $name:LINE, got:"; sed 's/^/# /' "$tmp/err.txt"; fail=1; continue
  fi
  echo "ok $n - bad/$name: $(cat "$tmp/err.txt")"
done

# Every run landed in the database exactly once, with its status; the bad files left nothing
# (input that never reached a simulation is not a run).
n=$((n + 1))
if command -v sqlite3 >/dev/null; then
  rows=$(sqlite3 "$db" "SELECT count(*) FROM runs")
  invalid=$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE status = 'invalid'")
  if [ "$rows" = "$(( ${#files[@]} - skipped ))" ] && [ "$invalid" = 0 ]; then
    echo "ok $n - database holds $rows runs ($invalid invalid)"
  else
    echo "not ok $n - database holds $rows runs ($invalid invalid)"; fail=1
  fi
else
  echo "ok $n # SKIP sqlite3 not installed"
fi

# Determinism: the same scenario twice gives the same rows (wall-clock columns aside).
n=$((n + 1))
d2="$tmp/det.db"
"$bin" run "$dir/lse-size-mismatch.yaml" --db "$d2" -q; "$bin" run "$dir/lse-size-mismatch.yaml" --db "$d2" -q
if command -v sqlite3 >/dev/null; then
  q() { sqlite3 "$d2" "SELECT $2 FROM $1 WHERE run_id = $3 ORDER BY 1,2,3"; }
  same=1
  for t in "ops:rank,idx,layer,name,kind,tokens,start_us,end_us" \
           "collectives:group_name,seq,rank,kind,count,dtype,name,layer,arrive_us,done_us" \
           "ranks:rank,state,end_us,compute_us,comm_us,wait_us" \
           "diagnostics:kind,severity,rank,group_name,seq,layer,op_name,message,detail"; do
    tab=${t%%:*}; cols=${t#*:}
    [ "$(q "$tab" "$cols" 1)" = "$(q "$tab" "$cols" 2)" ] || same=0
  done
  r1=$(sqlite3 "$d2" "SELECT name,kind,status,exit_code,ranks,sim_end_us,events,scenario FROM runs WHERE id=1")
  r2=$(sqlite3 "$d2" "SELECT name,kind,status,exit_code,ranks,sim_end_us,events,scenario FROM runs WHERE id=2")
  [ "$r1" = "$r2" ] || same=0
  if [ $same = 1 ]; then echo "ok $n - determinism: identical rows for two runs"; else echo "not ok $n - determinism: rows differ"; fail=1; fi
else
  echo "ok $n # SKIP sqlite3 not installed"
fi
exit $fail
