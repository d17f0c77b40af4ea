/* model/memory-hybrid.h — the recurrent state of hybrid models as vLLM's hybrid KV-cache
 * manager holds it: per-rank mixer sizes, the conv and SSM / delta state of one request, the
 * page-size unification between attention and state layers, the KV-cache groups and what one
 * request takes of them.
 *
 * Sources (vLLM main): model_executor/layers/mamba/mamba_utils.py (MambaStateShapeCalculator
 * mamba2_state_shape / gated_delta_net_state_shape, MambaStateDtypeCalculator),
 * model_executor/models/config.py HybridAttentionMambaModelConfig (attention block size raised
 * to a multiple of the kernel alignment so its page is >= the state page, the state page padded
 * to it), v1/kv_cache_interface.py MambaSpec (page_size_bytes, max_memory_usage_bytes by
 * mamba_cache_mode), v1/core/kv_cache_utils.py (_get_kv_cache_groups_uniform_page_size: layers
 * of each type cut into groups of one size; num_blocks = memory / (page x group size);
 * get_max_concurrency_for_kv_cache_config; _report_kv_cache_config's "GPU KV cache size").
 * Pure functions of the architecture and the engine; no allocation. doc/memory.md, "Hybrid
 * models", repeats the formulas.
 */
#ifndef MODEL_MEMORY_HYBRID_H
#define MODEL_MEMORY_HYBRID_H

#include <stdbool.h>
#include <stdint.h>

#include "../net/hardware.h"
#include "arch.h"
#include "engine-args.h"

/* A state mixer's sizes on one rank of a TP group of `tp`. */
typedef struct {
    uint32_t heads;     /* Mamba-2 heads / GDN value heads on the rank */
    uint32_t groups;    /* Mamba-2 B/C groups (padded to TP when TP does not divide them:
                           extra_groups_for_head_shards) / GDN key heads on the rank */
    uint64_t conv_dim;  /* causal-conv channels on the rank */
    uint64_t in_proj;   /* Mamba-2 in_proj (z, x, B, C, dt) / GDN in_proj_qkvz width on the rank */
    uint64_t ba_proj;   /* GDN in_proj_ba width on the rank (b and a: 2 per value head); 0 */
    uint64_t inner;     /* out_proj's input width on the rank (heads x head dim) */
    uint32_t head_dim;  /* Mamba-2 P / GDN value head dim */
    uint32_t state;     /* Mamba-2 N / GDN key head dim */
    uint32_t conv_kernel;
} ModelHybridDims;

/* Fills *out for mixer `m` (MAMBA2 or GDN) of `a` at TP `tp`; false for any other mixer. The
 * Mamba-2 intermediate size is heads x head dim: vLLM passes Falcon-H1's mamba_d_ssm and
 * Granite-4.0-H's mamba_expand x hidden to mamba2_state_shape, and model/arch.c refuses a file
 * where the two differ. */
bool model_hybrid_dims(const ModelArch *a, ModelMixer m, uint32_t tp, ModelHybridDims *out);

/* One layer's state of one request on a rank, in bytes: the conv state (K - 1 (+ speculative
 * tokens for GDN) x conv_dim, model dtype) and the SSM / delta state (heads x P x N or heads x
 * Dk x Dv, in mamba_ssm_cache_dtype). */
uint64_t model_hybrid_conv_state_bytes(const ModelArch *a, ModelMixer m, uint32_t tp,
                                       const ModelEngine *e);
uint64_t model_hybrid_ssm_state_bytes(const ModelArch *a, ModelMixer m, uint32_t tp,
                                      const ModelEngine *e);
/* The SSM / delta state's element size in bytes under engine `e` (NULL: vLLM main). The conv
 * state is in --mamba-cache-dtype ("auto": the model dtype). Gated DeltaNet: the conv state's
 * dtype (gated_delta_net_state_dtype). Mamba-2: --mamba-ssm-cache-dtype when given, else the
 * conv state's — except Nemotron-H, whose config class replaces "auto": the model dtype before
 * PR 29978 (0.13.0); then the config.json's mamba_ssm_cache_dtype, float16 when absent; float32
 * when absent from PR 39032 (0.19.0; the public Nemotron-3 configs name float32). Falcon-H1 and
 * Granite-4.0-H keep "auto" (MambaStateDtypeCalculator.mamba2_state_dtype). */
