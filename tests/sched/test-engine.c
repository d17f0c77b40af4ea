/* tests/sched/test-engine.c — engine semantics: rendezvous, mismatch majority and culprits,
 * the three mismatch policies, deadlock cycles and culprits, watchdog, stragglers, every fault
 * kind, p2p, determinism, time monotonicity and repeat-vs-unrolled equivalence. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "../../sched/engine.h"

#define US 1000LL
#define S 1000000000LL

/* ---- helpers ---- */

static GArray *recorded; /* SchedRecord, filled by the recorder below */

static void record(void *ud, const SchedRecord *r)
{
    g_array_append_val((GArray *)ud, *r);
}

/* One flat tier at 1 GB/s, no hop latency, 1 us per call: easy sums. */
static const NetHardware test_hw = {
    .name = "test",
    .devices_per_node = 1u << 20,
    .launch_latency_ns = 1000,
    .n_tiers = 1,
    .tiers = {{.name = "link", .span_devices = 0, .bw_bytes_per_s = 1e9, .latency_ns = 0}},
};

/* What the fabric charges for one call alone on `hw` (net/fabric.h: NCCL's model of it): the
 * oracle the engine's sums add up, whatever that model's constants are. */
static int64_t coll_ns(const NetHardware *hw, NetCollKind kind, uint32_t n, uint64_t per_rank)
{
    NetFabricConfig fc = {.hw = hw, .n_ranks = n, .contention = false};
    NetFabric *f = net_fabric_new(&fc);
    int32_t m[64];
    for (uint32_t i = 0; i < n; i++)
        m[i] = (int32_t)i;
    int64_t t = net_fabric_plan(f, net_fabric_add_group(f, m, n), kind, per_rank).time_ns;
    net_fabric_free(f);
    return t;
}

static SchedConfig quiet_config(void)
{
    SchedConfig c = sched_config_default();
    c.fabric.hw = &test_hw;
    return c;
}

static SchedOutcome *run(const SchedProgram *p, SchedConfig c)
{
    GError *err = NULL;
    cr_assert(sched_program_validate(p, &err), "%s", err ? err->message : "");
    if (recorded)
        g_array_unref(recorded);
    recorded = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    c.record = record;
    c.record_data = recorded;
    return sched_engine_run(p, &c);
}

static const SchedDiag *find_diag(const SchedOutcome *o, const char *kind)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, kind) == 0)
            return d;
    }
    return NULL;
}

static guint count_diags(const SchedOutcome *o, const char *kind)
{
    guint n = 0;
    for (guint i = 0; i < o->diags->len; i++)
        n += strcmp(((SchedDiag *)g_ptr_array_index(o->diags, i))->kind, kind) == 0;
    return n;
}

static JsonObject *detail(const SchedDiag *d, JsonNode **keep)
{
    cr_assert_not_null(d->detail);
    *keep = json_from_string(d->detail, NULL);
    cr_assert_not_null(*keep);
    return json_node_get_object(*keep);
}

/* "[[0,1,2]]"-style rendering of a JSON array member, for compact asserts. */
static char *member_json(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);
    return json_to_string(n, FALSE);
}

static int32_t all_group(SchedProgram *p, const char *name)
{
    g_autofree int32_t *r = g_new(int32_t, p->n_ranks);
    for (uint32_t i = 0; i < p->n_ranks; i++)
        r[i] = (int32_t)i;
    return sched_program_add_group(p, name, r, p->n_ranks);
}

static SchedOp C(SchedProgram *p, const char *name, int64_t ns)
{
    return sched_op_compute(sched_program_name(p, name), ns, 0);
}

static SchedOp AG(SchedProgram *p, const char *name, int32_t g, uint64_t count)
{
    return sched_op_collective(SCHED_OP_ALL_GATHER, sched_program_name(p, name), g, count,
                               SCHED_DTYPE_BF16);
}

static SchedOp AR(SchedProgram *p, const char *name, int32_t g, uint64_t count)
{
    return sched_op_collective(SCHED_OP_ALL_REDUCE, sched_program_name(p, name), g, count,
                               SCHED_DTYPE_BF16);
}

/* ---- rendezvous ---- */

Test(engine, collective_completes_at_last_arrival_plus_cost)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "tp");
    SchedOp r0[] = {C(p, "attn", 10 * US), AR(p, "tp_all_reduce", g, 500)};
    SchedOp r1[] = {C(p, "attn", 30 * US), AR(p, "tp_all_reduce", g, 500)};
    sched_program_set_ops(p, 0, r0, 2);
    sched_program_set_ops(p, 1, r1, 2);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_not(o->failed);
    /* the last arrival at 30 us plus the cost of a 1000 B all-reduce on 2 ranks */
    int64_t cost = coll_ns(&test_hw, NET_ALL_REDUCE, 2, 1000);
    cr_assert_gt(cost, 1 * US); /* the call's launch and the bytes */
    int64_t done = 30 * US + cost;
    cr_assert_eq(o->end_ns, done);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(o->ranks[r].state, SCHED_RANK_DONE);
        cr_assert_eq(o->ranks[r].end_ns, done);
        cr_assert_eq(o->ranks[r].comm_ns, cost);
        cr_assert_eq(o->ranks[r].ops, 2);
    }
    cr_assert_eq(o->ranks[0].wait_ns, 20 * US);
    cr_assert_eq(o->ranks[1].wait_ns, 0);
    cr_assert_eq(o->ranks[0].compute_ns, 10 * US);
    /* Records: both collective records share (group, seq 1) and the completion time. */
    guint colls = 0;
    for (guint i = 0; i < recorded->len; i++) {
        SchedRecord *rec = &g_array_index(recorded, SchedRecord, i);
        if (rec->kind == SCHED_OP_ALL_REDUCE) {
            colls++;
            cr_assert_eq(rec->seq, 1);
            cr_assert_eq(rec->end_ns, done);
            cr_assert_eq(rec->start_ns, rec->rank == 0 ? 10 * US : 30 * US);
        }
    }
    cr_assert_eq(colls, 2);
}

