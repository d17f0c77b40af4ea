/* tests/model/test-hybrid.c — hybrid models (issue 26): the recurrent state, page unification
 * and KV-cache groups against figures worked by hand from vLLM's rules (model/memory-hybrid.h),
 * the state-mixer kernels' monotonicity, the lowered ops of Nemotron-H and Qwen3-Next per layer
 * kind, and the combinations vLLM (or ranksim) refuses. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/kernel-ssm.h"
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

/* vLLM 0.20.1 with --enable-prefix-caching / --no-enable-prefix-caching given (before 0.28 the
 * mode for Mamba-2 with prefix caching is "all"). */
static ModelEngine engine_of(bool prefix_caching, uint32_t spec)
{
    ModelEngine e;
    model_engine_defaults(&e);
    e.vllm_release = MODEL_VLLM_RELEASE(0, 20, 1, 0);
    e.given |= MODEL_ENGINE_GIVEN_PREFIX_CACHING;
    e.enable_prefix_caching = prefix_caching;
    e.speculative_method = spec ? MODEL_SPEC_MTP : MODEL_SPEC_NONE;
    e.num_speculative_tokens = spec;
    return e;
}

/* Nemotron-3-Nano at TP4: conv 3 x (4096 + 2 x 8 x 128) / 4 x bf16 = 9216 B; SSM 16 heads x 64 x
 * 128 x fp32 = 524288 B; one attention token 2 x 1 KV head x 128 x bf16 = 512 B. */
