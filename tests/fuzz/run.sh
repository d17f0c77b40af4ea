#!/usr/bin/env bash
# tests/fuzz/run.sh — runs one libFuzzer target over its seeds (doc/fuzzing.md).
#
#   run.sh ci   BINARY NAME SOURCE_DIR WORK_DIR [RUNS]     # the `fuzz` test suite: RUNS (10000)
#                                                           # executions from a fixed seed, over
#                                                           # the seeds and tests/fuzz/regress/NAME
#                                                           # into a scratch corpus; exit != 0 on
#                                                           # any crash, leak, timeout or OOM
#   run.sh fuzz BINARY NAME SOURCE_DIR WORK_DIR [SECONDS]  # `make fuzz`: SECONDS (60) of fuzzing
#                                                           # into WORK_DIR/corpus/NAME (kept)
#
# Seeds (read, never written): the repository's own files for the target, tests/fuzz/seeds/NAME,
# tests/fuzz/regress/NAME, and the real files beside the repository (../shared/real, or
# $RANKSIM_REAL_DIR) when that folder exists. Crashes go to WORK_DIR/artifacts/NAME/.
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: $0 ci|fuzz BINARY NAME SOURCE_DIR WORK_DIR [N]" >&2; exit 2; }
mode=$1 bin=$2 name=$3 src=$4 work=$5 amount=${6:-}
fz=$src/tests/fuzz
real=${RANKSIM_REAL_DIR:-$src/../shared/real}

seeds=()
real_seeds=()
case $name in
  scenario) max_len=8192;  seeds=("$src/scenarios" "$src/tests/e2e/bad")
            real_seeds=(vllm-evals hf-configs/scenarios) ;;
  config)   max_len=16384; seeds=("$src/model/presets" "$src/tests/model/fixtures")
            real_seeds=(hf-configs) ;;
  hardware) max_len=4096;  seeds=("$src/net/presets" "$src/scenarios/hardware") ;;
  set)      max_len=2048 ;;
  nccl)     max_len=32768; seeds=("$src/tests/data/import/nccl") ;;
  logs)     max_len=32768; seeds=("$src/tests/data/import/logs" "$src/tests/data/import/nccl")
            real_seeds=(hangs) ;;
  pickle)   max_len=4096;  seeds=("$src/tests/data/pickle") ;;
  fr)       max_len=32768; seeds=("$src/tests/data/import/fr") ;;
  requests) max_len=8192;  seeds=("$src/tests/data/requests") ;;
  *) echo "$0: unknown target '$name'" >&2; exit 2 ;;
esac
for d in "$fz/seeds/$name" "$fz/regress/$name"; do
  [ -d "$d" ] && seeds+=("$d")
done
for r in "${real_seeds[@]}"; do
  [ -d "$real/$r" ] && seeds+=("$real/$r")
done

# Every sanitizer finding is fatal; leaks are findings (libFuzzer checks them per input).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1

mkdir -p "$work/artifacts/$name"
# libFuzzer exits 77 on a finding by default, which meson's `exitcode` protocol reads as
# "skipped": a leak or sanitizer report was shown as Skipped and `make fuzz-ci` passed. Every
# finding exits 1 instead, and any 77 that still comes back is turned into a failure below.
flags=(-max_len=$max_len -timeout=5 -rss_limit_mb=1024 -dict="$fz/$name.dict"
       -error_exitcode=1 -timeout_exitcode=1
       -artifact_prefix="$work/artifacts/$name/" -print_final_stats=1)
rc=0
case $mode in
  ci)
    corpus=$(mktemp -d "$work/ci-corpus-$name.XXXXXX")
    trap 'rm -rf "$corpus"' EXIT
    # -seed fixes the mutations: the same tree gives the same executions.
    "$bin" "${flags[@]}" -seed=1 -runs="${amount:-10000}" "$corpus" "${seeds[@]}" || rc=$?
    ;;
  fuzz)
    corpus=$work/corpus/$name
    mkdir -p "$corpus"
    "$bin" "${flags[@]}" -max_total_time="${amount:-60}" "$corpus" "${seeds[@]}" || rc=$?
    ;;
  *) echo "$0: mode must be ci or fuzz" >&2; exit 2 ;;
esac
if [ "$rc" -ne 0 ]; then
  echo "$0: $name: the fuzzer exited $rc (a crash, leak, sanitizer report, timeout or OOM;" \
       "inputs in $work/artifacts/$name/)" >&2
  [ "$rc" -eq 77 ] && rc=1 # never "skipped"
  exit "$rc"
fi
