/* model/memory-hybrid.c — recurrent state and the hybrid KV-cache layout
 * (model/memory-hybrid.h). */
#include "memory-hybrid.h"

#include <glib.h>
#include <string.h>

/* FlashAttention and FlashInfer take block sizes in multiples of 16; FlashInfer on SM100 with
 * head_dim 256 needs 32 (HybridAttentionMambaModelConfig, flashinfer issue 1993). */
#define ATTN_BLOCK_ALIGN 16u
#define ATTN_BLOCK_ALIGN_SM100_HD256 32u

static uint64_t cdiv(uint64_t a, uint64_t b)
{
    return b ? (a + b - 1) / b : 0;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* mamba_utils.py extra_groups_for_head_shards: groups not divisible by TP are replicated so
 * each rank holds TP of them (n_groups 1: every rank holds the one group). */
static uint32_t mamba_groups_total(const ModelArch *a, uint32_t tp)
{
    uint32_t g = MAX(1u, a->mamba_n_groups);
    return g % tp == 0 ? g : g + (tp - g);
}

bool model_hybrid_dims(const ModelArch *a, ModelMixer m, uint32_t tp, ModelHybridDims *out)
{
    g_return_val_if_fail(a && out && tp > 0, false);
    tp = MAX(1u, tp);
    if (m == MODEL_MIXER_MAMBA2) {
        /* MambaMixer2: intermediate = heads x P; in_proj -> [z (I), x (I), B (G N), C (G N),
         * dt (heads)]; conv over x, B, C */
        uint64_t I = (uint64_t)a->mamba_num_heads * a->mamba_head_dim;
        uint64_t gn = (uint64_t)mamba_groups_total(a, tp) * a->ssm_state_size;
        *out = (ModelHybridDims){
            .heads = a->mamba_num_heads / tp,
            .groups = mamba_groups_total(a, tp) / tp,
            .conv_dim = (I + 2 * gn) / tp,
            .in_proj = (2 * I + 2 * gn + a->mamba_num_heads) / tp,
            .inner = I / tp,
            .head_dim = a->mamba_head_dim,
            .state = a->ssm_state_size,
            .conv_kernel = a->mamba_conv_kernel,
        };
        return true;
    }
    if (m == MODEL_MIXER_GDN) {
        /* Qwen3NextGatedDeltaNet: key_dim = Hk x Dk, value_dim = Hv x Dv; in_proj_qkvz ->
         * q, k (key_dim each), v, z (value_dim each); in_proj_ba -> b, a (Hv each); conv over
         * q, k, v */
        uint64_t kd = (uint64_t)a->linear_num_key_heads * a->linear_key_head_dim;
        uint64_t vd = (uint64_t)a->linear_num_value_heads * a->linear_value_head_dim;
        *out = (ModelHybridDims){
            .heads = a->linear_num_value_heads / tp,
            .groups = MAX(1u, a->linear_num_key_heads / tp),
            .conv_dim = (2 * kd + vd) / tp,
            .in_proj = (2 * kd + 2 * vd) / tp,
            .ba_proj = 2ull * a->linear_num_value_heads / tp,
            .inner = vd / tp,
            .head_dim = a->linear_value_head_dim,
            .state = a->linear_key_head_dim,
            .conv_kernel = a->linear_conv_kernel_dim,
        };
        return true;
    }
    return false;
}

/* The model dtype's element size (the conv state's: mamba_cache_dtype "auto"). */
static uint64_t model_elt(const ModelArch *a)
{
    return a->native_dtype == MODEL_WFMT_FP32 ? 4 : 2;
}

/* A MambaDType's element size; "auto" -> `auto_elt`. */
static uint64_t mamba_dtype_elt(uint8_t d, uint64_t auto_elt)
{
    switch ((ModelMambaDtype)d) {
    case MODEL_MAMBA_DTYPE_FLOAT32:
        return 4;
    case MODEL_MAMBA_DTYPE_FLOAT16:
    case MODEL_MAMBA_DTYPE_BFLOAT16:
        return 2;
    default:
        return auto_elt;
    }
}

/* The conv state's element size (MambaStateDtypeCalculator: get_kv_cache_torch_dtype(
 * mamba_cache_dtype, model dtype)); also the whole state's for Gated DeltaNet
 * (gated_delta_net_state_dtype takes mamba_cache_dtype for both). */
static uint64_t conv_elt(const ModelArch *a, const ModelEngine *e)
{
    return mamba_dtype_elt(e ? e->mamba_cache_dtype : MODEL_MAMBA_DTYPE_AUTO, model_elt(a));
}

uint64_t model_hybrid_conv_state_bytes(const ModelArch *a, ModelMixer m, uint32_t tp,
                                       const ModelEngine *e)
{
    ModelHybridDims d;
    if (!model_hybrid_dims(a, m, tp, &d))
        return 0;
    /* gated_delta_net_state_shape widens the conv window by the speculative tokens */
    uint64_t width = d.conv_kernel - 1 +
                     (m == MODEL_MIXER_GDN && e ? e->num_speculative_tokens : 0);
    return width * d.conv_dim * conv_elt(a, e);
}

/* NemotronHForCausalLMConfig's mamba_ssm_cache_dtype default: PR 29978 (merged 2025-12-03; a
 * 0.13.0 log prints "Updating mamba_ssm_cache_dtype to 'float16' for NemotronH model") and PR
 * 39032 (float32, merged 2026-04-05; 0.19.0 taken as its first release, approximate). */
#define REL_NEMOTRON_SSM_FROM_CONFIG MODEL_VLLM_RELEASE(0, 13, 0, 0)
#define REL_NEMOTRON_SSM_FP32_DEFAULT MODEL_VLLM_RELEASE(0, 19, 0, 0)

uint32_t model_hybrid_ssm_elt(const ModelArch *a, ModelMixer m, const ModelEngine *e)
{
    g_return_val_if_fail(a != NULL, 2);
    uint64_t conv = conv_elt(a, e);
    if (m != MODEL_MIXER_MAMBA2) /* gated_delta_net_state_dtype: mamba_cache_dtype for both */
        return a->ssm_state_fp32 ? 4 : (uint32_t)conv;
    /* _mamba_state_dtype: --mamba-ssm-cache-dtype when given, else the conv state's */
    if (e && e->mamba_ssm_cache_dtype != MODEL_MAMBA_DTYPE_AUTO)
        return (uint32_t)mamba_dtype_elt(e->mamba_ssm_cache_dtype, conv);
    /* only NemotronHForCausalLMConfig replaces "auto" (Falcon-H1, Granite-4.0-H keep it) */
    ModelVllmRelease rel = e ? e->vllm_release : 0;
    if (strcmp(a->model_type, "nemotron_h") != 0 ||
        !model_vllm_at_least(rel, REL_NEMOTRON_SSM_FROM_CONFIG))
        return (uint32_t)conv; /* "auto": the conv state's dtype */
    if (a->ssm_dtype_given)
        return a->ssm_state_fp32 ? 4 : 2;
    return model_vllm_at_least(rel, REL_NEMOTRON_SSM_FP32_DEFAULT) ? 4 : 2;
}

uint64_t model_hybrid_ssm_state_bytes(const ModelArch *a, ModelMixer m, uint32_t tp,
                                      const ModelEngine *e)
{
    ModelHybridDims d;
    if (!model_hybrid_dims(a, m, tp, &d))
        return 0;
    return (uint64_t)d.heads * d.head_dim * d.state * model_hybrid_ssm_elt(a, m, e);
}

uint64_t model_hybrid_state_page(const ModelArch *a, uint32_t tp, const ModelEngine *e)
{
    g_return_val_if_fail(a != NULL, 0);
    uint64_t best = 0;
    ModelMixer kinds[2] = {MODEL_MIXER_MAMBA2, MODEL_MIXER_GDN};
    for (int i = 0; i < 2; i++) {
        if (!model_arch_count_mixer(a, kinds[i], 0, a->num_layers))
            continue;
        uint64_t p = model_hybrid_conv_state_bytes(a, kinds[i], tp, e) +
                     model_hybrid_ssm_state_bytes(a, kinds[i], tp, e);
        best = MAX(best, p);
    }
    return best;
}

/* The chunk the state kernels align blocks to under prefix caching (get_mamba_chunk_size):
 * the SSD chunk_size for Mamba-2, FLA's 64-token chunk for GDN. */
static uint32_t state_chunk(const ModelArch *a)
{
    if (a->mamba_num_heads)
        return a->mamba_chunk_size ? a->mamba_chunk_size : 256;
    return 64;
}

/* _get_kv_cache_groups_uniform_page_size: the smaller type's layer count is the group size,
 * unless the larger is within 1.25x of it (then the larger: fewer, padded groups). */
static uint32_t group_size_of(uint32_t attn, uint32_t state)
{
    uint32_t lo = MIN(attn, state), hi = MAX(attn, state);
    if (lo == 0)
        return hi;
    return (double)hi < 1.25 * lo ? hi : lo;
}

/* Releases where vLLM's hybrid prefix caching changed (model_hybrid_cache_mode). PR 25752 (Mamba-2
 * prefix caching, "all" mode) merged after 0.11.0: 0.10.2 and 0.11.0rc3 logs print "Hybrid or
 * mamba-based model detected: disabling prefix caching since it is not yet supported". PR 30877
 * ("align" mode, the one Gated DeltaNet takes): a 0.13.0 log of Qwen3-Next still prints "Hybrid
 * or mamba-based model detected without support for prefix caching: disabling", vllm-ascend
 * PR 7103 uses it on 0.17.0; 0.14.0 is the first release after the merge (approximate). PR 50991
 * (prefix caching on by default for hybrids, default mode "align") is in 0.28.0. */
#define REL_MAMBA_PREFIX_CACHING MODEL_VLLM_RELEASE(0, 11, 1, 0)
#define REL_ALIGN_MODE MODEL_VLLM_RELEASE(0, 14, 0, 0)
#define REL_HYBRID_PREFIX_DEFAULT MODEL_VLLM_RELEASE(0, 28, 0, 0)
/* _report_kv_cache_config's token count from the concurrency (the fix of vLLM issue 40691): a
 * 0.19.0 log has the old count, a 0.20.1rc1.dev91 build of 2026-05-01 the new one; 0.20.0 is
 * taken as the first release with it (approximate). */
#define REL_TOKENS_FROM_CONCURRENCY MODEL_VLLM_RELEASE(0, 20, 0, 0)

ModelMambaCacheMode model_hybrid_cache_mode(const ModelArch *a, const ModelEngine *e)
{
    g_return_val_if_fail(a && e, MODEL_MAMBA_CACHE_NONE);
    ModelVllmRelease rel = e->vllm_release;
    bool given = e->given & MODEL_ENGINE_GIVEN_PREFIX_CACHING;
    bool mamba2 = a->mamba_num_heads > 0; /* SupportsMambaPrefixCaching: Mamba-2 mixers */
    /* arg_utils _set_default_chunked_prefill_and_prefix_caching_args: off for hybrids unless
     * asked, until PR 50991 */
    if (!e->enable_prefix_caching ||
        (!given && !model_vllm_at_least(rel, REL_HYBRID_PREFIX_DEFAULT)) ||
        !model_vllm_at_least(rel, mamba2 ? REL_MAMBA_PREFIX_CACHING : REL_ALIGN_MODE))
        return MODEL_MAMBA_CACHE_NONE;
    bool spec = e->speculative_method != MODEL_SPEC_NONE && e->num_speculative_tokens > 0;
    /* MambaModelConfig.verify_and_update_config: a given --mamba-cache-mode stands ("none" is
     * replaced by the default as if not given); "all" on a model without Mamba prefix caching
     * falls back to "align" ("falling back to 'align' mode") */
    if (e->mamba_cache_mode == MODEL_MAMBA_MODE_ALL)
        return mamba2 ? MODEL_MAMBA_CACHE_ALL : MODEL_MAMBA_CACHE_ALIGN;
    if (e->mamba_cache_mode == MODEL_MAMBA_MODE_ALIGN)
        return MODEL_MAMBA_CACHE_ALIGN;
    /* PR 50991 made "align" the default mode */
    if (model_vllm_at_least(rel, REL_HYBRID_PREFIX_DEFAULT))
        return MODEL_MAMBA_CACHE_ALIGN;
    return mamba2 && !spec ? MODEL_MAMBA_CACHE_ALL : MODEL_MAMBA_CACHE_ALIGN;
}

/* The attention block: the smallest multiple of the alignment whose page holds the state page;
 * in "all" mode a multiple of lcm(state chunk, alignment) for the SSD kernel's chunks. */
static uint32_t block_size_of(const ModelArch *a, const ModelHybridLayout *L)
{
    uint64_t page = L->state_page, one = L->attn_token_bytes;
    if (L->cache_mode != MODEL_MAMBA_CACHE_ALL)
        return (uint32_t)(L->align * cdiv(page, (uint64_t)L->align * one));
    uint64_t base = state_chunk(a);
    uint64_t chunk = base / gcd64(base, L->align) * L->align; /* lcm */
    return (uint32_t)(chunk * cdiv(cdiv(page, one), chunk));
}

void model_hybrid_layout(const ModelArch *a, uint32_t tp, const ModelEngine *e,
                         const NetHardware *hw, uint32_t l0, uint32_t l1, uint32_t kv_elt_bytes,
                         ModelHybridLayout *out)
{
    g_return_if_fail(a && e && out);
    tp = MAX(1u, tp);
    bool sm100 = hw && (hw->arch == NET_ARCH_SM100 || hw->arch == NET_ARCH_SM103);
    uint32_t align = sm100 && a->head_dim == 256 &&
                             (e->attention_backend == MODEL_BACKEND_AUTO ||
                              e->attention_backend == MODEL_BACKEND_FLASHINFER)
                         ? ATTN_BLOCK_ALIGN_SM100_HD256
                         : ATTN_BLOCK_ALIGN;
    uint32_t attn = model_arch_count_mixer(a, MODEL_MIXER_ATTENTION, l0, l1);
    uint32_t state = model_arch_count_mixer(a, MODEL_MIXER_MAMBA2, l0, l1) +
                     model_arch_count_mixer(a, MODEL_MIXER_GDN, l0, l1);
    uint64_t kvh = MAX(1u, a->num_kv_heads / tp);
    *out = (ModelHybridLayout){
        .align = align,
        .attn_token_bytes = 2 * kvh * a->head_dim * kv_elt_bytes,
        .state_page = model_hybrid_state_page(a, tp, e),
        .attn_layers = attn,
        .state_layers = state,
        .cache_mode = (uint8_t)model_hybrid_cache_mode(a, e),
        .tokens_from_concurrency =
            model_vllm_at_least(e->vllm_release, REL_TOKENS_FROM_CONCURRENCY),
        .max_model_len = e->max_model_len,
    };
    out->block_size = block_size_of(a, out);
    out->page = (uint64_t)out->block_size * out->attn_token_bytes;
    out->group_size = group_size_of(attn, state);
    out->attn_groups = (uint32_t)cdiv(attn, out->group_size);
    out->state_groups = (uint32_t)cdiv(state, out->group_size);
    /* MambaSpec.max_memory_usage_bytes: one page, plus one per speculative token
     * (num_speculative_blocks), plus one under "align" (the running state beside the cached) */
    out->state_blocks =
        1 + e->num_speculative_tokens + (out->cache_mode == MODEL_MAMBA_CACHE_ALIGN ? 1 : 0);
}

uint64_t model_hybrid_request_blocks(const ModelHybridLayout *L, uint64_t len)
{
    g_return_val_if_fail(L != NULL, 0);
    uint64_t state = L->cache_mode == MODEL_MAMBA_CACHE_ALL ? cdiv(len, L->block_size)
                                                            : L->state_blocks;
    return L->attn_groups * cdiv(len, L->block_size) + (uint64_t)L->state_groups * state;
}

uint64_t model_hybrid_request_bytes(const ModelHybridLayout *L, uint64_t len)
{
    g_return_val_if_fail(L != NULL, 0);
    return model_hybrid_request_blocks(L, len) * L->page * L->group_size;
}

uint64_t model_hybrid_num_blocks(const ModelHybridLayout *L, int64_t budget_bytes)
{
    g_return_val_if_fail(L != NULL, 0);
    uint64_t per = L->page * L->group_size;
    return budget_bytes > 0 && per ? (uint64_t)budget_bytes / per : 0;
}

uint64_t model_hybrid_kv_tokens(const ModelHybridLayout *L, uint64_t num_blocks)
{
    g_return_val_if_fail(L != NULL, 0);
    if (L->tokens_from_concurrency) {
        /* num_tokens = int(max_concurrency * max_model_len) */
        uint64_t per = model_hybrid_request_blocks(L, MAX(1u, L->max_model_len));
        return per ? (uint64_t)((double)num_blocks / (double)per * (double)L->max_model_len) : 0;
    }
    uint32_t groups = L->attn_groups + L->state_groups;
    return groups ? num_blocks / groups * L->block_size : 0;
}
