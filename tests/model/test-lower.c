/* tests/model/test-lower.c — the lowering's semantics (issue: DSA CP token layout, PCP/DCP and
 * the seed-004 hang, MC2 decode MoE, EP all-to-all), the layout checker against deliberately
 * broken lowerings, and repeat-vs-unrolled equivalence on a real model. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/lower.h"

typedef struct {
    ModelArch arch;
    ModelPlan *plan;
    ModelEngine engine;
    ModelWorkload *wl;
    ModelCost *cost;
    ModelLowerInput in;
    SchedProgram *p;
} Fixture;

static void setup(Fixture *f, const char *model, ModelParallel par, ModelBackend backend)
{
    memset(f, 0, sizeof *f);
    GError *err = NULL;
    cr_assert(model_arch_load_preset(model, &f->arch, &err), "%s", err ? err->message : "");
    f->plan = model_plan_new(&par, &f->arch, &err);
    cr_assert_not_null(f->plan, "%s", err ? err->message : "");
    model_engine_defaults(&f->engine);
    f->engine.attention_backend = backend;
    f->engine.max_model_len = 1 << 20;
    f->wl = model_workload_new();
    f->cost = model_cost_new(net_hardware_flat(), NULL);
}

static void add_step(Fixture *f, const uint32_t *prefill, guint np, const uint32_t *decode,
                     guint nd)
{
    GPtrArray *per = g_ptr_array_new();
    ModelBatch *b = model_batch_new();
    g_array_append_vals(b->prefill, prefill, np);
    g_array_append_vals(b->decode, decode, nd);
    g_ptr_array_add(per, b);
    model_workload_add_step(f->wl, per);
}

static void lower(Fixture *f, ModelBreak brk)
{
    f->in = (ModelLowerInput){&f->arch, f->plan, &f->engine, f->wl, f->cost, NULL, brk};
    GError *err = NULL;
    if (f->p)
        sched_program_free(f->p);
    f->p = model_lower(&f->in, &err);
    cr_assert_not_null(f->p, "%s", err ? err->message : "");
    cr_assert(sched_program_validate(f->p, &err), "%s", err ? err->message : "");
}

static void teardown(Fixture *f)
{
    sched_program_free(f->p);
    model_plan_free(f->plan);
    model_workload_free(f->wl);
    model_cost_free(f->cost);
}

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

/* The unrolled op list of one rank. */
static const SchedOpList *unrolled(Fixture *f, SchedProgram **keep, uint32_t rank)
{
    *keep = sched_program_unroll(f->p);
    return sched_program_ops(*keep, rank);
}

static const char *nm(SchedProgram *p, const SchedOp *op)
{
    return sched_program_name_str(p, op->name);
}

static uint32_t count_named(SchedProgram *p, const SchedOpList *l, const char *name, int32_t layer)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->len; i++)
        if (strcmp(nm(p, &l->ops[i]), name) == 0 && (layer < -1 || l->ops[i].layer == layer))
            n++;
    return n;
}

static const SchedOp *first_named(SchedProgram *p, const SchedOpList *l, const char *name)
{
    for (uint32_t i = 0; i < l->len; i++)
        if (strcmp(nm(p, &l->ops[i]), name) == 0)
            return &l->ops[i];
    return NULL;
}

/* ---- 1. DSA CP ---- */

