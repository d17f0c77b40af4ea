/* model/engine-args.c — vLLM's engine arguments and what derives from them (see
 * engine-args.h). */
#include "engine-args.h"

#include <string.h>

/* KV-cache block sizes the budget is rounded to (FlashMLA needs 64; vLLM-Ascend uses 128). */
#define KV_BLOCK_DEFAULT 16u
#define KV_BLOCK_MLA 64u
#define KV_BLOCK_ASCEND 128u

/* ---- names ---- */

static const char *const quant_names[MODEL_QUANT_COUNT] = {"bf16", "fp8", "w8a8", "w4a8", "nvfp4"};
static const char *const cudagraph_names[] = {"NONE", "PIECEWISE", "FULL", "FULL_AND_PIECEWISE"};

const char *model_engine_quant_name(ModelQuant q)
{
    return q < MODEL_QUANT_COUNT ? quant_names[q] : "?";
}

bool model_engine_quant_parse(const char *s, ModelQuant *out)
{
    for (int i = 0; i < MODEL_QUANT_COUNT; i++)
        if (g_ascii_strcasecmp(s, quant_names[i]) == 0) {
            *out = (ModelQuant)i;
            return true;
        }
    return false;
}

const char *model_engine_cudagraph_name(ModelCudagraph m)
{
    return (unsigned)m < G_N_ELEMENTS(cudagraph_names) ? cudagraph_names[m] : "?";
}

bool model_engine_cudagraph_parse(const char *s, ModelCudagraph *out)
{
    for (guint i = 0; i < G_N_ELEMENTS(cudagraph_names); i++)
        if (g_ascii_strcasecmp(s, cudagraph_names[i]) == 0) {
            *out = (ModelCudagraph)i;
            return true;
        }
    return false;
}

/* vllm/config/cache.py: MambaDType = Literal["auto", "float32", "float16", "bfloat16"] (float16
 * since PR 29978, bfloat16 later); MambaCacheMode = Literal["all", "align", "none"]. */
static const char *const mamba_dtype_names[MODEL_MAMBA_DTYPE_COUNT] = {"auto", "float32",
                                                                       "float16", "bfloat16"};
static const char *const mamba_mode_names[MODEL_MAMBA_MODE_COUNT] = {"none", "none", "align",
                                                                     "all"};

const char *model_engine_mamba_dtype_name(ModelMambaDtype d)
{
    return (unsigned)d < MODEL_MAMBA_DTYPE_COUNT ? mamba_dtype_names[d] : "?";
}

const char *model_engine_mamba_mode_name(ModelMambaModeArg m)
{
    return (unsigned)m < MODEL_MAMBA_MODE_COUNT ? mamba_mode_names[m] : "?";
}

bool model_engine_mamba_dtype_parse(const char *s, ModelMambaDtype *out)
{
    g_return_val_if_fail(s && out, false);
    for (int d = 0; d < MODEL_MAMBA_DTYPE_COUNT; d++)
        if (strcmp(s, mamba_dtype_names[d]) == 0) {
            *out = (ModelMambaDtype)d;
            return true;
        }
    return false;
}

bool model_engine_mamba_mode_parse(const char *s, ModelMambaModeArg *out)
{
    g_return_val_if_fail(s && out, false);
    for (int m = MODEL_MAMBA_MODE_NONE; m < MODEL_MAMBA_MODE_COUNT; m++)
        if (strcmp(s, mamba_mode_names[m]) == 0) {
            *out = (ModelMambaModeArg)m;
            return true;
        }
    return false;
}

void model_engine_defaults(ModelEngine *e)
{
    *e = (ModelEngine){
        .attention_backend = MODEL_BACKEND_AUTO,
        .quantization = MODEL_QUANT_BF16,
        .kv_cache_dtype = SCHED_DTYPE_BF16,
        .gpu_memory_utilization = 0.92,
        .max_num_batched_tokens = 8192,
        .max_model_len = 8192,
        .max_num_seqs = 256,
        .cudagraph_mode = MODEL_CUDAGRAPH_FULL_AND_PIECEWISE,
        .cudagraph_memory_profiling = true,
        .moe_backend = MODEL_MOE_AUTO,
        .jit_compile_s = 1.0,
        .enable_prefix_caching = true,
        .async_scheduling = true,
    };
}

