#!/usr/bin/env bash
# tests/e2e/model-input.sh — the ways users hand ranksim a model, as pasted after `ranksim run
# --`: vLLM's load-time shape rules of quantized layers (the FP8 checkpoints vLLM refuses at TP8
# or TP4 refused in vLLM's words, in one line, exit 2; the sizes vLLM accepts run), a local
# checkpoint folder read as vLLM reads it (config.json + hf_quant_config.json runs in FP8),
# `vllm serve MODEL` with no flags, an environment prefix, --config FILE.yaml, dotted
# --speculative-config.KEY flags and -O.KEY (TAP output for meson).
#   model-input.sh RANKSIM SOURCE_DIR
set -u
bin=$1
data=$2/tests/data/model-input
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }

# case|expected exit ("run": 0 or 3, a simulation that ran)|text the output must hold ("" none)
# |text it must not hold ("" none)|hardware ("-": no --hardware)|the vLLM command line
cases=(
  "gpt-oss-120b, no flags|run|vllm-serve:||h100|vllm serve openai/gpt-oss-120b"
  "Qwen3-235B-A22B-FP8 TP8 refused|2|\"The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128.\"||h200|vllm serve Qwen/Qwen3-235B-A22B-FP8 -tp 8"
  "Qwen3-235B-A22B-FP8 TP4 runs|run|layout: TP4||h200|vllm serve Qwen/Qwen3-235B-A22B-FP8 -tp 4 --max-model-len 32768"
  "Qwen3-235B-A22B-FP8 TP8 EP runs|run|layout: TP8, EP8||h200|vllm serve Qwen/Qwen3-235B-A22B-FP8 -tp 8 --enable-expert-parallel --max-model-len 32768"
  "Qwen3-30B-A3B-FP8 TP4 refused|2|weight = 192 is not divisible by weight quantization block_n = 128||h100|vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 4"
  "Qwen3-30B-A3B-FP8 TP2 runs|run|layout: TP2||h100|vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2 --max-model-len 32768"
  "Qwen3-Coder-480B-FP8 TP8 refused|2|weight = 320 is not divisible by weight quantization block_n = 128||h200|vllm serve $data/qwen3-coder-480b-a35b-fp8 -tp 8"
  "Qwen3-Coder-480B-FP8 TP4 runs|run|layout: TP4||h200|vllm serve $data/qwen3-coder-480b-a35b-fp8 -tp 4 --max-model-len 32768"
  "Qwen3-Coder-480B-FP8 TP8 EP runs|run|layout: TP8, EP8||h200|vllm serve $data/qwen3-coder-480b-a35b-fp8 -tp 8 -ep --max-model-len 32768"
  "ModelOpt folder runs in FP8|0|fp8 per tensor (checkpoint, modelopt)|all weights bf16|h100|vllm serve $data/llama-3.1-8b-modelopt-fp8"
  "a path that is not here: said so|run|no such folder here||h200|vllm serve /dev/shm/Kimi-K2-Instruct -tp 8 -ep"
  "a folder without config.json: said so|run|a folder without config.json||h100|vllm serve $data/Qwen3-8B"
  "env prefix read|0|layout: TP8, EP8|env VLLM_ALL2ALL_BACKEND|h200|VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -ep --max-model-len 16384"
  "env prefix, bad value|2|key 'VLLM_ALL2ALL_BACKEND': unknown all2all backend 'deepep'||h200|VLLM_ALL2ALL_BACKEND=deepep vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -ep"
  "env prefix, not simulated named|run|env CUDA_VISIBLE_DEVICES=0,1 (device selection||h100|env CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen3-8B"
  "--config file|run|layout: TP8, EP8||h200|vllm serve deepseek-ai/DeepSeek-V3 --config $data/serve.yaml"
  "--config file, MTP weights|run|MTP projection||h200|vllm serve deepseek-ai/DeepSeek-V3 --config $data/serve.yaml"
  "--config, the command line wins|run|layout: TP4||h200|vllm serve Qwen/Qwen3-235B-A22B-FP8 --config $data/serve.yaml -tp 4 --no-enable-expert-parallel"
  "--config not YAML|2|Config file must be of a yaml/yml type. json supplied||h100|vllm serve Qwen/Qwen3-8B --config $data/x.json"
  "--config missing|2|--config $data/missing.yaml: cannot read it||h100|vllm serve Qwen/Qwen3-8B --config $data/missing.yaml"
  "dotted --speculative-config.method|run|MTP projection||h200|vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config.method mtp --speculative-config.num_speculative_tokens 2"
  "no dotted flag, no MTP weights|run||MTP projection|h200|vllm serve deepseek-ai/DeepSeek-V3 -tp 8"
  "-O.cudagraph_mode|run|cudagraph_capture skipped||h100|vllm serve Qwen/Qwen3-8B -O.cudagraph_mode=NONE"
  "a flag's error names the flags, not a file|2|ranksim: error: the vllm serve flags: ||h100|vllm serve Qwen/Qwen3-8B -tp 3"
  "no hardware: name it|2|ranksim: error: vllm serve runs on the GPUs it finds, so name them: pass --hardware NAME||-|vllm serve Qwen/Qwen3-8B"
  "a model's error names MODEL|2|ranksim: error: vllm serve MODEL: no built-in model matches||h100|vllm serve Qwen/Qwen9-8B"
  "an environment error names the prefix|2|ranksim: error: the environment prefix: key 'VLLM_ALL2ALL_BACKEND'||h200|VLLM_ALL2ALL_BACKEND=deepep vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -ep"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name want has hasnt hw cmd <<<"$c"
  # shellcheck disable=SC2086
  hwarg=(--hardware "$hw")
  [ "$hw" = - ] && hwarg=() # no --hardware at all
  "$bin" run --db "$tmp/db" "${hwarg[@]}" --prefill 1024 -- $cmd >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$want" = run ]; then
    [ "$got" = 0 ] || [ "$got" = 3 ] || { no "$name: exit $got: $(head -c 600 "$tmp/err")"; continue; }
  elif [ "$got" != "$want" ]; then
    no "$name: exit $got, expected $want: $(head -c 600 "$tmp/err" "$tmp/out")"
    continue
  fi
  if [ "$want" = 2 ]; then
    lines=$(wc -l <"$tmp/err")
    grep -qF -- "$has" "$tmp/err" && [ "$lines" = 1 ] && ok "$name" ||
      no "$name: expected one line with '$has', got: $(cat "$tmp/err")"
    continue
  fi
  # the report wraps its lines: compare with the line breaks and indents taken out
  flat=$(tr '\n' ' ' <"$tmp/out" | tr -s ' ')
  if [ -n "$has" ] && ! grep -qF -- "$has" <<<"$flat"; then
    no "$name: '$has' not in the report: $(head -c 800 "$tmp/out")"
  elif [ -n "$hasnt" ] && grep -qF -- "$hasnt" <<<"$flat"; then
    no "$name: '$hasnt' in the report"
  else
    ok "$name"
  fi
done
echo "1..$n"
exit $fail