Test(state, nemotron_nano_tp4_pages_by_hand)
{
    ModelArch a = arch_of("nemotron-3-nano-30b-a3b");
    ModelEngine e = engine_of(true, 0);
    cr_assert_eq(model_hybrid_conv_state_bytes(&a, MODEL_MIXER_MAMBA2, 4, &e), 9216);
    cr_assert_eq(model_hybrid_ssm_state_bytes(&a, MODEL_MIXER_MAMBA2, 4, &e), 524288);
    cr_assert_eq(model_hybrid_state_page(&a, 4, &e), 533504);
    ModelHybridLayout L;
    /* prefix caching on, no speculation: mamba_cache_mode "all"; block = lcm(128, 16) x
     * cdiv(cdiv(533504, 512), 128) = 128 x 9 */
    model_hybrid_layout(&a, 4, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.cache_mode, MODEL_MAMBA_CACHE_ALL);
    cr_assert_eq(L.block_size, 1152);
    cr_assert_eq(L.page, 1152ull * 512);
    cr_assert_eq(L.attn_layers, 6);
    cr_assert_eq(L.state_layers, 23);
    cr_assert_eq(L.group_size, 6);
    cr_assert_eq(L.attn_groups, 1);
    cr_assert_eq(L.state_groups, 4);
    /* "all": every group holds cdiv(4096, 1152) = 4 blocks */
    cr_assert_eq(model_hybrid_request_blocks(&L, 4096), 20);
    /* prefix caching off ("none"): 16 x cdiv(533504, 16 x 512) = 1056; one state block */
    e = engine_of(false, 0);
    model_hybrid_layout(&a, 4, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.cache_mode, MODEL_MAMBA_CACHE_NONE);
    cr_assert_eq(L.block_size, 1056);
    cr_assert_eq(model_hybrid_request_blocks(&L, 4096), 4 + 4);
    cr_assert_eq(model_hybrid_request_bytes(&L, 4096), 8ull * 1056 * 512 * 6);
    /* "GPU KV cache size" from 0.20: int(1000 / 8 x 4096); before: num_blocks / 5 groups x 1056 */
    cr_assert_eq(model_hybrid_num_blocks(&L, (int64_t)(1000ull * 1056 * 512 * 6)), 1000);
    e.max_model_len = 4096;
    model_hybrid_layout(&a, 4, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(model_hybrid_kv_tokens(&L, 1000), 1000ull * 4096 / 8);
    e.vllm_release = MODEL_VLLM_RELEASE(0, 19, 0, 0);
    model_hybrid_layout(&a, 4, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(model_hybrid_kv_tokens(&L, 1000), 200ull * 1056);
}

/* Qwen3-Next at TP2 with one MTP token on a B200: conv (3 + 1) x (2 x 2048 + 4096) / 2 x bf16 =
 * 32768 B, delta state 16 x 128 x 128 x bf16 = 524288 B; attention token 2 x 1 x 256 x 2 = 1024 B;
 * FlashInfer on SM100 with head_dim 256 aligns to 32: 32 x cdiv(557056, 32768) = 544 tokens (the
 * block size a public note reports for Qwen3-Next at TP2). */
Test(state, qwen3_next_tp2_align_mode)
{
    ModelArch a = arch_of("qwen3-next-80b-a3b");
    ModelEngine e = engine_of(true, 1);
    NetHardware hw;
    memset(&hw, 0, sizeof hw);
    hw.arch = NET_ARCH_SM100;
    cr_assert_eq(model_hybrid_conv_state_bytes(&a, MODEL_MIXER_GDN, 2, &e), 32768);
    cr_assert_eq(model_hybrid_ssm_state_bytes(&a, MODEL_MIXER_GDN, 2, &e), 524288);
    ModelHybridLayout L;
    model_hybrid_layout(&a, 2, &e, &hw, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.cache_mode, MODEL_MAMBA_CACHE_ALIGN, "Qwen3-Next refuses 'all'");
    cr_assert_eq(L.align, 32);
    cr_assert_eq(L.block_size, 544);
    cr_assert_eq(L.group_size, 12);
    cr_assert_eq(L.attn_groups + L.state_groups, 4);
    /* align: 1 + 1 speculative + 1 running state per GDN group */
    cr_assert_eq(L.state_blocks, 3);
    cr_assert_eq(model_hybrid_request_blocks(&L, 4096), 8 + 3 * 3);
}

Test(state, memory_plan_reports_the_hybrid_lines)
{
    ModelArch a = arch_of("nemotron-3-nano-30b-a3b");
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = 4;
    par.enable_expert_parallel = true;
    GError *err = NULL;
    ModelPlan *pl = model_plan_new(&par, &a, &err);
    cr_assert_not_null(pl, "%s", err ? err->message : "");
    ModelEngine e = engine_of(true, 0);
    e.max_model_len = 4096;
    const NetHardware *hw = net_hardware_flat();
    ModelMemPlan *m = model_memory_plan(&a, pl, &e, hw, NULL);
    const ModelMemRank *r = &m->ranks[0];
    cr_assert_eq(r->kv_block_size, 1152);
    cr_assert_gt(r->kv_budget_bytes, 0);
    uint64_t nb = (uint64_t)r->kv_budget_bytes / (1152ull * 512 * 6);
    cr_assert_float_eq(r->max_concurrency, (double)nb / 20.0, 1e-9);
    cr_assert_eq(r->kv_tokens, (uint64_t)((double)nb / 20.0 * 4096.0));
    /* the attention layers alone hold per-token KV */
    cr_assert_eq(r->kv_bytes_per_token, 6ull * 512);
    model_memory_plan_free(m);
    model_plan_free(pl);
}

/* ---- vLLM's choices by release ---- */

static ModelMambaCacheMode mode_at(const char *model, uint32_t maj, uint32_t min, uint32_t patch,
                                   bool given, uint32_t spec)
{
    ModelArch a = arch_of(model);
    ModelEngine e = engine_of(true, spec);
    e.vllm_release = MODEL_VLLM_RELEASE(maj, min, patch, 0);
    if (!given)
        e.given &= ~MODEL_ENGINE_GIVEN_PREFIX_CACHING;
    return model_hybrid_cache_mode(&a, &e);
}

Test(state, mamba_cache_mode_by_release)
{
    /* 0.10.2 / 0.11.0: "disabling prefix caching since it is not yet supported" */
    cr_assert_eq(mode_at("nemotron-3-nano-30b-a3b", 0, 10, 2, true, 0), MODEL_MAMBA_CACHE_NONE);
    cr_assert_eq(mode_at("qwen3-next-80b-a3b", 0, 11, 0, true, 0), MODEL_MAMBA_CACHE_NONE);
    /* PR 25752: Mamba-2 "all"; Gated DeltaNet still refused on 0.13.0 */
    cr_assert_eq(mode_at("nemotron-3-nano-30b-a3b", 0, 11, 1, true, 0), MODEL_MAMBA_CACHE_ALL);
    cr_assert_eq(mode_at("qwen3-next-80b-a3b", 0, 13, 0, true, 0), MODEL_MAMBA_CACHE_NONE);
    /* PR 30877: "align"; "all" with speculative decoding falls back to it */
    cr_assert_eq(mode_at("qwen3-next-80b-a3b", 0, 14, 0, true, 0), MODEL_MAMBA_CACHE_ALIGN);
    cr_assert_eq(mode_at("nemotron-3-nano-30b-a3b", 0, 20, 1, true, 1), MODEL_MAMBA_CACHE_ALIGN);
    /* opt-in before 0.28 (PR 23716), on by default with "align" after (PR 50991) */
    cr_assert_eq(mode_at("nemotron-3-nano-30b-a3b", 0, 20, 1, false, 0), MODEL_MAMBA_CACHE_NONE);
    cr_assert_eq(mode_at("nemotron-3-nano-30b-a3b", 0, 28, 0, false, 0), MODEL_MAMBA_CACHE_ALIGN);
    cr_assert_eq(mode_at("nemotron-3-nano-30b-a3b", 0, 28, 0, true, 0), MODEL_MAMBA_CACHE_ALIGN);
}

/* NemotronHForCausalLMConfig's SSM-state dtype: the model dtype before PR 29978; then the
 * config's value, float16 when absent; float32 when absent from PR 39032. */
Test(state, nemotron_ssm_dtype_by_release)
{
    ModelArch a = arch_of("nemotron-3-nano-30b-a3b"); /* names float32 */
    ModelEngine e = engine_of(false, 0);
    e.vllm_release = MODEL_VLLM_RELEASE(0, 10, 2, 0);
    cr_assert_eq(model_hybrid_ssm_elt(&a, MODEL_MIXER_MAMBA2, &e), 2);
    e.vllm_release = MODEL_VLLM_RELEASE(0, 13, 0, 0);
    cr_assert_eq(model_hybrid_ssm_elt(&a, MODEL_MIXER_MAMBA2, &e), 4);
    ModelArch b = arch_of("nemotron-nano-9b-v2"); /* names none */
    cr_assert_not(b.ssm_dtype_given);
    cr_assert_eq(model_hybrid_ssm_elt(&b, MODEL_MIXER_MAMBA2, &e), 2);
    e.vllm_release = MODEL_VLLM_RELEASE(0, 19, 0, 0);
    cr_assert_eq(model_hybrid_ssm_elt(&b, MODEL_MIXER_MAMBA2, &e), 4);
    cr_assert_eq(model_hybrid_ssm_elt(&b, MODEL_MIXER_MAMBA2, NULL), 4, "main");
    ModelArch q = arch_of("qwen3-next-80b-a3b");
    cr_assert_eq(model_hybrid_ssm_elt(&q, MODEL_MIXER_GDN, NULL), 2, "GDN: the model dtype");
}

/* Nemotron-Nano-9B-v2 at TP1 with a bf16 state (vLLM issue 24280: "672 tokens"): conv 3 x
 * (10240 + 2048) x 2 = 73728 B, SSM 128 x 80 x 128 x 2 = 2621440 B, one token 2 x 8 x 128 x 2 =
 * 4096 B: 16 x cdiv(2695168, 65536) = 672. With main's fp32 state: 1312. */
Test(state, nemotron_nano_9b_v2_block)
{
    ModelArch a = arch_of("nemotron-nano-9b-v2");
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_MAMBA2, 0, a.num_layers), 27);
    cr_assert_eq(model_arch_count_mixer(&a, MODEL_MIXER_ATTENTION, 0, a.num_layers), 4);
    ModelEngine e = engine_of(false, 0);
    e.vllm_release = MODEL_VLLM_RELEASE(0, 10, 2, 0);
    ModelHybridLayout L;
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.state_page, 73728 + 2621440);
    cr_assert_eq(L.block_size, 672);
    e.vllm_release = 0;
    e.given = 0;
    e.enable_prefix_caching = false;
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 2, &L);
    cr_assert_eq(L.block_size, 1312);
}

