/* tests/model/test-plan.c — the parallel plan: PCP DualChunkSwap rows and DCP KV shards against
 * vLLM's formulas and a naive token-by-token oracle, every validation rule (accepted and rejected,
 * message contents), rank coordinates, and group membership for the configs users replay. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/plan.h"

/* ---- fixtures ---- */

static ModelArch mla_arch(uint32_t heads, uint32_t experts)
{
    ModelArch a;
    memset(&a, 0, sizeof a);
    g_strlcpy(a.name, "test-mla", sizeof a.name);
    a.num_heads = heads;
    a.num_kv_heads = heads;
    a.mla = true;
    a.kv_lora_rank = 512;
    a.moe = experts > 0;
    a.n_routed_experts = experts;
    return a;
}

static ModelArch gqa_arch(uint32_t heads, uint32_t kv)
{
    ModelArch a;
    memset(&a, 0, sizeof a);
    g_strlcpy(a.name, "test-gqa", sizeof a.name);
    a.num_heads = heads;
    a.num_kv_heads = kv;
    a.head_dim = 128;
    return a;
}

static ModelParallel par_of(uint32_t dp, uint32_t pcp, uint32_t tp, uint32_t dcp)
{
    ModelParallel par;
    model_parallel_defaults(&par);
    par.data_parallel_size = dp;
    par.prefill_context_parallel_size = pcp;
    par.tensor_parallel_size = tp;
    par.decode_context_parallel_size = dcp;
    return par;
}

/* Expects rejection; returns the message (caller frees). */
static char *rejected(const ModelParallel *par, const ModelArch *arch)
{
    GError *err = NULL;
    ModelPlan *plan = model_plan_new(par, arch, &err);
    cr_assert_null(plan, "config was accepted but should be rejected");
    cr_assert_not_null(err);
    cr_assert_eq(err->domain, MODEL_PLAN_ERROR);
    char *msg = g_strdup(err->message);
    g_error_free(err);
    return msg;
}

static ModelPlan *accepted(const ModelParallel *par, const ModelArch *arch)
{
    GError *err = NULL;
    ModelPlan *plan = model_plan_new(par, arch, &err);
    cr_assert_not_null(plan, "config rejected: %s", err ? err->message : "?");
    cr_assert_null(err);
    return plan;
}

#define ASSERT_HAS(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "\"%s\" not in \"%s\"", (needle), (msg))

/* ---- PCP DualChunkSwap ---- */

static void expect_rows(uint32_t len, uint32_t pcp, const uint32_t *want)
{
    for (uint32_t r = 0; r < pcp; r++)
        cr_assert_eq(model_pcp_rows(len, pcp, r), want[r], "len %u pcp %u rank %u: got %u want %u",
                     len, pcp, r, model_pcp_rows(len, pcp, r), want[r]);
}

Test(pcp_rows, seed_004_prompt_633_on_pcp4)
{
    /* vllm-cp.md: chunk 80, rank 0 gets 80 + 73, ranks 1-3 get 160. */
    expect_rows(633, 4, (uint32_t[]){153, 160, 160, 160});
}

Test(pcp_rows, even_split_4096_on_pcp4)
{
    expect_rows(4096, 4, (uint32_t[]){1024, 1024, 1024, 1024});
}

Test(pcp_rows, short_prompts_leave_ranks_empty)
{
    expect_rows(1, 2, (uint32_t[]){1, 0});
    expect_rows(1, 4, (uint32_t[]){1, 0, 0, 0});
    expect_rows(7, 2, (uint32_t[]){3, 4});       /* chunk 2: [0,1][6] | [2,3][4,5] */
    expect_rows(7, 4, (uint32_t[]){1, 2, 2, 2}); /* chunk 1, chunk 7 empty */
    expect_rows(8, 2, (uint32_t[]){4, 4});
    expect_rows(8, 4, (uint32_t[]){2, 2, 2, 2});
    expect_rows(9, 2, (uint32_t[]){3, 6});       /* chunk 3, chunk 3 empty */
    expect_rows(9, 4, (uint32_t[]){2, 2, 2, 3}); /* chunk 2, chunks 5-7 empty, chunk 4 = 1 */
    expect_rows(3, 4, (uint32_t[]){1, 1, 1, 0});
    expect_rows(0, 4, (uint32_t[]){0, 0, 0, 0});
}

Test(pcp_rows, pcp1_keeps_the_whole_prompt)
{
    for (uint32_t len = 0; len < 100; len++)
        cr_assert_eq(model_pcp_rows(len, 1, 0), len);
}

/* Oracle: walk the tokens, find each one's chunk and the rank owning that chunk. */
Test(pcp_rows, matches_token_walk_and_sums_to_len)
{
    for (uint32_t pcp = 1; pcp <= 8; pcp++) {
        uint32_t want[8];
        for (uint32_t len = 1; len <= 2000; len++) {
            uint32_t chunks = 2 * pcp, chunk = (len + chunks - 1) / chunks;
            memset(want, 0, sizeof want);
            for (uint32_t i = 0; i < len; i++) {
                uint32_t c = i / chunk;
                want[c < pcp ? c : chunks - 1 - c]++;
            }
            uint32_t sum = 0;
            for (uint32_t r = 0; r < pcp; r++) {
                uint32_t got = model_pcp_rows(len, pcp, r);
                cr_assert_eq(got, want[r], "len %u pcp %u rank %u: %u vs %u", len, pcp, r, got,
                             want[r]);
                sum += got;
            }
            cr_assert_eq(sum, len);
        }
    }
}