void model_engine_apply_vllm_defaults(ModelEngine *e, const ModelArch *a, const NetHardware *hw)
{
    g_return_if_fail(e != NULL && a != NULL);
    if (!(e->given & MODEL_ENGINE_GIVEN_MAX_MODEL_LEN) && a->max_model_len)
        e->max_model_len = a->max_model_len;
    /* Async scheduling: on by default since PR 27614 (vLLM's async scheduling plan, issue
     * 27679); with speculative decoding only for EAGLE/MTP drafters (PR 31998), and with
     * pipeline parallelism since PR 32359. */
    if (!(e->given & MODEL_ENGINE_GIVEN_ASYNC_SCHEDULING))
        e->async_scheduling = model_vllm_has(e->vllm_absent, MODEL_VLLM_ASYNC_SCHEDULING_DEFAULT) &&
                              (e->speculative_method == MODEL_SPEC_NONE ||
                               e->speculative_method == MODEL_SPEC_MTP ||
                               e->speculative_method == MODEL_SPEC_EAGLE);
    /* VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: on by default since v0.21.0 (vllm/envs.py) */
    if (!(e->given & MODEL_ENGINE_GIVEN_CUDAGRAPH_MEMORY_PROFILING))
        e->cudagraph_memory_profiling =
            model_vllm_has(e->vllm_absent, MODEL_VLLM_CUDAGRAPH_PROFILING_DEFAULT);
    /* CacheConfig.gpu_memory_utilization: 0.9 up to at least v0.11.1 (docs.vllm.ai/en/v0.10.2
     * and /en/v0.11.1, api/vllm/config/cache), 0.92 in current vLLM (vllm/config/cache.py) */
    if (!(e->given & MODEL_ENGINE_GIVEN_GPU_MEMORY_UTILIZATION))
        e->gpu_memory_utilization =
            model_vllm_has(e->vllm_absent, MODEL_VLLM_GPU_MEMORY_UTILIZATION_092_DEFAULT) ? 0.92
                                                                                        : 0.9;
    if (!hw)
        return;
    /* "For GPUs like H100 and MI300x, use larger default values"; A100 excluded (vLLM PR
     * #17885). The device memory is what the platform reports (hbm_bytes). */
    bool big = hw->hbm_bytes >= 70ull * 1024 * 1024 * 1024 && hw->arch != NET_ARCH_SM80 &&
               g_ascii_strncasecmp(hw->name, "a100", 4) != 0;
    uint32_t tokens = big ? 8192 : 2048, seqs = big ? 1024 : 256;
    bool tokens_given = e->given & MODEL_ENGINE_GIVEN_MAX_NUM_BATCHED_TOKENS;
    bool seqs_given = e->given & MODEL_ENGINE_GIVEN_MAX_NUM_SEQS;
    if (!tokens_given)
        e->max_num_batched_tokens = tokens;
    if (!seqs_given)
        e->max_num_seqs = seqs;
    if (!tokens_given) {
        uint64_t cap = (uint64_t)e->max_num_seqs * e->max_model_len;
        if (cap < e->max_num_batched_tokens)
            e->max_num_batched_tokens = (uint32_t)cap;
    }
    if (!seqs_given && e->max_num_seqs > e->max_num_batched_tokens)
        e->max_num_seqs = e->max_num_batched_tokens;
    /* The model runner, unless VLLM_USE_V2_MODEL_RUNNER or the key says: vLLM PR 52861 runs the
     * DSA architectures on the V2 runner by default on CUDA; on ROCm only GLM-5.x, until PR
     * 53155 kept it on V1 too (vllm/config/vllm.py; PR 53155's description). */
    if (!(e->given & MODEL_ENGINE_GIVEN_V2_MODEL_RUNNER) &&
        model_vllm_has(e->vllm_absent, MODEL_VLLM_DSA_MODELS_ON_V2_RUNNER)) {
        bool glm = strcmp(a->architecture, "GlmMoeDsaForCausalLM") == 0;
        bool dsa = glm || strcmp(a->architecture, "DeepseekV32ForCausalLM") == 0 ||
                   strcmp(a->architecture, "DeepseekV4ForCausalLM") == 0;
        if (hw->platform == NET_PLATFORM_CUDA)
            e->v2_model_runner = dsa;
        else if (hw->platform == NET_PLATFORM_ROCM)
            e->v2_model_runner =
                glm && !model_vllm_has(e->vllm_absent, MODEL_VLLM_ROCM_GLM_DSA_ON_V1_RUNNER);
    }
}