/* The run ends when its last rank does, also when that rank ran its last compute ops ahead of
 * the event queue: one rank alone (no event at all), or a rank still computing after the
 * others' last collective. */
Test(engine, run_ends_with_its_last_rank)
{
    g_autoptr(SchedProgram) one = sched_program_new(1);
    SchedOp o1[] = {C(one, "embed", 7 * US), C(one, "attn", 13 * US)};
    sched_program_set_ops(one, 0, o1, 2);
    g_autoptr(SchedOutcome) a = run(one, quiet_config());
    cr_assert_eq(a->ranks[0].end_ns, 20 * US);
    cr_assert_eq(a->end_ns, 20 * US);

    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "tp");
    SchedOp r0[] = {AR(p, "tp_all_reduce", g, 500), C(p, "sampler", 40 * US)};
    SchedOp r1[] = {AR(p, "tp_all_reduce", g, 500)};
    sched_program_set_ops(p, 0, r0, 2);
    sched_program_set_ops(p, 1, r1, 1);
    g_autoptr(SchedOutcome) b = run(p, quiet_config());
    int64_t done = coll_ns(&test_hw, NET_ALL_REDUCE, 2, 1000) + 40 * US;
    cr_assert_eq(b->ranks[0].end_ns, done);
    cr_assert_eq(b->end_ns, done);
}

/* An eager arrival (SCHED_OP_FLAG_EAGER) does not wait: the sender of an eager send goes on
 * at once, its receiver completes when the data has come; an eager broadcast root goes on while
 * the others wait for it (and for each other, as a collective does). */
Test(engine, eager_arrivals_do_not_wait)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t msg = sched_program_name(p, "note");
    SchedOp snd = sched_op_p2p(SCHED_OP_SEND, msg, 1, 500, SCHED_DTYPE_BF16);
    snd.flags |= SCHED_OP_FLAG_EAGER;
    SchedOp r0[] = {C(p, "a", 10 * US), snd, C(p, "b", 5 * US)};
    SchedOp r1[] = {C(p, "c", 30 * US), sched_op_p2p(SCHED_OP_RECV, msg, 0, 500, SCHED_DTYPE_BF16),
                    C(p, "d", 1 * US)};
    sched_program_set_ops(p, 0, r0, 3);
    sched_program_set_ops(p, 1, r1, 3);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_not(o->failed);
    /* the sender: 10 us, the send, 5 us more — no wait for the receiver at 30 us */
    cr_assert_eq(o->ranks[0].end_ns, 15 * US);
    cr_assert_eq(o->ranks[0].wait_ns, 0);
    /* the receiver: the data is there at 30 us; at most the transfer (the p2p cost of 1000 B),
     * then 1 us of compute */
    int64_t xfer = coll_ns(&test_hw, NET_P2P, 2, 1000);
    cr_assert(o->ranks[1].end_ns > 30 * US && o->ranks[1].end_ns <= 31 * US + xfer, "%" PRId64,
              o->ranks[1].end_ns);
}

Test(engine, sequence_numbers_count_per_group)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t all = all_group(p, "world");
    int32_t lo[] = {0, 1}, hi[] = {2, 3};
    int32_t a = sched_program_add_group(p, "a", lo, 2);
    int32_t b = sched_program_add_group(p, "b", hi, 2);
    SchedOp ra[] = {AG(p, "x", a, 4), AG(p, "x", a, 4), AG(p, "w", all, 4)};
    SchedOp rb[] = {AG(p, "x", b, 4), AG(p, "w", all, 4), AG(p, "x", b, 4)};
    for (uint32_t r = 0; r < 2; r++)
        sched_program_set_ops(p, r, ra, 3);
    for (uint32_t r = 2; r < 4; r++)
        sched_program_set_ops(p, r, rb, 3);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_not(o->failed);
    for (guint i = 0; i < recorded->len; i++) {
        SchedRecord *rec = &g_array_index(recorded, SchedRecord, i);
        if (rec->group == all)
            cr_assert_eq(rec->seq, 1);
        if (rec->group == a && rec->idx == 1)
            cr_assert_eq(rec->seq, 2);
        if (rec->group == b && rec->idx == 2)
            cr_assert_eq(rec->seq, 2);
    }
}

/* ---- mismatch ---- */

/* The seed-004 shape: rank 0 brings 153 x 64 = 9,792 elements, ranks 1-3 bring 10,240. */
static SchedProgram *lse_program(void)
{
    SchedProgram *p = sched_program_new(4);
    int32_t g = all_group(p, "pcp");
    SchedOp ok[] = {C(p, "attn", 5 * US), AG(p, "dcp_lse_all_gather", g, 160 * 64),
                    C(p, "o_proj", 5 * US)};
    SchedOp bad[] = {C(p, "attn", 5 * US), AG(p, "dcp_lse_all_gather", g, 153 * 64),
                     C(p, "o_proj", 5 * US)};
    sched_program_set_ops(p, 0, bad, 3);
    for (uint32_t r = 1; r < 4; r++)
        sched_program_set_ops(p, r, ok, 3);
    return p;
}

