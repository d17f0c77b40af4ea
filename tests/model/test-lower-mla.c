/* tests/model/test-lower-mla.c — the MLA / DSA parts of the lowering as vLLM runs them: a chunked
 * MLA prefill over a cached context (kv_b_proj decompresses every key but carries the step's
 * rows, so the layout checker stays quiet), Blackwell's FlashInfer MLA decode reading the latent
 * cache as CUTLASS MLA does, and DeepSeek-V3.2's indexer growing with the context while its
 * sparse attention walks a fixed top-k. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/kernel-gemm.h"
#include "../../model/lower.h"

/* B200's datasheet figures (2,250 TFLOPS dense bf16, 4,500 fp8, 8 TB/s, 148 SMs, 126 MB L2). */
static NetHardware b200(void)
{
    NetHardware hw;
    memset(&hw, 0, sizeof hw);
    g_strlcpy(hw.name, "b200-test", sizeof hw.name);
    hw.platform = NET_PLATFORM_CUDA;
    hw.arch = NET_ARCH_SM100;
    hw.peak_flops[NET_PEAK_BF16] = 2250e12;
    hw.peak_flops[NET_PEAK_FP8] = 4500e12;
    hw.hbm_bw_bytes_per_s = 8e12;
    hw.compute_units = 148;
    hw.l2_bytes = 126000000;
    return hw;
}

typedef struct {
    ModelArch arch;
    ModelPlan *plan;
    ModelEngine engine;
    ModelWorkload *wl;
    ModelCost *cost;
    NetHardware hw;
    ModelLowerInput in;
    SchedProgram *p;
} Fixture;

static void setup(Fixture *f, const char *model, uint32_t tp, ModelBackend backend, bool blackwell)
{
    memset(f, 0, sizeof *f);
    GError *err = NULL;
    cr_assert(model_arch_load_preset(model, &f->arch, &err), "%s", err ? err->message : "");
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = tp;
    f->plan = model_plan_new(&par, &f->arch, &err);
    cr_assert_not_null(f->plan, "%s", err ? err->message : "");
    model_engine_defaults(&f->engine);
    f->engine.attention_backend = backend;
    f->engine.max_model_len = 1 << 20;
    f->wl = model_workload_new();
    f->hw = blackwell ? b200() : *net_hardware_flat();
    f->cost = model_cost_new(&f->hw, NULL);
}

static void step(Fixture *f, uint32_t prefill, uint32_t cached, uint32_t ndecode, uint32_t ctx)
{
    GPtrArray *per = g_ptr_array_new();
    ModelBatch *b = model_batch_new();
    if (prefill) {
        g_array_append_val(b->prefill, prefill);
        g_array_append_val(b->prefill_ctx, cached);
    }
    for (uint32_t i = 0; i < ndecode; i++)
        g_array_append_val(b->decode, ctx);
    g_ptr_array_add(per, b);
    model_workload_add_step(f->wl, per);
}

static void lower(Fixture *f)
{
    f->in = (ModelLowerInput){&f->arch, f->plan, &f->engine, f->wl, f->cost,
                              f->hw.arch ? &f->hw : NULL, MODEL_BREAK_NONE};
    GError *err = NULL;
    f->p = model_lower(&f->in, &err);
    cr_assert_not_null(f->p, "%s", err ? err->message : "");
}

static void teardown(Fixture *f)
{
    sched_program_free(f->p);
    model_plan_free(f->plan);
    model_workload_free(f->wl);
    model_cost_free(f->cost);
}

/* The first op named `name` on rank 0. */
static const SchedOp *op_named(const Fixture *f, const char *name)
{
    const SchedOpList *l = sched_program_ops(f->p, 0);
    for (uint32_t i = 0; i < l->len; i++)
        if (strcmp(sched_program_name_str(f->p, l->ops[i].name), name) == 0)
            return &l->ops[i];
    return NULL;
}

Test(lower_mla, chunked_prefill_over_a_cache_keeps_the_step_rows)
{
    Fixture f;
    setup(&f, "kimi-k2", 8, MODEL_BACKEND_AUTO, false);
    step(&f, 4096, 4096, 0, 0);
    lower(&f);
    const SchedOp *kvb = op_named(&f, "kv_b_proj");
    cr_assert_not_null(kvb);
    cr_assert_eq(kvb->tokens, 4096);
    GPtrArray *d = model_layout_check(f.p, &f.in);
    cr_assert_eq(d->len, 0, "%u layout findings", d->len);
    g_ptr_array_unref(d);
    /* the GEMM itself decompresses cached + new keys: dearer than a first chunk's */
    int64_t with_cache = kvb->dur_ns;
    teardown(&f);
    setup(&f, "kimi-k2", 8, MODEL_BACKEND_AUTO, false);
    step(&f, 4096, 0, 0, 0);
    lower(&f);
    cr_assert_gt(with_cache, op_named(&f, "kv_b_proj")->dur_ns);
    teardown(&f);
}

