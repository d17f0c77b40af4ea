/* model/memory.h — what each rank needs in device memory, and whether the KV cache fits: the
 * class of failures that surface twenty minutes into loading a model.
 *
 * Per rank, by component (names are a contract): weights, quant_scales, derived_weights,
 * kv_cache, attn_workspace, activations, cudagraph, reserved, outside_budget. Each component is the
 * sum of itemised entries (tensor name, shape, dtype, bytes) that `--memory-detail` lists.
 *
 * The KV budget follows vLLM's gpu_worker: requested = ceil(HBM x gpu_memory_utilization);
 * available KV = requested - non-KV (every component but kv_cache). Findings are SchedDiag*
 * (kind `kv_budget` or `oom`, severity error) in vLLM's words, with the utilization that would
 * fit. doc/memory.md has every formula and its source; doc/validation.md compares the seeds'
 * reported figures with ranksim's.
 */
#ifndef MODEL_MEMORY_H
#define MODEL_MEMORY_H

#include <glib.h>
#include <stdint.h>

#include "../net/hardware.h"
#include "../sched/engine.h"
#include "../sched/program.h"
#include "arch.h"
#include "engine-args.h"
#include "plan.h"

typedef enum {
    MODEL_MEM_WEIGHTS = 0,
    MODEL_MEM_QUANT_SCALES,
    MODEL_MEM_DERIVED_WEIGHTS,
    MODEL_MEM_KV_CACHE,
    MODEL_MEM_ATTN_WORKSPACE,
    MODEL_MEM_ACTIVATIONS,
    MODEL_MEM_CUDAGRAPH,
    MODEL_MEM_RESERVED,
    MODEL_MEM_OUTSIDE_BUDGET, /* allocated after vLLM measured the weights and before or after
                                 its profile, counted by no budget (doc/memory.md) */
    MODEL_MEM_COUNT
} ModelMemComponent;

/* Whether vLLM's non-KV memory counts component `c`: every component but the KV cache and what
 * lies outside the budget; the CUDA-graph estimate only when the profiler subtracts it; the
 * communicator buffers only when they are made after vLLM's first memory snapshot (before
 * vLLM PR #25359, and on Ascend). */
static inline bool model_mem_in_non_kv(ModelMemComponent c, bool cudagraph_in_budget,
                                       bool reserved_in_budget)
{
    return c != MODEL_MEM_KV_CACHE && c != MODEL_MEM_OUTSIDE_BUDGET &&
           (c != MODEL_MEM_CUDAGRAPH || cudagraph_in_budget) &&
           (c != MODEL_MEM_RESERVED || reserved_in_budget);
}

typedef struct {
    ModelMemComponent component;
    char *name;  /* e.g. "layers.3-77.mlp.experts.w13_weight" (a run of layers may be one item) */
    char *shape; /* e.g. "[75 x 256/8, 4096, 6144]" */
    char *dtype; /* "bf16", "int8", "fp4", "fp8_e4m3", "fp32", ... */
    uint64_t bytes;
} ModelMemItem;

typedef struct {
    uint64_t bytes[MODEL_MEM_COUNT];
    GPtrArray *items;            /* ModelMemItem*, owned (a reference: ranks with identical
                                    contents share one array; treat it as read-only) */
    int64_t kv_budget_bytes;     /* requested - non-KV; may be negative */
    uint64_t kv_bytes_per_token; /* on this rank, all layers */
    uint32_t kv_block_size;      /* tokens per KV block (vLLM's block_size) */
    uint64_t kv_tokens;          /* "GPU KV cache size: N tokens": max_concurrency x
                                    max_model_len (0 when the budget is not positive) */
    double max_concurrency;      /* "Maximum concurrency for L tokens per request: C x" */
} ModelMemRank;

/* What vLLM's start-up log says, for the tightest rank (the smallest KV budget): "Model loading
 * took X GiB memory", "Available KV cache memory: Y GiB", "GPU KV cache size: N tokens",
 * "Maximum concurrency for L tokens per request: C x". */
typedef struct {
    int32_t rank;            /* the tightest rank; -1 = none */
    uint64_t loading_bytes;  /* weights + quant scales + derived weights */
    int64_t kv_budget_bytes; /* may be negative */
    uint64_t kv_tokens;      /* 0 when the budget is not positive */
    double max_concurrency;
    uint32_t kv_block_size;
    /* hybrid models (model/memory-hybrid.h): the state page before and after padding to the
     * attention page, for "Setting attention block size to N tokens" and "Padding mamba page
     * size by X%"; 0 for other models and for plans read back from a database */
    uint64_t state_page_bytes, padded_page_bytes;
} ModelVllmLines;

/* vLLM's start-up, phase by phase, then serving (model/lifecycle.h plans them). The order is
 * vLLM's: gpu_worker load_model, determine_available_memory (profile run, CUDA-graph memory
 * profiling), initialize_from_config (KV cache), compile_or_warm_up_model (kernel_warmup: the
 * MoE autotuning and the Triton JIT warm-up; then capture_model), then the requests. */
typedef enum {
    MODEL_PHASE_LOAD_WEIGHTS = 0,
    MODEL_PHASE_PROFILE_RUN,
    MODEL_PHASE_CUDAGRAPH_PROFILE,
    MODEL_PHASE_KV_CACHE,
    MODEL_PHASE_MOE_AUTOTUNE,
    MODEL_PHASE_JIT_WARMUP,
    MODEL_PHASE_CUDAGRAPH_CAPTURE,
    MODEL_PHASE_SERVE,
    MODEL_PHASE_COUNT
} ModelPhase;