Test(dsa_cp, glm5_tp16_sp_prefill_4096_follows_the_token_layout_contract)
{
    Fixture f;
    setup(&f, "glm-5", par_of(16, 1, 1, 1, false, true), MODEL_BACKEND_ASCEND);
    uint32_t pre[] = {4096};
    add_step(&f, pre, 1, NULL, 0);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u;
    const SchedOpList *l = unrolled(&f, &u, 5);
    /* DSA attends in MLA's latent space for every row: no kv_b_proj decompression, the query
     * and the output through W_UK / W_UV instead */
    static const char *const full[] = {"fused_qkv_a_proj", "q_a_layernorm",    "kv_a_layernorm",
                                       "q_b_proj",         "mla_q_absorb",     "indexer",
                                       "sparse_attention", "mla_v_absorb"};
    static const char *const local[] = {
        "o_proj",      "post_attention_layernorm", "moe_gate", "moe_topk",
        "moe_experts", "shared_experts",           "mlp",      "input_layernorm"};
    uint32_t seen_full = 0, seen_local = 0, all_reduces_after_o_proj = 0;
    for (uint32_t i = 0; i < l->len; i++) {
        const SchedOp *op = &l->ops[i];
        const char *n = nm(u, op);
        cr_assert_leq(op->tokens, 4096, "%s has %lu rows", n, (unsigned long)op->tokens);
        for (guint k = 0; k < G_N_ELEMENTS(full); k++)
            if (strcmp(n, full[k]) == 0) {
                cr_assert_eq(op->tokens, 4096, "%s layer %d: %lu rows", n, op->layer,
                             (unsigned long)op->tokens);
                seen_full++;
            }
        for (guint k = 0; k < G_N_ELEMENTS(local); k++)
            if (strcmp(n, local[k]) == 0 && op->layer >= 0) {
                cr_assert_eq(op->tokens, 256, "%s layer %d: %lu rows", n, op->layer,
                             (unsigned long)op->tokens);
                seen_local++;
            }
        /* o_proj is replicated: no all-reduce follows it before the post-attention norm */
        if (strcmp(n, "o_proj") == 0 && i + 1 < l->len)
            all_reduces_after_o_proj += l->ops[i + 1].kind == SCHED_OP_ALL_REDUCE;
    }
    cr_assert_eq(all_reduces_after_o_proj, 0);
    cr_assert_gt(seen_full, 78 * 6);
    cr_assert_gt(seen_local, 78 * 4);
    for (int32_t layer = 0; layer < 78; layer++) {
        cr_assert_eq(count_named(u, l, "sp_all_gather", layer), 1, "layer %d", layer);
        cr_assert_eq(count_named(u, l, "sparse_attention", layer), 1);
    }
    /* 78 DSA boundaries, the normalized input gathered (256 x hidden per rank) */
    cr_assert_eq(count_named(u, l, "sparse_attention", -2), 78);
    const SchedOp *g = first_named(u, l, "sp_all_gather");
    cr_assert_eq(g->count, 256ull * 6144);
    /* MoE layers merge shared-expert shards over TP on local tokens */
    const SchedOp *sh = first_named(u, l, "shared_expert_all_reduce");
    cr_assert_not_null(sh);
    cr_assert_eq(sh->count, 256ull * 6144);
    cr_assert_eq(sh->layer, 3);
    GPtrArray *findings = model_layout_check(f.p, &f.in);
    cr_assert_eq(findings->len, 0, "%s",
                 findings->len ? ((SchedDiag *)g_ptr_array_index(findings, 0))->message : "");
    g_ptr_array_unref(findings);
    sched_program_free(u);
    teardown(&f);
}

static void expect_layout_class(ModelBreak brk, int cls)
{
    Fixture f;
    setup(&f, "glm-5", par_of(16, 1, 1, 1, false, true), MODEL_BACKEND_ASCEND);
    uint32_t pre[] = {4096};
    add_step(&f, pre, 1, NULL, 0);
    lower(&f, brk);
    GPtrArray *findings = model_layout_check(f.p, &f.in);
    cr_assert_gt(findings->len, 0, "broken lowering %d not caught", brk);
    g_autofree char *want = g_strdup_printf("error class %d", cls);
    bool hit = false;
    for (guint i = 0; i < findings->len; i++) {
        SchedDiag *d = g_ptr_array_index(findings, i);
        cr_assert_str_eq(d->kind, "layout");
        hit |= strstr(d->message, want) != NULL;
    }
    cr_assert(hit, "no class-%d finding; first: %s", cls,
              ((SchedDiag *)g_ptr_array_index(findings, 0))->message);
    g_ptr_array_unref(findings);
    teardown(&f);
}

Test(dsa_cp, checker_catches_early_gather_before_moe)
{
    expect_layout_class(MODEL_BREAK_EARLY_GATHER, 1);
}

Test(dsa_cp, checker_catches_local_tokens_into_attention)
{
    expect_layout_class(MODEL_BREAK_LOCAL_ATTENTION, 2);
}

Test(dsa_cp, checker_catches_gathered_residual)
{
    expect_layout_class(MODEL_BREAK_GATHER_RESIDUAL, 3);
}

static GArray *records;
static void rec(void *ud, const SchedRecord *r)
{
    (void)ud;
    g_array_append_val(records, *r);
}

