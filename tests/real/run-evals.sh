#!/usr/bin/env bash
# tests/real/run-evals.sh — vLLM's own gsm8k eval configs (shared/real/vllm-evals/, beside the
# repository) replayed on the hardware vLLM's CI runs them on (tests/data/eval-hardware.tsv)
# with `--prefill 1024`. vLLM's CI passes every one of them, so HEALTHY (exit 0) is the truth;
# the rows marked refused:REASON are architectures ranksim does not model, which must exit 2
# with a message naming REASON. Exit 77 (skipped) when the real files are absent (a user's
# clone); the fixtures under tests/ cover the same code paths.
# Usage: run-evals.sh RANKSIM SOURCE_DIR
set -u
bin=$1
src=$2
dir="$src/../shared/real/vllm-evals"
table="$src/tests/data/eval-hardware.tsv"
if [ ! -d "$dir" ]; then
  echo "skipped: $dir is absent (the real eval configs live beside the repository in CI only)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 healthy=0 total=0
while IFS=$'\t' read -r cfg hw evidence expect; do
  case "$cfg" in ''|'#'*) continue ;; esac
  case "$expect" in skip:*) echo "skip  $cfg (${expect#skip:})"; continue ;; esac
  file="$dir/$cfg.yaml"
  if [ ! -f "$file" ]; then
    echo "FAIL  $cfg: $file is missing"; fail=$((fail + 1)); continue
  fi
  total=$((total + 1))
  out=$("$bin" run "$file" --hardware "$hw" --prefill 1024 --timeline none \
        --db "$tmp/evals.db" 2>&1)
  code=$?
  first=$(printf '%s\n' "$out" | grep -m1 -E 'error|FAILED|HEALTHY' | cut -c1-220)
  case "$expect" in
    healthy)
      if [ $code = 0 ]; then
        pass=$((pass + 1)); healthy=$((healthy + 1)); echo "ok    $cfg on $hw: HEALTHY"
      else
        fail=$((fail + 1)); echo "FAIL  $cfg on $hw: exit $code, expected HEALTHY: $first"
      fi ;;
    refused:*)
      reason=${expect#refused:}
      if [ $code = 2 ] && printf '%s' "$out" | grep -qi -- "$reason"; then
        pass=$((pass + 1)); echo "ok    $cfg on $hw: refused ($reason): $first"
      else
        fail=$((fail + 1)); echo "FAIL  $cfg on $hw: exit $code, expected exit 2 naming '$reason': $first"
      fi ;;
  esac
done < "$table"
echo "$healthy of $total eval configs simulate HEALTHY on their CI hardware; $pass as expected, $fail not"
[ $fail = 0 ]