Test(engine, mismatch_names_majority_and_minority_culprit_then_deadlock)
{
    g_autoptr(SchedProgram) p = lse_program();
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert(o->failed);
    const SchedDiag *m = find_diag(o, "mismatch");
    cr_assert_not_null(m);
    cr_assert_eq(m->rank, 0);
    cr_assert_eq(m->seq, 1);
    cr_assert_str_eq(m->op_name, "dcp_lse_all_gather");
    cr_assert(strstr(m->message, "9792"), "%s", m->message);
    cr_assert(strstr(m->message, "10240"), "%s", m->message);
    cr_assert(strstr(m->message, "ranks 1-3 (majority)"), "%s", m->message);
    JsonNode *keep;
    JsonObject *d = detail(m, &keep);
    g_autofree char *culprits = member_json(d, "culprits");
    cr_assert_str_eq(culprits, "[0]");
    cr_assert_eq(json_array_get_length(json_object_get_array_member(d, "signatures")), 2);
    json_node_unref(keep);

    const SchedDiag *dl = find_diag(o, "deadlock");
    cr_assert_not_null(dl, "hang policy must end in a deadlock");
    d = detail(dl, &keep);
    g_autofree char *dc = member_json(d, "culprits");
    cr_assert_str_eq(dc, "[{\"rank\":0,\"reason\":\"mismatch\"}]");
    json_node_unref(keep);
    for (int r = 0; r < 4; r++)
        cr_assert_eq(o->ranks[r].state, SCHED_RANK_BLOCKED);
    /* The instance never completed: all four arrivals recorded with end -1. */
    guint open = 0;
    for (guint i = 0; i < recorded->len; i++)
        open += g_array_index(recorded, SchedRecord, i).end_ns == -1;
    cr_assert_eq(open, 4);
}

Test(engine, mismatch_tie_has_no_majority)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "g");
    SchedOp a[] = {AG(p, "x", g, 4)}, b[] = {AG(p, "x", g, 8)};
    sched_program_set_ops(p, 0, a, 1);
    sched_program_set_ops(p, 1, b, 1);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    const SchedDiag *m = find_diag(o, "mismatch");
    cr_assert_not_null(m);
    JsonNode *keep;
    JsonObject *d = detail(m, &keep);
    cr_assert(json_node_is_null(json_object_get_member(d, "majority")));
    cr_assert_eq(json_array_get_length(json_object_get_array_member(d, "culprits")), 0);
    json_node_unref(keep);
}

Test(engine, kind_dtype_and_root_are_part_of_the_signature)
{
    g_autoptr(SchedProgram) p = sched_program_new(3);
    int32_t g = all_group(p, "g");
    SchedOp a = AG(p, "x", g, 4), b = AR(p, "x", g, 4);
    SchedOp r0[] = {a}, r1[] = {a}, r2[] = {b};
    sched_program_set_ops(p, 0, r0, 1);
    sched_program_set_ops(p, 1, r1, 1);
    sched_program_set_ops(p, 2, r2, 1);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_eq(find_diag(o, "mismatch")->rank, 2);

    g_autoptr(SchedProgram) q = sched_program_new(3);
    g = all_group(q, "g");
    SchedOp bc = sched_op_collective(SCHED_OP_BROADCAST, sched_program_name(q, "bc"), g, 4,
                                     SCHED_DTYPE_FP32);
    bc.root = 0;
    SchedOp bc1 = bc;
    bc1.root = 1;
    SchedOp bc2 = bc;
    bc2.dtype = SCHED_DTYPE_FP16;
    SchedOp q0[] = {bc}, q1[] = {bc1}, q2[] = {bc2};
    sched_program_set_ops(q, 0, q0, 1);
    sched_program_set_ops(q, 1, q1, 1);
    sched_program_set_ops(q, 2, q2, 1);
    g_autoptr(SchedOutcome) o2 = run(q, quiet_config());
    const SchedDiag *m = find_diag(o2, "mismatch");
    cr_assert_not_null(m);
    cr_assert(strstr(m->message, "3 signatures"), "%s", m->message);
}

Test(engine, on_mismatch_continue_completes_with_largest_and_keeps_looking)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t g = all_group(p, "pcp");
    SchedOp ok[] = {sched_op_repeat(2, 1, 0), AG(p, "lse", g, 10240)};
    SchedOp bad[] = {sched_op_repeat(2, 1, 0), AG(p, "lse", g, 9792)};
    sched_program_set_ops(p, 0, bad, 2);
    for (uint32_t r = 1; r < 4; r++)
        sched_program_set_ops(p, r, ok, 2);
    SchedConfig c = quiet_config();
    c.on_mismatch = SCHED_MISMATCH_CONTINUE;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert(o->failed);
    cr_assert_eq(count_diags(o, "mismatch"), 2, "both layers' mismatches are found");
    cr_assert_null(find_diag(o, "deadlock"));
    for (int r = 0; r < 4; r++)
        cr_assert_eq(o->ranks[r].state, SCHED_RANK_DONE);
    /* Completed with the largest size: the cost of gathering 10240 bf16 from 4 ranks. */
    int64_t one = coll_ns(&test_hw, NET_ALL_GATHER, 4, 10240 * 2);
    cr_assert_gt(one, coll_ns(&test_hw, NET_ALL_GATHER, 4, 9792 * 2));
    cr_assert_eq(o->end_ns, 2 * one);
}

Test(engine, on_mismatch_abort_stops_at_the_mismatch)
{
    g_autoptr(SchedProgram) p = lse_program();
    SchedConfig c = quiet_config();
    c.on_mismatch = SCHED_MISMATCH_ABORT;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert(o->failed);
    cr_assert_not_null(find_diag(o, "mismatch"));
    cr_assert_null(find_diag(o, "deadlock"));
    cr_assert_eq(o->end_ns, 5 * US);
}

