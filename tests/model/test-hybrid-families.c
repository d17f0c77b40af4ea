/* tests/model/test-hybrid-families.c — Falcon-H1 and Granite-4.0-H (issue 26): their config.json
 * fields, the recurrent state and the page unification worked by hand from vLLM's rules
 * (MambaStateShapeCalculator.mamba2_state_shape, MambaStateDtypeCalculator, model/memory-hybrid.h),
 * vLLM's --mamba-cache-dtype / --mamba-ssm-cache-dtype / --mamba-cache-mode, the lowered ops per
 * layer, and what vLLM refuses with them. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/lower-hybrid.h"
#include "../../model/lower.h"
#include "../../model/memory-hybrid.h"
#include "../../model/memory.h"

static ModelArch arch_of(const char *name)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert(model_arch_load_preset(name, &a, &err), "%s", err ? err->message : "");
    return a;
}

/* vLLM 0.20.1 with prefix caching given on or off (before 0.28 a Mamba-2 model's mode with
 * prefix caching is "all"). */
static ModelEngine engine_of(bool prefix_caching)
{
    ModelEngine e;
    model_engine_defaults(&e);
    e.vllm_release = MODEL_VLLM_RELEASE(0, 20, 1, 0);
    e.given |= MODEL_ENGINE_GIVEN_PREFIX_CACHING;
    e.enable_prefix_caching = prefix_caching;
    return e;
}

/* ---- config.json ---- */

Test(config, falcon_h1_every_layer_is_attention_and_mamba2)
{
    ModelArch a = arch_of("falcon-h1-7b");
    cr_assert(a.parallel_ssm);
    cr_assert_not(a.attn_no_rope, "Falcon-H1's attention is rotary");
    cr_assert_eq(a.mamba_num_heads, 24);
    cr_assert_eq(a.mamba_head_dim, 128);
    cr_assert_eq(a.ssm_state_size, 256);
    cr_assert_eq(a.mamba_chunk_size, 128);
    cr_assert_eq(a.head_dim, 128);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_ATTENTION, 0, 44), 44);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_MAMBA2, 0, 44), 44);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_MAMBA2, 10, 20), 10);
    cr_assert_not(a.moe);
    cr_assert_eq(a.intermediate_size, 12288);
}

Test(config, granite_h_layer_types_and_experts)
{
    ModelArch a = arch_of("granite-4.0-h-tiny");
    cr_assert_not(a.parallel_ssm);
    cr_assert(a.attn_no_rope, "position_embedding_type nope");
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_ATTENTION, 0, 40), 4);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_MAMBA2, 0, 40), 36);
    cr_assert_eq(model_arch_layer_mixer(&a, 5), MODEL_MIXER_ATTENTION);
    cr_assert_eq(model_arch_layer_mixer(&a, 6), MODEL_MIXER_MAMBA2);
    cr_assert(a.moe);
    cr_assert_eq(a.n_routed_experts, 64);
    cr_assert_eq(a.num_experts_per_tok, 6);
    cr_assert_eq(a.moe_intermediate_size, 512);
    cr_assert_eq(a.shared_expert_intermediate_size, 1024);
    cr_assert_eq(a.head_dim, 128, "hidden / heads");
    /* Micro: no experts; the shared MLP is the layer's MLP */
    ModelArch m = arch_of("granite-4.0-h-micro");
    cr_assert_not(m.moe);
    cr_assert_eq(m.intermediate_size, 8192);
    cr_assert_eq(model_arch_dense_layers(&m), 40);
}

static void expect_config_error(const char *json, const char *want)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert_not(model_arch_load_string(json, "t.json", &a, &err), "expected a refusal");
    cr_assert(strstr(err->message, want), "got: %s", err->message);
    g_error_free(err);
}

