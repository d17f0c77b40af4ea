/* tests/model/test-plan-grid.c — ranksim's accept/reject decisions and process groups on a grid
 * of TP x PP x DP x PCP x DCP x EP, against vLLM's rules restated here, and get_pp_indices
 * against vLLM's goldens.
 *
 * The groups are derived from vLLM's torch expressions (vllm/distributed/parallel_state.py,
 * initialize_model_parallel) by a small emulation of arange / reshape / transpose over a strided
 * 5-d view, independent of plan.c's nested loops. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/plan.h"

/* ---- a strided 5-d view over torch.arange(world) ---- */

enum { AXES = 5 }; /* ExternalDP, DP, PP, PCP, TP */

typedef struct {
    uint32_t shape[AXES], stride[AXES];
} View;

/* torch.arange(world).reshape(-1, DP, PP, PCP, TP): contiguous, last axis fastest */
static View arange_reshape(uint32_t world, uint32_t dp, uint32_t pp, uint32_t pcp, uint32_t tp)
{
    View v = {{world / (dp * pp * pcp * tp), dp, pp, pcp, tp}, {0}};
    uint32_t s = 1;
    for (int i = AXES - 1; i >= 0; i--) {
        v.stride[i] = s;
        s *= v.shape[i];
    }
    return v;
}

/* .transpose(a, b): swaps two axes' shape and stride (negative axes count from the end) */
static View transpose(View v, int a, int b)
{
    a = a < 0 ? a + AXES : a;
    b = b < 0 ? b + AXES : b;
    uint32_t sh = v.shape[a], st = v.stride[a];
    v.shape[a] = v.shape[b];
    v.stride[a] = v.stride[b];
    v.shape[b] = sh;
    v.stride[b] = st;
    return v;
}

/* Walks the view's multi-index in row-major order: the order in which .reshape(-1, n) (a
 * contiguous copy) lays the elements out. Returns false after the last index. */
static bool next_index(const View *v, uint32_t idx[AXES])
{
    for (int i = AXES - 1; i >= 0; i--) {
        if (++idx[i] < v->shape[i])
            return true;
        idx[i] = 0;
    }
    return false;
}

static uint32_t value_at(const View *v, const uint32_t idx[AXES])
{
    uint32_t off = 0; /* the storage is arange(world), so the value is the offset */
    for (int i = 0; i < AXES; i++)
        off += idx[i] * v->stride[i];
    return off;
}

/* .reshape(-1, n): the contiguous copy; rows are out[k * n .. k * n + n). Caller frees. */
static int32_t *reshape_rows(const View *v, uint32_t world)
{
    int32_t *out = g_new(int32_t, world);
    uint32_t idx[AXES] = {0}, k = 0;
    do /* visits exactly world indices */
        out[k++] = (int32_t)value_at(v, idx);
    while (next_index(v, idx));
    return out;
}

/* ---- vLLM's rules (the grid's rule table) ---- */

typedef struct {
    uint32_t tp, pp, dp, pcp, dcp;
    bool ep;
} Case;

/* Violated rules, in the order vLLM raises them: ParallelConfig._validate_parallel_config
 * (vllm/config/parallel.py, a model validator, so at config construction) first, then
 * PCPManager.validate_config (vllm/v1/worker/gpu/pcp_manager.py, at KV-cache init). */
enum {
    /* parallel.py:527-528: `if pcp > 1 and self.data_parallel_size > 1: raise` */
    RULE_PCP_DP = 1 << 0,
    /* parallel.py:529-532: `if pcp == 1: if tp % dcp != 0: raise` ("DCP reuses the TP ranks
     * when PCP is disabled.") */
    RULE_TP_DCP = 1 << 1,
    /* parallel.py:533-539: `elif dcp not in (1, pcp, tp * pcp): raise` */
    RULE_PCP_DCP = 1 << 2,
    /* pcp_manager.py:137-138: PCP > 1 with pipeline_parallel_size > 1 */
    RULE_PCP_PP = 1 << 3,
};

static unsigned violated(const Case *c)
{
    unsigned m = 0;
    if (c->pcp > 1 && c->dp > 1)
        m |= RULE_PCP_DP;
    if (c->pcp == 1 && c->tp % c->dcp != 0)
        m |= RULE_TP_DCP;
    if (c->pcp > 1 && c->dcp != 1 && c->dcp != c->pcp && c->dcp != c->tp * c->pcp)
        m |= RULE_PCP_DCP;
    if (c->pcp > 1 && c->pp > 1)
        m |= RULE_PCP_PP;
    return m;
}