Test(dsa_cp, repetition_on_and_off_run_identically)
{
    Fixture f;
    setup(&f, "glm-5", par_of(16, 1, 1, 1, false, true), MODEL_BACKEND_ASCEND);
    uint32_t pre[] = {4096};
    add_step(&f, pre, 1, NULL, 0);
    uint32_t dec[] = {4096, 4096};
    add_step(&f, NULL, 0, dec, 2);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u = sched_program_unroll(f.p);
    SchedConfig c = sched_config_default();
    c.record = rec;
    records = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    SchedOutcome *a = sched_engine_run(f.p, &c);
    GArray *ra = records;
    records = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    SchedOutcome *b = sched_engine_run(u, &c);
    cr_assert_not(a->failed);
    cr_assert_eq(ra->len, records->len);
    cr_assert(memcmp(ra->data, records->data, ra->len * sizeof(SchedRecord)) == 0);
    cr_assert_eq(a->end_ns, b->end_ns);
    sched_outcome_free(a);
    sched_outcome_free(b);
    g_array_unref(ra);
    g_array_unref(records);
    sched_program_free(u);
    teardown(&f);
}

/* ---- 2. PCP / DCP and the seed-004 hang ---- */

static SchedOutcome *seed004(ModelBackend backend, uint32_t len)
{
    Fixture f;
    setup(&f, "glm-5.2", par_of(1, 1, 4, 4, true, false), backend);
    /* vLLM before PR #55879's backend check, which refuses FLASHINFER_MLA_SPARSE here */
    f.engine.vllm_absent |= 1u << MODEL_VLLM_SPARSE_MLA_BACKEND_CHECK;
    uint32_t pre[] = {len};
    add_step(&f, pre, 1, NULL, 0);
    lower(&f, MODEL_BREAK_NONE);
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    teardown(&f);
    return o;
}

static const SchedDiag *diag(const SchedOutcome *o, const char *kind)
{
    for (guint i = 0; i < o->diags->len; i++)
        if (strcmp(((SchedDiag *)g_ptr_array_index(o->diags, i))->kind, kind) == 0)
            return g_ptr_array_index(o->diags, i);
    return NULL;
}

Test(pcp_dcp, flashinfer_sparse_hangs_on_an_uneven_split)
{
    SchedOutcome *o = seed004(MODEL_BACKEND_FLASHINFER_MLA_SPARSE, 633);
    cr_assert(o->failed);
    const SchedDiag *m = diag(o, "mismatch");
    cr_assert_not_null(m);
    cr_assert_str_eq(m->op_name, "dcp_lse_all_gather");
    cr_assert_eq(m->rank, 0);
    cr_assert(strstr(m->message, "all_gather 9792 fp32"), "%s", m->message);
    cr_assert(strstr(m->message, "all_gather 10240 fp32"), "%s", m->message);
    cr_assert(strstr(m->message, "ranks 1-3 (majority)"), "%s", m->message);
    const SchedDiag *d = diag(o, "deadlock");
    cr_assert_not_null(d);
    cr_assert_eq(d->rank, 0);
    sched_outcome_free(o);
}

Test(pcp_dcp, flashmla_sparse_runs_healthy)
{
    SchedOutcome *o = seed004(MODEL_BACKEND_FLASHMLA_SPARSE, 633);
    cr_assert_not(o->failed, "%s",
                  o->diags->len ? ((SchedDiag *)g_ptr_array_index(o->diags, 0))->message : "");
    for (uint32_t r = 0; r < 4; r++)
        cr_assert_eq(o->ranks[r].state, SCHED_RANK_DONE);
    sched_outcome_free(o);
}

Test(pcp_dcp, an_even_split_is_healthy_on_both)
{
    SchedOutcome *o = seed004(MODEL_BACKEND_FLASHINFER_MLA_SPARSE, 640);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
}

Test(pcp_dcp, rows_follow_dual_chunk_swap_and_padding)
{
    Fixture f;
    setup(&f, "glm-5.2", par_of(1, 1, 4, 4, true, false), MODEL_BACKEND_FLASHMLA_SPARSE);
    uint32_t pre[] = {633};
    add_step(&f, pre, 1, NULL, 0);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u;
    const SchedOpList *l0 = unrolled(&f, &u, 0);
    cr_assert_eq(first_named(u, l0, "sparse_attention")->tokens, 153);
    cr_assert_eq(first_named(u, l0, "fused_qkv_a_proj")->tokens, 160, "linear ops run the padded batch");
    cr_assert_eq(first_named(u, l0, "dcp_lse_all_gather")->count, 160ull * 64);
    cr_assert_not_null(first_named(u, l0, "pcp_kv_all_gather"));
    cr_assert_not_null(first_named(u, l0, "dcp_kv_all_gather"));
    const SchedOpList *l1 = sched_program_ops(u, 1);
    cr_assert_eq(first_named(u, l1, "sparse_attention")->tokens, 160);
    sched_program_free(u);
    teardown(&f);
}

