#!/usr/bin/env bash
# tests/e2e/same-rows.sh — every scenario of the library stores the same database rows as when
# tests/data/same-rows.tsv was written: a refactoring that changes what a run stores fails here
# (TAP output). Each scenario runs with the full time line into its own database; every table
# is dumped sorted, with the columns that vary between machines and builds left out (runs.
# wall_ms, created_at, version, path) and the source folder written as @SRC@ (a hardware file
# is named by its path), and the dump's SHA-256 is compared with the file's.
#   same-rows.sh RANKSIM SCENARIO_DIR TSV            check
#   same-rows.sh RANKSIM SCENARIO_DIR TSV --update   rewrite TSV (after a deliberate change of
#                                                    what runs store; say why in the commit)
set -u
bin=$1
dir=$2
tsv=$3
mode=${4:-check}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir=$(cd "$dir" && pwd -P) # absolute, so every stored path starts with $src/ below
files=("$dir"/*.yaml)
src=$(cd "$dir/.." && pwd -P)
# The dump of run 1 of DB: one block per table, rows sorted, stable columns only.
dump() {
  local db=$1 t cols
  for t in $(sqlite3 -batch "$db" "SELECT name FROM sqlite_master WHERE type = 'table'
               AND name NOT LIKE 'sqlite_%' ORDER BY name"); do
    cols=$(sqlite3 -batch "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('$t')
             WHERE NOT ('$t' = 'runs' AND name IN ('wall_ms', 'created_at', 'version', 'path'))")
    echo "== $t"
    sqlite3 -batch "$db" "SELECT $cols FROM $t" | LC_ALL=C sort
  done | sed "s|$src/|@SRC@/|g"
}
if [ "$mode" = --update ]; then
  : >"$tmp/new"
  for f in "${files[@]}"; do
    name=$(basename "$f")
    rm -f "$tmp"/run.db*
    "$bin" run -q "$f" --db "$tmp/run.db" --timeline full >/dev/null 2>&1
    if [ -f "$tmp/run.db" ]; then
      sum=$(dump "$tmp/run.db" | sha256sum | cut -d' ' -f1)
    else
      sum=no-database
    fi
    printf '%s\t%s\n' "$name" "$sum" >>"$tmp/new"
  done
  cp "$tmp/new" "$tsv"
  echo "same-rows: wrote $tsv (${#files[@]} scenarios)"
  exit 0
fi
echo "1..${#files[@]}"
n=0
fail=0
for f in "${files[@]}"; do
  n=$((n + 1))
  name=$(basename "$f")
  want=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$tsv")
  rm -f "$tmp"/run.db*
  "$bin" run -q "$f" --db "$tmp/run.db" --timeline full >/dev/null 2>&1
  if [ -f "$tmp/run.db" ]; then
    got=$(dump "$tmp/run.db" | sha256sum | cut -d' ' -f1)
  else
    got=no-database
  fi
  if [ -z "$want" ]; then
    echo "not ok $n - $name: not in $(basename "$tsv"); add it with --update"; fail=1
  elif [ "$got" != "$want" ]; then
    echo "not ok $n - $name: the stored rows changed (sha256 $got, expected $want)"; fail=1
  else
    echo "ok $n - $name"
  fi
done
exit $fail