Test(engine, reduce_scatter_shape_rule)
{
    g_autoptr(SchedProgram) p = sched_program_new(3);
    int32_t g = all_group(p, "g");
    SchedOp rs[] = {sched_op_collective(SCHED_OP_REDUCE_SCATTER, sched_program_name(p, "rs"), g, 10,
                                        SCHED_DTYPE_BF16)};
    for (uint32_t r = 0; r < 3; r++)
        sched_program_set_ops(p, r, rs, 1);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert(o->failed);
    cr_assert_not_null(find_diag(o, "shape"));
}

/* ---- deadlocks ---- */

Test(engine, three_way_cycle_is_found_with_its_cycle)
{
    g_autoptr(SchedProgram) p = sched_program_new(3);
    int32_t ga[] = {0, 1}, gb[] = {1, 2}, gc[] = {2, 0};
    int32_t a = sched_program_add_group(p, "a", ga, 2);
    int32_t b = sched_program_add_group(p, "b", gb, 2);
    int32_t c = sched_program_add_group(p, "c", gc, 2);
    SchedOp r0[] = {AG(p, "all_gather", a, 1024), AG(p, "all_gather", c, 1024)};
    SchedOp r1[] = {AG(p, "all_gather", b, 1024), AG(p, "all_gather", a, 1024)};
    SchedOp r2[] = {AG(p, "all_gather", c, 1024), AG(p, "all_gather", b, 1024)};
    sched_program_set_ops(p, 0, r0, 2);
    sched_program_set_ops(p, 1, r1, 2);
    sched_program_set_ops(p, 2, r2, 2);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert(o->failed);
    cr_assert_eq(o->diags->len, 1);
    const SchedDiag *dl = find_diag(o, "deadlock");
    cr_assert_not_null(dl);
    JsonNode *keep;
    JsonObject *d = detail(dl, &keep);
    g_autofree char *cycles = member_json(d, "cycles");
    cr_assert_str_eq(cycles, "[[0,1,2]]");
    g_autofree char *edges = member_json(d, "edges");
    cr_assert_str_eq(edges, "[[0,1],[1,2],[2,0]]");
    cr_assert_eq(json_array_get_length(json_object_get_array_member(d, "culprits")), 0);
    cr_assert_eq(json_array_get_length(json_object_get_array_member(d, "blocked")), 3);
    json_node_unref(keep);
    cr_assert(strstr(dl->message, "watchdog would fire on"), "%s", dl->message);
    cr_assert(strstr(dl->message, "OpType=_ALLGATHER_BASE, NumelIn=1024, NumelOut=2048"), "%s",
              dl->message);
}

Test(engine, rank_that_finishes_early_is_the_culprit)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t g = all_group(p, "tp");
    SchedOp full[] = {sched_op_repeat(3, 2, 0), C(p, "mlp", 10 * US),
                      AR(p, "tp_all_reduce", g, 64)};
    SchedOp shorter[] = {sched_op_repeat(2, 2, 0), C(p, "mlp", 10 * US),
                         AR(p, "tp_all_reduce", g, 64)};
    for (uint32_t r = 0; r < 3; r++)
        sched_program_set_ops(p, r, full, 3);
    sched_program_set_ops(p, 3, shorter, 3);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    const SchedDiag *dl = find_diag(o, "deadlock");
    cr_assert_not_null(dl);
    cr_assert_eq(dl->rank, 3);
    cr_assert_eq(dl->seq, 3);
    cr_assert_eq(dl->layer, 2);
    JsonNode *keep;
    JsonObject *d = detail(dl, &keep);
    g_autofree char *c = member_json(d, "culprits");
    cr_assert_str_eq(c, "[{\"rank\":3,\"reason\":\"finished\"}]");
    g_autofree char *cy = member_json(d, "cycles");
    cr_assert_str_eq(cy, "[]");
    json_node_unref(keep);
    cr_assert_eq(o->ranks[3].state, SCHED_RANK_DONE);
    cr_assert_eq(o->ranks[0].state, SCHED_RANK_BLOCKED);
    cr_assert(strstr(dl->message, "rank 3 (finished at"), "%s", dl->message);
    cr_assert(strstr(dl->message, "on ranks 0-2 after 600.000 s"), "%s", dl->message);
}

/* ---- watchdog and stragglers ---- */

Test(engine, watchdog_fires_at_arrival_plus_timeout_and_stops)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "g");
    SchedOp fast[] = {AG(p, "ag", g, 8), C(p, "after", 1 * US)};
    SchedOp slow[] = {C(p, "jit_compile", 700 * S), AG(p, "ag", g, 8), C(p, "after", 1 * US)};
    sched_program_set_ops(p, 0, fast, 2);
    sched_program_set_ops(p, 1, slow, 3);
    SchedConfig c = quiet_config();
    c.collective_timeout_ns = 600 * S;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert(o->failed);
    const SchedDiag *t = find_diag(o, "timeout");
    cr_assert_not_null(t);
    cr_assert_eq(t->rank, 1, "the late rank is the one the finding is about");
    cr_assert_eq(t->time_ns, 600 * S);
    cr_assert(strstr(t->message, "timeout: rank 0 waited 600.000 s"), "%s", t->message);
    cr_assert_eq(o->end_ns, 600 * S);
    cr_assert(strstr(t->message, "rank 1 (computing jit_compile"), "%s", t->message);
    cr_assert(strstr(t->message, "Timeout(ms)=600000"), "%s", t->message);
    cr_assert_eq(o->ranks[0].state, SCHED_RANK_BLOCKED);
    cr_assert_eq(o->ranks[1].state, SCHED_RANK_STOPPED);
    cr_assert_eq(o->ranks[1].compute_ns, 600 * S, "only the part that ran counts");
    cr_assert_null(find_diag(o, "deadlock"));
}