static int64_t blackwell_mla_ns(ModelBackend backend)
{
    Fixture f;
    setup(&f, "deepseek-v3", 8, backend, true);
    step(&f, 0, 0, 64, 8192);
    lower(&f);
    const SchedOp *op = op_named(&f, "mla_attention");
    cr_assert_not_null(op);
    int64_t ns = op->dur_ns;
    teardown(&f);
    return ns;
}

Test(lower_mla, flashinfer_mla_reads_the_latent_cache)
{
    int64_t fi = blackwell_mla_ns(MODEL_BACKEND_FLASHINFER_MLA);
    int64_t cutlass = blackwell_mla_ns(MODEL_BACKEND_CUTLASS_MLA);
    cr_assert_eq(fi, cutlass);
    /* 64 sequences x 8,192 keys of the 576-wide bf16 latent (604 MB) at 8 TB/s: under 150 us;
     * read as separate K and V (1,088 wide) it would take about twice */
    cr_assert_lt(fi, 150000, "%lld ns", (long long)fi);
}

Test(lower_mla, dsa_indexer_grows_with_context_sparse_attention_does_not)
{
    int64_t idx[2], attn[2];
    const uint32_t ctx[2] = {2048, 65536};
    for (int i = 0; i < 2; i++) {
        Fixture f;
        setup(&f, "deepseek-v3.2", 8, MODEL_BACKEND_AUTO, false);
        f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
        step(&f, 0, 0, 64, ctx[i]);
        lower(&f);
        idx[i] = op_named(&f, "indexer")->dur_ns;
        attn[i] = op_named(&f, "sparse_attention")->dur_ns;
        teardown(&f);
    }
    cr_assert_gt(idx[1], 2 * idx[0], "%lld vs %lld", (long long)idx[1], (long long)idx[0]);
    cr_assert_eq(attn[0], attn[1]);
}

/* vLLM builds the router gate without a quant config and leaves the LM head (an embedding
 * layer) unquantized: in an fp8 block-scaled checkpoint both run as bf16 GEMMs, not as the
 * block-scaled kernel the other linears use. */
Test(lower_mla, router_gate_and_lm_head_stay_bf16)
{
    Fixture f;
    setup(&f, "deepseek-v3", 8, MODEL_BACKEND_AUTO, true);
    step(&f, 0, 0, 64, 2048);
    lower(&f);
    const SchedOp *head = op_named(&f, "lm_head");
    cr_assert_not_null(head);
    double n = (double)f.arch.vocab_size / 8;
    ModelGemmShape bf = {.m = 64, .n = (uint64_t)n, .k = f.arch.hidden_size,
                         .dtype = MODEL_GEMM_BF16};
    ModelGemmShape blk = bf;
    blk.dtype = MODEL_GEMM_FP8_BLOCK;
    double t_bf = model_gemm_time(&f.hw, &bf).ns, t_blk = model_gemm_time(&f.hw, &blk).ns;
    cr_assert(t_bf > 1.3 * t_blk, "the shapes tell the formats apart: %.0f vs %.0f ns", t_bf, t_blk);
    cr_assert((double)head->dur_ns >= t_bf - 1, "lm_head %ld ns, bf16 GEMM %.0f ns",
              (long)head->dur_ns, t_bf);
    const SchedOp *gate = op_named(&f, "moe_gate");
    cr_assert_not_null(gate);
    ModelGemmShape g = {.m = 64, .n = f.arch.n_routed_experts, .k = f.arch.hidden_size,
                        .dtype = MODEL_GEMM_BF16};
    cr_assert((double)gate->dur_ns >= model_gemm_time(&f.hw, &g).ns - 1);
    teardown(&f);
}

/* --quantization fp8 on a bf16 checkpoint: vLLM quantizes online with one scale per tensor, so
 * the linears run the per-tensor fp8 kernel, not the block-scaled one. */
Test(lower_mla, online_fp8_runs_per_tensor_gemms)
{
    Fixture f;
    setup(&f, "llama-3.1-8b", 1, MODEL_BACKEND_AUTO, true);
    f.engine.quantization_override = true;
    f.engine.quantization = MODEL_QUANT_FP8;
    step(&f, 0, 0, 16, 1024);
    lower(&f);
    const SchedOp *o = op_named(&f, "o_proj");
    cr_assert_not_null(o);
    ModelGemmShape pt = {.m = 16, .n = f.arch.hidden_size,
                         .k = (uint64_t)f.arch.num_heads * f.arch.head_dim,
                         .dtype = MODEL_GEMM_FP8};
    ModelGemmShape blk = pt;
    blk.dtype = MODEL_GEMM_FP8_BLOCK;
    double t_pt = model_gemm_time(&f.hw, &pt).ns, t_blk = model_gemm_time(&f.hw, &blk).ns;
    cr_assert(t_blk > 1.2 * t_pt, "the kernels tell apart: %.0f vs %.0f ns", t_blk, t_pt);
    cr_assert((double)o->dur_ns < t_blk, "o_proj %ld ns, block fp8 %.0f ns", (long)o->dur_ns, t_blk);
    teardown(&f);
}