/* vLLM's message for one rule (caller frees). */
static char *rule_phrase(unsigned rule, const Case *c)
{
    switch (rule) {
    case RULE_PCP_DP:
        return g_strdup("PCP does not support data parallelism yet.");
    case RULE_TP_DCP:
        return g_strdup_printf("tp_size=%u must be divisible by dcp_size=%u.", c->tp, c->dcp);
    case RULE_PCP_DCP: {
        /* f"... valid DCP sizes are {sorted({1, pcp, tp * pcp})}." (1 < pcp <= tp * pcp) */
        g_autofree char *valid = c->tp == 1
                                     ? g_strdup_printf("[1, %u]", c->pcp)
                                     : g_strdup_printf("[1, %u, %u]", c->pcp, c->tp * c->pcp);
        return g_strdup_printf("When PCP is enabled, DCP must be disabled, span the PCP axis, or "
                               "span the full TP x PCP axis. Got TP=%u, PCP=%u, DCP=%u; valid "
                               "DCP sizes are %s.",
                               c->tp, c->pcp, c->dcp, valid);
    }
    default:
        return g_strdup("MRV2 PCP does not support PP yet.");
    }
}

static const uint32_t TPS[] = {1, 2, 4, 8}, PPS[] = {1, 2, 4}, DPS[] = {1, 2}, PCPS[] = {1, 2, 4},
                      DCPS[] = {1, 2, 4, 8};

#define FOR_GRID(c)                                                                                \
    for (size_t i_tp = 0; i_tp < G_N_ELEMENTS(TPS); i_tp++)                                        \
        for (size_t i_pp = 0; i_pp < G_N_ELEMENTS(PPS); i_pp++)                                    \
            for (size_t i_dp = 0; i_dp < G_N_ELEMENTS(DPS); i_dp++)                                \
                for (size_t i_pcp = 0; i_pcp < G_N_ELEMENTS(PCPS); i_pcp++)                        \
                    for (size_t i_dcp = 0; i_dcp < G_N_ELEMENTS(DCPS); i_dcp++)                    \
                        for (int i_ep = 0; i_ep < 2; i_ep++)                                       \
                            for (Case c = {TPS[i_tp], PPS[i_pp], DPS[i_dp], PCPS[i_pcp],           \
                                           DCPS[i_dcp], i_ep != 0},                                \
                                      *once_ = &c;                                                 \
                                 once_; once_ = NULL)

static ModelPlan *plan_of(const Case *c, GError **err)
{
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = c->tp;
    par.pipeline_parallel_size = c->pp;
    par.data_parallel_size = c->dp;
    par.prefill_context_parallel_size = c->pcp;
    par.decode_context_parallel_size = c->dcp;
    par.enable_expert_parallel = c->ep;
    return model_plan_new(&par, NULL, err); /* no model: counts as MoE, like vLLM's None */
}

/* ---- groups: vLLM's rows against ranksim's groups of one kind ---- */

static bool is_kind(const char *name, const char *kind)
{
    size_t n = strlen(kind);
    if (strncmp(name, kind, n) != 0 || name[n] == '\0')
        return false;
    for (const char *s = name + n; *s; s++)
        if (!g_ascii_isdigit(*s))
            return false;
    return true;
}

/* Every ranksim group named <kind><n> equals exactly one of the `nrows` rows of `rows` (same
 * members, same order), every row is matched, and every member's per-rank id names its row's
 * group. nrows == 0: ranksim must build no group of that kind. */
static void check_kind(const SchedProgram *p, const char *kind, const int32_t *rows, uint32_t n,
                       uint32_t nrows, const int32_t *ids, const char *where)
{
    uint32_t found = 0;
    g_autofree bool *matched = g_new0(bool, nrows + 1);
    for (guint g = 0; g < p->groups->len; g++) {
        const SchedGroup *sg = sched_program_group(p, (int32_t)g);
        if (!is_kind(sg->name, kind))
            continue;
        found++;
        uint32_t k = 0;
        while (k < nrows &&
               !(sg->n == n && memcmp(sg->ranks, rows + (size_t)k * n, n * sizeof *rows) == 0))
            k++;
        cr_assert_lt(k, nrows, "%s: group %s (%u ranks, first %d) is no row of vLLM's %s", where,
                     sg->name, sg->n, sg->ranks[0], kind);
        cr_assert_not(matched[k], "%s: %s row %u matched twice", where, kind, k);
        matched[k] = true;
        for (uint32_t j = 0; j < n; j++)
            cr_assert_eq(ids[rows[(size_t)k * n + j]], (int32_t)g,
                         "%s: rank %d's %s id is %d, not %s", where, rows[(size_t)k * n + j], kind,
                         ids[rows[(size_t)k * n + j]], sg->name);
    }
    cr_assert_eq(found, nrows, "%s: %u %s groups, vLLM builds %u", where, found, kind, nrows);
}

