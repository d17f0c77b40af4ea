/* model/vllm.c — names of the vLLM behaviours of model/vllm.h. */
#include "vllm.h"

#include <string.h>

static const char *const names[MODEL_VLLM_BEHAVIOUR_COUNT] = {
    [MODEL_VLLM_SPARSE_MLA_DCP_WORKSPACE] = "sparse_mla_dcp_workspace",
    [MODEL_VLLM_DCP_EMPTY_SHARD_MASK] = "dcp_empty_shard_mask",
    [MODEL_VLLM_SPARSE_MLA_BACKEND_CHECK] = "sparse_mla_backend_combination_check",
    [MODEL_VLLM_ALL_GATHER_ON_PYNCCL] = "all_gather_on_pynccl",
    [MODEL_VLLM_ROCM_ALL_GATHER_ON_PROCESS_GROUP] = "rocm_all_gather_on_process_group",
    [MODEL_VLLM_INDEXER_WARMUP_KEYS] = "indexer_warmup_keys_normalized",
    [MODEL_VLLM_DCP_RANK_TENSOR] = "dcp_rank_tensor",
    [MODEL_VLLM_DRAFTER_DUMMY_WHEN_SKIPPED] = "drafter_dummy_when_skipped",
    [MODEL_VLLM_MOE_TUNE_TO_SCHEDULER_LIMIT] = "flashinfer_moe_tune_to_scheduler_limit",
    [MODEL_VLLM_NCCL_BEFORE_MEMORY_SNAPSHOT] = "nccl_before_memory_snapshot",
    [MODEL_VLLM_MEMORY_PROFILING_TOTAL_CONSUMED] = "memory_profiling_total_consumed",
    [MODEL_VLLM_DSA_MODELS_ON_V2_RUNNER] = "dsa_models_on_v2_runner",
    [MODEL_VLLM_ROCM_GLM_DSA_ON_V1_RUNNER] = "rocm_glm_dsa_on_v1_runner",
    [MODEL_VLLM_ASYNC_SCHEDULING_DEFAULT] = "async_scheduling_default",
};

const char *model_vllm_behaviour_name(ModelVllmBehaviour b)
{
    return (unsigned)b < MODEL_VLLM_BEHAVIOUR_COUNT ? names[b] : "?";
}

bool model_vllm_behaviour_parse(const char *s, ModelVllmBehaviour *out)
{
    for (int i = 0; i < MODEL_VLLM_BEHAVIOUR_COUNT; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (ModelVllmBehaviour)i;
            return true;
        }
    return false;
}