Test(pcp_dcp, a_rank_without_rows_skips_the_kv_gather_and_hangs)
{
    /* TP1/PCP2/DCP2, a 1-token prefill: rank 1 owns no row; FLASHMLA_SPARSE's path skips the
     * DCP KV gather there, so its next collective meets rank 0's gather: a hang. */
    Fixture f;
    setup(&f, "glm-5.2", par_of(1, 1, 2, 2, false, false), MODEL_BACKEND_FLASHMLA_SPARSE);
    uint32_t pre[] = {1};
    add_step(&f, pre, 1, NULL, 0);
    lower(&f, MODEL_BREAK_NONE);
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    cr_assert(o->failed);
    cr_assert_not_null(diag(o, "mismatch"));
    cr_assert_not_null(diag(o, "deadlock"));
    sched_outcome_free(o);
    teardown(&f);
}

Test(pcp_dcp, dcp_inside_tp_gathers_queries_and_combines)
{
    Fixture f;
    setup(&f, "deepseek-v3.2", par_of(8, 1, 1, 4, false, false), MODEL_BACKEND_FLASHMLA_SPARSE);
    uint32_t dec[] = {8000, 8000, 8000};
    add_step(&f, NULL, 0, dec, 3);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u;
    const SchedOpList *l = unrolled(&f, &u, 0);
    const SchedOp *q = first_named(u, l, "dcp_q_all_gather");
    cr_assert_not_null(q);
    cr_assert_eq(q->count, 3ull * 16 * (512 + 64)); /* rows x heads per rank x latent+rope */
    const SchedOp *lse = first_named(u, l, "dcp_lse_all_gather");
    cr_assert_eq(lse->count, 3ull * 64); /* rows x heads gathered over DCP (16 x 4) */
    cr_assert_eq(lse->dtype, SCHED_DTYPE_FP32);
    cr_assert_not_null(first_named(u, l, "dcp_out_reduce_scatter"));
    sched_program_free(u);
    f.plan->par.dcp_comm_backend = MODEL_DCP_A2A;
    lower(&f, MODEL_BREAK_NONE);
    l = unrolled(&f, &u, 0);
    cr_assert_not_null(first_named(u, l, "dcp_all_to_all"));
    cr_assert_null(first_named(u, l, "dcp_lse_all_gather"));
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
    sched_program_free(u);
    teardown(&f);
}

/* ---- 3. MC2 decode MoE on Ascend ---- */

Test(moe, mc2_decode_gates_full_tokens_and_slices_before_topk)
{
    Fixture f;
    setup(&f, "glm-5", par_of(4, 8, 1, 1, true, false), MODEL_BACKEND_ASCEND);
    uint32_t dec[] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    add_step(&f, NULL, 0, dec, 9);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u;
    const SchedOpList *l = unrolled(&f, &u, 6);
    cr_assert_eq(first_named(u, l, "moe_gate")->tokens, 9);
    cr_assert_eq(first_named(u, l, "moe_topk")->tokens, 3);
    const SchedOp *d = first_named(u, l, "ep_dispatch");
    cr_assert_eq(d->kind, SCHED_OP_ALL_TO_ALL);
    cr_assert_eq(d->tokens, 3);
    cr_assert_not_null(first_named(u, l, "mc2_all_gather"));
    sched_program_free(u);
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
    teardown(&f);
}

/* ---- 4. EP ---- */

/* EP inside one TP group (DP 1) on CUDA: vLLM's ParallelConfig.use_all2all is false, so no
 * dispatch at all — every rank keeps every token, runs its 32 of 256 experts on their 1/8 of
 * the routes, and the MoE output merges in the TP all-reduce (2 per layer). */
Test(moe, ep_inside_one_tp_group_dispatches_nothing)
{
    Fixture f;
    setup(&f, "deepseek-v3.2", par_of(8, 1, 1, 1, true, false), MODEL_BACKEND_FLASHMLA_SPARSE);
    uint32_t dec[] = {2048, 2048, 2048, 2048};
    add_step(&f, NULL, 0, dec, 4);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u;
    const SchedOpList *l = unrolled(&f, &u, 3);
    cr_assert_null(first_named(u, l, "ep_dispatch"));
    cr_assert_null(first_named(u, l, "ep_dispatch_all_gather"));
    const SchedOp *ex = first_named(u, l, "moe_experts");
    cr_assert_eq(ex->tokens, 4);
    cr_assert_eq(count_named(u, l, "tp_all_reduce", 3), 2);
    sched_program_free(u);
    teardown(&f);
}