static void check_groups(const Case *c, ModelPlan *plan, const char *where)
{
    uint32_t W = c->tp * c->pp * c->dp * c->pcp;
    cr_assert_eq(plan->world, W, "%s: world %u", where, plan->world);
    View all = arange_reshape(W, c->dp, c->pp, c->pcp, c->tp);

    /* coordinates: rank all_ranks[0, dp, pp, pcp, tp] has exactly those coordinates */
    uint32_t idx[AXES] = {0};
    do {
        const ModelCoord *rc = &plan->coord[value_at(&all, idx)];
        cr_assert(rc->dp == idx[1] && rc->pp == idx[2] && rc->pcp == idx[3] && rc->tp == idx[4],
                  "%s: rank %u at [%u %u %u %u] has dp %u pp %u pcp %u tp %u", where,
                  value_at(&all, idx), idx[1], idx[2], idx[3], idx[4], rc->dp, rc->pp, rc->pcp,
                  rc->tp);
    } while (next_index(&all, idx));

    g_autoptr(SchedProgram) p = sched_program_new(W);
    model_plan_add_groups(plan, p);
    uint32_t E = c->dp * c->pcp * c->tp;
    struct {
        const char *kind;
        View v;
        uint32_t n;
        const int32_t *ids;
        bool built; /* ranksim skips kinds whose vLLM groups are all single ranks */
    } kinds[] = {
        /* parallel_state.py:1837-1849  all_ranks.view(-1, TP) */
        {"tp", all, c->tp, plan->tp_group, true},
        /* :1853-1867  DCP > 1: all_ranks.transpose(-1, -2).reshape(-1, DCP) (PCP first, then
         * TP); DCP == 1: all_ranks.reshape(-1, 1) */
        {"dcp", c->dcp > 1 ? transpose(all, -1, -2) : all, c->dcp, plan->dcp_group, true},
        /* :1871-1886  all_ranks.transpose(3, 4).reshape(-1, PCP) */
        {"pcp", transpose(all, 3, 4), c->pcp, plan->pcp_group, true},
        /* :1891-1904  all_ranks.transpose(2, 4).reshape(-1, PP) */
        {"pp", transpose(all, 2, 4), c->pp, plan->pp_group, c->pp > 1},
        /* :1908-1921  all_ranks.transpose(1, 4).reshape(-1, DP) */
        {"dp", transpose(all, 1, 4), c->dp, plan->dp_group, true},
        /* :1924-1956  MoE (or no model config): all_ranks.transpose(1, 2).reshape(-1,
         * DP * PCP * TP), whether or not enable_expert_parallel is set */
        {"ep", transpose(all, 1, 2), E, plan->ep_group, E > 1},
        /* ranksim's own: the world of one DP rank (one engine core, parallel.py world_size =
         * PP x PCP x TP), all_ranks.reshape(-1, PP * PCP * TP) */
        {"sched", all, c->pp * c->pcp * c->tp, plan->sched_group, c->pp > 1},
    };
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        g_autofree int32_t *rows = reshape_rows(&kinds[k].v, W);
        uint32_t nrows = kinds[k].built ? W / kinds[k].n : 0;
        check_kind(p, kinds[k].kind, rows, kinds[k].n, nrows, kinds[k].ids, where);
        if (strcmp(kinds[k].kind, "dcp") == 0) /* coord.dcp: vLLM's rank_in_group */
            for (uint32_t j = 0; j < W; j++)
                cr_assert_eq(plan->coord[rows[j]].dcp, j % c->dcp, "%s: rank %d dcp index %u",
                             where, rows[j], plan->coord[rows[j]].dcp);
    }
}

/* ---- the grid ---- */