typedef enum {
    MODEL_PHASE_OK = 0,
    MODEL_PHASE_SKIPPED,     /* this configuration has no such phase */
    MODEL_PHASE_FAILED,      /* the start-up (or the run) failed here */
    MODEL_PHASE_NOT_REACHED, /* after a failed phase */
} ModelPhaseStatus;

typedef struct {
    uint8_t status;           /* ModelPhaseStatus */
    int64_t start_ns;         /* from the engine's start (load_weights at 0); serve: its start */
    int64_t dur_ns;           /* -1: not modelled (load_weights: storage-bound) */
    uint64_t allocated_bytes; /* on the device when the phase ends (context included) */
    uint64_t peak_bytes;      /* the most on the device during it */
    int64_t free_bytes;       /* HBM - peak_bytes: what was left at the tightest moment */
} ModelPhaseRow;

const char *model_phase_name(ModelPhase p);
const char *model_phase_status_name(ModelPhaseStatus s);

typedef struct {
    uint32_t world;
    ModelMemRank *ranks; /* [world] */
    uint64_t hbm_bytes;
    uint64_t requested_bytes; /* ceil(HBM x gpu_memory_utilization) */
    double utilization;
    bool cudagraph_in_budget; /* the CUDA-graph estimate is part of the non-KV memory
                                 (engine.cudagraph_memory_profiling) */
    bool reserved_in_budget;  /* the communicator buffers are part of it (they are made after
                                 vLLM's first snapshot: before PR #25359, or on Ascend) */
    uint64_t context_bytes;   /* CUDA / CANN context: on the device before vLLM's first
                                 snapshot, outside the KV budget */
    uint32_t max_model_len;   /* the engine's, for the capacity lines; 0 when unknown (a plan
                                 read back from the database) */
    char *weights_format;     /* model_quant_spec_describe() of the formats in force, owned */
    bool experts_nvfp4;       /* the routed experts are NVFP4 (their MoE kernels quantize the
                                 activations to FP4 too) */
    ModelVllmLines vllm;      /* the start-up log lines of the tightest rank */
    ModelVllmRelease vllm_release; /* the release simulated (engine.vllm_version), for the
                                      wording of the start-up lines; 0 = main (or a plan read
                                      back from the database) */
    GPtrArray *diags;         /* SchedDiag*, owned: kv_budget, oom */
    ModelPhaseRow (*phases)[MODEL_PHASE_COUNT]; /* [world] per phase; NULL until
                                                   model_lifecycle_plan */
} ModelMemPlan;

/* How far ranksim's non-KV memory has fallen short of vLLM's in real single-node start-up logs:
 * at most 8.3 % (doc/validation.md: gpt-oss-120b on one H100, rows L24 / L25; seed 004's
 * GLM-5.2 TP1/PCP4/DCP4 5.5 %), rounded up. A KV budget smaller than this share of the non-KV
 * memory may be negative on hardware: the plan warns (`kv_budget`, severity warning), and the
 * report prints the band. */
#define MODEL_MEM_NON_KV_UNDERESTIMATE 0.085

const char *model_mem_component_name(ModelMemComponent c);

/* vLLM's own split of a rank's non-KV memory (gpu_worker's DEBUG line "Total non KV cache
 * memory: ...; torch peak memory increase: ...; non-torch forward increase memory: ...; weights
 * memory: ..."): weights = weights + quant scales + derived weights; non-torch = the items
 * named non_torch.* (model/memory-vllm.h) and the communicators when they are inside the
 * budget; torch peak = the rest of the non-KV memory but the CUDA-graph estimate. */
typedef struct {
    uint64_t total, torch_peak, non_torch, weights, cudagraph;
} ModelVllmSplit;
void model_mem_vllm_split(const ModelMemPlan *m, const ModelMemRank *r, ModelVllmSplit *out);

/* Plans memory for every rank. `lowered` is the lowered program (for activation shapes); may be
 * NULL, then activations come from the architecture alone. Never fails: problems are
 * diagnostics. Caller owns the result. */
ModelMemPlan *model_memory_plan(const ModelArch *arch, const ModelPlan *plan,
                                const ModelEngine *engine, const NetHardware *hw,
                                const SchedProgram *lowered);
void model_memory_plan_free(ModelMemPlan *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ModelMemPlan, model_memory_plan_free)

/* The FlashInfer trtllm-gen sparse-MLA workspace in bytes (vllm-cp.md): 394 MiB; with DCP > 1
 * add 8 x heads_per_rank x DCP x max_num_batched_tokens x 256 + 1 MiB. */
uint64_t model_flashinfer_sparse_workspace(uint32_t heads_per_rank, uint32_t dcp,
                                           uint32_t max_num_batched_tokens);

/* KV-cache bytes per token per layer on one rank (MLA latent + rope, DSA indexer keys with their
 * scales, divided by DCP as vLLM shards it). */
uint64_t model_kv_bytes_per_token_layer(const ModelArch *arch, const ModelPlan *plan,
                                        const ModelEngine *engine);

/* KV-cache bytes one request of `len` tokens holds on a rank, in whole blocks (sliding windows
 * by vLLM's admission rule; DeepSeek-V4's window, compressed and indexer caches). */
uint64_t model_kv_request_bytes(const ModelArch *arch, const ModelPlan *plan,
                                const ModelEngine *engine, uint32_t len);

#endif
