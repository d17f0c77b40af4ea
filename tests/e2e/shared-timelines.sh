#!/usr/bin/env bash
# tests/e2e/shared-timelines.sh — the shared time lines of schema 7 (and their segments, schema
# 12) give the `ops`, `collectives`
# and `rank_ops` views exactly the rows one row per rank gives (RANKSIM_OPS_PER_RANK=1, the
# layout before), and `plot` the same picture, on every scenario of the library with the full
# time line (TAP output).
#   shared-timelines.sh RANKSIM SCENARIO_DIR
set -u
bin=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=("$dir"/*.yaml)
echo "1..${#files[@]}"
n=0
fail=0
dump() { # DB VIEW ORDER: the run's rows, every column
  sqlite3 -batch "$1" "SELECT * FROM $2 WHERE run_id = 1 ORDER BY $3" 2>&1
}
for f in "${files[@]}"; do
  n=$((n + 1))
  name=$(basename "$f")
  rm -f "$tmp"/*.db*
  "$bin" run -q "$f" --db "$tmp/shared.db" --timeline full >/dev/null 2>"$tmp/err1"
  a=$?
  RANKSIM_OPS_PER_RANK=1 "$bin" run -q "$f" --db "$tmp/rank.db" --timeline full >/dev/null 2>"$tmp/err2"
  b=$?
  if [ "$a" != "$b" ]; then
    echo "not ok $n - $name: exit $a shared, $b per rank"; fail=1; continue
  fi
  if [ "$a" = 2 ]; then
    echo "ok $n - $name # SKIP the scenario is invalid by design (exit 2)"; continue
  fi
  bad=""
  for v in "ops:rank, idx" "collectives:group_name, seq, rank" \
           "rank_ops:rank, idx"; do
    view=${v%%:*}; order=${v#*:}
    dump "$tmp/shared.db" "$view" "$order" >"$tmp/a"
    dump "$tmp/rank.db" "$view" "$order" >"$tmp/b"
    cmp -s "$tmp/a" "$tmp/b" || bad="$bad $view"
  done
  rows=$(sqlite3 "$tmp/rank.db" "SELECT count(*) FROM op_rows")
  # `plot` reads the shared layout without expanding it: the same picture either way (runs of
  # up to 100,000 rows: drawing the serving run's 1.8 M boxes twice takes half a minute)
  if [ "$rows" -le 100000 ]; then
    "$bin" plot latest --db "$tmp/shared.db" -o "$tmp/a.svg" >/dev/null 2>&1
    "$bin" plot latest --db "$tmp/rank.db" -o "$tmp/b.svg" >/dev/null 2>&1
    cmp -s "$tmp/a.svg" "$tmp/b.svg" || bad="$bad plot"
  fi
  # rows of time lines, whole or as segments (schema 12)
  lines=$(sqlite3 "$tmp/shared.db" "SELECT (SELECT count(*) FROM timeline_ops)
             + (SELECT count(*) FROM timeline_segments)")
  parts=$(sqlite3 "$tmp/shared.db" "SELECT count(*) FROM timeline_parts")
  left=$(sqlite3 "$tmp/shared.db" "SELECT count(*) FROM op_rows")
  tls=$(sqlite3 "$tmp/shared.db" "SELECT count(DISTINCT timeline) FROM rank_timelines")
  ranks=$(sqlite3 "$tmp/shared.db" "SELECT count(*) FROM rank_timelines")
  if [ -n "$bad" ]; then
    echo "not ok $n - $name: the views differ:$bad"; diff "$tmp/a" "$tmp/b" | head -5 | sed 's/^/# /'; fail=1
  elif [ "$left" != 0 ] || { [ "$rows" -gt 0 ] && [ "$lines" = 0 ]; }; then
    echo "not ok $n - $name: shared layout not used ($lines time-line rows, $left op_rows)"; fail=1
  else
    echo "ok $n - $name ($rows rank rows as $lines rows of $tls time lines for $ranks ranks, $parts parts)"
  fi
done
exit $fail