Test(config, refusals)
{
    /* FalconH1MLP: ValueError("Unsupported activation: ... Only silu is supported for now.") */
    expect_config_error(
        "{\"model_type\":\"falcon_h1\",\"hidden_size\":64,\"num_hidden_layers\":2,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,\"vocab_size\":100,"
        "\"intermediate_size\":128,\"hidden_act\":\"gelu\",\"mamba_n_heads\":4,\"mamba_d_head\":16,"
        "\"mamba_d_ssm\":64,\"mamba_d_state\":16}",
        "Unsupported activation: gelu. Only silu is supported for now.");
    /* mamba_d_ssm that is not heads x head dim */
    expect_config_error(
        "{\"model_type\":\"falcon_h1\",\"hidden_size\":64,\"num_hidden_layers\":2,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,\"vocab_size\":100,"
        "\"intermediate_size\":128,\"mamba_n_heads\":4,\"mamba_d_head\":16,\"mamba_d_ssm\":96,"
        "\"mamba_d_state\":16}",
        "mamba_d_ssm");
    /* a Granite layer type that is neither */
    expect_config_error(
        "{\"model_type\":\"granitemoehybrid\",\"hidden_size\":64,\"num_hidden_layers\":2,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"vocab_size\":100,"
        "\"intermediate_size\":128,\"shared_intermediate_size\":128,\"num_local_experts\":0,"
        "\"layer_types\":[\"mamba\",\"full_attention\"],\"mamba_n_heads\":8,\"mamba_d_head\":16,"
        "\"mamba_d_state\":16}",
        "valid: \"mamba\", \"attention\"");
    expect_config_error(
        "{\"model_type\":\"granitemoehybrid\",\"hidden_size\":64,\"num_hidden_layers\":2,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"vocab_size\":100,"
        "\"intermediate_size\":128,\"mamba_n_heads\":8,\"mamba_d_head\":16,\"mamba_d_state\":16}",
        "missing field 'layer_types'");
}

/* ---- the state and the pages ---- */

/* Falcon-H1-7B, TP1, bf16: conv (4 - 1) x (3072 + 2 x 1 x 256) x 2 = 21504 B; SSM 24 x 128 x 256
 * x 2 ("auto": the model dtype) = 1572864 B; one attention token 2 x 2 KV x 128 x 2 = 1024 B.
 * Without prefix caching the block is 16 x cdiv(1594368, 16 x 1024) = 1568; the 44 attention
 * and the 44 Mamba layers make one group each. */
Test(state, falcon_h1_7b_pages_by_hand)
{
    ModelArch a = arch_of("falcon-h1-7b");
    ModelEngine e = engine_of(false);
    cr_assert_eq(model_hybrid_conv_state_bytes(&a, MODEL_MIXER_MAMBA2, 1, &e), 21504);
    cr_assert_eq(model_hybrid_ssm_state_bytes(&a, MODEL_MIXER_MAMBA2, 1, &e), 1572864);
    ModelHybridLayout L;
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.cache_mode, MODEL_MAMBA_CACHE_NONE);
    cr_assert_eq(L.block_size, 1568);
    cr_assert_eq(L.attn_layers, 44);
    cr_assert_eq(L.state_layers, 44);
    cr_assert_eq(L.group_size, 44);
    cr_assert_eq(L.attn_groups, 1);
    cr_assert_eq(L.state_groups, 1);
    cr_assert_eq(model_hybrid_request_blocks(&L, 4096), 3 + 1);
    /* TP2: 1 KV head (512 B a token); the one group replicated to TP (extra_groups_for_head_shards):
     * conv (3072 + 2 x 2 x 256) / 2 = 2048 channels; 12 heads: page 798720 -> 1568 again */
    model_hybrid_layout(&a, 2, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.state_page, 12288 + 786432); /* groups padded to TP: 2 x 2 x 256 */
    cr_assert_eq(L.block_size, 1568);
    /* prefix caching on (0.20.1): "all" (FalconH1ForCausalLM is SupportsMambaPrefixCaching):
     * lcm(mamba_chunk_size 128, 16) x cdiv(cdiv(1594368, 1024), 128) = 128 x 13 */
    e = engine_of(true);
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.cache_mode, MODEL_MAMBA_CACHE_ALL);
    cr_assert_eq(L.block_size, 1664);
}

/* Granite-4.0-H-Tiny, TP1: conv 3 x (3072 + 2 x 128) x 2 = 19968 B, SSM 48 x 64 x 128 x 2 =
 * 786432 B; attention token 2 x 4 x 128 x 2 = 2048 B; block 16 x cdiv(806400, 32768) = 400; 4
 * attention layers against 36 Mamba: groups of 4, 1 attention group and 9 state groups. */
Test(state, granite_h_tiny_pages_by_hand)
{
    ModelArch a = arch_of("granite-4.0-h-tiny");
    ModelEngine e = engine_of(false);
    cr_assert_eq(model_hybrid_state_page(&a, 1, &e), 19968 + 786432);
    ModelHybridLayout L;
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.block_size, 400);
    cr_assert_eq(L.group_size, 4);
    cr_assert_eq(L.attn_groups, 1);
    cr_assert_eq(L.state_groups, 9);
    /* "all" with its 256-token SSD chunk: 256 x cdiv(394, 256) = 512 */
    e = engine_of(true);
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.block_size, 512);
}

/* ---- vLLM's flags ---- */