/* ---- published start-up logs (doc/validation.md, "Hybrid models") ---- */

#define GIB_F (1024.0 * 1024.0 * 1024.0)

/* The figures of one log the layout must reproduce, the budget given as the blocks it held
 * (the printed GiB is rounded; the test checks the blocks' bytes round to it). */
typedef struct {
    const char *model;
    uint32_t tp, kv_elt, max_model_len;
    uint32_t maj, min, patch;
    bool prefix_caching;
    uint32_t block;      /* "Setting attention block size to N tokens" */
    double padding_pct;  /* "Padding mamba page size by X%"; 0: the line is absent */
    double kv_gib;       /* "Available KV cache memory" */
    uint64_t num_blocks; /* what that budget holds */
    uint64_t tokens;     /* "GPU KV cache size" */
    double concurrency;  /* "Maximum concurrency", two decimals */
} Published;

static void check_published(const Published *p)
{
    ModelArch a = arch_of(p->model);
    ModelEngine e = engine_of(p->prefix_caching, 0);
    e.vllm_release = MODEL_VLLM_RELEASE(p->maj, p->min, p->patch, 0);
    e.max_model_len = p->max_model_len;
    ModelHybridLayout L;
    model_hybrid_layout(&a, p->tp, &e, NULL, 0, a.num_layers, p->kv_elt, &L);
    cr_assert_eq(L.cache_mode, MODEL_MAMBA_CACHE_NONE, "%s: prefix caching off", p->model);
    cr_assert_eq(L.block_size, p->block, "%s: block %u", p->model, L.block_size);
    double pad = 100.0 * (double)(L.page - L.state_page) / (double)L.state_page;
    cr_assert_float_eq(pad, p->padding_pct, 0.005, "%s: padding %.4f%%", p->model, pad);
    uint64_t per_block = L.page * L.group_size;
    double gib = (double)(p->num_blocks * per_block) / GIB_F;
    cr_assert_float_eq(gib, p->kv_gib, 0.005, "%s: %.4f GiB", p->model, gib);
    cr_assert_eq(model_hybrid_num_blocks(&L, (int64_t)(p->num_blocks * per_block)), p->num_blocks);
    cr_assert_eq(model_hybrid_kv_tokens(&L, p->num_blocks), p->tokens, "%s: %" G_GUINT64_FORMAT,
                 p->model, model_hybrid_kv_tokens(&L, p->num_blocks));
    double conc = (double)p->num_blocks /
                  (double)model_hybrid_request_blocks(&L, p->max_model_len);
    cr_assert_float_eq(conc, p->concurrency, 0.005, "%s: %.4fx", p->model, conc);
}

