#!/usr/bin/env bash
# tests/real/hangs.sh — `ranksim import` on the real hang reports of shared/real/hangs/ (their
# SOURCE.md files say what each thread concluded), against the outcome that conclusion allows:
#   pytorch-fr-tests: PyTorch's own fr_trace test dumps (string collective_seq_id "0", a bare
#     "float32" dtype, no pg_status) are read; case 4 is a size mismatch at the second
#     broadcast (exit 3, a `mismatch`), case 6 a call on rank 1 only (exit 3, `unmatched`),
#     test_loader's empty dump is inconclusive (exit 4) — never healthy;
#   every other report, imported as its folder: what its thread concluded (the cases below) —
#     never HEALTHY (exit 0), never refused (exit 2).
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
# Each other report imported as a folder, as a user would (its SOURCE.md is left out), against
# what its thread concluded. case: folder|exits allowed|check (see below)
#   kind=K      a diagnostic of kind K
#   nokind=K    no diagnostic of kind K
#   culprit=R   the headline names culprit rank R
#   noculprit   the headline names no culprit
#   cand=R      the candidates diagnostic names rank R
expect() { # name allowed checks...
  local name=$1 allowed=$2
  shift 2
  n=$((n + 1))
  "$bin" import --db "$db" "$dir/$name" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  case " $allowed " in
  *" $got "*) ;;
  *) echo "not ok $n - $name: exit $got, expected one of $allowed"; sed 's/^/# /' "$tmp/err" | head -3
     fail=1; return ;;
  esac
  local head kinds c
  head=$(head -1 "$tmp/out")
  kinds=$(sqlite3 "$db" "SELECT kind FROM diagnostics WHERE run_id = (SELECT max(id) FROM runs)")
  for c in "$@"; do
    case $c in
    kind=*) grep -qx "${c#kind=}" <<<"$kinds" || { echo "not ok $n - $name: no ${c#kind=} finding"; fail=1; return; } ;;
    nokind=*) ! grep -qx "${c#nokind=}" <<<"$kinds" || { echo "not ok $n - $name: a ${c#nokind=} finding"; fail=1; return; } ;;
    culprit=*) grep -q "culprit rank ${c#culprit=}\b" <<<"$head" || { echo "not ok $n - $name: headline '$head' names no culprit rank ${c#culprit=}"; fail=1; return; } ;;
    noculprit) ! grep -q "culprit" <<<"$head" || { echo "not ok $n - $name: headline '$head' names a culprit"; fail=1; return; } ;;
    cand=*) sqlite3 "$db" "SELECT message FROM diagnostics WHERE kind = 'candidates' AND run_id = (SELECT max(id) FROM runs)" |
              grep -q "rank ${c#cand=}:" || { echo "not ok $n - $name: rank ${c#cand=} is not a candidate"; fail=1; return; } ;;
    esac
  done
  echo "ok $n - $name (exit $got: $head)"
}
# no cause established: a hang with its evidence, or inconclusive; never healthy, never refused
expect llamafactory-6269 "3 4" noculprit
# DDP broadcasts, no rank blamed
expect nccl-147 "3 4" noculprit
# a transport fault: the Mismatched-collective WARN lines are findings, not a program mismatch
expect nccl-214 "3 4" kind=nccl_warn noculprit
# rank 2 called AllGather where ranks 0, 1, 3 called AllReduce; only ranks 0 and 2 left lines
expect rccl-429 "3" kind=mismatch cand=2
# rank 3 never finished broadcast 5729, which rank 0 completed
expect vllm-23448 "3" culprit=3
# only vLLM's shared-memory broadcast messages: evidence of a hang, not of its place
expect vllm-44185 "4" kind=symptom
# every rank times out in the first all-reduce with one signature: no program divergence
expect vllm-8978 "3 4" nokind=mismatch noculprit
# torch_npu watchdog lines, no cause established
expect vllm-ascend-382 "3 4" noculprit
echo "1..$n"
exit $fail
