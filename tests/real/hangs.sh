#!/usr/bin/env bash
# tests/real/hangs.sh — `ranksim import` on the real hang reports of shared/real/hangs/ (their
# SOURCE.md files say what each thread concluded), against the outcome that conclusion allows:
#   pytorch-fr-tests: PyTorch's own fr_trace test dumps (string collective_seq_id "0", a bare
#     "float32" dtype, no pg_status) are read; case 4 is a size mismatch at the second
#     broadcast (exit 3, a `mismatch`), case 6 a call on rank 1 only (exit 3, `unmatched`),
#     test_loader's empty dump is inconclusive (exit 4) — never healthy;
#   every other report: never HEALTHY (exit 0): a hang (3), inconclusive (4), or not read yet
#     by this build's readers (2).
# Exit 77 (skipped) when the folder is absent (a user's clone). Usage: hangs.sh RANKSIM SOURCE_DIR
set -u
bin=$1
dir="$2/../shared/real/hangs"
if [ ! -d "$dir/pytorch-fr-tests" ]; then
  echo "skipped: $dir holds no real hang reports (they live beside the repository in CI only)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db="$tmp/h.db"
fail=0
n=0
check() { # name want-exit path [kind-of-first-error]
  n=$((n + 1))
  "$bin" import --db "$db" -q "$3" >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" != "$2" ]; then
    echo "not ok $n - $1: exit $got, expected $2"; sed 's/^/# /' "$tmp/err" | head -5; fail=1
    return
  fi
  if [ -n "${4:-}" ] && ! sqlite3 "$db" "SELECT kind FROM diagnostics WHERE run_id =
      (SELECT max(id) FROM runs)" | grep -qx "$4"; then
    echo "not ok $n - $1: no '$4' diagnostic"; fail=1
    return
  fi
  echo "ok $n - $1 (exit $got)"
}
fr="$dir/pytorch-fr-tests"
check "fr_trace case 4 (uneven broadcast)" 3 "$fr/case4-uneven-broadcast" mismatch
check "fr_trace case 6 (a reduce on rank 1 only)" 3 "$fr/case6-empty-coalesced" unmatched
check "fr_trace loader dump (no entries)" 4 "$fr/loader-dump0" inconclusive
for d in "$dir"/*/; do
  name=$(basename "$d")
  [ "$name" = pytorch-fr-tests ] && continue
  n=$((n + 1))
  "$bin" import --db "$db" -q "$d" >/dev/null 2>"$tmp/err"
  got=$?
  case $got in
  2 | 3 | 4) echo "ok $n - $name is never healthy (exit $got)" ;;
  *) echo "not ok $n - $name: exit $got (a hang report must not end healthy)"; fail=1 ;;
  esac
done
echo "1..$n"
exit $fail