Test(pcp_rows, huge_lengths_do_not_overflow)
{
    uint64_t sum = 0;
    for (uint32_t r = 0; r < 8; r++)
        sum += model_pcp_rows(UINT32_MAX, 8, r);
    cr_assert_eq(sum, UINT32_MAX);
}

/* ---- DCP interleaved KV ---- */

Test(dcp_local_len, hand_computed)
{
    /* L=10, D=4, I=1: tokens 0,4,8 | 1,5,9 | 2,6 | 3,7 */
    uint32_t a[] = {3, 3, 2, 2};
    for (uint32_t r = 0; r < 4; r++)
        cr_assert_eq(model_dcp_local_len(10, 4, r, 1), a[r]);
    /* L=10, D=2, I=16: the first 16-token stripe is not full, all on rank 0. */
    cr_assert_eq(model_dcp_local_len(10, 2, 0, 16), 10);
    cr_assert_eq(model_dcp_local_len(10, 2, 1, 16), 0);
    /* L=40, D=2, I=16: 0-15 r0, 16-31 r1, 32-39 r0. */
    cr_assert_eq(model_dcp_local_len(40, 2, 0, 16), 24);
    cr_assert_eq(model_dcp_local_len(40, 2, 1, 16), 16);
    /* L=100, D=4, I=16: base 16, remainders 16, 16, 4, 0. */
    uint32_t b[] = {32, 32, 20, 16};
    for (uint32_t r = 0; r < 4; r++)
        cr_assert_eq(model_dcp_local_len(100, 4, r, 16), b[r]);
    /* DCP 1 keeps everything. */
    cr_assert_eq(model_dcp_local_len(12345, 1, 0, 1), 12345);
    cr_assert_eq(model_dcp_local_len(12345, 1, 0, 64), 12345);
}

/* Oracle: token i lives on DCP rank (i // I) % D. */
Test(dcp_local_len, matches_token_walk_and_sums_to_len)
{
    const uint32_t dcps[] = {1, 2, 3, 4, 8};
    const uint32_t ils[] = {1, 2, 16, 64};
    for (size_t di = 0; di < G_N_ELEMENTS(dcps); di++)
        for (size_t ii = 0; ii < G_N_ELEMENTS(ils); ii++) {
            uint32_t D = dcps[di], I = ils[ii];
            uint32_t want[8] = {0};
            for (uint32_t len = 0; len <= 1500; len++) {
                if (len > 0)
                    want[((len - 1) / I) % D]++;
                uint32_t sum = 0;
                for (uint32_t r = 0; r < D; r++) {
                    uint32_t got = model_dcp_local_len(len, D, r, I);
                    cr_assert_eq(got, want[r], "len %u D %u I %u r %u: %u vs %u", len, D, I, r, got,
                                 want[r]);
                    sum += got;
                }
                cr_assert_eq(sum, len);
            }
        }
}

/* ---- defaults and accepted configs ---- */

Test(plan, defaults_are_vllms)
{
    ModelParallel par;
    memset(&par, 0xff, sizeof par);
    model_parallel_defaults(&par);
    cr_assert_eq(par.tensor_parallel_size, 1);
    cr_assert_eq(par.data_parallel_size, 1);
    cr_assert_eq(par.prefill_context_parallel_size, 1);
    cr_assert_eq(par.decode_context_parallel_size, 1);
    cr_assert_not(par.enable_expert_parallel);
    cr_assert_not(par.enable_sequence_parallel);
    cr_assert_eq(par.dcp_comm_backend, MODEL_DCP_AG_RS);
    cr_assert_eq(par.cp_kv_cache_interleave_size, 1);
    ModelArch a = gqa_arch(32, 8);
    g_autoptr(ModelPlan) plan = accepted(&par, &a);
    cr_assert_eq(plan->world, 1);
    cr_assert_eq(plan->ep_size, 1);
}

