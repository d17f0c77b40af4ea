/* model/engine-args.h — vLLM's engine arguments (`vllm serve` flags, the scenario's `engine:`
 * keys) and what derives from them alone: the attention backend in force, the KV block size,
 * the CUDA-graph capture sizes, vLLM's defaults for what the user left open.
 *
 * ModelEngine is plain data, filled by src/input (scenario, eval config, pasted command line)
 * and read-only for the rest of model/: the lowering, the memory plan, the start-up phases and
 * the serving scheduler all ask this module rather than one another. It depends on the
 * architecture, the parallel plan, the device and vLLM's version behaviours, never on the
 * modules that consume it. Every function is a pure computation that cannot fail; the costs
 * are a few comparisons (the capture sizes: a loop over at most ~100 sizes).
 */
#ifndef MODEL_ENGINE_ARGS_H
#define MODEL_ENGINE_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "../net/hardware.h"
#include "../sched/program.h"
#include "arch.h"
#include "backend.h"
#include "moe.h"
#include "plan.h"
#include "vllm.h"

typedef enum {
    MODEL_QUANT_BF16 = 0,
    MODEL_QUANT_FP8,
    MODEL_QUANT_W8A8,
    MODEL_QUANT_W4A8,
    MODEL_QUANT_NVFP4,
    MODEL_QUANT_COUNT
} ModelQuant;

typedef enum {
    MODEL_CUDAGRAPH_NONE = 0,
    MODEL_CUDAGRAPH_PIECEWISE,
    MODEL_CUDAGRAPH_FULL,
    MODEL_CUDAGRAPH_FULL_AND_PIECEWISE,
} ModelCudagraph;

typedef enum {
    MODEL_SPEC_NONE = 0,
    MODEL_SPEC_MTP,   /* the model's own MTP layers (deepseek_mtp, glm4_moe_mtp, ...) */
    MODEL_SPEC_EAGLE, /* a separate draft model (eagle, eagle3): not loaded by ranksim */
    MODEL_SPEC_NGRAM, /* prompt lookup: no weights */
    MODEL_SPEC_OTHER,
} ModelSpecMethod;

/* vLLM's MambaDType (vllm/config/cache.py): --mamba-cache-dtype (the conv state, and the SSM
 * state when --mamba-ssm-cache-dtype is "auto") and --mamba-ssm-cache-dtype; "auto" = the model
 * dtype (the SSM state: the conv state's). */
typedef enum {
    MODEL_MAMBA_DTYPE_AUTO = 0,
    MODEL_MAMBA_DTYPE_FLOAT32,
    MODEL_MAMBA_DTYPE_FLOAT16,
    MODEL_MAMBA_DTYPE_BFLOAT16,
    MODEL_MAMBA_DTYPE_COUNT
} ModelMambaDtype;

/* vLLM's MambaCacheMode (--mamba-cache-mode {all,align,none}, default "none", which vLLM
 * replaces when prefix caching is on: model_hybrid_cache_mode). UNSET: not given. */
typedef enum {
    MODEL_MAMBA_MODE_UNSET = 0,
    MODEL_MAMBA_MODE_NONE,
    MODEL_MAMBA_MODE_ALIGN,
    MODEL_MAMBA_MODE_ALL,
    MODEL_MAMBA_MODE_COUNT
} ModelMambaModeArg;

