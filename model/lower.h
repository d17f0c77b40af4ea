/* model/lower.h — lowers a model, a parallel plan, engine settings and a workload into one
 * SchedProgram: every rank's ops, the way vLLM / vLLM-Ascend would run them.
 *
 * Each engine step becomes: embedding, the decoder layers as repeat blocks (one block per run of
 * identical layers: dense layers, MoE layers, DSA full / shared-indexer layers), final norm and
 * lm_head. Canonical op names (used in the database and traces): compute input_layernorm,
 * q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj, kv_a_layernorm, kv_b_proj, indexer,
 * sparse_attention, mla_attention, o_proj, post_attention_layernorm, moe_gate, moe_topk,
 * moe_experts, shared_experts, mlp, lm_head (plus embed, final_norm, q_proj, k_proj, v_proj,
 * attention for dense GQA models); collectives sp_all_gather, sp_reduce_scatter, tp_all_reduce,
 * ep_dispatch, ep_combine, dcp_q_all_gather, dcp_lse_all_gather, dcp_out_reduce_scatter,
 * dcp_out_all_reduce, dcp_all_to_all, dcp_kv_all_gather, pcp_kv_all_gather, pcp_out_all_gather,
 * shared_expert_all_reduce, mc2_all_gather. Every op records its token rows on that rank.
 *
 * doc/lowering.md states, per parallel mode and backend, which ops run on how many rows and
 * which collectives carry what counts, with the vLLM behaviour each rule comes from.
 */
#ifndef MODEL_LOWER_H
#define MODEL_LOWER_H

#include <glib.h>

#include "../sched/engine.h"
#include "../sched/program.h"
#include "arch.h"
#include "backend.h"
#include "cost.h"
#include "moe.h"
#include "plan.h"
#include "vllm.h"

#define MODEL_LOWER_ERROR (model_lower_error_quark())
GQuark model_lower_error_quark(void);

typedef enum {
    MODEL_LOWER_ERROR_INVALID = 0, /* the workload or layout cannot run on this configuration */
    MODEL_LOWER_ERROR_BACKEND,     /* the attention backend refuses the model, the device or
                                      the layout (an engine setting to change) */
} ModelLowerErrorCode;

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
                                           (engine.vllm_without); 0: vLLM main */
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
    uint32_t num_gpu_blocks_override;   /* --num-gpu-blocks-override: the KV blocks the scheduler
                                           allocates from, instead of the profiled budget's;
                                           0 = none (vLLM's default) */
} ModelEngine;

#define MODEL_ENGINE_GIVEN_MAX_MODEL_LEN (1u << 0)
#define MODEL_ENGINE_GIVEN_MAX_NUM_BATCHED_TOKENS (1u << 1)
#define MODEL_ENGINE_GIVEN_MAX_NUM_SEQS (1u << 2)
#define MODEL_ENGINE_GIVEN_V2_MODEL_RUNNER (1u << 3)

/* One DP rank's batch in one step: prompts (or chunks of them) prefilled and sequences
 * decoding one token. */
typedef struct {
    GArray *prefill;     /* uint32 new tokens of each prefill (a whole prompt or a chunk) */
    GArray *prefill_ctx; /* uint32 tokens already in the KV cache before each prefill entry
                            (a chunked prefill's earlier chunks); shorter than `prefill`
                            means 0 for the rest (model_batch_prefill_ctx) */
    GArray *decode;      /* uint32 context lengths */
    /* What this DP rank decides for itself in the step (doc/lowering.md, "Per-rank
     * decisions"); all false / 0 is what vLLM main does. A scenario sets one on one rank to
     * see the hang it makes. */
    bool skip_dummy;     /* idle: no dummy batch (no DP sync, no EP collectives) */
    bool skip_drafter;   /* the MTP drafter does not run after the target forward */
    uint32_t pad_tokens; /* this rank pads to this many rows instead of the step's; 0: the
                            step's */
} ModelBatch;