Test(plan, replayed_configs_are_accepted)
{
    ModelArch glm = mla_arch(64, 256);
    /* GLM-5.2-NVFP4-TP1-PCP4-DCP4-EP */
    ModelParallel a = par_of(1, 4, 1, 4);
    a.enable_expert_parallel = true;
    g_autoptr(ModelPlan) pa = accepted(&a, &glm);
    cr_assert_eq(pa->world, 4);
    cr_assert_eq(pa->ep_size, 4);
    /* TP2-PCP2-EP */
    ModelParallel b = par_of(1, 2, 2, 1);
    b.enable_expert_parallel = true;
    g_autoptr(ModelPlan) pb = accepted(&b, &glm);
    cr_assert_eq(pb->world, 4);
    cr_assert_eq(pb->ep_size, 4);
    /* DeepSeek-V3.2-DP: DP8 + EP */
    ModelArch ds = mla_arch(128, 256);
    ModelParallel c = par_of(8, 1, 1, 1);
    c.enable_expert_parallel = true;
    g_autoptr(ModelPlan) pc = accepted(&c, &ds);
    cr_assert_eq(pc->world, 8);
    cr_assert_eq(pc->ep_size, 8);
    /* TP8 DCP8 a2a on an MLA model */
    ModelParallel d = par_of(1, 1, 8, 8);
    d.dcp_comm_backend = MODEL_DCP_A2A;
    g_autoptr(ModelPlan) pd = accepted(&d, &ds);
    cr_assert_eq(pd->world, 8);
    cr_assert_eq(pd->ep_size, 1);
    /* Qwen3-235B-A22B (64 heads, 4 KV heads) TP8 DCP2, interleave 64 */
    ModelArch qwen = gqa_arch(64, 4);
    qwen.moe = true;
    qwen.n_routed_experts = 128;
    ModelParallel e = par_of(1, 1, 8, 2);
    e.cp_kv_cache_interleave_size = 64;
    g_autoptr(ModelPlan) pe = accepted(&e, &qwen);
    cr_assert_eq(pe->world, 8);
}

Test(plan, ep_needs_experts_unless_the_model_is_unknown)
{
    ModelParallel par = par_of(2, 1, 4, 1);
    par.enable_expert_parallel = true;
    /* vLLM builds the EP group when no model config is known. */
    g_autoptr(ModelPlan) p = accepted(&par, NULL);
    cr_assert_eq(p->ep_size, 8);
    ModelArch moe = mla_arch(64, 256);
    g_autoptr(ModelPlan) q = accepted(&par, &moe);
    cr_assert_eq(q->ep_size, 8);
    /* EP off: experts are TP-sharded, EP size 1, even for MoE. */
    par.enable_expert_parallel = false;
    g_autoptr(ModelPlan) r = accepted(&par, &moe);
    cr_assert_eq(r->ep_size, 1);
    /* Dense model with EP: ModelConfig._verify_with_expert_parallelism refuses it. */
    par.enable_expert_parallel = true;
    ModelArch dense = gqa_arch(64, 8);
    g_autofree char *msg = rejected(&par, &dense);
    ASSERT_HAS(msg, "parallel.enable_expert_parallel: ");
    ASSERT_HAS(msg, "Number of experts in the model must be greater than 0 when expert "
                    "parallelism is enabled.");
}

Test(plan, sequence_parallel_is_allowed_at_tp1)
{
    /* Upstream vLLM treats SP at TP=1 as a no-op (vLLM-Ascend refuses it; see the doc). */
    ModelArch a = mla_arch(64, 0);
    ModelParallel par = par_of(1, 1, 1, 1);
    par.enable_sequence_parallel = true;
    g_autoptr(ModelPlan) p = accepted(&par, &a);
    cr_assert_eq(p->world, 1);
}

/* ---- rejected configs, one per rule ---- */

Test(validate, sizes_must_be_in_range)
{
    ModelArch a = mla_arch(64, 0);
    struct {
        uint32_t dp, pcp, tp, dcp;
        const char *key;
    } cases[] = {
        {1, 1, 0, 1, "parallel.tensor_parallel_size: must be between 1 and 65536, got 0."},
        {0, 1, 1, 1, "parallel.data_parallel_size: must be between 1 and 65536, got 0."},
        {1, 0, 1, 1, "parallel.prefill_context_parallel_size: must be between 1 and 65536, got 0."},
        {1, 1, 1, 0, "parallel.decode_context_parallel_size: must be between 1 and 65536, got 0."},
        {1, 1, 65537, 1, "parallel.tensor_parallel_size: must be between 1 and 65536, got 65537."},
        {70000, 1, 1, 1, "parallel.data_parallel_size: must be between 1 and 65536, got 70000."},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ModelParallel par = par_of(cases[i].dp, cases[i].pcp, cases[i].tp, cases[i].dcp);
        g_autofree char *msg = rejected(&par, &a);
        cr_assert_str_eq(msg, cases[i].key);
    }
    /* The bounds themselves are fine. */
    ModelParallel ok = par_of(65536, 1, 1, 1);
    g_autoptr(ModelPlan) p = accepted(&ok, NULL);
    cr_assert_eq(p->world, 65536);
}

Test(validate, world_is_bounded)
{
    ModelParallel par = par_of(1024, 1, 2048, 1);
    g_autofree char *msg = rejected(&par, NULL);
    ASSERT_HAS(msg, "parallel: world size");
    ASSERT_HAS(msg, "1024 x 1 x 1 x 2048 = 2097152");
    ASSERT_HAS(msg, "1048576");
    ModelParallel ok = par_of(512, 1, 2048, 1);
    g_autoptr(ModelPlan) p = accepted(&ok, NULL);
    cr_assert_eq(p->world, 1048576);
}

Test(validate, interleave_and_backend)
{
    ModelParallel par = par_of(1, 1, 1, 1);
    par.cp_kv_cache_interleave_size = 0;
    g_autofree char *m1 = rejected(&par, NULL);
    cr_assert_str_eq(m1, "parallel.cp_kv_cache_interleave_size: must be >= 1, got 0.");
    par.cp_kv_cache_interleave_size = 1;
    par.dcp_comm_backend = (ModelDcpBackend)7;
    g_autofree char *m2 = rejected(&par, NULL);
    ASSERT_HAS(m2, "parallel.dcp_comm_backend: unknown backend 7");
}