Test(engine, late_but_within_timeout_is_a_straggler_warning)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "g");
    SchedOp fast[] = {AG(p, "ag", g, 8)};
    SchedOp slow[] = {C(p, "jit_compile", 30 * S), AG(p, "ag", g, 8)};
    sched_program_set_ops(p, 0, fast, 1);
    sched_program_set_ops(p, 1, slow, 2);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_not(o->failed);
    const SchedDiag *s = find_diag(o, "straggler");
    cr_assert_not_null(s);
    cr_assert_eq(s->severity, SCHED_SEV_WARNING);
    cr_assert_eq(s->rank, 1);
    cr_assert_eq(o->ranks[0].wait_ns, 30 * S);
}

Test(engine, watchdog_zero_disables_it)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "g");
    SchedOp fast[] = {AG(p, "ag", g, 8)};
    SchedOp slow[] = {C(p, "long", 9000 * S), AG(p, "ag", g, 8)};
    sched_program_set_ops(p, 0, fast, 1);
    sched_program_set_ops(p, 1, slow, 2);
    SchedConfig c = quiet_config();
    c.collective_timeout_ns = 0;
    c.straggler_threshold_ns = 0;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert_not(o->failed);
    cr_assert_eq(o->diags->len, 0);
}

/* ---- faults ---- */

static SchedProgram *layered(uint32_t ranks, uint32_t layers)
{
    SchedProgram *p = sched_program_new(ranks);
    int32_t g = all_group(p, "tp");
    SchedOp ops[] = {sched_op_repeat(layers, 3, 0), C(p, "attn", 10 * US),
                     AR(p, "tp_all_reduce", g, 512), C(p, "mlp", 20 * US)};
    for (uint32_t r = 0; r < ranks; r++)
        sched_program_set_ops(p, r, ops, 4);
    return p;
}

Test(faults, delay_on_nth_occurrence_makes_a_straggler)
{
    g_autoptr(SchedProgram) p = layered(4, 5);
    SchedFault f = {
        SCHED_FAULT_DELAY, 2, sched_program_name(p, "tp_all_reduce"), 3, 20 * S, 1.0, -1, NULL};
    SchedConfig c = quiet_config();
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert_not(o->failed);
    const SchedDiag *s = find_diag(o, "straggler");
    cr_assert_not_null(s);
    cr_assert_eq(s->rank, 2);
    cr_assert_eq(s->seq, 3);
    cr_assert_eq(s->layer, 2);
    cr_assert_eq(o->ranks[2].compute_ns, o->ranks[0].compute_ns + 20 * S);
}

Test(faults, delay_on_compute_lengthens_it)
{
    g_autoptr(SchedProgram) p = layered(2, 2);
    SchedFault f = {SCHED_FAULT_DELAY, 0, sched_program_name(p, "mlp"), 2, 5 * US, 1.0, -1, NULL};
    SchedConfig c = quiet_config();
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    g_autoptr(SchedProgram) q = layered(2, 2);
    g_autoptr(SchedOutcome) base = run(q, quiet_config());
    cr_assert_eq(o->ranks[0].end_ns, base->ranks[0].end_ns + 5 * US);
}

Test(faults, slowdown_scales_compute)
{
    g_autoptr(SchedProgram) p = layered(2, 3);
    SchedFault f = {SCHED_FAULT_SLOWDOWN, 1, -1, 0, 0, 2.0, -1, NULL};
    SchedConfig c = quiet_config();
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert_eq(o->ranks[1].compute_ns, 2 * 3 * 30 * US);
    cr_assert_eq(o->ranks[0].compute_ns, 3 * 30 * US);
    cr_assert(o->ranks[0].wait_ns > 0, "the fast rank waits for the slow one");
}

Test(faults, crash_at_time_blames_the_crashed_rank)
{
    g_autoptr(SchedProgram) p = layered(4, 10);
    SchedFault f = {SCHED_FAULT_CRASH, 1, -1, 0, 0, 1.0, 75 * US, NULL};
    SchedConfig c = quiet_config();
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert(o->failed);
    cr_assert_not_null(find_diag(o, "crash"));
    cr_assert_eq(o->ranks[1].state, SCHED_RANK_CRASHED);
    cr_assert_eq(o->ranks[1].end_ns, 75 * US);
    const SchedDiag *dl = find_diag(o, "deadlock");
    cr_assert_not_null(dl);
    cr_assert_eq(dl->rank, 1);
    JsonNode *keep;
    JsonObject *d = detail(dl, &keep);
    g_autofree char *cu = member_json(d, "culprits");
    cr_assert_str_eq(cu, "[{\"rank\":1,\"reason\":\"crashed\"}]");
    json_node_unref(keep);
}

Test(faults, crash_on_op_occurrence)
{
    g_autoptr(SchedProgram) p = layered(2, 4);
    SchedFault f = {SCHED_FAULT_CRASH, 0, sched_program_name(p, "mlp"), 2, 0, 1.0, -1, NULL};
    SchedConfig c = quiet_config();
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert_eq(o->ranks[0].state, SCHED_RANK_CRASHED);
    cr_assert_eq(o->ranks[0].ops, 5, "attn, ar, mlp, attn, ar -> crashed before the 2nd mlp");
}

Test(faults, crash_while_blocked_poisons_the_instance)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "g");
    SchedOp r0[] = {AG(p, "ag", g, 8)};
    SchedOp r1[] = {C(p, "work", 100 * US), AG(p, "ag", g, 8)};
    sched_program_set_ops(p, 0, r0, 1);
    sched_program_set_ops(p, 1, r1, 2);
    SchedFault f = {SCHED_FAULT_CRASH, 0, -1, 0, 0, 1.0, 50 * US, NULL};
    SchedConfig c = quiet_config();
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert_eq(o->ranks[0].state, SCHED_RANK_CRASHED);
    cr_assert_eq(o->ranks[1].state, SCHED_RANK_BLOCKED);
    cr_assert_not_null(find_diag(o, "deadlock"));
}