uint32_t model_hybrid_ssm_elt(const ModelArch *a, ModelMixer m, const ModelEngine *e);
/* The model's state page (MambaSpec.page_size_bytes, before padding): the larger mixer's. */
uint64_t model_hybrid_state_page(const ModelArch *a, uint32_t tp, const ModelEngine *e);

/* vLLM's mamba_cache_mode as MambaModelConfig.verify_and_update_config sets it: "none" without
 * prefix caching; with it, "all" (a state per block of the prompt) for models that support
 * Mamba prefix caching (Nemotron-H's Mamba-2) unless speculative decoding is on, else "align"
 * (Qwen3-Next refuses "all"). By release (engine.vllm_version): no prefix caching for any hybrid
 * before 0.11.1 (Mamba-2 prefix caching, PR 25752); none for Gated DeltaNet before 0.14.0
 * ("align", PR 30877); hybrids' prefix caching off unless --enable-prefix-caching is given before
 * 0.28.0 (PR 23716 made it opt-in, PR 50991 turned it on with "align" as the default mode).
 * A given --mamba-cache-mode (engine.mamba_cache_mode) replaces the default while prefix caching
 * is on ("all" falls back to "align" for models without Mamba prefix caching, as vLLM warns);
 * with prefix caching off the mode is "none" whatever was given (CacheConfig: '"none": set when
 * prefix caching is disabled'). */
typedef enum {
    MODEL_MAMBA_CACHE_NONE = 0,
    MODEL_MAMBA_CACHE_ALIGN,
    MODEL_MAMBA_CACHE_ALL,
} ModelMambaCacheMode;

/* The KV-cache layout on a rank holding layers [l0, l1). */
typedef struct {
    uint32_t block_size;      /* attention tokens per block after the unification */
    uint32_t align;           /* the attention kernel's block alignment (16; 32 on SM100 with
                                 head_dim 256 under FlashInfer) */
    uint64_t attn_token_bytes; /* one token's K and V in one attention layer */
    uint64_t state_page;      /* the state page before padding */
    uint64_t page;            /* every group's page: block_size x attn_token_bytes */
    uint32_t attn_layers, state_layers;
    uint32_t group_size;      /* layers per group */
    uint32_t attn_groups, state_groups;
    uint32_t state_blocks;    /* blocks a request holds in each state group outside "all" mode:
                                 1 + speculative tokens, + 1 under "align" */
    uint8_t cache_mode;       /* ModelMambaCacheMode */
    bool tokens_from_concurrency; /* "GPU KV cache size" = max concurrency x max_model_len
                                     (vLLM >= 0.20); else num_blocks / groups x block */
    uint32_t max_model_len;   /* the engine's, for that line */
} ModelHybridLayout;

/* The mode vLLM picks for `a` under engine `e`. */
ModelMambaCacheMode model_hybrid_cache_mode(const ModelArch *a, const ModelEngine *e);

/* The layout; `kv_elt_bytes` the KV-cache element (2 bf16, 1 fp8). */
void model_hybrid_layout(const ModelArch *a, uint32_t tp, const ModelEngine *e,
                         const NetHardware *hw, uint32_t l0, uint32_t l1, uint32_t kv_elt_bytes,
                         ModelHybridLayout *out);

/* Blocks one request of `len` tokens takes (attention groups cdiv(len, block) each; state groups
 * `state_blocks` each, or cdiv(len, block) in "all" mode), and those blocks' bytes (blocks x page
 * x group_size). */
uint64_t model_hybrid_request_blocks(const ModelHybridLayout *L, uint64_t len);
uint64_t model_hybrid_request_bytes(const ModelHybridLayout *L, uint64_t len);

/* num_blocks for a budget: budget / (page x group_size). */
uint64_t model_hybrid_num_blocks(const ModelHybridLayout *L, int64_t budget_bytes);

/* vLLM's "GPU KV cache size" (_report_kv_cache_config): before 0.20 num_blocks / groups x the
 * smallest block size (the attention block: the state groups' block is max_model_len), which
 * undercounts hybrid capacity (vLLM issue 40691); from 0.20 int(max concurrency x max_model_len),
 * max concurrency = num_blocks / the blocks of one max_model_len request. */
uint64_t model_hybrid_kv_tokens(const ModelHybridLayout *L, uint64_t num_blocks);

#endif