Test(validate, pcp_with_dp)
{
    ModelArch a = mla_arch(64, 0);
    ModelParallel par = par_of(2, 2, 1, 1);
    g_autofree char *msg = rejected(&par, &a);
    ASSERT_HAS(msg, "parallel.prefill_context_parallel_size: PCP does not support data "
                    "parallelism yet.");
    ModelParallel ok = par_of(1, 2, 1, 1);
    g_autoptr(ModelPlan) p = accepted(&ok, &a);
    cr_assert_eq(p->world, 2);
}

Test(validate, tp_divisible_by_dcp_without_pcp)
{
    ModelArch a = mla_arch(64, 0);
    ModelParallel par = par_of(1, 1, 2, 4);
    g_autofree char *msg = rejected(&par, &a);
    cr_assert_str_eq(msg, "parallel.decode_context_parallel_size: tp_size=2 must be divisible by "
                          "dcp_size=4.");
    ModelParallel p6 = par_of(1, 1, 6, 4);
    ModelArch a48 = mla_arch(48, 0);
    g_autofree char *m6 = rejected(&p6, &a48);
    ASSERT_HAS(m6, "tp_size=6 must be divisible by dcp_size=4.");
    for (uint32_t dcp = 1; dcp <= 8; dcp *= 2) {
        ModelParallel ok = par_of(1, 1, 8, dcp);
        g_autoptr(ModelPlan) p = accepted(&ok, &a);
        cr_assert_eq(p->world, 8);
    }
}

Test(validate, dcp_sizes_with_pcp)
{
    ModelArch a = mla_arch(64, 0);
    ModelParallel par = par_of(1, 2, 2, 3);
    g_autofree char *msg = rejected(&par, &a);
    cr_assert_str_eq(msg, "parallel.decode_context_parallel_size: When PCP is enabled, DCP must be "
                          "disabled, span the PCP axis, or span the full TP x PCP axis. Got TP=2, "
                          "PCP=2, DCP=3; valid DCP sizes are [1, 2, 4].");
    /* TP = 1: {1, PCP, TP x PCP} has two entries. */
    ModelParallel t1 = par_of(1, 4, 1, 2);
    g_autofree char *m1 = rejected(&t1, &a);
    ASSERT_HAS(m1, "Got TP=1, PCP=4, DCP=2; valid DCP sizes are [1, 4].");
    /* DCP = TP alone is not valid with PCP (it was before DCP learned to span PCP). */
    ModelParallel t4 = par_of(1, 2, 4, 4);
    g_autofree char *m4 = rejected(&t4, &a);
    ASSERT_HAS(m4, "valid DCP sizes are [1, 2, 8].");
    const uint32_t good[] = {1, 2, 4};
    for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
        ModelParallel ok = par_of(1, 2, 2, good[i]);
        g_autoptr(ModelPlan) p = accepted(&ok, &a);
        cr_assert_eq(p->world, 4);
    }
}

Test(validate, a2a_needs_dcp)
{
    ModelArch a = mla_arch(64, 0);
    ModelParallel par = par_of(1, 1, 8, 1);
    par.dcp_comm_backend = MODEL_DCP_A2A;
    g_autofree char *msg = rejected(&par, &a);
    cr_assert_str_eq(msg, "parallel.dcp_comm_backend: dcp_comm_backend='a2a' requires "
                          "decode_context_parallel_size > 1.");
    par.decode_context_parallel_size = 2;
    g_autoptr(ModelPlan) p = accepted(&par, &a);
    cr_assert_eq(p->par.dcp_comm_backend, MODEL_DCP_A2A);
}

Test(validate, a2a_needs_gathered_heads_divisible_by_dcp)
{
    /* Without PCP, H = heads/TP x DCP is always divisible. */
    ModelArch a16 = mla_arch(16, 0);
    ModelParallel np = par_of(1, 1, 16, 8);
    np.dcp_comm_backend = MODEL_DCP_A2A;
    g_autoptr(ModelPlan) p0 = accepted(&np, &a16);
    /* With PCP and DCP = PCP there is no query gather: H = heads/TP = 1 on 2 ranks. */
    ModelArch a2 = mla_arch(2, 0);
    ModelParallel par = par_of(1, 2, 2, 2);
    par.dcp_comm_backend = MODEL_DCP_A2A;
    g_autofree char *msg = rejected(&par, &a2);
    ASSERT_HAS(msg, "parallel.dcp_comm_backend: H=1 must be divisible by DCP world size 2.");
    /* ... and with ag_rs the same shapes are fine. */
    par.dcp_comm_backend = MODEL_DCP_AG_RS;
    g_autoptr(ModelPlan) p1 = accepted(&par, &a2);
    /* DCP = TP x PCP gathers over TP: H = heads = 8 on 4 ranks. */
    ModelArch a8 = mla_arch(8, 0);
    ModelParallel full = par_of(1, 2, 2, 4);
    full.dcp_comm_backend = MODEL_DCP_A2A;
    g_autoptr(ModelPlan) p2 = accepted(&full, &a8);
    /* DCP = TP x PCP with 6 heads: H = 6 on 4 ranks. */
    ModelArch a6 = mla_arch(6, 0);
    g_autofree char *m6 = rejected(&full, &a6);
    ASSERT_HAS(m6, "H=6 must be divisible by DCP world size 4.");
}