Test(plan_grid, accepts_rejects_and_groups_as_vllm)
{
    uint32_t want_ok = 0, want_bad = 0, ok = 0, bad = 0;
    FOR_GRID(c)
    {
        g_autofree char *where = g_strdup_printf("TP=%u PP=%u DP=%u PCP=%u DCP=%u EP=%d", c.tp,
                                                 c.pp, c.dp, c.pcp, c.dcp, (int)c.ep);
        unsigned m = violated(&c);
        if (m)
            want_bad++;
        else
            want_ok++;
        g_autoptr(GError) err = NULL;
        g_autoptr(ModelPlan) plan = plan_of(&c, &err);
        if (m == 0) {
            cr_assert_not_null(plan, "%s: rejected: %s", where, err ? err->message : "?");
            ok++;
            if (plan->world <= 256)
                check_groups(&c, plan, where);
            continue;
        }
        cr_assert_null(plan, "%s: accepted, but vLLM rejects it", where);
        cr_assert(err != NULL && err->domain == MODEL_PLAN_ERROR, "%s: no plan error", where);
        bad++;
        /* the message is vLLM's for one of the violated rules (which one: next test) */
        bool any = false;
        for (unsigned r = 1; r <= RULE_PCP_PP; r <<= 1)
            if (m & r) {
                g_autofree char *want = rule_phrase(r, &c);
                any = any || strstr(err->message, want) != NULL;
            }
        cr_assert(any, "%s: \"%s\" states none of the violated rules", where, err->message);
    }
    /* The rule table by hand: PCP == 1 leaves the (TP, DCP) pairs with TP % DCP == 0, 1 + 2 + 3
     * + 4 = 10, times PP 3 x DP 2 x EP 2 = 120; PCP > 1 needs PP = DP = 1 and DCP in {1, PCP,
     * TP * PCP}: PCP 2 gives 2 + 3 + 3 + 2, PCP 4 gives 2 + 3 + 2 + 2, 19 x EP 2 = 38. */
    cr_assert_eq(want_ok, 158);
    cr_assert_eq(want_bad, 4 * 3 * 2 * 3 * 4 * 2 - 158);
    cr_assert_eq(ok, want_ok, "ranksim accepts %u, vLLM's rules %u", ok, want_ok);
    cr_assert_eq(bad, want_bad, "ranksim rejects %u, vLLM's rules %u", bad, want_bad);
}

/* With several rules broken, vLLM raises the first in its order: parallel.py's config checks
 * (DP, then DCP) run when ParallelConfig is built, pcp_manager.py's PP check only at KV-cache
 * init. */
Test(plan_grid, first_error_is_the_one_vllm_raises)
{
    uint32_t wrong = 0, multi = 0;
    char first[600] = ""; /* on the stack: a failed assert skips g_autofree */
    FOR_GRID(c)
    {
        unsigned m = violated(&c);
        if (m == 0)
            continue;
        multi += (m & (m - 1)) != 0;
        g_autoptr(GError) err = NULL;
        g_autoptr(ModelPlan) plan = plan_of(&c, &err);
        cr_assert_null(plan);
        g_autofree char *want = rule_phrase(m & -m, &c); /* lowest bit: vLLM's first */
        if (strstr(err->message, want) == NULL && wrong++ == 0)
            g_snprintf(first, sizeof first,
                       "TP=%u PP=%u DP=%u PCP=%u DCP=%u EP=%d: ranksim says \"%s\", "
                       "vLLM raises \"%s\"",
                       c.tp, c.pp, c.dp, c.pcp, c.dcp, (int)c.ep, err->message, want);
    }
    cr_assert_gt(multi, 0);
    cr_assert_eq(wrong, 0,
                 "%u of the %u cases breaking several rules give another error; first: %s", wrong,
                 multi, first);
}

/* ---- get_pp_indices (vllm/distributed/utils.py) ---- */

static void expect_counts(uint32_t layers, uint32_t pp, const uint32_t *want)
{
    uint32_t at = 0;
    for (uint32_t k = 0; k < pp; k++) {
        uint32_t s, e;
        model_pp_indices(layers, pp, k, &s, &e);
        cr_assert(s == at && e - s == want[k], "L=%u PP=%u stage %u: [%u, %u), want [%u, %u)",
                  layers, pp, k, s, e, at, at + want[k]);
        at = e;
    }
    cr_assert_eq(at, layers);
}

/* tests/distributed/test_pipeline_partition.py: (L, P) -> [(start, end)] per stage; the
 * remainder goes to partitions[-2], [-3], ... so the last stage never gets one. */
Test(plan_grid, pp_indices_match_vllm_goldens)
{
    expect_counts(3, 2, (uint32_t[]){2, 1});    /* (0, 2), (2, 3) */
    expect_counts(4, 3, (uint32_t[]){1, 2, 1}); /* (0, 1), (1, 3), (3, 4) */
    expect_counts(5, 3, (uint32_t[]){2, 2, 1}); /* (0, 2), (2, 4), (4, 5) */
    /* DeepSeek-V3, 61 decoder layers */
    expect_counts(61, 2, (uint32_t[]){31, 30});
    expect_counts(61, 4, (uint32_t[]){15, 15, 16, 15});
    expect_counts(61, 8, (uint32_t[]){7, 7, 8, 8, 8, 8, 8, 7});
}