typedef struct {
    ModelBackend attention_backend;
    ModelQuant quantization;            /* meaningful when quantization_override */
    bool quantization_override;         /* engine.quantization given: it replaces the formats the
                                           checkpoint's quantization_config says */
    ModelSpecMethod speculative_method; /* --speculative-config method */
    uint32_t num_speculative_tokens;    /* 0 = speculative decoding off */
    SchedDtype kv_cache_dtype;          /* bf16 ("auto") or fp8 */
    double gpu_memory_utilization;      /* (0, 1], default 0.92 */
    uint32_t max_num_batched_tokens;    /* default 8192 */
    uint32_t max_model_len;             /* default 8192 */
    uint32_t max_num_seqs;              /* default 256 */
    ModelCudagraph cudagraph_mode;      /* default FULL_AND_PIECEWISE */
    bool cudagraph_memory_profiling;    /* vLLM >= 0.21 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1,
                                           the default): the CUDA-graph estimate is subtracted from
                                           the KV budget; false: graphs are captured after the KV
                                           cache, outside the budget. Default true */
    bool rocm_aiter;                    /* VLLM_ROCM_USE_AITER=1: AITER kernels on ROCm (the AUTO
                                           backend for MLA becomes ROCM_AITER_MLA) */
    uint32_t given;                     /* MODEL_ENGINE_GIVEN_* bits: what the scenario or the
                                           command line set; the rest takes vLLM's defaults
                                           (model_engine_apply_vllm_defaults) */
    ModelVllmAbsent vllm_absent;        /* behaviours of model/vllm.h this vLLM lacks
                                           (engine.vllm_without, engine.vllm_version); 0:
                                           vLLM main */
    ModelVllmRelease vllm_release;      /* engine.vllm_version: the release simulated (its
                                           behaviours are in vllm_absent); 0 = main */
    ModelMoeBackend moe_backend;        /* engine.moe_backend / --moe-backend; default auto */
    bool gpu_sync_check;                /* engine.gpu_sync_check / VLLM_GPU_SYNC_CHECK=error: the
                                           runtime's GPU<->CPU sync guard on the hot path (off by
                                           default; vLLM's CI image turns it on) */
    bool v2_model_runner;               /* engine.v2_model_runner / VLLM_USE_V2_MODEL_RUNNER=1:
                                           vLLM's V2 GPU model runner (vllm/v1/worker/gpu/) and
                                           its sampler state; when not given, vLLM's default for
                                           the architecture (model_engine_apply_vllm_defaults) */
    double jit_compile_s;               /* engine.jit_compile_s: one Triton kernel's JIT compile on
                                           a cold key, seconds; default 1.0 (doc/lifecycle.md) */
    bool enable_prefix_caching;         /* --enable-prefix-caching: vLLM V1's default on; off
                                           with --no-enable-prefix-caching */
    bool async_scheduling;              /* --async-scheduling / --no-async-scheduling: the engine
                                           schedules step n + 1 while step n runs, so the host's
                                           per-step work hides behind the GPU's (model/host.h);
                                           when not given, vLLM's default (on since PR 27614;
                                           model_engine_apply_vllm_defaults) */
    uint32_t num_gpu_blocks_override;   /* --num-gpu-blocks-override: the KV blocks the scheduler
                                           allocates from, instead of the profiled budget's;
                                           0 = none (vLLM's default) */
    uint8_t mamba_cache_dtype;          /* ModelMambaDtype: --mamba-cache-dtype; default auto */
    uint8_t mamba_ssm_cache_dtype;      /* ModelMambaDtype: --mamba-ssm-cache-dtype; default auto */
    uint8_t mamba_cache_mode;           /* ModelMambaModeArg: --mamba-cache-mode; default unset */
} ModelEngine;

#define MODEL_ENGINE_GIVEN_MAX_MODEL_LEN (1u << 0)
#define MODEL_ENGINE_GIVEN_MAX_NUM_BATCHED_TOKENS (1u << 1)
#define MODEL_ENGINE_GIVEN_MAX_NUM_SEQS (1u << 2)
#define MODEL_ENGINE_GIVEN_V2_MODEL_RUNNER (1u << 3)
#define MODEL_ENGINE_GIVEN_ASYNC_SCHEDULING (1u << 4)
#define MODEL_ENGINE_GIVEN_CUDAGRAPH_MEMORY_PROFILING (1u << 5)
/* --enable-prefix-caching / --no-enable-prefix-caching given: vLLM keeps hybrid models' prefix
 * caching opt-in before PR 50991 (model_hybrid_cache_mode) */
#define MODEL_ENGINE_GIVEN_PREFIX_CACHING (1u << 6)
/* gpu_memory_utilization given: its default changed from 0.9 to 0.92 in vLLM (the
 * gpu_memory_utilization_092_default behaviour) */
#define MODEL_ENGINE_GIVEN_GPU_MEMORY_UTILIZATION (1u << 7)

/* DeepSeek-V4's compressed layers keep 256-token logical blocks (vLLM blog "DeepSeek V4 in
 * vLLM"): its KV block size, and the unit of its compressed caches (model/memory.c). */
#define MODEL_ENGINE_V4_COMPRESSED_BLOCK 256u

