#!/usr/bin/env bash
# tests/e2e/merge-shards.sh — a sweep split with `--shard K/N` and put together with `ranksim
# merge` stores the same rows as the unsharded sweep (TAP output). The README's sweep (9
# variants, the full time line and every tensor of the memory plans, so the time-line, memory
# and diagnostics tables all hold rows) runs once unsharded and as shards 1/3, 2/3, 3/3 into
# three databases (each -j 1, so run ids follow the variant order in both); the merge of the
# shards must dump the same rows as the unsharded database, every table, the wall-clock
# columns aside (runs.wall_ms, runs.created_at: when and how long, the only columns that
# differ between two runs of one binary). Then: re-running the merge adds nothing; a foreign
# file, a foreign SQLite file and an older schema are refused (exit 2, one line, their bytes
# unchanged, the output unchanged); the shard from Slurm's and Kubernetes' variables is the
# shard from --shard; bad --shard values exit 2 naming the flag; and runs of every other kind
# (a serving run, per-rank op rows, an imported hang) merged into a database that already has
# runs keep every row under their new ids.
#   merge-shards.sh RANKSIM SOURCE_DIR
set -u
bin=$1
src=$2
export COLUMNS=1000 # one line per message, for grep
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen=$src/scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml
vary=(--vary parallel.prefill_context_parallel_size=1,2,4 --vary workload.prefill=512,633,4096
      --timeline full --memory-detail -q -j 1)
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