Test(lower, dense_gqa_model_runs_tp)
{
    Fixture f;
    setup(&f, "llama-3.1-70b", par_of(8, 1, 1, 1, false, false), MODEL_BACKEND_AUTO);
    uint32_t pre[] = {2048};
    add_step(&f, pre, 1, NULL, 0);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u;
    const SchedOpList *l = unrolled(&f, &u, 0);
    cr_assert_eq(count_named(u, l, "attention", -2), 80);
    cr_assert_eq(count_named(u, l, "tp_all_reduce", -2), 2 * 80 + 1);
    cr_assert_null(first_named(u, l, "moe_gate"));
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
    sched_program_free(u);
    teardown(&f);
}

Test(lower, wrong_backend_for_the_architecture_is_an_error)
{
    Fixture f;
    setup(&f, "llama-3.1-70b", par_of(8, 1, 1, 1, false, false), MODEL_BACKEND_FLASHMLA_SPARSE);
    uint32_t pre[] = {16};
    add_step(&f, pre, 1, NULL, 0);
    ModelLowerInput in = {&f.arch, f.plan, &f.engine, f.wl, f.cost, NULL, MODEL_BREAK_NONE};
    GError *err = NULL;
    cr_assert_null(model_lower(&in, &err));
    cr_assert(strstr(err->message, "MLA"), "%s", err->message);
    g_error_free(err);
    teardown(&f);
}

/* Review regressions: DP ranks agree on the path and pad to the largest batch. */
static SchedOutcome *dp_pair(const char *model, ModelParallel par, ModelBackend be,
                             const uint32_t *a, guint na, bool a_prefill, const uint32_t *b,
                             guint nb, bool b_prefill)
{
    Fixture f;
    setup(&f, model, par, be);
    GPtrArray *per = g_ptr_array_new();
    ModelBatch *x = model_batch_new(), *y = model_batch_new();
    g_array_append_vals(a_prefill ? x->prefill : x->decode, a, na);
    g_array_append_vals(b_prefill ? y->prefill : y->decode, b, nb);
    g_ptr_array_add(per, x);
    g_ptr_array_add(per, y);
    model_workload_add_step(f.wl, per);
    lower(&f, MODEL_BREAK_NONE);
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    teardown(&f);
    return o;
}

Test(regress, dsa_cp_with_dp_and_uneven_batches_is_healthy)
{
    uint32_t a[] = {1000}, b[] = {200};
    SchedOutcome *o = dp_pair("glm-5", par_of(8, 2, 1, 1, true, true), MODEL_BACKEND_AUTO, a, 1,
                              true, b, 1, true);
    cr_assert_not(o->failed, "%s",
                  o->diags->len ? ((SchedDiag *)g_ptr_array_index(o->diags, 0))->message : "");
    sched_outcome_free(o);
}

Test(regress, prefill_and_decode_dp_ranks_take_one_path)
{
    uint32_t a[] = {1000}, b[] = {200};
    SchedOutcome *o = dp_pair("glm-5", par_of(8, 2, 1, 1, true, true), MODEL_BACKEND_AUTO, a, 1,
                              true, b, 1, false);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
    uint32_t c[] = {2048, 2048, 2048}, d[] = {9};
    o = dp_pair("glm-5", par_of(4, 2, 1, 1, true, false), MODEL_BACKEND_ASCEND, c, 3, false, d, 1,
                true);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
    uint32_t e[] = {1000}, g[] = {2048};
    o = dp_pair("qwen3-235b-a22b", par_of(4, 2, 1, 1, true, true), MODEL_BACKEND_AUTO, e, 1, true,
                g, 1, false);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
}

/* What DP ranks agree on is a property of the step (lowering keeps it per step, not per rank:
 * issue 29): over two steps whose largest DP batch sits on different DP ranks, every rank's
 * MoE runs the largest batch of its own step, and a step where only one DP rank prefills is a
 * prefill step on the other too (sequence parallelism, which only prefills use, shows it). */