/* The engine.quantization / --quantization name of `q` ("bf16", "fp8", "w8a8", "w4a8", "nvfp4");
 * "?" outside the enum. Static storage. */
const char *model_engine_quant_name(ModelQuant q);
/* Parses a quantization name, case-insensitively; false for a name ranksim does not model. */
bool model_engine_quant_parse(const char *s, ModelQuant *out);
/* vLLM's CUDAGraphMode name of `m` ("NONE", "PIECEWISE", "FULL", "FULL_AND_PIECEWISE"); "?"
 * outside the enum. Static storage. */
const char *model_engine_cudagraph_name(ModelCudagraph m);
/* Parses a CUDAGraphMode name, case-insensitively; false for any other text. */
bool model_engine_cudagraph_parse(const char *s, ModelCudagraph *out);
/* vLLM's spelling of a MambaDType ("auto", "float32", "float16", "bfloat16") / MambaCacheMode
 * ("none", "align", "all"; UNSET: "none"); "?" outside the enum. Static storage. */
const char *model_engine_mamba_dtype_name(ModelMambaDtype d);
const char *model_engine_mamba_mode_name(ModelMambaModeArg m);
/* Parses them, exactly as vLLM's argparse choices (case-sensitive); false for anything else. */
bool model_engine_mamba_dtype_parse(const char *s, ModelMambaDtype *out);
bool model_engine_mamba_mode_parse(const char *s, ModelMambaModeArg *out);
/* vLLM's choices as its argparse lists them: "auto, float32, float16, bfloat16" and
 * "all, align, none". Static storage. */
#define MODEL_ENGINE_MAMBA_DTYPE_CHOICES "auto, float32, float16, bfloat16"
#define MODEL_ENGINE_MAMBA_MODE_CHOICES "all, align, none"
/* Sets every field to ranksim's defaults (vLLM's where the model and the device do not enter;
 * the comments on ModelEngine give them) and `given` to 0. Never fails. */
void model_engine_defaults(ModelEngine *e);
/* vLLM's defaults for what `e->given` leaves open, once the model and the device are known
 * (`vllm serve`, UsageContext.OPENAI_API_SERVER; vllm/engine/arg_utils.py
 * get_batch_defaults and _set_default_max_num_seqs_and_batched_tokens_args):
 *   max_model_len: the model's (arch->max_model_len, as _get_and_verify_max_len derives it);
 *   max_num_batched_tokens / max_num_seqs: 8192 / 1024 on a device with >= 70 GiB that is not
 *   an A100, else 2048 / 256; then max_num_batched_tokens = min(max_num_seqs x max_model_len,
 *   it) and max_num_seqs = min(max_num_seqs, max_num_batched_tokens) for the ones not given.
 * `hw` may be NULL (no device rule: the 8192 / 256 of model_engine_defaults stay). */
void model_engine_apply_vllm_defaults(ModelEngine *e, const ModelArch *a, const NetHardware *hw);
/* The backend the lowering and the memory plan use: model_backend_resolve() on the engine's
 * backend with the plan's context-parallel sizes and the device (NULL: an H100). */
ModelBackend model_engine_backend(const ModelArch *a, const ModelEngine *e,
                                  const ModelParallel *par, const NetHardware *hw);

/* vLLM's KV block size (tokens per block) for this architecture, backend and device: 128 on
 * vLLM-Ascend, 64 for the FlashMLA and FlashInfer MLA backends, 16 otherwise; DeepSeek-V4's
 * compressed block. */
uint32_t model_engine_kv_block_size(const ModelArch *a, ModelBackend backend,
                                    const NetHardware *hw);

/* How many CUDA-graph capture sizes vLLM uses by default, those <= `limit` (UINT32_MAX: all);
 * sets *largest to the largest. */
uint32_t model_engine_cudagraph_sizes(const ModelEngine *e, const NetHardware *hw, uint32_t limit,
                                      uint32_t *largest);

/* The capture size a batch of `n` tokens runs at (the smallest capture size >= n: vLLM pads the
 * batch to it), or 0 when n exceeds the largest (the batch runs eagerly / piecewise unpadded). */
uint32_t model_engine_cudagraph_bucket(const ModelEngine *e, const NetHardware *hw, uint32_t n);

#endif