/* Qwen3-Next-80B-A3B-Instruct, TP2 on H200s, vLLM 0.10.2, defaults (max_model_len 262144):
 * "Setting attention block size to 544", "Padding mamba page size by 1.49%", 44.59 GiB,
 * "GPU KV cache size: 973,760 tokens", 14.77x: 7162 blocks of 12 layers x 544 x 1024 B; 4
 * groups, 1790 x 544 tokens; one request 482 attention + 3 state blocks. */
Test(published, qwen3_next_tp2_h200_v0_10_2)
{
    check_published(&(Published){.model = "qwen3-next-80b-a3b", .tp = 2, .kv_elt = 2,
                                 .max_model_len = 262144, .maj = 0, .min = 10, .patch = 2,
                                 .prefix_caching = true, .block = 544, .padding_pct = 1.49,
                                 .kv_gib = 44.59, .num_blocks = 7162, .tokens = 973760,
                                 .concurrency = 14.77});
}

/* Qwen3-Next (a W4A16 checkpoint), TP2 on L40S, vLLM 0.13.0, fp8 KV cache, max_model_len 32768,
 * --enable-prefix-caching (disabled: "without support for prefix caching"): block 1072, whose
 * page equals the state page (no padding line), 17.58 GiB, 767,552 tokens, 84.29x. */
