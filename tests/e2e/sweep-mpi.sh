#!/usr/bin/env bash
# tests/e2e/sweep-mpi.sh — `mpirun -np 4 ranksim sweep --mpi` stores the same rows as
# `ranksim sweep -j 1` of the same variants (issue 29): every table is dumped with the columns
# that vary between two runs of one build left out (runs.wall_ms, created_at) and the dumps
# must be equal — run ids, the sweep id and the order included. Also -np 1 (rank 0 alone), the
# sweep id of an --mpi sweep added to a database that already holds a sweep of the same file,
# and the table on stdout. TAP output.
#   sweep-mpi.sh RANKSIM MPIRUN SANITIZE
# SANITIZE is meson's b_sanitize: under ASan the test is skipped (TAP's `1..0 # SKIP`, exit 0:
# under the TAP protocol meson reads any non-zero exit as an error) because Open MPI's own
# allocations at exit read as leaks to LeakSanitizer.
set -u
bin=$1
mpirun=$2
sanitize=${3:-none}
if [ "$sanitize" != none ]; then
  echo "1..0 # SKIP built with -Db_sanitize=$sanitize: Open MPI's own allocations read as leaks to LeakSanitizer"
  exit 0
fi
src=$(cd "$(dirname "$0")/../.." && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$(id -u)" = 0 ]; then # Open MPI refuses root unless told
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Localhost only, no network probing: shared memory and loopback TCP.
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl_vader_single_copy_mechanism=none
scenario=$src/scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml
vary=(--vary parallel.prefill_context_parallel_size=1,2,4 --vary workload.prefill=512,633
      --timeline full)
dump() {
  local db=$1 t cols
  for t in $(sqlite3 -batch "$db" "SELECT name FROM sqlite_master WHERE type = 'table'
               AND name NOT LIKE 'sqlite_%' ORDER BY name"); do
    cols=$(sqlite3 -batch "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('$t')
             WHERE NOT ('$t' = 'runs' AND name IN ('wall_ms', 'created_at'))")
    echo "== $t"
    sqlite3 -batch "$db" "SELECT $cols FROM $t" | LC_ALL=C sort
  done
}
vary2=(--vary parallel.prefill_context_parallel_size=4 --vary workload.prefill=700,800
       --timeline full)
echo "1..4"
fail=0
check() { # N DESCRIPTION COMMAND...
  local n=$1 what=$2
  shift 2
  if "$@"; then echo "ok $n - $what"; else echo "not ok $n - $what"; fail=1; fi
}
# Two sweeps of the same file into one database: the second must be a sweep of its own, named
# by its first run (the merge alone would join it to the first: same file, other labels).
"$bin" sweep -q -j 1 "$scenario" "${vary[@]}" --db "$tmp/local.db" >"$tmp/local.out" 2>&1
"$bin" sweep -q -j 1 "$scenario" "${vary2[@]}" --db "$tmp/local.db" >/dev/null 2>&1
timeout 300 "$mpirun" -np 4 --oversubscribe "$bin" sweep -q --mpi "$scenario" "${vary[@]}" \
  --db "$tmp/mpi.db" >"$tmp/mpi.out" 2>"$tmp/mpi4.err"
rc4=$?
timeout 300 "$mpirun" -np 1 "$bin" sweep -q --mpi "$scenario" "${vary2[@]}" \
  --db "$tmp/mpi.db" >/dev/null 2>"$tmp/mpi1.err"
rc1=$?
dump "$tmp/local.db" >"$tmp/local.dump"
dump "$tmp/mpi.db" >"$tmp/mpi.dump" 2>&1
check 1 "-np 4 then -np 1 (rank 0 alone) exit 0" \
  eval '[ $rc4 = 0 ] && [ $rc1 = 0 ] || { sed "s/^/# /" "$tmp/mpi4.err" "$tmp/mpi1.err"; false; }'
check 2 "they store the rows of sweep -j 1 (8 runs, every table, ids and sweep ids)" \
  eval 'cmp -s "$tmp/local.dump" "$tmp/mpi.dump" ||
        { diff "$tmp/local.dump" "$tmp/mpi.dump" | head -20 | sed "s/^/# /"; false; }'
check 3 "the second sweep is a sweep of its own (runs 7-8 in sweep 7)" \
  eval '[ "$(sqlite3 "$tmp/mpi.db" "SELECT group_concat(id || \":\" || sweep_id, \" \")
              FROM runs WHERE id > 6")" = "7:7 8:7" ]'
# the table names the same runs and outcomes (the wall time and the file's name aside)
check 4 "the table on stdout is the local sweep's" \
  eval 'diff <(grep -v " wall with " "$tmp/local.out" | sed "s|/local.db|/X.db|") \
              <(grep -v " wall with " "$tmp/mpi.out" | sed "s|/mpi.db|/X.db|") >/dev/null'
exit $fail