Test(regress, dp_ranks_agree_per_step_not_per_rank)
{
    Fixture f;
    setup(&f, "qwen3-235b-a22b", par_of(4, 2, 1, 1, true, true), MODEL_BACKEND_AUTO);
    uint32_t big = 1000, small = 200, ctx = 300;
    for (int s = 0; s < 2; s++) {
        GPtrArray *per = g_ptr_array_new();
        ModelBatch *x = model_batch_new(), *y = model_batch_new();
        uint32_t first = s == 0 ? big : small;
        g_array_append_val(x->prefill, first);
        if (s == 0)
            g_array_append_val(y->prefill, small);
        else
            g_array_append_val(y->decode, ctx);
        g_ptr_array_add(per, x);
        g_ptr_array_add(per, y);
        model_workload_add_step(f.wl, per);
    }
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u = NULL;
    for (uint32_t rank = 0; rank < 8; rank += 4) {
        const SchedOpList *l = unrolled(&f, &u, rank);
        uint64_t gates[2] = {0, 0};
        guint n = 0, gathers = 0;
        for (uint32_t i = 0; i < l->len; i++) {
            if (strcmp(nm(u, &l->ops[i]), "embed") == 0)
                n++;
            if (n >= 1 && n <= 2 && strcmp(nm(u, &l->ops[i]), "moe_gate") == 0 && !gates[n - 1])
                gates[n - 1] = l->ops[i].tokens;
            if (n == 2 && strcmp(nm(u, &l->ops[i]), "sp_all_gather") == 0)
                gathers++;
        }
        cr_assert_eq(n, 2, "rank %u: %u steps", rank, n);
        /* the gate runs the gathered rows (EP on CUDA: all-gather before the MoE), padded
         * to the largest DP batch of the step: 1000 in step 0 on both DP ranks, 200 in step 1
         * (the decode brings one row) */
        cr_assert_eq(gates[0], 1000, "rank %u step 0: %" G_GUINT64_FORMAT, rank, gates[0]);
        cr_assert_eq(gates[1], 200, "rank %u step 1: %" G_GUINT64_FORMAT, rank, gates[1]);
        cr_assert_gt(gathers, 0, "rank %u: step 1 not lowered as a prefill step", rank);
        sched_program_free(u);
    }
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
    teardown(&f);
}

/* ---- MoE without expert parallelism across DP or PCP ---- */

/* Without EP the experts are sharded over DP x PCP x TP, so vLLM gathers every token of the DP
 * group (or, with DP 1, the PCP group) before the experts and reduce-scatters after them; with
 * EP the dispatch is the all-to-all over the EP group. Qwen3-30B-A3B, DP2 x TP2: over the DP
 * group; DeepSeek-V2-Lite PCP2: over the PCP group. */
Test(moe_dispatch, without_ep_gathers_over_dp_or_pcp)
{
    static const struct {
        const char *model;
        uint32_t tp, dp, pcp;
        bool ep;
        const char *group; /* the dispatch's group name prefix */
    } cases[] = {
        {"qwen3-30b-a3b", 2, 2, 1, false, "dp"},
        {"deepseek-v2-lite", 1, 1, 2, false, "pcp"},
        /* EP with TP 2 x DP 2: sequence-parallel MoE (use_sequence_parallel_moe under vLLM's
         * default allgather_reducescatter): each TP rank gathers its chunk over the EP group */
        {"qwen3-30b-a3b", 2, 2, 1, true, "ep"},
        /* EP with TP 1 x DP 2: the gather is over DP, every token of the rank */
        {"qwen3-30b-a3b", 1, 2, 1, true, "dp"},
    };
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
        Fixture f;
        setup(&f, cases[k].model,
              par_of(cases[k].tp, cases[k].dp, cases[k].pcp, 1, cases[k].ep, false),
              MODEL_BACKEND_AUTO);
        uint32_t prompt = 256;
        add_step(&f, &prompt, 1, NULL, 0);
        lower(&f, (ModelBreak){0});
        SchedProgram *u = NULL;
        const SchedOpList *l = unrolled(&f, &u, 0);
        bool ep = cases[k].ep;
        const SchedOp *ag =
            first_named(u, l, ep ? "ep_dispatch_all_gather" : "moe_dispatch_all_gather");
        const SchedOp *rs =
            first_named(u, l, ep ? "ep_combine_reduce_scatter" : "moe_combine_reduce_scatter");
        const SchedOp *a2a = first_named(u, l, "ep_dispatch");
        /* DP ranks of an MoE model agree on the step's batch first (coordinate_batch_across_dp) */
        cr_assert_eq(count_named(u, l, "dp_batch_all_reduce", -2), cases[k].dp > 1 ? 1u : 0u,
                     "case %zu", k);
        if (!cases[k].group) {
            cr_assert_null(ag, "case %zu", k);
            cr_assert_not_null(a2a, "case %zu", k);
        } else {
            cr_assert_not_null(ag, "case %zu", k);
            cr_assert_not_null(rs, "case %zu", k);
            cr_assert_null(a2a, "case %zu", k);
            const char *g = sched_program_group(u, ag->group)->name;
            cr_assert(g_str_has_prefix(g, cases[k].group), "case %zu: group %s", k, g);
            /* the experts run every gathered token: the group's */
            const SchedOp *ex = first_named(u, l, "moe_experts");
            uint32_t n = sched_program_group(u, ag->group)->n;
            cr_assert_eq(ex->tokens, ag->tokens * n, "case %zu", k);
            /* each brings its rows of the 256 tokens: its PCP share; sequence-parallel, its
             * TP rank's chunk of them */
            cr_assert_eq(ag->tokens,
                         256u / cases[k].pcp / (ep && cases[k].tp > 1 ? cases[k].tp : 1),
                         "case %zu", k);
            cr_assert_eq((first_named(u, l, "moe_sp_all_gather") != NULL), ep && cases[k].tp > 1,
                         "case %zu", k);
            cr_assert_eq(
                count_named(u, l, ep ? "ep_dispatch_all_gather" : "moe_dispatch_all_gather", -2),
                count_named(u, l, ep ? "ep_combine_reduce_scatter" : "moe_combine_reduce_scatter",
                            -2));
        }
        sched_program_free(u);
        teardown(&f);
    }
}