ModelBackend model_engine_backend(const ModelArch *a, const ModelEngine *e,
                                  const ModelParallel *par, const NetHardware *hw)
{
    g_return_val_if_fail(a != NULL && e != NULL && par != NULL, MODEL_BACKEND_AUTO);
    uint32_t tp = MAX(1u, par->tensor_parallel_size);
    ModelBackendQuery q = {.kv_fp8 = e->kv_cache_dtype == SCHED_DTYPE_FP8,
                           .heads_per_rank = a->num_heads / tp,
                           .pcp = par->prefill_context_parallel_size,
                           .dcp = par->decode_context_parallel_size,
                           .rocm_aiter = e->rocm_aiter};
    return model_backend_resolve(a, e->attention_backend, hw, &q, NULL);
}

/* The KV block size vLLM uses: 128 on vLLM-Ascend; 64 for FlashMLA (dense and sparse) and
 * FlashInfer MLA ("Forcing kv cache block size to 64 for FlashMLA backend", platforms/cuda.py);
 * CacheConfig.DEFAULT_BLOCK_SIZE 16 otherwise. */
uint32_t model_engine_kv_block_size(const ModelArch *a, ModelBackend backend, const NetHardware *hw)
{
    if (a->dsv4)
        return MODEL_ENGINE_V4_COMPRESSED_BLOCK; /* the compressed layers' logical block */
    (void)hw;
    if (backend == MODEL_BACKEND_ASCEND)
        return KV_BLOCK_ASCEND;
    switch (backend) {
    case MODEL_BACKEND_FLASHMLA:
    case MODEL_BACKEND_FLASHMLA_SPARSE:
    case MODEL_BACKEND_FLASHINFER_MLA:
    case MODEL_BACKEND_FLASHINFER_MLA_SPARSE:
        return KV_BLOCK_MLA;
    default:
        return KV_BLOCK_DEFAULT;
    }
}

/* ---- CUDA graphs ---- */

/* vLLM's default capture sizes (vllm/config/vllm.py _set_cudagraph_sizes): [1, 2, 4] +
 * range(8, 256, 8) + range(256, max + 1, 16), with max = min(max_num_seqs x (1 + speculative
 * tokens) x 2, ceiling) capped by max_num_batched_tokens; the ceiling is 1024 on SM100 (B200,
 * GB200) and 512 elsewhere (research notes: /work/research/cudagraph-memory.md). Counts those
 * <= `limit`; sets *largest. */
uint32_t model_engine_cudagraph_sizes(const ModelEngine *e, const NetHardware *hw, uint32_t limit,
                                      uint32_t *largest)
{
    uint32_t ceiling = hw && (hw->arch == NET_ARCH_SM100) ? 1024u : 512u;
    uint64_t want = 2ull * MAX(1u, e->max_num_seqs) * (1u + e->num_speculative_tokens);
    uint32_t mx = (uint32_t)MIN(want, (uint64_t)ceiling);
    mx = MIN(mx, MAX(1u, e->max_num_batched_tokens));
    mx = MIN(mx, limit);
    uint32_t n = 0, big = 0;
    for (uint32_t s = 1; s <= mx;) {
        n++, big = s;
        s = s < 4 ? s * 2 : s < 8 ? 8 : s < 256 ? s + 8 : s + 16;
    }
    *largest = big;
    return n;
}

uint32_t model_engine_cudagraph_bucket(const ModelEngine *e, const NetHardware *hw, uint32_t n)
{
    uint32_t largest = 0;
    if (model_engine_cudagraph_sizes(e, hw, UINT32_MAX, &largest) == 0 || n > largest)
        return 0;
    for (uint32_t s = 1;; s = s < 4 ? s * 2 : s < 8 ? 8 : s < 256 ? s + 8 : s + 16)
        if (s >= n)
            return s;
}
