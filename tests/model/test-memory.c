/* tests/model/test-memory.c — the memory plan (issue: quantized weights with scales, derived
 * weights, KV budget, workspaces, the OOM class of failures). Golden byte figures from the
 * reference docs (the FlashInfer workspace of vllm-cp.md, a GLM-5 layer computed by hand tensor
 * by tensor, KV bytes per token from vLLM's cache layouts), the budget errors in vLLM's words,
 * and invariants (items sum to components, ranks differ only where vLLM's placement does). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../model/memory.h"

#define MIB 1048576ull
#define GIB 1073741824ull

typedef struct {
    ModelArch arch;
    ModelPlan *plan;
    ModelEngine engine;
    NetHardware hw;
    ModelMemPlan *mem;
} Fixture;

static ModelParallel par_of(uint32_t tp, uint32_t dp, uint32_t pcp, uint32_t dcp, bool ep, bool sp)
{
    ModelParallel p;
    model_parallel_defaults(&p);
    p.tensor_parallel_size = tp;
    p.data_parallel_size = dp;
    p.prefill_context_parallel_size = pcp;
    p.decode_context_parallel_size = dcp;
    p.enable_expert_parallel = ep;
    p.enable_sequence_parallel = sp;
    return p;
}

/* Only the name and HBM matter to the memory plan. */
static NetHardware hw_of(const char *name, uint64_t hbm_bytes)
{
    NetHardware hw;
    memset(&hw, 0, sizeof hw);
    g_strlcpy(hw.name, name, sizeof hw.name);
    hw.hbm_bytes = hbm_bytes;
    /* the platform decides vLLM vs vLLM-Ascend memory (CANN context, HCCL buffers) */
    hw.platform = g_str_has_prefix(name, "ascend") ? NET_PLATFORM_NPU : NET_PLATFORM_CUDA;
    return hw;
}

static void setup(Fixture *f, const char *model, ModelParallel par)
{
    memset(f, 0, sizeof *f);
    GError *err = NULL;
    cr_assert(model_arch_load_preset(model, &f->arch, &err), "%s", err ? err->message : "");
    f->plan = model_plan_new(&par, &f->arch, &err);
    cr_assert_not_null(f->plan, "%s", err ? err->message : "");
    model_engine_defaults(&f->engine);
    f->hw = hw_of("b200", 180000000000ull); /* net/presets/b200.yaml: 180 GB */
}

static void plan(Fixture *f)
{
    model_memory_plan_free(f->mem);
    f->mem = model_memory_plan(&f->arch, f->plan, &f->engine, &f->hw, NULL);
    cr_assert_not_null(f->mem);
}

static void teardown(Fixture *f)
{
    model_memory_plan_free(f->mem);
    model_plan_free(f->plan);
}

static const ModelMemItem *find_item(const ModelMemRank *r, const char *name)
{
    for (guint i = 0; i < r->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(r->items, i);
        if (strcmp(it->name, name) == 0)
            return it;
    }
    return NULL;
}

/* The bytes of the items whose name starts with `prefix` (0 when none). */
static uint64_t prefix_bytes(const ModelMemRank *r, const char *prefix)
{
    uint64_t t = 0;
    for (guint i = 0; i < r->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(r->items, i);
        if (g_str_has_prefix(it->name, prefix))
            t += it->bytes;
    }
    return t;
}

/* Whether layer `l` is in the list of an item named "layers.<list>.<tensor>". */
static bool item_has_layer(const char *name, uint32_t l, uint32_t *n_layers)
{
    if (strncmp(name, "layers.", 7) != 0)
        return false;
    const char *p = name + 7;
    bool hit = false;
    uint32_t n = 0;
    for (;;) {
        char *end;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtoul(end + 1, &end, 10);
        n += (uint32_t)(b - a + 1);
        if (l >= a && l <= b)
            hit = true;
        p = end;
        if (*p != ',')
            break;
        p++;
    }
    *n_layers = n;
    return hit;
}

/* One layer's share of a component: items listing that layer, divided by their layer count. */
static uint64_t layer_bytes(const ModelMemRank *r, ModelMemComponent c, uint32_t l)
{
    uint64_t sum = 0;
    for (guint i = 0; i < r->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(r->items, i);
        uint32_t n = 0;
        if (it->component == c && item_has_layer(it->name, l, &n) &&
            !strstr(it->name, "kv_cache") && !strstr(it->name, "k_cache")) {
            cr_assert_eq(it->bytes % n, 0, "%s", it->name);
            sum += it->bytes / n;
        }
    }
    return sum;
}

/* vLLM's non-KV memory of a rank: all but the KV cache and what no budget counts; the
 * communicators only where they are made after vLLM's first snapshot (before PR 25359, or on
 * Ascend); the fixtures here leave cudagraph_mode NONE or the estimate on. */
static uint64_t non_kv(const ModelMemPlan *m, const ModelMemRank *r)
{
    uint64_t s = 0;
    for (int c = 0; c < MODEL_MEM_COUNT; c++)
        if (c != MODEL_MEM_KV_CACHE && c != MODEL_MEM_OUTSIDE_BUDGET &&
            (c != MODEL_MEM_RESERVED || m->reserved_in_budget))
            s += r->bytes[c];
    return s;
}

static const SchedDiag *diag_of(const ModelMemPlan *m, const char *kind)
{
    for (guint i = 0; i < m->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(m->diags, i);
        if (strcmp(d->kind, kind) == 0)
            return d;
    }
    return NULL;
}

/* ---- the FlashInfer trtllm-gen sparse-MLA workspace (vllm-cp.md) ---- */

Test(workspace, flashinfer_sparse_exact_bytes)
{
    cr_assert_eq(model_flashinfer_sparse_workspace(64, 4, 4096), 2561671168ull);
    cr_assert_eq(model_flashinfer_sparse_workspace(64, 4, 32768), 17594056704ull);
    /* DCP <= 1: the 394 MiB base alone */
    cr_assert_eq(model_flashinfer_sparse_workspace(64, 1, 32768), 394ull * MIB);
    cr_assert_eq(model_flashinfer_sparse_workspace(64, 1, 32768), 413138944ull);
}