/* The EP all2all backend (parallel.all2all_backend, --all2all-backend): DeepEP sends each
 * token's top-k copies to their experts' ranks (an all-to-all over the EP group) on the TP
 * rank's sequence-parallel chunk; naive gathers but is not sequence-parallel in current vLLM,
 * so every TP rank gathers all its rows over DP and the output merges in the TP all-reduce. */
Test(moe_dispatch, the_all2all_backend_picks_the_collectives)
{
    for (int k = 0; k < 2; k++) {
        Fixture f;
        ModelParallel par = par_of(2, 2, 1, 1, true, false);
        par.all2all_backend = k == 0 ? MODEL_A2A_DEEPEP_HIGH_THROUGHPUT : MODEL_A2A_NAIVE;
        setup(&f, "qwen3-30b-a3b", par, MODEL_BACKEND_AUTO);
        uint32_t prompt = 256;
        add_step(&f, &prompt, 1, NULL, 0);
        lower(&f, (ModelBreak){0});
        SchedProgram *u = NULL;
        const SchedOpList *l = unrolled(&f, &u, 0);
        const SchedOp *a2a = first_named(u, l, "ep_dispatch");
        const SchedOp *ag = first_named(u, l, "ep_dispatch_all_gather");
        if (k == 0) {
            cr_assert_not_null(a2a);
            cr_assert_null(ag);
            cr_assert_eq(a2a->kind, SCHED_OP_ALL_TO_ALL);
            cr_assert_eq(sched_program_group(u, a2a->group)->n, 4);
            cr_assert_eq(a2a->count, 128ull * f.arch.num_experts_per_tok * f.arch.hidden_size);
            cr_assert_not_null(first_named(u, l, "moe_sp_all_gather"));
        } else {
            cr_assert_null(a2a);
            cr_assert_not_null(ag);
            cr_assert_eq(ag->tokens, 256);
            cr_assert(g_str_has_prefix(sched_program_group(u, ag->group)->name, "dp"));
            cr_assert_null(first_named(u, l, "moe_sp_all_gather"));
        }
        sched_program_free(u);
        teardown(&f);
    }
}

/* ---- vLLM's default model runner by architecture (PRs 52861, 53155) ---- */

static bool v2_default(const char *arch_name, NetPlatform platform, ModelVllmAbsent absent,
                       bool given)
{
    ModelArch a;
    memset(&a, 0, sizeof a);
    g_strlcpy(a.architecture, arch_name, sizeof a.architecture);
    NetHardware hw;
    memset(&hw, 0, sizeof hw);
    hw.platform = platform;
    hw.hbm_bytes = 178ull << 30;
    ModelEngine e;
    model_engine_defaults(&e);
    e.vllm_absent = absent;
    if (given) {
        e.v2_model_runner = false;
        e.given |= MODEL_ENGINE_GIVEN_V2_MODEL_RUNNER;
    }
    model_engine_apply_vllm_defaults(&e, &a, &hw);
    return e.v2_model_runner;
}

