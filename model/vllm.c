/* model/vllm.c — names of the vLLM behaviours of model/vllm.h. */
#include "vllm.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
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
    [MODEL_VLLM_NCCL_CUMEM_LAZY_CONNECT] = "nccl_cumem_lazy_connect",
    [MODEL_VLLM_MOE_WORKSPACE_PERSISTENT] = "moe_workspace_persistent",
    [MODEL_VLLM_TRITON_TOPK_TOPP_SAMPLER] = "triton_topk_topp_sampler",
    [MODEL_VLLM_FI_ALLREDUCE_FUSION_DEFAULT] = "flashinfer_allreduce_rms_fusion_default",
    [MODEL_VLLM_CUDAGRAPH_PROFILING_DEFAULT] = "cudagraph_memory_profiling_default",
    [MODEL_VLLM_FI_ALLREDUCE_SYMM_DEVICE_MEMORY] = "flashinfer_allreduce_symm_device_memory",
    [MODEL_VLLM_FI_ALLREDUCE_TORCH_SYMM_MEMORY] = "flashinfer_allreduce_torch_symm_memory",
    [MODEL_VLLM_GPU_MEMORY_UTILIZATION_092_DEFAULT] = "gpu_memory_utilization_092_default",
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

bool model_vllm_release_parse(const char *s, ModelVllmRelease *out)
{
    if (!s)
        return false;
    if (*s == 'v' || *s == 'V')
        s++;
    unsigned v[4] = {0, 0, 0, 0};
    int n = 0;
    const char *p = s;
    while (n < 4) {
        if (!g_ascii_isdigit(*p))
            return false;
        char *end = NULL;
        unsigned long x = strtoul(p, &end, 10);
        if (x > 255)
            return false;
        v[n++] = (unsigned)x;
        p = end;
        if (*p == '\0')
            break;
        if (*p != '.')
            return false;
        p++;
    }
    if (*p || n < 2)
        return false;
    *out = MODEL_VLLM_RELEASE(v[0], v[1], v[2], v[3]);
    return *out != 0;
}

char *model_vllm_release_format(ModelVllmRelease r, char *buf, size_t n)
{
    if (r == 0)
        snprintf(buf, n, "main");
    else if (r & 0xff)
        snprintf(buf, n, "%u.%u.%u.%u", r >> 24, (r >> 16) & 0xff, (r >> 8) & 0xff, r & 0xff);
    else
        snprintf(buf, n, "%u.%u.%u", r >> 24, (r >> 16) & 0xff, (r >> 8) & 0xff);
    return buf;
}