Test(published, qwen3_next_tp2_l40s_fp8_v0_13_0)
{
    check_published(&(Published){.model = "qwen3-next-80b-a3b", .tp = 2, .kv_elt = 1,
                                 .max_model_len = 32768, .maj = 0, .min = 13, .patch = 0,
                                 .prefix_caching = true, .block = 1072, .padding_pct = 0.0,
                                 .kv_gib = 17.58, .num_blocks = 2866, .tokens = 767552,
                                 .concurrency = 84.29});
}

/* Nemotron-Cascade-2-30B-A3B-NVFP4 (Nemotron-3-Nano-30B-A3B's architecture), TP1, vLLM
 * 0.20.1rc1.dev91, fp8_e4m3 KV cache, fp32 SSM state, max_model_len 256000: block 4176, padding
 * 0.19%, "Add 1 padding layers" (23 Mamba layers in 4 groups of 6), 3.72 GiB, and the token count
 * from the concurrency: int(311 / (62 + 4) x 256000) = 1,206,303, 4.71x. */
Test(published, nemotron_nano_fp8_kv_v0_20)
{
    check_published(&(Published){.model = "nemotron-3-nano-30b-a3b", .tp = 1, .kv_elt = 1,
                                 .max_model_len = 256000, .maj = 0, .min = 20, .patch = 1,
                                 .prefix_caching = false, .block = 4176, .padding_pct = 0.19,
                                 .kv_gib = 3.72, .num_blocks = 311, .tokens = 1206303,
                                 .concurrency = 4.71});
    ModelArch a = arch_of("nemotron-3-nano-30b-a3b");
    ModelEngine e = engine_of(false, 0);
    ModelHybridLayout L;
    model_hybrid_layout(&a, 1, &e, NULL, 0, a.num_layers, 1, &L);
    cr_assert_eq(L.state_groups * L.group_size - L.state_layers, 1, "one padding layer");
}

/* ---- kernels ---- */

static ModelSsmShape mamba_shape(void)
{
    return (ModelSsmShape){.heads = 16, .head_dim = 64, .state = 128, .groups = 2,
                           .conv_dim = 1536, .conv_kernel = 4, .chunk = 128, .act_bytes = 2,
                           .state_bytes = 4};
}

Test(kernels, scan_grows_with_rows_and_decode_is_state_bound)
{
    const NetHardware *hw = net_hardware_flat();
    ModelSsmShape s = mamba_shape();
    ModelSsmBatch small = {.tokens = 1024, .seqs = 1};
    ModelSsmBatch big = {.tokens = 8192, .seqs = 1};
    ModelKernelTime a = model_ssm_scan_time(hw, &s, &small), b = model_ssm_scan_time(hw, &s, &big);
    cr_assert_gt(b.ns, a.ns);
    cr_assert_gt(b.flops, 7.9 * a.flops);
    /* decode: 64 sequences read and write 64 states of 16 x 64 x 128 fp32 */
    ModelSsmBatch dec = {.tokens = 64, .seqs = 64, .decode_seqs = 64, .decode_rows = 64};
    ModelKernelTime d = model_ssm_scan_time(hw, &s, &dec);
    cr_assert_geq(d.bytes, 64.0 * 2 * 16 * 64 * 128 * 4);
    ModelSsmShape g = {.heads = 16, .head_dim = 128, .state = 128, .groups = 8, .conv_dim = 4096,
                       .conv_kernel = 4, .chunk = 64, .act_bytes = 2, .state_bytes = 2};
    ModelKernelTime gd = model_gdn_scan_time(hw, &g, &dec);
    cr_assert_geq(gd.bytes, 64.0 * 2 * 16 * 128 * 128 * 2);
    ModelKernelTime gp = model_gdn_scan_time(hw, &g, &big);
    cr_assert_gt(gp.ns, gd.ns);
}

/* ---- lowering ---- */