Test(workspace, in_the_plan_of_the_seed_config)
{
    /* GLM-5.2 TP1/PCP4/DCP4: 64 heads per rank, DCP 4 */
    Fixture f;
    setup(&f, "glm-5.2", par_of(1, 1, 4, 4, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHINFER_MLA_SPARSE;
    uint32_t mnbt[2] = {4096, 32768};
    uint64_t want[2] = {2561671168ull, 17594056704ull};
    for (int i = 0; i < 2; i++) {
        f.engine.max_num_batched_tokens = mnbt[i];
        plan(&f);
        for (uint32_t r = 0; r < f.mem->world; r++) {
            const ModelMemItem *it =
                find_item(&f.mem->ranks[r], "flashinfer.trtllm_sparse_mla_workspace");
            cr_assert_not_null(it);
            cr_assert_eq(it->bytes, want[i]);
            /* the metadata builder makes it in initialize_kv_cache: no budget counts it */
            cr_assert_eq(it->component, MODEL_MEM_OUTSIDE_BUDGET);
            cr_assert_eq(f.mem->ranks[r].bytes[MODEL_MEM_OUTSIDE_BUDGET], want[i]);
            /* the indexer's top-k buffer [mnbt, 2048] int32 is the model's, inside it */
            const ModelMemItem *tk = find_item(&f.mem->ranks[r], "indexer.topk_indices_buffer");
            cr_assert_not_null(tk);
            cr_assert_eq(tk->bytes, (uint64_t)mnbt[i] * 2048 * 4);
            /* and the non-torch memory the profile adds (issue 25: non_torch.* items) */
            cr_assert_eq(f.mem->ranks[r].bytes[MODEL_MEM_ATTN_WORKSPACE] -
                             prefix_bytes(&f.mem->ranks[r], "non_torch."),
                         tk->bytes);
        }
    }
    /* other backends: FlashInfer dense MLA keeps the 394 MiB buffer; FlashMLA none */
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    plan(&f);
    cr_assert_null(find_item(&f.mem->ranks[0], "flashinfer.trtllm_sparse_mla_workspace"));
    teardown(&f);

    setup(&f, "deepseek-v3", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHINFER_MLA;
    plan(&f);
    cr_assert_eq(f.mem->ranks[0].bytes[MODEL_MEM_OUTSIDE_BUDGET], 394ull * MIB);
    teardown(&f);
}

/* ---- W8A8 vs bf16: one GLM-5 layer by hand ---- */

/* GLM-5 (hidden 6144, 64 heads, q_lora 2048, kv_lora 512, nope 192, rope 64, v 256, 256 experts
 * of 2048, 1 shared expert, indexer 32 x 128) at TP8 with EP8 (32 experts per rank), layer 3
 * (the first MoE layer, with its own indexer), CUDA backend (kv_b_proj kept). */
#define H 6144ull
#define HEADS_R 8ull /* 64 / TP8 */

static uint64_t glm5_layer_bf16_weights(void)
{
    return 6144ull * 2                       /* input_layernorm */
           + (2048ull + 512 + 64) * H * 2    /* fused_qkv_a_proj [2624, 6144], replicated */
           + 2048ull * 2                     /* q_a_layernorm */
           + HEADS_R * (192 + 64) * 2048 * 2 /* q_b_proj [2048, 2048] */
           + 512ull * 2                      /* kv_a_layernorm */
           + HEADS_R * (192 + 256) * 512 * 2 /* kv_b_proj [3584, 512] */
           + H * (HEADS_R * 256) * 2         /* o_proj [6144, 2048] */
           + 32ull * 128 * 2048 * 2          /* indexer.wq_b [4096, 2048] */
           + 128ull * H * 2                  /* indexer.wk [128, 6144] */
           + 128ull * 2 * 2                  /* indexer.k_norm weight + bias */
           + 32ull * H * 2                   /* indexer.weights_proj [32, 6144] */
           + 6144ull * 2                     /* post_attention_layernorm */
           + 256ull * H * 2                  /* gate [256, 6144] */
           + 256ull * 4                      /* e_score_correction_bias fp32 */
           + 32ull * (2 * 2048) * H * 2      /* experts w13 [32, 4096, 6144] */
           + 32ull * H * 2048 * 2            /* experts w2 [32, 6144, 2048] */
           + (2ull * 2048 / 8) * H * 2       /* shared gate_up [512, 6144] */
           + H * (2048 / 8) * 2;             /* shared down [6144, 256] */
}

static uint64_t glm5_layer_w8a8_weights(void)
{
    /* int8: attention linears, experts, shared experts; bf16: norms, indexer, gate */
    return 6144ull * 2                       /* input_layernorm bf16 */
           + (2048ull + 512 + 64) * H * 1    /* fused_qkv_a_proj int8 */
           + 2048ull * 2                     /* q_a_layernorm */
           + HEADS_R * (192 + 64) * 2048 * 1 /* q_b_proj int8 */
           + 512ull * 2                      /* kv_a_layernorm */
           + HEADS_R * (192 + 256) * 512 * 1 /* kv_b_proj int8 */
           + H * (HEADS_R * 256) * 1         /* o_proj int8 */
           + 32ull * 128 * 2048 * 2          /* indexer.wq_b bf16 (float exception) */
           + 128ull * H * 2                  /* indexer.wk bf16 */
           + 128ull * 2 * 2                  /* indexer.k_norm */
           + 32ull * H * 2                   /* indexer.weights_proj bf16 */
           + 6144ull * 2                     /* post_attention_layernorm */
           + 256ull * H * 2                  /* gate bf16 */
           + 256ull * 4                      /* e_score_correction_bias fp32 */
           + 32ull * (2 * 2048) * H * 1      /* experts w13 int8 */
           + 32ull * H * 2048 * 1            /* experts w2 int8 */
           + (2ull * 2048 / 8) * H * 1       /* shared gate_up int8 */
           + H * (2048 / 8) * 1;             /* shared down int8 */
}

static uint64_t glm5_layer_w8a8_scales(void)
{
    /* fp32 scale + fp32 offset per output channel = 8 B per output row */
    return (2048ull + 512 + 64) * 8    /* fused_qkv_a_proj: 2624 rows */
           + HEADS_R * (192 + 64) * 8  /* q_b_proj: 2048 rows */
           + HEADS_R * (192 + 256) * 8 /* kv_b_proj: 3584 rows */
           + H * 8                     /* o_proj: 6144 rows */
           + 32ull * (2 * 2048) * 8    /* experts w13: 32 x 4096 rows */
           + 32ull * H * 8             /* experts w2: 32 x 6144 rows */
           + (2ull * 2048 / 8) * 8     /* shared gate_up: 512 rows */
           + H * 8;                    /* shared down: 6144 rows */
}

Test(weights, glm5_layer_w8a8_vs_bf16_by_hand)
{
    Fixture f;
    setup(&f, "glm-5", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    plan(&f);
    const ModelMemRank *r = &f.mem->ranks[0];
    cr_assert_eq(layer_bytes(r, MODEL_MEM_WEIGHTS, 3), glm5_layer_bf16_weights());
    cr_assert_eq(layer_bytes(r, MODEL_MEM_WEIGHTS, 3), 2516744704ull);
    cr_assert_eq(layer_bytes(r, MODEL_MEM_QUANT_SCALES, 3), 0);
    /* bf16 kv_b_proj: W_UK_T / W_UV are views (no bytes) */
    cr_assert_eq(layer_bytes(r, MODEL_MEM_DERIVED_WEIGHTS, 3), 0);
    /* every MoE layer of GLM-5 is the same */
    cr_assert_eq(layer_bytes(r, MODEL_MEM_WEIGHTS, 77), glm5_layer_bf16_weights());

    f.engine.quantization = MODEL_QUANT_W8A8;
    f.engine.quantization_override = true;
    plan(&f);
    r = &f.mem->ranks[0];
    cr_assert_eq(layer_bytes(r, MODEL_MEM_WEIGHTS, 3), glm5_layer_w8a8_weights());
    cr_assert_eq(layer_bytes(r, MODEL_MEM_WEIGHTS, 3), 1269332480ull);
    cr_assert_eq(layer_bytes(r, MODEL_MEM_QUANT_SCALES, 3), glm5_layer_w8a8_scales());
    cr_assert_eq(layer_bytes(r, MODEL_MEM_QUANT_SCALES, 3), 2789888ull);
    /* quantized kv_b_proj: a bf16 dequantized copy backs W_UK_T [8, 192, 512] and
     * W_UV [8, 512, 256] */
    cr_assert_eq(layer_bytes(r, MODEL_MEM_DERIVED_WEIGHTS, 3),
                 HEADS_R * 192 * 512 * 2 + HEADS_R * 512 * 256 * 2);
    /* the ratio is set by what stays float (indexer, gate, norms) */
    cr_assert(glm5_layer_w8a8_weights() * 2 > glm5_layer_bf16_weights());
    teardown(&f);
}

Test(weights, fp8_block_scales_and_nvfp4_layout)
{
    /* DeepSeek-V3.2 fp8, TP1: q_b_proj [128 x 192, 1536] has ceil(24576/128) x ceil(1536/128)
     * = 192 x 12 fp32 block scales */
    Fixture f;
    setup(&f, "deepseek-v3.2", par_of(1, 1, 1, 1, false, false));
    f.engine.quantization = MODEL_QUANT_FP8;
    f.engine.quantization_override = true;
    plan(&f);
    const ModelMemItem *s =
        find_item(&f.mem->ranks[0], "layers.0-60.self_attn.q_b_proj.weight_scale_inv");
    cr_assert_not_null(s);
    cr_assert_eq(s->bytes, 61ull * 192 * 12 * 4);
    cr_assert_str_eq(s->dtype, "fp32");
    const ModelMemItem *w = find_item(&f.mem->ranks[0], "layers.0-60.self_attn.q_b_proj.weight");
    cr_assert_eq(w->bytes, 61ull * 24576 * 1536);
    /* the router gate stays bf16 */
    const ModelMemItem *g = find_item(&f.mem->ranks[0], "layers.3-60.mlp.gate.weight");
    cr_assert_str_eq(g->dtype, "bf16");
    teardown(&f);

    /* GLM-5.2 NVFP4 (NVIDIA ModelOpt layout), EP 4: 64 experts per rank, 4-bit values, one fp8
     * scale per 16, an fp32 global scale per expert projection */
    setup(&f, "glm-5.2", par_of(1, 1, 4, 4, true, false));
    f.engine.quantization = MODEL_QUANT_NVFP4;
    f.engine.quantization_override = true;
    plan(&f);
    const ModelMemRank *r = &f.mem->ranks[0];
    w = find_item(r, "layers.3-77.mlp.experts.w13_weight");
    cr_assert_not_null(w);
    cr_assert_str_eq(w->dtype, "fp4_e2m1");
    cr_assert_eq(w->bytes, 75ull * 64 * 4096 * 6144 / 2);
    s = find_item(r, "layers.3-77.mlp.experts.w13_weight_scale");
    cr_assert_eq(s->bytes, 75ull * 64 * 4096 * (6144 / 16));
    cr_assert_str_eq(s->dtype, "fp8_e4m3");
    s = find_item(r, "layers.3-77.mlp.experts.w13_weight_scale_2");
    cr_assert_eq(s->bytes, 75ull * 64 * 2 * 4);
    /* attention stays bf16 */
    w = find_item(r, "layers.0-77.self_attn.o_proj.weight");
    cr_assert_str_eq(w->dtype, "bf16");
    cr_assert_eq(w->bytes, 78ull * 6144 * 16384 * 2);
    teardown(&f);
}

Test(weights, glm5_bf16_total_matches_the_parameter_count)
{
    /* vllm-cp.md: about 744 B parameters (MTP excluded here: it loads only with speculative
     * decoding); one rank holds them all at TP1, in bf16 */
    Fixture f;
    setup(&f, "glm-5", par_of(1, 1, 1, 1, false, false));
    plan(&f);
    double params = (double)f.mem->ranks[0].bytes[MODEL_MEM_WEIGHTS] / 2.0;
    cr_assert(params > 0.99 * 744e9 && params < 1.01 * 744e9, "%.4g parameters", params);
    teardown(&f);
}

/* ---- DSA CP: kv_b_proj (and q_b_proj, o_proj) replicated ---- */

Test(weights, dsa_cp_replicates_kv_b_proj)
{
    Fixture f;
    setup(&f, "glm-5", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    plan(&f);
    const ModelMemItem *split =
        find_item(&f.mem->ranks[0], "layers.0-77.self_attn.kv_b_proj.weight");
    cr_assert_not_null(split);
    cr_assert_eq(split->bytes, 78ull * (8 * 448) * 512 * 2);
    cr_assert_str_eq(split->shape, "78 x [3584, 512]");
    uint64_t split_bytes = split->bytes;
    model_plan_free(f.plan);
    ModelParallel sp = par_of(8, 1, 1, 1, true, true);
    f.plan = model_plan_new(&sp, &f.arch, NULL);
    plan(&f);
    const ModelMemItem *full =
        find_item(&f.mem->ranks[0], "layers.0-77.self_attn.kv_b_proj.weight");
    cr_assert_not_null(full);
    cr_assert_eq(full->bytes, 78ull * (64 * 448) * 512 * 2);
    cr_assert_str_eq(full->shape, "78 x [28672, 512]");
    cr_assert_eq(full->bytes, 8 * split_bytes);
    const ModelMemItem *o = find_item(&f.mem->ranks[0], "layers.0-77.self_attn.o_proj.weight");
    cr_assert_eq(o->bytes, 78ull * 6144 * 16384 * 2);
    const ModelMemItem *qb = find_item(&f.mem->ranks[0], "layers.0-77.self_attn.q_b_proj.weight");
    cr_assert_eq(qb->bytes, 78ull * 64 * 256 * 2048 * 2);
    teardown(&f);
}

Test(weights, ascend_derives_full_w_uk_w_uv_and_disposes_kv_b_proj)
{
    /* vLLM-Ascend: contiguous bf16 W_UK_T / W_UV from kv_b_proj, which is then disposed; under
     * DSA CP from the full layout (seed 000 §3.5) */
    Fixture f;
    setup(&f, "glm-5", par_of(16, 1, 1, 1, true, true));
    f.hw = hw_of("ascend-910c", 64ull * GIB);
    f.engine.attention_backend = MODEL_BACKEND_ASCEND;
    f.engine.quantization = MODEL_QUANT_W8A8;
    f.engine.quantization_override = true;
    plan(&f);
    const ModelMemRank *r = &f.mem->ranks[0];
    const ModelMemItem *uk = find_item(r, "layers.0-77.self_attn.W_UK_T");
    const ModelMemItem *uv = find_item(r, "layers.0-77.self_attn.W_UV");
    cr_assert_not_null(uk);
    cr_assert_not_null(uv);
    cr_assert_eq(uk->bytes, 78ull * 64 * 192 * 512 * 2);
    cr_assert_eq(uv->bytes, 78ull * 64 * 512 * 256 * 2);
    cr_assert_str_eq(uk->shape, "78 x [64, 192, 512]");
    const ModelMemItem *kvb =
        find_item(r, "layers.0-77.self_attn.kv_b_proj.weight (disposed after load)");
    cr_assert_not_null(kvb);
    cr_assert_eq(kvb->bytes, 0);
    /* without DSA CP: the TP shard (64 / 16 = 4 heads) */
    model_plan_free(f.plan);
    ModelParallel tp = par_of(16, 1, 1, 1, true, false);
    f.plan = model_plan_new(&tp, &f.arch, NULL);
    plan(&f);
    uk = find_item(&f.mem->ranks[0], "layers.0-77.self_attn.W_UK_T");
    cr_assert_eq(uk->bytes, 78ull * 4 * 192 * 512 * 2);
    /* Ascend hardware: CANN context and HCCL buffers (2 x 200 MB per communicator) */
    cr_assert_eq(f.mem->context_bytes, 1ull << 30); /* CANN context, outside the budget */
    const ModelMemItem *h = find_item(&f.mem->ranks[0], "hccl.tp_communicator");
    cr_assert_not_null(h);
    cr_assert_eq(h->bytes, 400ull * MIB);
    teardown(&f);
}

/* ---- KV bytes per token ---- */

static uint64_t kv_layer(const char *model, ModelParallel par, ModelBackend b, SchedDtype dt)
{
    ModelArch a;
    cr_assert(model_arch_load_preset(model, &a, NULL));
    ModelPlan *p = model_plan_new(&par, &a, NULL);
    cr_assert_not_null(p);
    ModelEngine e;
    model_engine_defaults(&e);
    e.attention_backend = b;
    e.kv_cache_dtype = dt;
    uint64_t v = model_kv_bytes_per_token_layer(&a, p, &e);
    model_plan_free(p);
    return v;
}

Test(kv, bytes_per_token_glm5_and_deepseek_v32)
{
    ModelParallel one = par_of(1, 1, 1, 1, false, false);
    const char *models[2] = {"glm-5", "deepseek-v3.2"};
    for (int i = 0; i < 2; i++) {
        /* bf16: (512 + 64) x 2 latent + 128 fp8 index keys + 1 fp32 scale = 1152 + 132 */
        cr_assert_eq(kv_layer(models[i], one, MODEL_BACKEND_FLASHMLA_SPARSE, SCHED_DTYPE_BF16),
                     1284);
        cr_assert_eq(
            kv_layer(models[i], one, MODEL_BACKEND_FLASHINFER_MLA_SPARSE, SCHED_DTYPE_BF16), 1284);
        /* fp8 on FlashMLA sparse: fp8_ds_mla, 512 fp8 + 4 fp32 scales + 64 bf16 rope = 656 */
        cr_assert_eq(kv_layer(models[i], one, MODEL_BACKEND_FLASHMLA_SPARSE, SCHED_DTYPE_FP8),
                     656 + 132);
        /* fp8 elsewhere: 576 x 1 */
        cr_assert_eq(kv_layer(models[i], one, MODEL_BACKEND_FLASHINFER_MLA_SPARSE, SCHED_DTYPE_FP8),
                     576 + 132);
    }
    /* DCP 4 shards both caches: 576 / 4 + 132 / 4 */
    cr_assert_eq(kv_layer("glm-5", par_of(4, 1, 1, 4, false, false),
                          MODEL_BACKEND_FLASHINFER_MLA_SPARSE, SCHED_DTYPE_FP8),
                 144 + 33);
    /* vLLM-Ascend: bf16 index keys (256 B), replicated on every DCP rank */
    cr_assert_eq(
        kv_layer("glm-5", par_of(4, 1, 1, 4, false, false), MODEL_BACKEND_ASCEND, SCHED_DTYPE_BF16),
        1152 / 4 + 256);
    /* DeepSeek-V3 (no indexer) */
    cr_assert_eq(kv_layer("deepseek-v3", one, MODEL_BACKEND_FLASHMLA, SCHED_DTYPE_BF16), 1152);
}

Test(kv, rank_totals_per_token)
{
    Fixture f;
    setup(&f, "glm-5", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    plan(&f);
    cr_assert_eq(f.mem->ranks[0].kv_bytes_per_token, 78ull * 1284);
    f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
    plan(&f);
    cr_assert_eq(f.mem->ranks[0].kv_bytes_per_token, 78ull * 788);
    teardown(&f);
    /* DeepSeek-V3.2: 61 layers, each with its indexer */
    setup(&f, "deepseek-v3.2", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    plan(&f);
    cr_assert_eq(f.mem->ranks[0].kv_bytes_per_token, 61ull * 1284);
    f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
    plan(&f);
    cr_assert_eq(f.mem->ranks[0].kv_bytes_per_token, 61ull * 788);
    teardown(&f);
    /* GLM-5.2 IndexShare: 21 layers keep their own indexer (and its key cache) */
    setup(&f, "glm-5.2", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    plan(&f);
    cr_assert_eq(f.mem->ranks[0].kv_bytes_per_token, 78ull * 1152 + 21ull * 132);
    teardown(&f);
}

/* ---- the KV budget ---- */

Test(budget, healthy_plan_allocates_what_is_left)
{
    Fixture f;
    setup(&f, "glm-5", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    f.engine.quantization = MODEL_QUANT_FP8;
    f.engine.quantization_override = true;
    plan(&f);
    cr_assert_eq(f.mem->diags->len, 0);
    cr_assert_eq(f.mem->requested_bytes, 165600000000ull); /* ceil(180e9 x 0.92) */
    for (uint32_t r = 0; r < f.mem->world; r++) {
        const ModelMemRank *k = &f.mem->ranks[r];
        cr_assert_eq(k->kv_budget_bytes,
                     (int64_t)f.mem->requested_bytes - (int64_t)non_kv(f.mem, k));
        cr_assert(k->kv_budget_bytes > 0);
        uint64_t kv = k->bytes[MODEL_MEM_KV_CACHE];
        cr_assert(kv > 0 && kv <= (uint64_t)k->kv_budget_bytes);
        /* whole blocks of 64 slots: less than one block is left over */
        cr_assert((uint64_t)k->kv_budget_bytes - kv < 64 * k->kv_bytes_per_token);
    }
    teardown(&f);
}

/* Where vLLM's first memory snapshot falls decides what its budget counts: since PR 25359 the
 * CUDA worker initializes NCCL before it, so the communicators sit beside the budget like the
 * context; memory_profiling's total_consumed (the device's free memory since that snapshot)
 * counts the V2 sampler's state made in load_model, which the older formula missed. */
Test(budget, communicators_and_the_v2_sampler_follow_the_snapshot)
{
    Fixture f;
    setup(&f, "glm-5.2", par_of(2, 1, 2, 1, true, false)); /* TP2 x PCP2, EP4: 3 groups */
    f.engine.v2_model_runner = true;
    f.engine.max_num_seqs = 1024;
    plan(&f);
    const ModelMemRank *k = &f.mem->ranks[0];
    uint64_t comm = k->bytes[MODEL_MEM_RESERVED];
    cr_assert_eq(comm, 3ull * 256 * MIB, "tp, pcp and ep communicators");
    cr_assert_not(f.mem->reserved_in_budget);
    const ModelMemItem *pen = find_item(k, "sampler.penalties.output_bin_counts");
    cr_assert_not_null(pen);
    cr_assert_eq(pen->bytes, 1024ull * 154880 * 4, "[max_num_seqs, vocab] int32");
    cr_assert_eq(pen->component, MODEL_MEM_ATTN_WORKSPACE);
    int64_t main_budget = k->kv_budget_bytes;
    uint64_t ring = prefix_bytes(k, "non_torch.nccl_tp_ring_buffers");
    cr_assert(ring > 0, "TP2 with NCCL's cuMem on: the profile connects the ring buffers");
    uint64_t sum = 0;
    for (int c = 0; c < MODEL_MEM_COUNT; c++)
        if (c != MODEL_MEM_KV_CACHE && c != MODEL_MEM_OUTSIDE_BUDGET && c != MODEL_MEM_RESERVED)
            sum += k->bytes[c];
    cr_assert_eq(main_budget, (int64_t)f.mem->requested_bytes - (int64_t)sum);

    /* vLLM before both: the communicators in non-KV, the sampler counted nowhere */
    f.engine.vllm_absent = (1u << MODEL_VLLM_NCCL_BEFORE_MEMORY_SNAPSHOT) |
                           (1u << MODEL_VLLM_MEMORY_PROFILING_TOTAL_CONSUMED);
    plan(&f);
    k = &f.mem->ranks[0];
    cr_assert(f.mem->reserved_in_budget);
    pen = find_item(k, "sampler.penalties.output_bin_counts");
    cr_assert_eq(pen->component, MODEL_MEM_OUTSIDE_BUDGET);
    /* ...and no NCCL ring buffers connected after the snapshot: the communicators made
     * before the profile hold them (issue 25, model/memory-vllm.c) */
    cr_assert_eq(k->kv_budget_bytes, main_budget - (int64_t)comm + (int64_t)pen->bytes +
                                         (int64_t)ring);

    /* vLLM-Ascend keeps its communicators (2 x HCCL_BUFFSIZE each) inside the budget */
    f.engine.vllm_absent = 0;
    f.hw = hw_of("ascend-910b", 64ull << 30);
    plan(&f);
    cr_assert(f.mem->reserved_in_budget);
    teardown(&f);
}

Test(budget, negative_budget_is_a_kv_budget_error_with_the_utilization_that_fits)
{
    /* the seed-004 configuration before the fix: GLM-5.2 NVFP4, TP1/PCP4/DCP4, FlashInfer
     * sparse MLA with 32768 batched tokens, the CUTLASS MoE (its 24.42 GiB workspace for the
     * rows gathered over PCP 4 in the profile), PIECEWISE graphs, at 0.90 */
    Fixture f;
    setup(&f, "glm-5.2", par_of(1, 1, 4, 4, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHINFER_MLA_SPARSE;
    f.engine.moe_backend = MODEL_MOE_FLASHINFER_CUTLASS;
    f.engine.gpu_memory_utilization = 0.90;
    f.engine.quantization = MODEL_QUANT_NVFP4;
    f.engine.quantization_override = true;
    f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
    f.engine.cudagraph_mode = MODEL_CUDAGRAPH_PIECEWISE;
    f.engine.max_model_len = 4096;
    f.engine.max_num_batched_tokens = 32768;
    plan(&f);
    const ModelMemRank *k = &f.mem->ranks[0];
    cr_assert(k->kv_budget_bytes <= 0);
    cr_assert_eq(k->bytes[MODEL_MEM_KV_CACHE], 0);
    cr_assert_eq(f.mem->diags->len, 1, "one diagnostic for the one problem of ranks 0-3");
    const SchedDiag *d = diag_of(f.mem, "kv_budget");
    cr_assert_not_null(d);
    cr_assert_eq(d->severity, SCHED_SEV_ERROR);
    cr_assert(g_str_has_prefix(d->message,
                               "No available memory for the cache blocks. Try increasing "
                               "`gpu_memory_utilization` when initializing the engine."),
              "%s", d->message);
    /* the communicators are named beside non-KV, not in it (PR 25359) */
    cr_assert(strstr(d->message, "GiB; the communicators' 0.75 GiB are outside the budget"), "%s",
              d->message);
    cr_assert_null(strstr(d->message, "GiB GiB"), "%s", d->message);
    double need = ceil((double)non_kv(f.mem, k) / 180e9 * 10000.0 - 1e-7) / 10000.0;
    char want[64];
    snprintf(want, sizeof want, "gpu_memory_utilization >= %.4f", need);
    cr_assert(strstr(d->message, want), "%s\nwants %s", d->message, want);
    snprintf(want, sizeof want, "\"utilization_positive_budget\":%.4f", need);
    cr_assert(strstr(d->detail, want), "%s", d->detail);
    cr_assert(strstr(d->detail, "\"ranks\":\"0-3\""), "%s", d->detail);
    cr_assert(need > 0.92 && need < 1.0);
    /* vLLM before PR 25359: the communicators are one of non-KV's parts */
    f.engine.vllm_absent = 1u << MODEL_VLLM_NCCL_BEFORE_MEMORY_SNAPSHOT;
    plan(&f);
    d = diag_of(f.mem, "kv_budget");
    cr_assert_not_null(d);
    cr_assert(strstr(d->message, ", reserved 0.75 GiB)"), "%s", d->message);
    cr_assert_null(strstr(d->message, "GiB GiB"), "%s", d->message);
    f.engine.vllm_absent = 0;
    /* the fix the PR made: 4096 batched tokens and 0.96 */
    f.engine.max_num_batched_tokens = 4096;
    f.engine.gpu_memory_utilization = 0.96;
    plan(&f);
    cr_assert_eq(f.mem->diags->len, 0);
    cr_assert(f.mem->ranks[0].bytes[MODEL_MEM_KV_CACHE] > 0);
    teardown(&f);
}

Test(budget, below_one_request_is_the_max_seq_len_error)
{
    Fixture f;
    setup(&f, "glm-5", par_of(8, 1, 1, 1, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHMLA_SPARSE;
    f.engine.quantization = MODEL_QUANT_FP8;
    f.engine.quantization_override = true;
    f.engine.max_model_len = 1u << 20;
    plan(&f);
    const ModelMemRank *k = &f.mem->ranks[0];
    uint64_t one = (uint64_t)f.engine.max_model_len * k->kv_bytes_per_token;
    /* leave half a request's worth of KV */
    f.engine.gpu_memory_utilization = (double)(non_kv(f.mem, k) + one / 2) / 180e9;
    plan(&f);
    k = &f.mem->ranks[0];
    cr_assert(k->kv_budget_bytes > 0 && (uint64_t)k->kv_budget_bytes < one);
    cr_assert_eq(f.mem->diags->len, 1);
    const SchedDiag *d = diag_of(f.mem, "kv_budget");
    cr_assert_not_null(d);
    cr_assert(g_str_has_prefix(d->message, "To serve at least one request with the models's max "
                                           "seq len (1048576), ("),
              "%s", d->message);
    cr_assert(strstr(d->message, "GiB KV cache is needed, which is larger than the available KV "
                                 "cache memory ("),
              "%s", d->message);
    cr_assert(strstr(d->message, "the estimated maximum model length is "));
    teardown(&f);
}

Test(budget, weights_above_hbm_are_oom)
{
    Fixture f;
    setup(&f, "glm-5", par_of(1, 1, 1, 1, false, false)); /* 1.49 TB of bf16 on one GPU */
    plan(&f);
    cr_assert_eq(f.mem->diags->len, 1, "oom only, not also kv_budget");
    const SchedDiag *d = diag_of(f.mem, "oom");
    cr_assert_not_null(d);
    cr_assert_eq(d->severity, SCHED_SEV_ERROR);
    cr_assert_eq(d->rank, 0);
    cr_assert(strstr(d->message, "out of memory"), "%s", d->message);
    cr_assert(strstr(d->detail, "\"problem\":\"weights_exceed_hbm\""));
    teardown(&f);
}

Test(budget, one_diagnostic_names_the_worst_rank)
{
    /* DeepSeek-V3.2, TP2 x DP3 with EP 6: 256 = 6 x 42 + 4, ranks 0-3 hold 43 experts, 4-5 hold
     * 42. On a small device every rank lacks KV memory; ranks 0-3 are the worst. */
    Fixture f;
    setup(&f, "deepseek-v3.2", par_of(2, 3, 1, 1, true, false));
    f.engine.quantization = MODEL_QUANT_FP8;
    f.engine.quantization_override = true;
    plan(&f);
    uint64_t w0 = f.mem->ranks[0].bytes[MODEL_MEM_WEIGHTS];
    uint64_t w5 = f.mem->ranks[5].bytes[MODEL_MEM_WEIGHTS];
    /* one fp8 expert (3 x 7168 x 2048 bytes) in each of the 58 MoE layers */
    cr_assert_eq(w0 - w5, 58ull * 3 * 7168 * 2048);
    for (uint32_t r = 1; r < 4; r++)
        cr_assert_eq(f.mem->ranks[r].bytes[MODEL_MEM_WEIGHTS], w0);
    /* a device on which the profile run fits (everything but the KV cache, plus the runtime
     * context) while 0.92 of it does not leave room for any KV cache */
    uint64_t non_kv0 = 0;
    for (int c = 0; c < MODEL_MEM_COUNT; c++)
        if (c != MODEL_MEM_KV_CACHE)
            non_kv0 += f.mem->ranks[0].bytes[c];
    f.hw.hbm_bytes = non_kv0 + f.mem->context_bytes + 64 * MIB;
    plan(&f);
    cr_assert_eq(f.mem->diags->len, 1);
    const SchedDiag *d = diag_of(f.mem, "kv_budget");
    cr_assert_not_null(d);
    cr_assert(d->rank >= 0 && d->rank <= 3, "worst rank %d", d->rank);
    cr_assert(strstr(d->detail, "\"ranks\":\"0-5\""), "%s", d->detail);
    teardown(&f);
}

/* ---- invariants ---- */

static void check_sums(const ModelMemPlan *m)
{
    for (uint32_t r = 0; r < m->world; r++) {
        const ModelMemRank *k = &m->ranks[r];
        uint64_t sum[MODEL_MEM_COUNT] = {0};
        for (guint i = 0; i < k->items->len; i++) {
            const ModelMemItem *it = g_ptr_array_index(k->items, i);
            cr_assert(it->component < MODEL_MEM_COUNT);
            cr_assert(it->name && it->shape && it->dtype);
            sum[it->component] += it->bytes;
        }
        for (int c = 0; c < MODEL_MEM_COUNT; c++)
            cr_assert_eq(sum[c], k->bytes[c], "rank %u %s", r, model_mem_component_name(c));
        cr_assert(k->items->len < 200, "%u items", k->items->len);
    }
}

Test(invariants, components_are_the_sums_of_their_items)
{
    const char *models[] = {"glm-5",       "glm-5.2",       "deepseek-v3.2",
                            "deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b"};
    const ModelQuant quants[] = {MODEL_QUANT_BF16, MODEL_QUANT_FP8, MODEL_QUANT_W8A8,
                                 MODEL_QUANT_W4A8, MODEL_QUANT_NVFP4};
    for (guint i = 0; i < G_N_ELEMENTS(models); i++)
        for (guint q = 0; q < G_N_ELEMENTS(quants); q++) {
            Fixture f;
            setup(&f, models[i], par_of(8, 2, 1, 1, i != 4, false)); /* llama: no experts */
            f.engine.quantization = quants[q];
            f.engine.quantization_override = true;
            f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
            plan(&f);
            check_sums(f.mem);
            teardown(&f);
        }
    /* PCP + DCP, DSA CP, Ascend */
    Fixture f;
    setup(&f, "glm-5.2", par_of(2, 1, 2, 2, true, false));
    f.engine.attention_backend = MODEL_BACKEND_FLASHINFER_MLA_SPARSE;
    plan(&f);
    check_sums(f.mem);
    teardown(&f);
    setup(&f, "glm-5", par_of(16, 2, 1, 1, true, true));
    f.hw = hw_of("ascend-910c", 64ull * GIB);
    f.engine.attention_backend = MODEL_BACKEND_ASCEND;
    f.engine.quantization = MODEL_QUANT_W8A8;
    f.engine.quantization_override = true;
    plan(&f);
    check_sums(f.mem);
    cr_assert_eq(f.mem->diags->len, 0, "GLM-5 W8A8 over 32 dies fits");
    teardown(&f);
}

Test(invariants, activations_are_a_peak_not_a_sum)
{
    Fixture f;
    setup(&f, "deepseek-v3.2", par_of(8, 1, 1, 1, true, false));
    f.engine.max_num_batched_tokens = 8192;
    plan(&f);
    const ModelMemRank *k = &f.mem->ranks[0];
    uint64_t a1 = k->bytes[MODEL_MEM_ACTIVATIONS];
    /* residual + hidden states [8192, 7168] bf16 each, plus one phase */
    cr_assert(a1 > 2ull * 8192 * 7168 * 2);
    /* only one phase's tensors are listed */
    guint phases = 0;
    const char *seen[8] = {0};
    for (guint i = 0; i < k->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(k->items, i);
        if (it->component != MODEL_MEM_ACTIVATIONS || !strchr(it->name + 12, '.'))
            continue;
        const char *ph = it->name + strlen("activations.");
        bool known = false;
        for (guint j = 0; j < phases; j++)
            known |= strncmp(seen[j], ph, strcspn(ph, ".")) == 0;
        if (!known)
            seen[phases++] = ph;
    }
    cr_assert_eq(phases, 1);
    /* twice the batched tokens: nearly twice the peak (the persistent fused-MoE workspace
     * grows with them, the sampler's logits do not) */
    f.engine.max_num_batched_tokens = 16384;
    plan(&f);
    uint64_t a2 = f.mem->ranks[0].bytes[MODEL_MEM_ACTIVATIONS];
    cr_assert(a2 > a1 * 17 / 10 && a2 <= a1 * 2, "%lu vs %lu", (unsigned long)a2,
              (unsigned long)a1);
    teardown(&f);
}

Test(invariants, cudagraph_estimate)
{
    Fixture f;
    setup(&f, "deepseek-v3.2", par_of(8, 1, 1, 1, true, false));
    f.engine.cudagraph_mode = MODEL_CUDAGRAPH_NONE;
    plan(&f);
    cr_assert_eq(f.mem->ranks[0].bytes[MODEL_MEM_CUDAGRAPH], 0);
    /* PIECEWISE, max_num_seqs 256: 51 capture sizes (1, 2, 4, 8..248 by 8, 256..512 by 16);
     * vLLM's estimate counts one graph per size, as its second capture measured: per size
     * beyond the first, 58 MoE pieces x 1 MiB + 4 pieces (3 dense layers and the tail) x 0.3
     * MiB (issue 25; it was 62 pieces x 1 MiB) */
    f.engine.cudagraph_mode = MODEL_CUDAGRAPH_PIECEWISE;
    plan(&f);
    const ModelMemItem *g = find_item(&f.mem->ranks[0], "cudagraph.piecewise_graphs");
    cr_assert_not_null(g);
    cr_assert_eq(g->bytes, 50ull * (58 * MIB + 4 * (3 * MIB / 10)));
    cr_assert_null(find_item(&f.mem->ranks[0], "cudagraph.full_graphs"));
    /* FULL_AND_PIECEWISE adds FULL graphs for decode sizes up to max_num_seqs (35 sizes) */
    f.engine.cudagraph_mode = MODEL_CUDAGRAPH_FULL_AND_PIECEWISE;
    plan(&f);
    g = find_item(&f.mem->ranks[0], "cudagraph.full_graphs");
    cr_assert_not_null(g);
    cr_assert_eq(g->bytes, 34ull * MIB);
    teardown(&f);
}

Test(invariants, ranks_share_identical_figures)
{
    /* without EP leftovers every rank of a TP x DP plan holds the same */
    Fixture f;
    setup(&f, "qwen3-235b-a22b", par_of(4, 2, 1, 1, true, false));
    plan(&f);
    for (uint32_t r = 1; r < f.mem->world; r++)
        for (int c = 0; c < MODEL_MEM_COUNT; c++)
            cr_assert_eq(f.mem->ranks[r].bytes[c], f.mem->ranks[0].bytes[c]);
    /* 128 experts over EP 8: 16 per rank */
    const ModelMemItem *w = find_item(&f.mem->ranks[3], "layers.0-93.mlp.experts.w13_weight");
    cr_assert_not_null(w);
    cr_assert_str_eq(w->shape, "94 x [16, 3072, 4096]");
    teardown(&f);
}

/* DeepSeek-V4-Flash: the caches of one 4,096-token request at max_num_batched_tokens 8,192, by
 * hand from vLLM's page sizes (model/memory.c, V4_*): every layer's sliding window
 * (cdiv(min(127 + 8192, 4096), 64) + 1 = 65 blocks of 37,440 B); a C4 layer's compressed KV
 * and indexer (cdiv(4096, 256) = 16 blocks of 37,440 + 8,640 B) and compressor states
 * (cdiv(min(7 + 8192, 4096), 4) + 1 = 1,025 blocks of 37,440 + 8,640 B); a C128 layer's
 * compressed KV (16 blocks of 1,728 B) and state (cdiv(min(127 + 8192, 4096), 8) + 1 = 513
 * blocks of 37,440 B). Not split by TP (one latent KV head). */
Test(kv, deepseek_v4_request_by_hand)
{
    Fixture f;
    setup(&f, "deepseek-v4-flash", par_of(4, 1, 1, 1, false, false));
    f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
    f.engine.max_num_batched_tokens = 8192;
    uint32_t c1 = 0, c4 = 0, c128 = 0;
    for (uint32_t l = 0; l < f.arch.num_layers; l++) {
        c1 += f.arch.compress_ratio[l] == 1;
        c4 += f.arch.compress_ratio[l] == 4;
        c128 += f.arch.compress_ratio[l] == 128;
    }
    cr_assert_eq(c1 + c4 + c128, 43);
    cr_assert(c4 > 0 && c128 > 0);
    uint64_t swa = 65ull * 37440;
    uint64_t per_c4 = 16ull * (37440 + 8640) + 1025ull * (37440 + 8640);
    uint64_t per_c128 = 16ull * 1728 + 513ull * 37440;
    uint64_t want = 43 * swa + c4 * per_c4 + c128 * per_c128;
    cr_assert_eq(model_kv_request_bytes(&f.arch, f.plan, &f.engine, 4096), want);
    /* MXFP4 experts (expert_dtype fp4) whatever the checkpoint's scheme */
    cr_assert_eq(model_quant_format(&f.arch.quant, 5, MODEL_ROLE_EXPERT)->kind, MODEL_WFMT_MXFP4);
    teardown(&f);
}

/* The gpt-oss-120b preset reads the weights as released (MXFP4 experts, the rest bf16): on one
 * unpadded rank weights + scales are the checkpoint's 65,248,815,744 B (HF API per-dtype counts,
 * tests/data/checkpoints.tsv: 2 x 2,167,371,072 BF16 + 57,330,892,800 B of blocks + 3,583,180,800
 * B of e8m0 scales), not the ~218 GB of reading every weight as bf16. */
Test(weights, gpt_oss_120b_preset_is_the_released_checkpoint)
{
    Fixture f;
    setup(&f, "gpt-oss-120b", par_of(1, 1, 1, 1, false, false));
    plan(&f);
    const ModelMemRank *r = &f.mem->ranks[0];
    double got = (double)(r->bytes[MODEL_MEM_WEIGHTS] + r->bytes[MODEL_MEM_QUANT_SCALES]);
    double want = 65248815744.0;
    cr_assert_lt(fabs(got / want - 1), 0.001, "%.0f B against %.0f", got, want);
    cr_assert_gt(r->bytes[MODEL_MEM_QUANT_SCALES], 3.5e9); /* the e8m0 scales are there */
    teardown(&f);
}

/* DeepSeek-V4.1-Flash: one 4,096-token request at max_num_batched_tokens 8,192 by hand: every
 * one of the 40 layers' fp8 windows as V4's (65 blocks of 37,440 B), plus the four kv-source
 * groups' compressed caches, 16 logical blocks of 256 tokens each, a block holding 256 / ratio
 * entries of 288 B (FP4 latent) + 68 B (FP4 indexer key): the paper's 890 B of global KV per
 * token (3 groups of ratio 2, one of ratio 1: 3 x 356 / 2 + 356). */
Test(kv, deepseek_v4_1_request_by_hand)
{
    Fixture f;
    setup(&f, "deepseek-v4.1-flash", par_of(8, 1, 1, 1, true, false));
    f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
    f.engine.max_num_batched_tokens = 8192;
    uint64_t swa = 40ull * 65 * 37440;
    uint64_t global = 16ull * (3 * 128 * 356 + 256 * 356);
    cr_assert_eq(global / 4096, 890);
    cr_assert_eq(model_kv_request_bytes(&f.arch, f.plan, &f.engine, 4096), swa + global);
    teardown(&f);
}

/* DeepSeek-V4.1's Engram tables (384,006,168 and 384,016,682 rows of 256 fp8 + 8 ue8m0 scale
 * bytes) are row-sharded over TP: under TP8 a rank holds an eighth of each; the compressor sits
 * on the kv sources only and the indexer on the index sources only. */
Test(weights, deepseek_v4_1_engram_sharded_and_csa2_owners)
{
    Fixture f;
    setup(&f, "deepseek-v4.1-flash", par_of(8, 1, 1, 1, true, false));
    f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
    plan(&f);
    const ModelMemRank *r = &f.mem->ranks[0];
    const ModelMemItem *t1 = find_item(r, "layers.1.engram.embed.weight");
    const ModelMemItem *t14 = find_item(r, "layers.14.engram.embed.weight");
    cr_assert_not_null(t1);
    cr_assert_not_null(t14);
    cr_assert_eq(t1->bytes, (384006168ull + 7) / 8 * 256);
    cr_assert_eq(t14->bytes, (384016682ull + 7) / 8 * 256);
    const ModelMemItem *sc = find_item(r, "layers.1.engram.embed.scale");
    cr_assert_not_null(sc);
    cr_assert_eq(sc->bytes, (384006168ull + 7) / 8 * 8);
    const ModelMemItem *comp = find_item(r, "layers.2,8,14,20.attn.compressor.fused_wkv_wgate.weight");
    cr_assert_not_null(comp, "the compressor is on the four kv sources only");
    const ModelMemItem *idx =
        find_item(r, "layers.2,8,14,20,24,28,32,36.attn.indexer.wq_b.weight");
    cr_assert_not_null(idx, "the indexer is on the eight index sources only");
    teardown(&f);
}