Test(engine_defaults, the_dsa_models_default_to_the_v2_runner_on_cuda)
{
    cr_assert(v2_default("GlmMoeDsaForCausalLM", NET_PLATFORM_CUDA, 0, false));
    cr_assert(v2_default("DeepseekV32ForCausalLM", NET_PLATFORM_CUDA, 0, false));
    cr_assert(v2_default("DeepseekV4ForCausalLM", NET_PLATFORM_CUDA, 0, false));
    cr_assert_not(v2_default("DeepseekV3ForCausalLM", NET_PLATFORM_CUDA, 0, false));
    cr_assert_not(v2_default("LlamaForCausalLM", NET_PLATFORM_CUDA, 0, false));
    /* VLLM_USE_V2_MODEL_RUNNER=0 or the key wins */
    cr_assert_not(v2_default("GlmMoeDsaForCausalLM", NET_PLATFORM_CUDA, 0, true));
    /* before PR 52861: the V1 runner */
    cr_assert_not(v2_default("GlmMoeDsaForCausalLM", NET_PLATFORM_CUDA,
                             1u << MODEL_VLLM_DSA_MODELS_ON_V2_RUNNER, false));
    /* ROCm: DeepSeek-V3.2 never, GLM-5.x only between PR 52861 and PR 53155 */
    cr_assert_not(v2_default("DeepseekV32ForCausalLM", NET_PLATFORM_ROCM, 0, false));
    cr_assert_not(v2_default("GlmMoeDsaForCausalLM", NET_PLATFORM_ROCM, 0, false));
    cr_assert(v2_default("GlmMoeDsaForCausalLM", NET_PLATFORM_ROCM,
                         1u << MODEL_VLLM_ROCM_GLM_DSA_ON_V1_RUNNER, false));
    cr_assert_not(v2_default("GlmMoeDsaForCausalLM", NET_PLATFORM_NPU, 0, false));
}

static double utilization_default(ModelVllmAbsent absent, double given)
{
    ModelArch a;
    memset(&a, 0, sizeof a);
    ModelEngine e;
    model_engine_defaults(&e);
    e.vllm_absent = absent;
    if (given > 0) {
        e.gpu_memory_utilization = given;
        e.given |= MODEL_ENGINE_GIVEN_GPU_MEMORY_UTILIZATION;
    }
    model_engine_apply_vllm_defaults(&e, &a, NULL);
    return e.gpu_memory_utilization;
}

/* CacheConfig.gpu_memory_utilization: 0.9 in the v0.10.2 / v0.11.1 docs, 0.92 now; a given
 * value wins either way. */
Test(engine_defaults, gpu_memory_utilization_by_release)
{
    ModelVllmAbsent before = 1u << MODEL_VLLM_GPU_MEMORY_UTILIZATION_092_DEFAULT;
    cr_assert_float_eq(utilization_default(0, 0), 0.92, 1e-12);
    cr_assert_float_eq(utilization_default(before, 0), 0.9, 1e-12);
    cr_assert_float_eq(utilization_default(before, 0.95), 0.95, 1e-12);
    cr_assert_float_eq(utilization_default(0, 0.5), 0.5, 1e-12);
}

/* DeepSeek-V4.1 (CSA2, Engram): a decode step runs the compressor on the four kv-source layers
 * only, the indexer on the eight index-source layers only (the others reuse its top-k), the
 * Engram lookup (its gather, the TP all-reduce of the sharded rows, wkv and the gate) before
 * layers 1 and 14, sparse attention on every layer; and a later index source scores fewer keys
 * than the candidate source once the context outgrows the candidate blocks. */
Test(lower, deepseek_v4_1_csa2_and_engram_ops)
{
    Fixture f;
    setup(&f, "deepseek-v4.1-flash", par_of(8, 1, 1, 1, true, false), MODEL_BACKEND_AUTO);
    f.engine.kv_cache_dtype = SCHED_DTYPE_FP8;
    uint32_t dec[] = {4096, 4096, 4096, 4096};
    add_step(&f, NULL, 0, dec, 4);
    lower(&f, MODEL_BREAK_NONE);
    SchedProgram *u;
    const SchedOpList *l = unrolled(&f, &u, 0);
    cr_assert_eq(count_named(u, l, "kv_compressor", -2), 4);
    cr_assert_eq(count_named(u, l, "kv_compressor", 20), 1);
    cr_assert_eq(count_named(u, l, "kv_compressor", 21), 0);
    cr_assert_eq(count_named(u, l, "indexer", -2), 8);
    cr_assert_eq(count_named(u, l, "indexer", 36), 1);
    cr_assert_eq(count_named(u, l, "indexer", 3), 0);
    cr_assert_eq(count_named(u, l, "sparse_attention", -2), 40);
    cr_assert_eq(count_named(u, l, "engram_gather", -2), 2);
    cr_assert_eq(count_named(u, l, "engram_gather", 14), 1);
    cr_assert_eq(count_named(u, l, "engram_all_reduce", -2), 2);
    cr_assert_eq(count_named(u, l, "engram_wkv", -2), 2);
    SchedConfig c = sched_config_default();
    SchedOutcome *o = sched_engine_run(f.p, &c);
    cr_assert_not(o->failed);
    sched_outcome_free(o);
    sched_program_free(u);
    teardown(&f);
}