static uint32_t count_named(SchedProgram *p, const SchedOpList *l, const char *name)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->len; i++)
        n += strcmp(sched_program_name_str(p, l->ops[i].name), name) == 0;
    return n;
}

/* Lowers one prefill of `len` on `model` at TP `tp` with EP and returns rank 0's unrolled ops
 * (the program in *keep, the unrolled one in *unrolled; caller frees both). */
static const SchedOpList *lower_prefill(const char *model, uint32_t tp, uint32_t len,
                                        SchedProgram **keep, SchedProgram **unrolled)
{
    ModelArch *a = g_new0(ModelArch, 1);
    *a = arch_of(model);
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = tp;
    par.enable_expert_parallel = true;
    GError *err = NULL;
    ModelPlan *pl = model_plan_new(&par, a, &err);
    cr_assert_not_null(pl, "%s", err ? err->message : "");
    ModelEngine e = engine_of(true, 0);
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

Test(lower, nemotron_nano_ops_follow_the_pattern)
{
    SchedProgram *p, *u;
    const SchedOpList *l = lower_prefill("nemotron-3-nano-30b-a3b", 4, 1024, &p, &u);
    cr_assert_eq(count_named(u, l, "ssm_scan"), 23);
    cr_assert_eq(count_named(u, l, "in_proj"), 23);
    cr_assert_eq(count_named(u, l, "conv1d"), 23);
    cr_assert_eq(count_named(u, l, "attention"), 6);
    cr_assert_eq(count_named(u, l, "moe_experts"), 23);
    cr_assert_eq(count_named(u, l, "shared_experts"), 23);
    cr_assert_eq(count_named(u, l, "post_attention_layernorm"), 0, "one norm a layer");
    cr_assert_eq(count_named(u, l, "input_layernorm"), 52);
    sched_program_free(u);
    sched_program_free(p);
}

Test(lower, qwen3_next_ops_follow_the_layer_types)
{
    SchedProgram *p, *u;
    const SchedOpList *l = lower_prefill("qwen3-next-80b-a3b", 2, 1024, &p, &u);
    cr_assert_eq(count_named(u, l, "gdn_scan"), 36);
    cr_assert_eq(count_named(u, l, "in_proj_qkvz"), 36);
    cr_assert_eq(count_named(u, l, "in_proj_ba"), 36);
    cr_assert_eq(count_named(u, l, "attention"), 12);
    cr_assert_eq(count_named(u, l, "attn_output_gate"), 12);
    cr_assert_eq(count_named(u, l, "moe_experts"), 48);
    sched_program_free(u);
    sched_program_free(p);
}

/* ---- refusals ---- */

static void expect_refusal(const char *model, uint32_t tp, uint32_t pcp, uint32_t dcp, bool sp,
                           const char *want)
{
    ModelArch a = arch_of(model);
    g_autofree char *why = model_lower_hybrid_refusal(&a, tp, pcp, dcp, sp);
    cr_assert_not_null(why, "%s TP%u: expected a refusal", model, tp);
    cr_assert(strstr(why, want), "got: %s", why);
}

Test(refusals, in_vllms_words)
{
    expect_refusal("nemotron-3-nano-30b-a3b", 3, 1, 1, false,
                   "Tensor parallel world size must divide num heads.");
    expect_refusal("nemotron-3-nano-30b-a3b", 16, 1, 1, false,
                   "If tensor parallel world size does not divide num_groups, then num_groups "
                   "must equal 1.");
    expect_refusal("qwen3-next-80b-a3b", 32, 1, 1, false, "16 is not divisible by 32");
    expect_refusal("qwen3-next-80b-a3b", 2, 1, 2, false, "context parallelism");
    expect_refusal("nemotron-3-nano-30b-a3b", 4, 1, 1, true, "sequence parallelism");
    ModelArch a = arch_of("nemotron-3-nano-30b-a3b");
    cr_assert_null(model_lower_hybrid_refusal(&a, 4, 1, 1, false));
    ModelArch dense = arch_of("qwen3-8b");
    cr_assert_null(model_lower_hybrid_refusal(&dense, 3, 2, 2, true), "not a hybrid");
}