Test(validate, heads_divisible_by_tp)
{
    ModelArch a = mla_arch(64, 0);
    ModelParallel par = par_of(1, 1, 3, 1);
    g_autofree char *msg = rejected(&par, &a);
    cr_assert_str_eq(msg, "parallel.tensor_parallel_size: Total number of attention heads (64) "
                          "must be divisible by tensor parallel size (3).");
    ModelArch g = gqa_arch(32, 8);
    g_autofree char *mg = rejected(&par, &g);
    ASSERT_HAS(mg, "Total number of attention heads (32) must be divisible by tensor parallel "
                   "size (3).");
}

Test(validate, gqa_kv_heads_split_or_replicated)
{
    ModelArch g = gqa_arch(64, 8);
    /* TP < KV: split; TP = KV; TP > KV: replicated. */
    const uint32_t ok_tp[] = {1, 2, 4, 8, 16, 32, 64};
    for (size_t i = 0; i < G_N_ELEMENTS(ok_tp); i++) {
        ModelParallel par = par_of(1, 1, ok_tp[i], 1);
        g_autoptr(ModelPlan) p = accepted(&par, &g);
        cr_assert_eq(p->world, ok_tp[i]);
    }
    /* 6 KV heads, 48 heads: TP 4 cannot split 6, TP 8 cannot replicate 6. */
    ModelArch six = gqa_arch(48, 6);
    ModelParallel t4 = par_of(1, 1, 4, 1);
    g_autofree char *m4 = rejected(&t4, &six);
    ASSERT_HAS(m4, "parallel.tensor_parallel_size: 6 is not divisible by 4");
    ModelParallel t8 = par_of(1, 1, 8, 1);
    g_autofree char *m8 = rejected(&t8, &six);
    ASSERT_HAS(m8, "parallel.tensor_parallel_size: 8 is not divisible by 6");
    ModelParallel t6 = par_of(1, 1, 6, 1);
    g_autoptr(ModelPlan) p6 = accepted(&t6, &six);
    cr_assert_eq(p6->world, 6);
}

Test(validate, gqa_dcp_rules)
{
    /* Llama-3.1-70B: 64 heads, 8 KV heads. TP 8 has no replication to remove. */
    ModelArch llama = gqa_arch(64, 8);
    ModelParallel par = par_of(1, 1, 8, 2);
    g_autofree char *m1 = rejected(&par, &llama);
    cr_assert_str_eq(m1, "parallel.decode_context_parallel_size: Decode context parallelism for "
                         "GQA/MQA requires --tensor-parallel-size (8) to be greater than the "
                         "model's total number of KV heads (8).");
    /* Qwen3-235B: 4 KV heads, TP 8: DCP up to 8 / 4 = 2. */
    ModelArch qwen = gqa_arch(64, 4);
    ModelParallel q4 = par_of(1, 1, 8, 4);
    g_autofree char *m2 = rejected(&q4, &qwen);
    cr_assert_str_eq(m2, "parallel.decode_context_parallel_size: --decode-context-parallel-size "
                         "(4) exceeds the maximum supported value (2) for --tensor-parallel-size "
                         "(8) and 4 model KV heads.");
    ModelParallel q2 = par_of(1, 1, 8, 2);
    g_autoptr(ModelPlan) p2 = accepted(&q2, &qwen);
    cr_assert_eq(p2->world, 8);
    /* 24 heads over 8 KV heads = 3 query heads per KV head, TP 24, DCP 2. */
    ModelArch odd = gqa_arch(24, 8);
    ModelParallel o2 = par_of(1, 1, 24, 2);
    g_autofree char *m3 = rejected(&o2, &odd);
    cr_assert_str_eq(m3, "parallel.decode_context_parallel_size: The model's number of query "
                         "heads per KV head (3) must be divisible by "
                         "--decode-context-parallel-size (2) for GQA/MQA.");
    ModelParallel o3 = par_of(1, 1, 24, 3);
    g_autoptr(ModelPlan) p3 = accepted(&o3, &odd);
    cr_assert_eq(p3->world, 24);
    /* MLA: none of the GQA limits apply (TP 8 DCP 8 on one latent head). */
    ModelArch mla = mla_arch(128, 0);
    ModelParallel m8 = par_of(1, 1, 8, 8);
    g_autoptr(ModelPlan) p4 = accepted(&m8, &mla);
    cr_assert_eq(p4->world, 8);
}

/* ---- coordinates and groups ---- */

/* Checks, for one kind, that every rank is in exactly one group of that kind, that the plan's
 * id array points at it, and that no group of that kind is empty. Returns the group count. */