Test(faults, skip_diverges_and_blames_the_skipper)
{
    g_autoptr(SchedProgram) p = layered(4, 6);
    SchedFault f = {
        SCHED_FAULT_SKIP, 3, sched_program_name(p, "tp_all_reduce"), 2, 0, 1.0, -1, NULL};
    SchedConfig c = quiet_config();
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert(o->failed);
    /* The signatures still agree, so NCCL would pair layer 2 of rank 3 with layer 1 of the
     * others: reported as a divergence warning, then the rank finishes one call short. */
    const SchedDiag *dv = find_diag(o, "divergence");
    cr_assert_not_null(dv);
    cr_assert_eq(dv->seq, 2);
    const SchedDiag *dl = find_diag(o, "deadlock");
    cr_assert_not_null(dl);
    cr_assert_eq(dl->rank, 3);
    cr_assert_eq(o->ranks[3].state, SCHED_RANK_DONE);
}

/* ---- p2p ---- */

Test(engine, send_recv_pair_up_per_channel)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t x = sched_program_name(p, "act");
    SchedOp r0[] = {C(p, "stage0", 10 * US),
                    sched_op_p2p(SCHED_OP_SEND, x, 1, 1000, SCHED_DTYPE_BF16)};
    SchedOp r1[] = {sched_op_p2p(SCHED_OP_RECV, x, 0, 1000, SCHED_DTYPE_BF16),
                    C(p, "stage1", 10 * US)};
    sched_program_set_ops(p, 0, r0, 2);
    sched_program_set_ops(p, 1, r1, 2);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_not(o->failed);
    /* send completes at 10 us + the p2p cost of 2000 B; stage1 ends 10 us later */
    cr_assert_eq(o->ranks[1].end_ns, 20 * US + coll_ns(&test_hw, NET_P2P, 2, 2000));
    cr_assert_eq(o->ranks[1].wait_ns, 10 * US);
    cr_assert_str_eq(g_ptr_array_index(o->groups, 0), "p2p:0->1");
}

Test(engine, send_recv_count_mismatch)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    uint32_t x = sched_program_name(p, "act");
    SchedOp r0[] = {sched_op_p2p(SCHED_OP_SEND, x, 1, 1000, SCHED_DTYPE_BF16)};
    SchedOp r1[] = {sched_op_p2p(SCHED_OP_RECV, x, 0, 999, SCHED_DTYPE_BF16)};
    sched_program_set_ops(p, 0, r0, 1);
    sched_program_set_ops(p, 1, r1, 1);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_not_null(find_diag(o, "mismatch"));
}

/* ---- invariants ---- */

static SchedProgram *mixed_program(uint32_t ranks, uint32_t layers)
{
    SchedProgram *p = sched_program_new(ranks);
    int32_t world = all_group(p, "world");
    uint32_t tp = 4;
    int32_t tpg[64];
    for (uint32_t base = 0; base < ranks; base += tp) {
        for (uint32_t i = 0; i < tp; i++)
            tpg[i] = (int32_t)(base + i);
        g_autofree char *name = g_strdup_printf("tp%u", base / tp);
        sched_program_add_group(p, name, tpg, tp);
    }
    for (uint32_t r = 0; r < ranks; r++) {
        int32_t g = 1 + (int32_t)(r / tp);
        SchedOp ops[] = {
            C(p, "embed", 3 * US),
            sched_op_repeat(layers, 5, 0),
            C(p, "attn", (int64_t)(10 + r % 3) * US),
            AR(p, "tp_all_reduce", g, 4096),
            sched_op_repeat(2, 1, -1),
            C(p, "expert", (int64_t)(5 + r % 2) * US),
            AG(p, "dp_gather", world, 128),
            C(p, "lm_head", 7 * US),
        };
        sched_program_set_ops(p, r, ops, 8);
    }
    return p;
}

static bool same_records(GArray *a, GArray *b)
{
    if (a->len != b->len)
        return false;
    return memcmp(a->data, b->data, a->len * sizeof(SchedRecord)) == 0;
}

Test(invariants, repeat_and_unrolled_give_the_identical_run)
{
    g_autoptr(SchedProgram) p = mixed_program(16, 6);
    g_autoptr(SchedProgram) u = sched_program_unroll(p);
    g_autoptr(SchedOutcome) a = run(p, quiet_config());
    g_autoptr(GArray) ra = g_array_ref(recorded);
    g_autoptr(SchedOutcome) b = run(u, quiet_config());
    cr_assert(same_records(ra, recorded), "records differ between repeat and unrolled");
    cr_assert_eq(a->end_ns, b->end_ns);
    cr_assert(memcmp(a->ranks, b->ranks, sizeof(SchedRankStats) * 16) == 0);
    cr_assert_gt(ra->len, 16 * 6 * 4);
    cr_assert_eq(u->lists->len > 0, true);
    /* The repeat program really is smaller. */
    cr_assert_lt(sched_program_ops(p, 0)->len, sched_program_ops(u, 0)->len);
}