Test(flags, mamba_dtypes)
{
    ModelArch a = arch_of("falcon-h1-7b");
    ModelEngine e = engine_of(false);
    /* --mamba-ssm-cache-dtype float32: the SSM state alone in fp32 */
    e.mamba_ssm_cache_dtype = MODEL_MAMBA_DTYPE_FLOAT32;
    cr_assert_eq(model_hybrid_conv_state_bytes(&a, MODEL_MIXER_MAMBA2, 1, &e), 21504);
    cr_assert_eq(model_hybrid_ssm_state_bytes(&a, MODEL_MIXER_MAMBA2, 1, &e), 3145728);
    ModelHybridLayout L;
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.block_size, 16 * 194); /* cdiv(3167232, 16384) = 194 */
    /* --mamba-cache-dtype float32: the conv state too, and the SSM state through "auto" */
    e.mamba_ssm_cache_dtype = MODEL_MAMBA_DTYPE_AUTO;
    e.mamba_cache_dtype = MODEL_MAMBA_DTYPE_FLOAT32;
    cr_assert_eq(model_hybrid_conv_state_bytes(&a, MODEL_MIXER_MAMBA2, 1, &e), 43008);
    cr_assert_eq(model_hybrid_ssm_state_bytes(&a, MODEL_MIXER_MAMBA2, 1, &e), 3145728);
    /* ... and an explicit bfloat16 SSM beside an fp32 conv state */
    e.mamba_ssm_cache_dtype = MODEL_MAMBA_DTYPE_BFLOAT16;
    cr_assert_eq(model_hybrid_ssm_state_bytes(&a, MODEL_MIXER_MAMBA2, 1, &e), 1572864);
    /* Nemotron-H's config rule yields to a given --mamba-ssm-cache-dtype */
    ModelArch n = arch_of("nemotron-3-nano-30b-a3b");
    ModelEngine f = engine_of(false);
    cr_assert_eq(model_hybrid_ssm_elt(&n, MODEL_MIXER_MAMBA2, &f), 4);
    f.mamba_ssm_cache_dtype = MODEL_MAMBA_DTYPE_FLOAT16;
    cr_assert_eq(model_hybrid_ssm_elt(&n, MODEL_MIXER_MAMBA2, &f), 2);
    /* Gated DeltaNet takes --mamba-cache-dtype for both states */
    ModelArch q = arch_of("qwen3-next-80b-a3b");
    ModelEngine g = engine_of(false);
    g.mamba_cache_dtype = MODEL_MAMBA_DTYPE_FLOAT32;
    g.mamba_ssm_cache_dtype = MODEL_MAMBA_DTYPE_FLOAT16;
    cr_assert_eq(model_hybrid_ssm_elt(&q, MODEL_MIXER_GDN, &g), 4);
}

Test(flags, mamba_cache_mode)
{
    ModelArch f = arch_of("falcon-h1-7b");
    ModelArch q = arch_of("qwen3-next-80b-a3b");
    ModelEngine e = engine_of(true);
    e.mamba_cache_mode = MODEL_MAMBA_MODE_ALIGN;
    cr_assert_eq(model_hybrid_cache_mode(&f, &e), MODEL_MAMBA_CACHE_ALIGN);
    /* "none" with prefix caching on is replaced by the default, as if not given */
    e.mamba_cache_mode = MODEL_MAMBA_MODE_NONE;
    cr_assert_eq(model_hybrid_cache_mode(&f, &e), MODEL_MAMBA_CACHE_ALL);
    /* "all" on Gated DeltaNet falls back to "align" */
    e.mamba_cache_mode = MODEL_MAMBA_MODE_ALL;
    cr_assert_eq(model_hybrid_cache_mode(&q, &e), MODEL_MAMBA_CACHE_ALIGN);
    /* from 0.28 "align" is the default; "all" when asked */
    e.vllm_release = MODEL_VLLM_RELEASE(0, 28, 0, 0);
    cr_assert_eq(model_hybrid_cache_mode(&f, &e), MODEL_MAMBA_CACHE_ALL);
    e.mamba_cache_mode = MODEL_MAMBA_MODE_UNSET;
    cr_assert_eq(model_hybrid_cache_mode(&f, &e), MODEL_MAMBA_CACHE_ALIGN);
    /* prefix caching off: "none" whatever was given */
    e.enable_prefix_caching = false;
    e.mamba_cache_mode = MODEL_MAMBA_MODE_ALL;
    cr_assert_eq(model_hybrid_cache_mode(&f, &e), MODEL_MAMBA_CACHE_NONE);
    /* the spellings */
    ModelMambaDtype d;
    ModelMambaModeArg m;
    cr_assert(model_engine_mamba_dtype_parse("bfloat16", &d) && d == MODEL_MAMBA_DTYPE_BFLOAT16);
    cr_assert_not(model_engine_mamba_dtype_parse("fp32", &d));
    cr_assert(model_engine_mamba_mode_parse("align", &m) && m == MODEL_MAMBA_MODE_ALIGN);
    cr_assert_not(model_engine_mamba_mode_parse("ALL", &m));
}