static uint32_t check_partition(const ModelPlan *plan, const SchedProgram *p, const char *kind,
                                const int32_t *ids)
{
    size_t klen = strlen(kind);
    g_autofree uint32_t *seen = g_new0(uint32_t, plan->world);
    uint32_t groups = 0;
    for (guint gi = 0; gi < p->groups->len; gi++) {
        const SchedGroup *g = sched_program_group(p, (int32_t)gi);
        if (strncmp(g->name, kind, klen) != 0 || !g_ascii_isdigit(g->name[klen]))
            continue;
        groups++;
        cr_assert_gt(g->n, 0);
        for (uint32_t i = 0; i < g->n; i++) {
            seen[g->ranks[i]]++;
            cr_assert_eq(ids[g->ranks[i]], (int32_t)gi, "%s: rank %d id %d, group %u", kind,
                         g->ranks[i], ids[g->ranks[i]], gi);
        }
    }
    for (uint32_t r = 0; r < plan->world; r++)
        cr_assert_eq(seen[r], 1, "%s: rank %u is in %u groups", kind, r, seen[r]);
    return groups;
}

static void check_group(const SchedProgram *p, const char *name, const int32_t *want, uint32_t n)
{
    int32_t gi = sched_program_find_group(p, name);
    cr_assert_geq(gi, 0, "no group %s", name);
    const SchedGroup *g = sched_program_group(p, gi);
    cr_assert_eq(g->n, n, "%s: %u members, want %u", name, g->n, n);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(g->ranks[i], want[i], "%s[%u] = %d, want %d", name, i, g->ranks[i], want[i]);
}

/* Every invariant that holds for any valid plan: partitions, coordinates vs positions, and
 * which coordinates members of a group share. */
static void check_invariants(const ModelPlan *plan, const SchedProgram *p)
{
    const ModelParallel *par = &plan->par;
    uint32_t T = par->tensor_parallel_size, P = par->prefill_context_parallel_size;
    uint32_t D = par->data_parallel_size, C = par->decode_context_parallel_size;
    cr_assert_eq(plan->world, D * P * T);
    cr_assert_eq(check_partition(plan, p, "tp", plan->tp_group), D * P);
    cr_assert_eq(check_partition(plan, p, "pcp", plan->pcp_group), D * T);
    cr_assert_eq(check_partition(plan, p, "dcp", plan->dcp_group), plan->world / C);
    cr_assert_eq(check_partition(plan, p, "dp", plan->dp_group), P * T);
    if (plan->ep_size > 1 || (plan->moe && plan->world > 1)) {
        /* vLLM builds the EP group for every MoE model; EP on or off only decides what is
         * dispatched over it */
        cr_assert_eq(check_partition(plan, p, "ep", plan->ep_group), 1);
        cr_assert(plan->ep_size == plan->world || plan->ep_size == 1);
    } else {
        for (uint32_t r = 0; r < plan->world; r++)
            cr_assert_eq(plan->ep_group[r], -1);
        cr_assert_eq(sched_program_find_group(p, "ep0"), -1);
    }
    for (uint32_t r = 0; r < plan->world; r++) {
        const ModelCoord *c = &plan->coord[r];
        cr_assert_eq(r, (c->dp * P + c->pcp) * T + c->tp);
        const SchedGroup *tg = sched_program_group(p, plan->tp_group[r]);
        const SchedGroup *pg = sched_program_group(p, plan->pcp_group[r]);
        const SchedGroup *dg = sched_program_group(p, plan->dcp_group[r]);
        const SchedGroup *xg = sched_program_group(p, plan->dp_group[r]);
        cr_assert_eq(tg->n, T);
        cr_assert_eq(pg->n, P);
        cr_assert_eq(dg->n, C);
        cr_assert_eq(xg->n, D);
        cr_assert_eq(sched_group_index_of(tg, (int32_t)r), (int32_t)c->tp);
        cr_assert_eq(sched_group_index_of(pg, (int32_t)r), (int32_t)c->pcp);
        cr_assert_eq(sched_group_index_of(dg, (int32_t)r), (int32_t)c->dcp);
        cr_assert_eq(sched_group_index_of(xg, (int32_t)r), (int32_t)c->dp);
        for (uint32_t i = 0; i < dg->n; i++) {
            const ModelCoord *o = &plan->coord[dg->ranks[i]];
            cr_assert_eq(o->dp, c->dp, "DCP groups never cross DP");
            if (P == 1) /* DCP splits the TP group into consecutive blocks */
                cr_assert_eq(o->tp / C, c->tp / C);
            else if (C == P) /* DCP spans the PCP axis */
                cr_assert_eq(o->tp, c->tp);
        }
        for (uint32_t i = 0; i < pg->n; i++) {
            const ModelCoord *o = &plan->coord[pg->ranks[i]];
            cr_assert(o->dp == c->dp && o->tp == c->tp);
        }
        for (uint32_t i = 0; i < xg->n; i++) {
            const ModelCoord *o = &plan->coord[xg->ranks[i]];
            cr_assert(o->pcp == c->pcp && o->tp == c->tp);
        }
    }
}

static ModelPlan *build(const ModelParallel *par, const ModelArch *arch, SchedProgram **out)
{
    ModelPlan *plan = accepted(par, arch);
    for (uint32_t r = 0; r < plan->world; r++) {
        cr_assert_eq(plan->tp_group[r], -1);
        cr_assert_eq(plan->ep_group[r], -1);
    }
    *out = sched_program_new(plan->world);
    model_plan_add_groups(plan, *out);
    check_invariants(plan, *out);
    return plan;
}