# Every table's rows, sorted; runs' wall-clock columns left out. With SHIFT (default 0) only
# the runs above SHIFT, their ids (and run_id, sweep_id) lowered by SHIFT; with a third
# argument, diagnostics' own id left out (a merge gives it anew, in the output's sequence).
dump() {
  local db=$1 shift_by=${2:-0} noid=${3:+1} t cols
  for t in $(sqlite3 -batch "$db" "SELECT name FROM sqlite_master WHERE type = 'table'
               AND name NOT LIKE 'sqlite_%' ORDER BY name"); do
    cols=$(sqlite3 -batch "$db" "SELECT group_concat(CASE
               WHEN name IN ('run_id', 'sweep_id') OR ('$t' = 'runs' AND name = 'id')
               THEN name || ' - $shift_by' ELSE name END, ', ')
             FROM pragma_table_info('$t')
             WHERE NOT ('$t' = 'runs' AND name IN ('wall_ms', 'created_at'))
               AND NOT ('$t' = 'diagnostics' AND name = 'id' AND 0${noid})")
    local where=""
    if sqlite3 -batch "$db" "SELECT 1 FROM pragma_table_info('$t') WHERE name = 'run_id'" | grep -q 1; then
      where="WHERE run_id > $shift_by"
    elif [ "$t" = runs ]; then
      where="WHERE id > $shift_by"
    fi
    echo "== $t"
    sqlite3 -batch "$db" "SELECT $cols FROM $t $where" | LC_ALL=C sort
  done
}
sum() { sha256sum "$1" | cut -d' ' -f1; }

"$bin" sweep "$scen" "${vary[@]}" --db "$tmp/full.db" >/dev/null 2>"$tmp/err" ||
  { echo "Bail out! the unsharded sweep failed: $(head -3 "$tmp/err")"; exit 1; }
for k in 1 2 3; do
  "$bin" sweep "$scen" "${vary[@]}" --shard "$k/3" --db "$tmp/s$k.db" >"$tmp/s$k.out" 2>&1
  check "shard $k/3 runs (exit 0)" "[ $? = 0 ]"
done
check "the summary says which shard and how many of the variants" \
  "grep -q 'shard 2/3: variants 4-6 of 9, 3 variants' '$tmp/s2.out'"
rows=$(for k in 1 2 3; do sqlite3 "$tmp/s$k.db" "SELECT count(*) FROM runs"; done | paste -sd' ')
check "the shards hold 3 + 3 + 3 variants ($rows)" "[ '$rows' = '3 3 3' ]"
h1=$(sum "$tmp/s1.db")

"$bin" merge "$tmp/merged.db" "$tmp/s1.db" "$tmp/s2.db" "$tmp/s3.db" >"$tmp/m.out" 2>&1
check "merge of the three shards (exit 0)" "[ $? = 0 ]"
dump "$tmp/full.db" >"$tmp/full.dump"
dump "$tmp/merged.db" >"$tmp/merged.dump"
if cmp -s "$tmp/full.dump" "$tmp/merged.dump"; then
  ok "merged shards = unsharded sweep: $(grep -vc '^==' "$tmp/full.dump") rows in $(grep -c '^==' "$tmp/full.dump") tables identical"
else
  bad "merged shards differ from the unsharded sweep:"
  diff "$tmp/full.dump" "$tmp/merged.dump" | head -10 | sed 's/^/# /'
fi
sweeps=$(sqlite3 "$tmp/merged.db" "SELECT count(DISTINCT sweep_id) || ':' || min(sweep_id) FROM runs")
check "one sweep in the merged database, id 1 ($sweeps)" "[ '$sweeps' = '1:1' ]"
check "merge left the input byte-identical" "[ '$(sum "$tmp/s1.db")' = '$h1' ]"

"$bin" merge "$tmp/merged.db" "$tmp/s1.db" "$tmp/s2.db" "$tmp/s3.db" >"$tmp/m2.out" 2>&1
check "re-running the merge succeeds (exit 0)" "[ $? = 0 ]"
check "... and adds nothing (says so)" "grep -q '0 runs added, 9 already there' '$tmp/m2.out'"
dump "$tmp/merged.db" >"$tmp/again.dump"
check "... and the rows are unchanged" "cmp -s '$tmp/full.dump' '$tmp/again.dump'"

before=$(sum "$tmp/merged.db")
printf 'not a database\n' >"$tmp/foreign.txt"
sqlite3 "$tmp/foreign.db" "CREATE TABLE t(x); INSERT INTO t VALUES (1)"
cp "$tmp/s1.db" "$tmp/old.db"
sqlite3 "$tmp/old.db" "PRAGMA user_version = 9"
for f in foreign.txt foreign.db old.db; do
  h=$(sum "$tmp/$f")
  "$bin" merge "$tmp/merged.db" "$tmp/s2.db" "$tmp/$f" >"$tmp/f.out" 2>"$tmp/f.err"
  code=$?
  check "merge refuses $f (exit 2, got $code)" "[ $code = 2 ]"
  check "... in one line naming it" "[ \$(wc -l <'$tmp/f.err') = 1 ] && grep -q '$f' '$tmp/f.err'"
  check "... leaving it byte-identical" "[ '$(sum "$tmp/$f")' = '$h' ]"
done
check "the refused merges changed nothing in the output" "[ '$(sum "$tmp/merged.db")' = '$before' ]"
check "an older schema is told how to upgrade a copy" "grep -q 'upgrade a copy' '$tmp/f.err'"
"$bin" merge "$tmp/none.db" "$tmp/s1.db" "$tmp/old.db" >/dev/null 2>&1
check "a refused input creates no output" "[ ! -e '$tmp/none.db' ]"

# the shard from the environment
SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 \
  "$bin" sweep "$scen" "${vary[@]}" --db "$tmp/slurm.db" >"$tmp/slurm.out" 2>&1
check "SLURM_ARRAY_TASK_ID=5 of --array=4-6 runs shard 2/3" \
  "grep -q 'shard 2/3 (SLURM_ARRAY_TASK_ID): variants 4-6 of 9' '$tmp/slurm.out'"
check "... the same rows as --shard 2/3" "cmp -s <(dump '$tmp/slurm.db') <(dump '$tmp/s2.db')"
JOB_COMPLETION_INDEX=2 "$bin" sweep "$scen" "${vary[@]}" --shard-count 3 --db "$tmp/k8s.db" \
  >"$tmp/k8s.out" 2>&1
check "JOB_COMPLETION_INDEX=2 with --shard-count 3 runs shard 3/3" \
  "cmp -s <(dump '$tmp/k8s.db') <(dump '$tmp/s3.db')"
JOB_COMPLETION_INDEX=2 "$bin" sweep "$scen" "${vary[@]}" --db "$tmp/x.db" >"$tmp/x.out" 2>&1
code=$?
check "JOB_COMPLETION_INDEX without --shard-count: exit 2 (got $code), says what to pass" \
  "[ $code = 2 ] && grep -q -- '--shard-count' '$tmp/x.out' && [ ! -e '$tmp/x.db' ]"
for s in 0/3 4/3 a/b 3 1/0 -1/3; do
  "$bin" sweep "$scen" "${vary[@]}" --shard "$s" --db "$tmp/x.db" >"$tmp/x.out" 2>&1
  code=$?
  check "--shard $s: exit 2 (got $code), one line naming the flag" \
    "[ $code = 2 ] && [ \$(wc -l <'$tmp/x.out') = 1 ] && grep -q -- '--shard' '$tmp/x.out'"
done
"$bin" merge "$tmp/env.db" "$tmp/k8s.db" "$tmp/s1.db" "$tmp/slurm.db" >/dev/null 2>&1
sweeps=$(sqlite3 "$tmp/env.db" "SELECT count(*) || ':' || count(DISTINCT sweep_id) FROM runs")
check "shards merged in another order: 9 runs, one sweep ($sweeps)" "[ '$sweeps' = '9:1' ]"
"$bin" merge "$tmp/twice.db" "$tmp/full.db" >/dev/null 2>&1
"$bin" sweep "$scen" "${vary[@]}" --db "$tmp/full2.db" >/dev/null 2>&1
"$bin" merge "$tmp/twice.db" "$tmp/full2.db" >/dev/null 2>&1
sweeps=$(sqlite3 "$tmp/twice.db" "SELECT count(*) || ':' || count(DISTINCT sweep_id) FROM runs")
check "a second full run of the same sweep stays a sweep of its own ($sweeps)" "[ '$sweeps' = '18:2' ]"

# every other kind of run, merged after 9 runs already there
other=$tmp/other.db
"$bin" run -q "$src/scenarios/llama8b-requests-chunked-prefill.yaml" --db "$other" >/dev/null 2>&1
RANKSIM_OPS_PER_RANK=1 "$bin" run -q "$src/scenarios/three-way-cycle.yaml" --timeline full \
  --db "$other" >/dev/null 2>&1
"$bin" import -q --db "$other" "$src/tests/data/import/fr/seed004-json" >/dev/null 2>&1
"$bin" sweep "$scen" --vary workload.prefill=100,200 -q -j 1 --db "$other" \
  >/dev/null 2>&1
counts=$(sqlite3 "$other" "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM requests) > 0,
          (SELECT count(*) FROM op_rows) > 0, (SELECT count(*) FROM steps) > 0")
check "the other runs hold requests, steps and per-rank op rows ($counts)" "[ '${counts#*|}' = '1|1|1' ]"
cp "$tmp/merged.db" "$tmp/mixed.db"
"$bin" merge "$tmp/mixed.db" "$other" >"$tmp/mixed.out" 2>&1
check "merge of the other runs after 9 (exit 0)" "[ $? = 0 ]"
if cmp -s <(dump "$other" 0 noid) <(dump "$tmp/mixed.db" 9 noid); then
  ok "every row of the other runs is in the output under its id + 9"
else
  bad "the other runs' rows differ after the merge:"
  diff <(dump "$other" 0 noid) <(dump "$tmp/mixed.db" 9 noid) | head -10 | sed 's/^/# /'
fi
cp "$tmp/mixed.db" "$tmp/first9.db"
"$bin" prune --db "$tmp/first9.db" 10-1000 >/dev/null 2>&1
check "... and the first 9 runs are untouched" "cmp -s '$tmp/full.dump' <(dump '$tmp/first9.db')"
echo "1..$n"
exit $fail