/* ---- lowering ---- */

static uint32_t count_named(SchedProgram *p, const SchedOpList *l, const char *name)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->len; i++)
        n += strcmp(sched_program_name_str(p, l->ops[i].name), name) == 0;
    return n;
}

/* One prefill of `len` on `model` at TP `tp` (EP for a MoE); rank 0's unrolled ops. */
static const SchedOpList *lower_prefill(const char *model, uint32_t tp, uint32_t len,
                                        SchedProgram **keep, SchedProgram **unrolled)
{
    ModelArch *a = g_new0(ModelArch, 1);
    *a = arch_of(model);
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = tp;
    par.enable_expert_parallel = a->moe;
    GError *err = NULL;
    ModelPlan *pl = model_plan_new(&par, a, &err);
    cr_assert_not_null(pl, "%s", err ? err->message : "");
    ModelEngine e = engine_of(true);
    e.max_model_len = 1 << 16;
    ModelWorkload *wl = model_workload_new();
    GPtrArray *per = g_ptr_array_new();
    ModelBatch *b = model_batch_new();
    model_batch_add_prefill(b, len, 0);
    g_ptr_array_add(per, b);
    model_workload_add_step(wl, per);
    ModelCost *cost = model_cost_new(net_hardware_flat(), NULL);
    ModelLowerInput in = {a, pl, &e, wl, cost, NULL, MODEL_BREAK_NONE};
    *keep = model_lower(&in, &err);
    cr_assert_not_null(*keep, "%s", err ? err->message : "");
    *unrolled = sched_program_unroll(*keep);
    model_cost_free(cost);
    model_workload_free(wl);
    model_plan_free(pl);
    g_free(a);
    return sched_program_ops(*unrolled, 0);
}

/* Falcon-H1: per layer the attention (rotary) and the Mamba-2 mixer, each all-reduced, then the
 * MLP and its all-reduce: 3 all-reduces a layer at TP2 (vLLM's two RowParallelLinear outputs are
 * reduced apart before the sum). */
Test(lower, falcon_h1_runs_both_branches_in_every_layer)
{
    SchedProgram *p, *u;
    const SchedOpList *l = lower_prefill("falcon-h1-7b", 2, 1024, &p, &u);
    cr_assert_eq(count_named(u, l, "attention"), 44);
    cr_assert_eq(count_named(u, l, "rotary_emb"), 44);
    cr_assert_eq(count_named(u, l, "ssm_scan"), 44);
    cr_assert_eq(count_named(u, l, "in_proj"), 44);
    cr_assert_eq(count_named(u, l, "tp_all_reduce"), 1 + 3 * 44, "the embedding's, then 3 a layer");
    cr_assert_eq(count_named(u, l, "input_layernorm"), 44);
    sched_program_free(u);
    sched_program_free(p);
}

Test(lower, granite_h_follows_its_layer_types)
{
    SchedProgram *p, *u;
    const SchedOpList *l = lower_prefill("granite-4.0-h-tiny", 2, 1024, &p, &u);
    cr_assert_eq(count_named(u, l, "ssm_scan"), 36);
    cr_assert_eq(count_named(u, l, "attention"), 4);
    cr_assert_eq(count_named(u, l, "rotary_emb"), 0, "position_embedding_type nope");
    cr_assert_eq(count_named(u, l, "moe_experts"), 40);
    cr_assert_eq(count_named(u, l, "shared_experts"), 40);
    cr_assert_eq(count_named(u, l, "post_attention_layernorm"), 40);
    sched_program_free(u);
    sched_program_free(p);
    l = lower_prefill("granite-4.0-h-micro", 1, 1024, &p, &u);
    cr_assert_eq(count_named(u, l, "ssm_scan"), 36);
    cr_assert_eq(count_named(u, l, "moe_experts"), 0);
    sched_program_free(u);
    sched_program_free(p);
}

/* ---- refusals (MambaMixer2's asserts) ---- */

Test(refusals, mamba2_heads_and_groups_over_tp)
{
    ModelArch f = arch_of("falcon-h1-7b");
    g_autofree char *why = model_lower_hybrid_refusal(&f, 16, 1, 1, false);
    cr_assert_not_null(why);
    cr_assert(strstr(why, "Tensor parallel world size must divide num heads."), "%s", why);
    ModelArch g = arch_of("granite-4.0-h-small");
    cr_assert_null(model_lower_hybrid_refusal(&g, 8, 1, 1, false), "1 group: replicated");
    g_autofree char *cp = model_lower_hybrid_refusal(&g, 2, 1, 2, false);
    cr_assert_not_null(cp);
}