Test(groups, tp2_pcp2_dcp2)
{
    ModelArch a = mla_arch(64, 256);
    ModelParallel par = par_of(1, 2, 2, 2);
    g_autoptr(SchedProgram) p = NULL;
    g_autoptr(ModelPlan) plan = build(&par, &a, &p);
    check_group(p, "tp0", (int32_t[]){0, 1}, 2);
    check_group(p, "tp1", (int32_t[]){2, 3}, 2);
    check_group(p, "pcp0", (int32_t[]){0, 2}, 2);
    check_group(p, "pcp1", (int32_t[]){1, 3}, 2);
    /* DCP = PCP spans the PCP axis: the same ranks as the PCP groups. */
    check_group(p, "dcp0", (int32_t[]){0, 2}, 2);
    check_group(p, "dcp1", (int32_t[]){1, 3}, 2);
    check_group(p, "dp0", (int32_t[]){0}, 1);
    check_group(p, "dp1", (int32_t[]){2}, 1);
    check_group(p, "dp2", (int32_t[]){1}, 1);
    check_group(p, "dp3", (int32_t[]){3}, 1);
    cr_assert_eq(plan->coord[2].pcp, 1);
    cr_assert_eq(plan->coord[2].tp, 0);
    cr_assert_eq(plan->coord[2].dcp, 1);
    cr_assert_eq(plan->coord[1].dcp, 0);
}

Test(groups, tp2_pcp2_dcp4_spans_the_block_pcp_first)
{
    ModelArch a = mla_arch(64, 0);
    ModelParallel par = par_of(1, 2, 2, 4);
    g_autoptr(SchedProgram) p = NULL;
    g_autoptr(ModelPlan) plan = build(&par, &a, &p);
    /* transpose(-1, -2): (tp0,pcp0) (tp0,pcp1) (tp1,pcp0) (tp1,pcp1) */
    check_group(p, "dcp0", (int32_t[]){0, 2, 1, 3}, 4);
    const uint32_t want_dcp[] = {0, 2, 1, 3};
    for (uint32_t r = 0; r < 4; r++)
        cr_assert_eq(plan->coord[r].dcp, want_dcp[r]);
}

Test(groups, tp1_pcp4_dcp4_ep)
{
    ModelArch a = mla_arch(64, 256);
    ModelParallel par = par_of(1, 4, 1, 4);
    par.enable_expert_parallel = true;
    g_autoptr(SchedProgram) p = NULL;
    g_autoptr(ModelPlan) plan = build(&par, &a, &p);
    for (uint32_t k = 0; k < 4; k++) {
        char name[8];
        g_snprintf(name, sizeof name, "tp%u", k);
        check_group(p, name, (int32_t[]){(int32_t)k}, 1);
        g_snprintf(name, sizeof name, "dp%u", k);
        check_group(p, name, (int32_t[]){(int32_t)k}, 1);
        cr_assert_eq(plan->coord[k].pcp, k);
        cr_assert_eq(plan->coord[k].dcp, k);
    }
    check_group(p, "pcp0", (int32_t[]){0, 1, 2, 3}, 4);
    check_group(p, "dcp0", (int32_t[]){0, 1, 2, 3}, 4);
    check_group(p, "ep0", (int32_t[]){0, 1, 2, 3}, 4);
    cr_assert_eq(plan->ep_size, 4);
}