Test(invariants, same_input_same_records_and_diagnostics)
{
    g_autoptr(SchedProgram) p = lse_program();
    g_autoptr(SchedOutcome) a = run(p, quiet_config());
    g_autoptr(GArray) ra = g_array_ref(recorded);
    g_autoptr(SchedOutcome) b = run(p, quiet_config());
    cr_assert(same_records(ra, recorded));
    cr_assert_eq(a->diags->len, b->diags->len);
    for (guint i = 0; i < a->diags->len; i++) {
        const SchedDiag *x = g_ptr_array_index(a->diags, i), *y = g_ptr_array_index(b->diags, i);
        cr_assert_str_eq(x->message, y->message);
        cr_assert_str_eq(x->detail, y->detail);
    }
}

Test(invariants, time_never_goes_backwards_per_rank)
{
    g_autoptr(SchedProgram) p = mixed_program(32, 10);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_not(o->failed);
    g_autofree int64_t *last_end = g_new0(int64_t, 32);
    g_autofree uint64_t *next_idx = g_new0(uint64_t, 32);
    /* Sort records by (rank, idx) and walk each rank's timeline. */
    GArray *sorted = g_array_copy(recorded);
    for (guint i = 0; i < sorted->len; i++) {
        SchedRecord *r = &g_array_index(sorted, SchedRecord, i);
        cr_assert_geq(r->end_ns, r->start_ns);
    }
    uint64_t total = 0;
    for (uint32_t rank = 0; rank < 32; rank++) {
        for (;;) {
            SchedRecord *hit = NULL;
            for (guint i = 0; i < sorted->len && !hit; i++) {
                SchedRecord *r = &g_array_index(sorted, SchedRecord, i);
                if (r->rank == rank && r->idx == next_idx[rank])
                    hit = r;
            }
            if (!hit)
                break;
            cr_assert_geq(hit->start_ns, last_end[rank],
                          "rank %u op %lu starts before the previous ended", rank,
                          (unsigned long)hit->idx);
            last_end[rank] = hit->end_ns;
            next_idx[rank]++;
            total++;
        }
        cr_assert_eq(next_idx[rank], o->ranks[rank].ops);
    }
    cr_assert_eq(total, sorted->len, "every record belongs to a contiguous idx sequence");
    g_array_unref(sorted);
}

Test(invariants, timeline_levels_filter_records)
{
    g_autoptr(SchedProgram) p = mixed_program(8, 3);
    SchedConfig c = quiet_config();
    c.timeline = SCHED_TIMELINE_COLLECTIVES;
    g_autoptr(SchedOutcome) a = run(p, c);
    for (guint i = 0; i < recorded->len; i++)
        cr_assert_neq(g_array_index(recorded, SchedRecord, i).kind, SCHED_OP_COMPUTE);
    cr_assert_gt(recorded->len, 0);
    c.timeline = SCHED_TIMELINE_NONE;
    g_autoptr(SchedOutcome) b = run(p, c);
    cr_assert_eq(recorded->len, 0);
    cr_assert_eq(a->end_ns, b->end_ns);
}

/* ---- the engine on a fabric with a shared tier ---- */

/* 2 devices per node; one 10 GB/s uplink per node shared by every flow leaving it. */
static const NetHardware shared_hw = {
    .name = "shared",
    .devices_per_node = 2,
    .launch_latency_ns = 0,
    .n_tiers = 2,
    .tiers = {{.name = "nvlink", .span_devices = 2, .bw_bytes_per_s = 100e9, .latency_ns = 0},
              {.name = "nic",
               .span_devices = 0,
               .bw_bytes_per_s = 10e9,
               .latency_ns = 0,
               .shared_bw_bytes_per_s = 10e9}},
};

/* Ranks 0,2 form group a and ranks 1,3 group b: both cross the same two uplinks. */
static SchedOutcome *two_gathers(bool both, bool contention)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t ga[] = {0, 2}, gb[] = {1, 3};
    int32_t a = sched_program_add_group(p, "a", ga, 2);
    int32_t b = sched_program_add_group(p, "b", gb, 2);
    SchedOp opa[] = {AG(p, "ag", a, 25000000)};
    SchedOp opb[] = {AG(p, "ag", b, 25000000)};
    SchedOp idle[] = {C(p, "idle", 1)};
    sched_program_set_ops(p, 0, opa, 1);
    sched_program_set_ops(p, 2, opa, 1);
    sched_program_set_ops(p, 1, both ? opb : idle, 1);
    sched_program_set_ops(p, 3, both ? opb : idle, 1);
    SchedConfig c = sched_config_default();
    c.fabric.hw = &shared_hw;
    c.fabric.contention = contention;
    return run(p, c);
}

Test(engine, two_gathers_over_one_shared_uplink_take_twice_as_long)
{
    g_autoptr(SchedOutcome) one = two_gathers(false, true);
    g_autoptr(SchedOutcome) two = two_gathers(true, true);
    g_autoptr(SchedOutcome) off = two_gathers(true, false);
    /* 25e6 bf16 = 5e7 B per rank, 1e8 B gathered: bus bytes 5e7 over the 10 GB/s NIC at
     * NCCL's Simple rate (below the link's), T alone; two at once share the NIC: 2T */
    int64_t T = one->ranks[0].end_ns;
    cr_assert_gt(T, 5000000, "NCCL's protocol efficiency keeps it below the link figure");
    cr_assert_lt(T, 7000000);
    cr_assert(llabs(two->ranks[0].end_ns - 2 * T) <= 2, "%" PRId64, two->ranks[0].end_ns);
    cr_assert(llabs(two->ranks[1].end_ns - 2 * T) <= 2, "%" PRId64, two->ranks[1].end_ns);
    cr_assert_eq(off->ranks[0].end_ns, T);
}

/* ---- regressions from review ---- */