typedef struct {
    GPtrArray *per_dp;   /* ModelBatch*; 1 entry = the same batch on every DP rank */
    int64_t idle_ns;     /* the engine waits this long before the step (no request to run until
                            an arrival); lowered as an `idle` op on every rank */
    uint32_t pad_tokens; /* the token rows every DP rank runs outside attention (the batch
                            padded across DP and to its CUDA-graph size); 0: no padding beyond
                            what the lowering derives. Without PCP only. */
    int32_t sched_after; /* PP: the step (0-based) whose output the engine core waited for
                            before scheduling this one, or -1: scheduled right after the step
                            before, with batches still in flight (vLLM's batch queue).
                            model_workload_add_step sets the one before (one batch in flight) */
} ModelStep;

typedef struct {
    GPtrArray *steps; /* ModelStep* */
} ModelWorkload;

const char *model_quant_name(ModelQuant q);
bool model_quant_parse(const char *s, ModelQuant *out);
const char *model_cudagraph_name(ModelCudagraph m);
bool model_cudagraph_parse(const char *s, ModelCudagraph *out);
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

ModelBatch *model_batch_new(void);
void model_batch_free(ModelBatch *b);
ModelWorkload *model_workload_new(void);
void model_workload_free(ModelWorkload *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ModelWorkload, model_workload_free)
/* The batch DP rank `dp` runs in step `s` (one batch: every DP rank's), or NULL for an idle DP
 * rank (it runs a dummy batch). */
const ModelBatch *model_step_batch(const ModelStep *s, uint32_t dp);
/* Tokens a batch schedules: its prompts' lengths plus one per decoding sequence. */
uint64_t model_batch_tokens(const ModelBatch *b);
/* The cached context before prefill entry `i` (0 for a whole prompt). */
uint32_t model_batch_prefill_ctx(const ModelBatch *b, guint i);
/* Appends a prefill of `len` new tokens after `ctx` cached ones. */
void model_batch_add_prefill(ModelBatch *b, uint32_t len, uint32_t ctx);
/* Appends a step whose batches (taken over) run on the DP ranks. */
void model_workload_add_step(ModelWorkload *w, GPtrArray *per_dp);

/* Deliberately broken lowerings, for testing the layout checker (seed 000 §3.3.1). */
typedef enum {
    MODEL_BREAK_NONE = 0,
    MODEL_BREAK_EARLY_GATHER,    /* full tokens restored before the MoE gate / shared experts */
    MODEL_BREAK_LOCAL_ATTENTION, /* local tokens propagated into the next layer's attention */
    MODEL_BREAK_GATHER_RESIDUAL, /* the residual all-gathered across layers as well */
} ModelBreak;

typedef struct {
    const ModelArch *arch;
    const ModelPlan *plan;
    const ModelEngine *engine;
    const ModelWorkload *workload;
    const ModelCost *cost;
    const NetHardware *hw; /* the device (attention backend choice); NULL: an H100 */
    ModelBreak broken;     /* MODEL_BREAK_NONE outside tests */
} ModelLowerInput;

/* Builds the program: adds the plan's groups to a new program and every rank's ops.
 * Returns NULL with `error` (MODEL_LOWER_ERROR) for a workload the configuration cannot run
 * (e.g. a prompt longer than max_model_len, a step with more DP batches than DP ranks, a
 * backend that does not exist for this architecture). Caller owns the program. */
SchedProgram *model_lower(const ModelLowerInput *in, GError **error);

/* The layout checker: reads the lowered program back (rows per op, collectives per layer) and
 * returns `layout` diagnostics (SchedDiag*, caller owns) for the three error classes of seed
 * 000 §3.3.1 under DSA CP — full tokens before the MoE, local tokens into attention, gathered
 * residuals (rows above the full token count or more than one sp_all_gather per layer) — and
 * for any op above the step's full token count. Empty when the contract holds or DSA CP is off. */
GPtrArray *model_layout_check(const SchedProgram *p, const ModelLowerInput *in);

#endif