Test(groups, tp8_dcp4_without_pcp)
{
    ModelArch a = mla_arch(128, 0);
    ModelParallel par = par_of(1, 1, 8, 4);
    g_autoptr(SchedProgram) p = NULL;
    g_autoptr(ModelPlan) plan = build(&par, &a, &p);
    check_group(p, "tp0", (int32_t[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
    check_group(p, "dcp0", (int32_t[]){0, 1, 2, 3}, 4);
    check_group(p, "dcp1", (int32_t[]){4, 5, 6, 7}, 4);
    for (uint32_t r = 0; r < 8; r++) {
        char name[8];
        g_snprintf(name, sizeof name, "pcp%u", r);
        check_group(p, name, (int32_t[]){(int32_t)r}, 1);
        cr_assert_eq(plan->coord[r].dcp, r % 4);
        cr_assert_eq(plan->coord[r].tp, r);
    }
    cr_assert_eq(plan->ep_size, 1);
    cr_assert_eq(sched_program_find_group(p, "ep0"), -1);
}

Test(groups, dp8_tp4_ep)
{
    ModelArch a = mla_arch(128, 256);
    ModelParallel par = par_of(8, 1, 4, 1);
    par.enable_expert_parallel = true;
    g_autoptr(SchedProgram) p = NULL;
    g_autoptr(ModelPlan) plan = build(&par, &a, &p);
    cr_assert_eq(plan->world, 32);
    cr_assert_eq(plan->ep_size, 32);
    for (uint32_t k = 0; k < 8; k++) {
        char name[8];
        g_snprintf(name, sizeof name, "tp%u", k);
        int32_t want[4];
        for (uint32_t t = 0; t < 4; t++)
            want[t] = (int32_t)(4 * k + t);
        check_group(p, name, want, 4);
    }
    for (uint32_t t = 0; t < 4; t++) {
        char name[8];
        g_snprintf(name, sizeof name, "dp%u", t);
        int32_t want[8];
        for (uint32_t d = 0; d < 8; d++)
            want[d] = (int32_t)(4 * d + t);
        check_group(p, name, want, 8);
    }
    int32_t all[32];
    for (uint32_t r = 0; r < 32; r++) {
        all[r] = (int32_t)r;
        cr_assert_eq(plan->coord[r].dp, r / 4);
        cr_assert_eq(plan->coord[r].tp, r % 4);
        cr_assert_eq(plan->coord[r].dcp, 0);
    }
    check_group(p, "ep0", all, 32);
}

Test(groups, invariants_hold_for_every_small_config)
{
    const uint32_t sizes[] = {1, 2, 4, 8};
    for (size_t ti = 0; ti < G_N_ELEMENTS(sizes); ti++)
        for (size_t pi = 0; pi < G_N_ELEMENTS(sizes); pi++)
            for (size_t di = 0; di < 3; di++)
                for (uint32_t dcp = 1; dcp <= 64; dcp *= 2)
                    for (int ep = 0; ep < 2; ep++) {
                        uint32_t tp = sizes[ti], pcp = sizes[pi], dp = sizes[di];
                        ModelParallel par = par_of(dp, pcp, tp, dcp);
                        par.enable_expert_parallel = ep;
                        ModelArch a = mla_arch(64, 64);
                        GError *err = NULL;
                        g_autoptr(ModelPlan) plan = model_plan_new(&par, &a, &err);
                        bool valid = !(pcp > 1 && dp > 1) &&
                                     (pcp == 1 ? tp % dcp == 0
                                               : (dcp == 1 || dcp == pcp || dcp == tp * pcp));
                        cr_assert_eq(plan != NULL, valid, "dp %u pcp %u tp %u dcp %u: %s", dp, pcp,
                                     tp, dcp, err ? err->message : "accepted");
                        g_clear_error(&err);
                        if (!plan)
                            continue;
                        g_autoptr(SchedProgram) p = sched_program_new(plan->world);
                        model_plan_add_groups(plan, p);
                        check_invariants(plan, p);
                        cr_assert_eq(plan->ep_size, ep && plan->world > 1 ? plan->world : 1);
                    }
}

/* vLLM builds the `ep` group for every MoE model, expert parallelism on or off
 * (initialize_model_parallel), and none for a dense model. */
Test(groups, the_ep_group_exists_for_every_moe_model)
{
    static const struct {
        const char *preset;
        bool ep, want;
    } cases[] = {
        {"qwen3-30b-a3b", false, true}, {"qwen3-30b-a3b", true, true}, {"qwen3-8b", false, false}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ModelArch a;
        GError *err = NULL;
        cr_assert(model_arch_load_preset(cases[i].preset, &a, &err), "%s", err ? err->message : "");
        ModelParallel par = par_of(1, 1, 2, 1);
        par.enable_expert_parallel = cases[i].ep;
        g_autoptr(ModelPlan) plan = accepted(&par, &a);
        g_autoptr(SchedProgram) p = sched_program_new(plan->world);
        model_plan_add_groups(plan, p);
        int32_t g = sched_program_find_group(p, "ep0");
        cr_assert_eq(g >= 0, cases[i].want, "case %zu", i);
        if (g >= 0)
            cr_assert_eq(sched_program_group(p, g)->n, 2);
        cr_assert_eq(plan->ep_size, cases[i].ep ? 2u : 1u, "case %zu", i);
    }
}

/* vLLM's CudaCommunicator gives the TP group (only) its custom all-reduce for 2, 4, 6 or 8
 * ranks, unless --disable-custom-all-reduce: the group asks the fabric for NET_IMPL_CUSTOM. */
Test(groups, tp_group_asks_for_vllms_custom_all_reduce)
{
    const struct {
        uint32_t dp, tp;
        bool disable;
        NetCommImpl want;
    } cases[] = {{2, 4, false, NET_IMPL_CUSTOM}, {1, 8, false, NET_IMPL_CUSTOM},
                 {1, 2, false, NET_IMPL_CUSTOM}, {1, 4, true, NET_IMPL_NCCL},
                 {1, 16, false, NET_IMPL_NCCL},  {4, 1, false, NET_IMPL_NCCL}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ModelArch a;
        GError *err = NULL;
        cr_assert(model_arch_load_preset("qwen3-8b", &a, &err), "%s", err ? err->message : "");
        ModelParallel par = par_of(cases[i].dp, 1, cases[i].tp, 1);
        par.disable_custom_all_reduce = cases[i].disable;
        g_autoptr(ModelPlan) plan = accepted(&par, &a);
        g_autoptr(SchedProgram) p = sched_program_new(plan->world);
        model_plan_add_groups(plan, p);
        for (uint32_t g = 0; g < p->groups->len; g++) {
            const SchedGroup *sg = sched_program_group(p, (int32_t)g);
            bool tp = g_str_has_prefix(sg->name, "tp");
            cr_assert_eq(sg->impl, tp ? cases[i].want : NET_IMPL_NCCL, "case %zu group %s", i,
                         sg->name);
        }
    }
}
