/* model/moe.h — vLLM's MoE kernel backends (`--moe-backend`, engine.moe_backend) and what their
 * start-up costs: the FlashInfer backends run FlashInfer's autotuner in a dummy forward at
 * max_num_batched_tokens after the KV cache is allocated (vLLM kernel_warmup ->
 * flashinfer_autotune), and that forward allocates the CUTLASS MoE runner's workspace in one
 * piece. doc/lifecycle.md, "MoE autotuning", has the formula and its sources.
 */
#ifndef MODEL_MOE_H
#define MODEL_MOE_H

#include <stdbool.h>
#include <stdint.h>

#include "arch.h"
#include "plan.h"

typedef enum {
    MODEL_MOE_AUTO = 0,
    MODEL_MOE_TRITON,
    MODEL_MOE_DEEP_GEMM,
    MODEL_MOE_DEEP_GEMM_MEGA_MOE,
    MODEL_MOE_CUTLASS,
    MODEL_MOE_FLASHINFER_TRTLLM,
    MODEL_MOE_FLASHINFER_CUTLASS,
    MODEL_MOE_FLASHINFER_CUTEDSL,
    MODEL_MOE_MARLIN,
    MODEL_MOE_AITER,
    MODEL_MOE_EMULATION,
    MODEL_MOE_BACKEND_COUNT
} ModelMoeBackend;

/* vLLM's spelling (vllm/config/kernel.py MoEBackend): "flashinfer_cutlass", ... */
const char *model_moe_backend_name(ModelMoeBackend b);
bool model_moe_backend_parse(const char *s, ModelMoeBackend *out);
/* Fills names[0..MODEL_MOE_BACKEND_COUNT) and a NULL after them. */
void model_moe_backend_names(const char **names);
/* Whether the backend runs FlashInfer's autotuner at start-up (flashinfer_cutlass,
 * flashinfer_trtllm). */
bool model_moe_backend_autotunes(ModelMoeBackend b);

typedef struct {
    uint64_t tokens; /* M_moe: rows reaching one rank's MoE in the dummy forward */
    uint32_t local_experts;
    uint32_t inter;        /* intermediate width per expert on the rank */
    uint64_t permuted_in;  /* the permuted-input overlap buffer */
    uint64_t permuted_out; /* the fc1 / fc2 output overlap buffer */
    uint64_t scales;       /* NVFP4 activation scale factors */
    uint64_t routing;      /* routing maps and counters */
    uint64_t bytes;        /* the whole workspace: one allocation */
} ModelMoeWorkspace;

/* The FlashInfer CUTLASS fused-MoE runner's workspace for the autotuning dummy forward of
 * `max_num_batched_tokens` tokens per rank. With expert parallelism and PCP (or DP) > 1 the
 * dispatch all-gathers the tokens over that group first, so a rank's MoE sees T x PCP rows.
 * Activations are NVFP4 when `fp4_act`, else bf16. False when the model has no MoE. */
bool model_moe_cutlass_workspace(const ModelArch *a, const ModelParallel *par,
                                 uint32_t max_num_batched_tokens, bool fp4_act,
                                 ModelMoeWorkspace *out);
/* The same for `rows` rows reaching the rank's MoE as they are (no dispatch gather). */
bool model_moe_cutlass_workspace_rows(const ModelArch *a, const ModelParallel *par, uint64_t rows,
                                      bool fp4_act, ModelMoeWorkspace *out);

/* FlashInfer's autotuner profiles the CUTLASS MoE GEMMs for token buckets up to
 * `tune_max_num_tokens`, in ascending order; the cached runner keeps the profile workspace of
 * the last one it profiled, the top bucket's second GEMM, for the life of the process
 * (GemmProfilerBackend::getProfilerWorkspaces; research notes vllm-memflow.md section 4).
 * Returns that workspace in bytes (0 without MoE). */
uint64_t model_moe_cutlass_profile_workspace(const ModelArch *a, const ModelParallel *par,
                                             uint32_t tune_max_num_tokens, bool fp4_act);

/* The largest bucket vLLM asks FlashInfer to tune: FlashInfer's default 8192, or since vLLM PR
 * #52989 fi_moe_largest_bucket = max(max_num_batched_tokens x DP, 8192). */
uint32_t model_moe_tune_max_num_tokens(const ModelParallel *par, uint32_t max_num_batched_tokens,
                                       bool scheduler_limit);

#endif