Test(regress, abort_after_run_ahead_uses_the_arrival_time)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "tp");
    SchedOp r0[] = {C(p, "a", 80 * US), AR(p, "ar", g, 4096)};
    SchedOp r1[] = {C(p, "a", 100 * US), C(p, "a", 100 * US),
                    sched_op_collective(SCHED_OP_ALL_REDUCE, sched_program_name(p, "ar"), g, 4096,
                                        SCHED_DTYPE_FP32)};
    sched_program_set_ops(p, 0, r0, 2);
    sched_program_set_ops(p, 1, r1, 3);
    SchedConfig c = quiet_config();
    c.on_mismatch = SCHED_MISMATCH_ABORT;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert_eq(o->end_ns, 200 * US);
    cr_assert_eq(find_diag(o, "mismatch")->time_ns, 200 * US);
    cr_assert_geq(o->ranks[1].wait_ns, 0);
    cr_assert_eq(o->ranks[0].wait_ns, 120 * US);
}

Test(regress, send_and_recv_names_may_differ)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    SchedOp r0[] = {
        sched_op_p2p(SCHED_OP_SEND, sched_program_name(p, "pp_send"), 1, 10, SCHED_DTYPE_BF16)};
    SchedOp r1[] = {
        sched_op_p2p(SCHED_OP_RECV, sched_program_name(p, "pp_recv"), 0, 10, SCHED_DTYPE_BF16)};
    sched_program_set_ops(p, 0, r0, 1);
    sched_program_set_ops(p, 1, r1, 1);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert_eq(o->diags->len, 0);
}

Test(regress, time_overflow_stops_with_a_diagnostic)
{
    g_autoptr(SchedProgram) p = sched_program_new(1);
    SchedOp ops[] = {sched_op_repeat(10000000, 1, 0), C(p, "long", 1000000000000000LL)};
    sched_program_set_ops(p, 0, ops, 2);
    g_autoptr(SchedOutcome) o = run(p, quiet_config());
    cr_assert(o->failed);
    cr_assert_not_null(find_diag(o, "time"));
    cr_assert_geq(o->end_ns, 0);
}

Test(regress, watchdog_ignores_a_crashed_first_arrival)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t g = all_group(p, "tp");
    SchedOp r0[] = {AR(p, "ar", g, 16)};
    SchedOp r1[] = {C(p, "slow", 1500LL * 1000000), AR(p, "ar", g, 16)};
    sched_program_set_ops(p, 0, r0, 1);
    sched_program_set_ops(p, 1, r1, 2);
    SchedFault f = {SCHED_FAULT_CRASH, 0, -1, 0, 0, 1.0, 500LL * 1000000, NULL};
    SchedConfig c = quiet_config();
    c.collective_timeout_ns = 1 * S;
    c.faults = &f;
    c.n_faults = 1;
    g_autoptr(SchedOutcome) o = run(p, c);
    /* no silent stop at 1 s: rank 1 arrives at 1.5 s and waits on the crashed rank */
    cr_assert_null(find_diag(o, "timeout"));
    const SchedDiag *t = find_diag(o, "deadlock");
    cr_assert_not_null(t);
    cr_assert_eq(t->rank, 0);
    cr_assert_eq(o->ranks[1].state, SCHED_RANK_BLOCKED);
}

/* Regression (issue 9): a link at 1e-15 GB/s aborted in sched_queue_push (negative time from
 * an overflowing conversion in the fabric). Now: a `time` error at the last real time, the
 * members left blocked; with the watchdog on, the watchdog fires first. */
Test(regress, vanishing_bandwidth_is_a_time_error_not_an_abort)
{
    static const NetHardware slow_hw = {
        .name = "slow",
        .devices_per_node = 1u << 20,
        .launch_latency_ns = 1000,
        .n_tiers = 1,
        .tiers = {{.name = "link", .span_devices = 0, .bw_bytes_per_s = 1e-6, .latency_ns = 0}},
    };
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t g = all_group(p, "tp");
    SchedOp ops[] = {C(p, "attn", 10 * US), AG(p, "kv_all_gather", g, 1000)};
    for (uint32_t r = 0; r < 4; r++)
        sched_program_set_ops(p, r, ops, 2);
    SchedConfig c = quiet_config();
    c.fabric.hw = &slow_hw;
    c.collective_timeout_ns = 0;
    g_autoptr(SchedOutcome) o = run(p, c);
    cr_assert(o->failed);
    const SchedDiag *d = find_diag(o, "time");
    cr_assert_not_null(d);
    cr_assert(strstr(d->message, "kv_all_gather (group tp, seq 1)"), "%s", d->message);
    cr_assert_eq(o->end_ns, 10 * US);
    cr_assert_eq(o->ranks[0].state, SCHED_RANK_BLOCKED);

    c.collective_timeout_ns = 1 * S;
    g_autoptr(SchedOutcome) w = run(p, c);
    cr_assert_not_null(find_diag(w, "timeout"));
    cr_assert_null(find_diag(w, "time"));

    /* an element count whose bytes overflow 64 bits saturates as well */
    g_autoptr(SchedProgram) q = sched_program_new(2);
    int32_t g2 = all_group(q, "tp");
    SchedOp huge[] = {AG(q, "huge", g2, UINT64_MAX / 2 + 10)}; /* x 2 bytes wraps */
    sched_program_set_ops(q, 0, huge, 1);
    sched_program_set_ops(q, 1, huge, 1);
    SchedConfig qc = quiet_config();
    qc.collective_timeout_ns = 0;
    g_autoptr(SchedOutcome) h = run(q, qc);
    cr_assert_not_null(find_diag(h, "time"));

    /* a watchdog beyond the representable range never fires and never overflows */
    c.collective_timeout_ns = INT64_MAX;
    g_autoptr(SchedOutcome) x = run(p, c);
    cr_assert_not_null(find_diag(x, "time"));
}
