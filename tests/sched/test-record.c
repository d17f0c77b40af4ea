/* tests/sched/test-record.c — the diagnosis of recorded runs (sched_diagnose_record on a record
 * filled as an importer fills it): the majority vote whatever the
 * rank order, the idle culprit, a cycle over pairwise groups with healthy ranks beside it, and
 * ranks without a record (undecided, never blamed, and a vote they could overturn decides
 * nothing). */
#include <criterion/criterion.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "../../sched/diagnose.h"

static const SchedDiag *find(const SchedOutcome *o, const char *kind)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, kind) == 0)
            return d;
    }
    return NULL;
}

/* The integer array at `member` of the detail JSON, as "a,b,c". */
static char *detail_ints(const SchedDiag *d, const char *member)
{
    g_autoptr(JsonParser) p = json_parser_new();
    cr_assert(json_parser_load_from_data(p, d->detail, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    GString *s = g_string_new(NULL);
    if (!json_object_has_member(o, member))
        return g_string_free(s, FALSE);
    JsonArray *a = json_object_get_array_member(o, member);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *n = json_array_get_element(a, i);
        gint64 v = JSON_NODE_HOLDS_OBJECT(n)
                       ? json_object_get_int_member(json_node_get_object(n), "rank")
                       : json_node_get_int(n);
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "", v);
    }
    return g_string_free(s, FALSE);
}

/* A rank's end as an importer reads it. */
typedef enum { PM_IDLE = 0, PM_BLOCKED, PM_UNKNOWN } PmState;
typedef struct {
    PmState state;
    int32_t group;
    uint64_t seq;
    uint8_t kind;
    uint64_t count;
    uint32_t name;
    int64_t arrive_ns;
    int64_t last_ns;
    uint64_t calls;
} PmRank;
typedef struct {
    int64_t timeout_ns;
    int64_t end_ns;
} PmConfig;

static PmRank blocked(int32_t group, uint64_t seq, uint64_t count, uint32_t name, int64_t at)
{
    return (PmRank){.state = PM_BLOCKED,
                    .group = group,
                    .seq = seq,
                    .kind = SCHED_OP_ALL_GATHER,
                    .count = count,
                    .name = name,
                    .arrive_ns = at,
                    .calls = 5};
}

/* Fills a record from the ranks' ends the way src/import/import-run.c does and judges it. */
static SchedOutcome *judge(const SchedProgram *p, const PmRank *ranks, const PmConfig *c)
{
    g_autoptr(SchedRunRecord) rec =
        sched_run_record_new(p->n_ranks, (const SchedGroup *const *)p->groups->pdata,
                             p->groups->len, p);
    rec->now_ns = c->end_ns;
    rec->timeout_ns = c->timeout_ns;
    rec->mismatch_policy = "recorded";
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        const PmRank *pr = &ranks[r];
        SchedRankSeen *s = &rec->ranks[r];
        if (pr->state == PM_BLOCKED) {
            SchedArrival a = {.arrive_ns = pr->arrive_ns,
                              .idx = pr->calls,
                              .pg_seq = pr->seq,
                              .count = pr->count,
                              .layer = -1,
                              .name = pr->name,
                              .root = -1,
                              .kind = pr->kind,
                              .dtype = SCHED_DTYPE_FP32};
            sched_run_record_arrive(rec, r, pr->group, pr->seq, &a);
        } else {
            s->state = pr->state == PM_IDLE ? SCHED_SEEN_IDLE : SCHED_SEEN_UNKNOWN;
            s->end_ns = pr->state == PM_IDLE ? pr->last_ns : 0;
        }
        s->evidence = pr->state == PM_UNKNOWN ? SCHED_EVIDENCE_NONE : SCHED_EVIDENCE_RECORD;
        s->calls = pr->calls;
    }
    sched_run_record_seal(rec);
    return sched_diagnose_record(rec);
}

/* seed-004: 4 DCP ranks, rank `odd` brings 153 x 64 where the others bring 160 x 64. */
static SchedOutcome *seed004(uint32_t odd, bool rank3_missing)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t all[] = {0, 1, 2, 3};
    int32_t g = sched_program_add_group(p, "1", all, 4);
    uint32_t name = sched_program_name(p, "nccl:_all_gather_base");
    PmRank r[4];
    for (uint32_t i = 0; i < 4; i++)
        r[i] = blocked(g, 4, i == odd ? 153 * 64 : 160 * 64, name, 1000 + i);
    if (rank3_missing)
        r[3] = (PmRank){.state = PM_UNKNOWN};
    PmConfig c = {.timeout_ns = 600000000000LL, .end_ns = 2000};
    return judge(p, r, &c);
}

Test(postmortem, seed004_majority_names_the_odd_rank)
{
    for (uint32_t odd = 0; odd < 4; odd++) {
        g_autoptr(SchedOutcome) o = seed004(odd, false);
        cr_assert(o->failed);
        const SchedDiag *m = find(o, "mismatch");
        cr_assert_not_null(m);
        cr_assert_eq(m->rank, (int32_t)odd);
        cr_assert_not_null(strstr(m->message, "9792"), "%s", m->message);
        cr_assert_not_null(strstr(m->message, "10240"), "%s", m->message);
        g_autofree char *c = detail_ints(m, "culprits");
        g_autofree char *want = g_strdup_printf("%u", odd);
        cr_assert_str_eq(c, want);
        const SchedDiag *d = find(o, "deadlock");
        cr_assert_not_null(d);
        g_autofree char *dc = detail_ints(d, "culprits");
        cr_assert_str_eq(dc, want);
        for (uint32_t r = 0; r < 4; r++)
            cr_assert_eq(o->ranks[r].state, SCHED_RANK_BLOCKED);
    }
}

Test(postmortem, missing_rank_can_overturn_a_two_to_one_vote)
{
    /* Ranks 1-2 bring 160 x 64, rank 0 153 x 64, rank 3 unknown: had rank 3 brought 153 x 64
     * the vote would tie, so it decides nothing and nobody is blamed. */
    g_autoptr(SchedOutcome) o = seed004(0, true);
    const SchedDiag *m = find(o, "mismatch");
    cr_assert_not_null(m);
    cr_assert_not_null(strstr(m->message, "cannot decide"), "%s", m->message);
    g_autofree char *c = detail_ints(m, "culprits");
    cr_assert_str_eq(c, "");
    g_autofree char *u = detail_ints(m, "unknown");
    cr_assert_str_eq(u, "3");
    const SchedDiag *d = find(o, "deadlock");
    g_autofree char *du = detail_ints(d, "unknown");
    cr_assert_str_eq(du, "3");
    cr_assert_not_null(strstr(d->message, "undecided: rank 3"), "%s", d->message);
    cr_assert_eq(o->ranks[3].state, SCHED_RANK_UNKNOWN);
}

Test(postmortem, a_lead_the_unknown_cannot_overturn_decides)
{
    /* 8 members: 6 bring A, 1 brings B, 1 unknown: 6 > 1 + 1, so the B rank is the culprit. */
    g_autoptr(SchedProgram) p = sched_program_new(8);
    int32_t all[] = {0, 1, 2, 3, 4, 5, 6, 7};
    int32_t g = sched_program_add_group(p, "tp", all, 8);
    uint32_t name = sched_program_name(p, "nccl:all_reduce");
    PmRank r[8];
    for (uint32_t i = 0; i < 8; i++)
        r[i] = blocked(g, 9, i == 5 ? 7 : 8, name, 10);
    r[7] = (PmRank){.state = PM_UNKNOWN};
    PmConfig c = {.end_ns = 20};
    g_autoptr(SchedOutcome) o = judge(p, r, &c);
    const SchedDiag *m = find(o, "mismatch");
    cr_assert_not_null(m);
    cr_assert_eq(m->rank, 5);
    g_autofree char *cul = detail_ints(m, "culprits");
    cr_assert_str_eq(cul, "5");
}

Test(postmortem, one_call_fewer_blames_the_idle_rank)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t all[] = {0, 1, 2, 3};
    int32_t g = sched_program_add_group(p, "1", all, 4);
    uint32_t name = sched_program_name(p, "nccl:all_reduce");
    PmRank r[4];
    for (uint32_t i = 0; i < 4; i++)
        r[i] = blocked(g, 6, 57344, name, 100);
    r[2] = (PmRank){.state = PM_IDLE, .last_ns = 90, .calls = 5};
    PmConfig c = {.end_ns = 200};
    g_autoptr(SchedOutcome) o = judge(p, r, &c);
    cr_assert_null(find(o, "mismatch"));
    const SchedDiag *d = find(o, "deadlock");
    cr_assert_not_null(d);
    cr_assert_eq(d->rank, 2);
    g_autofree char *c2 = detail_ints(d, "culprits");
    cr_assert_str_eq(c2, "2");
    cr_assert_not_null(strstr(d->message, "idle"), "%s", d->message);
    cr_assert_eq(o->ranks[2].state, SCHED_RANK_DONE);
}

Test(postmortem, cycle_over_pairwise_groups_blames_nobody_healthy)
{
    g_autoptr(SchedProgram) p = sched_program_new(8);
    int32_t pairs[4][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
    int32_t gid[4];
    for (int i = 0; i < 4; i++) {
        g_autofree char *nm = g_strdup_printf("%d", i + 1);
        gid[i] = sched_program_add_group(p, nm, pairs[i], 2);
    }
    int32_t healthy[] = {4, 5, 6, 7};
    sched_program_add_group(p, "5", healthy, 4);
    uint32_t name = sched_program_name(p, "nccl:all_reduce");
    PmRank r[8];
    for (uint32_t i = 0; i < 4; i++) {
        r[i] = blocked(gid[i], 1, 1024, name, 50);
        r[i].kind = SCHED_OP_ALL_REDUCE;
    }
    for (uint32_t i = 4; i < 8; i++)
        r[i] = (PmRank){.state = PM_IDLE, .last_ns = 40, .calls = 4};
    PmConfig c = {.end_ns = 100};
    g_autoptr(SchedOutcome) o = judge(p, r, &c);
    cr_assert_null(find(o, "mismatch"));
    const SchedDiag *d = find(o, "deadlock");
    cr_assert_not_null(d);
    g_autofree char *cul = detail_ints(d, "culprits");
    cr_assert_str_eq(cul, "");
    g_autoptr(JsonParser) jp = json_parser_new();
    cr_assert(json_parser_load_from_data(jp, d->detail, -1, NULL));
    JsonArray *cycles =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(jp)), "cycles");
    cr_assert_eq(json_array_get_length(cycles), 1);
    JsonArray *c0 = json_array_get_array_element(cycles, 0);
    cr_assert_eq(json_array_get_length(c0), 4);
    for (guint i = 0; i < 4; i++)
        cr_assert_eq(json_array_get_int_element(c0, i), (gint64)i);
    cr_assert_not_null(strstr(d->message, "cycle: ranks 0-3"), "%s", d->message);
}

Test(postmortem, nothing_blocked_is_no_hang)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t all[] = {0, 1};
    sched_program_add_group(p, "0", all, 2);
    PmRank r[2] = {{.state = PM_IDLE, .calls = 3}, {.state = PM_IDLE, .calls = 3}};
    PmConfig c = {0};
    g_autoptr(SchedOutcome) o = judge(p, r, &c);
    cr_assert_not(o->failed);
    cr_assert_not_null(find(o, "no_hang"));
}

Test(detail, the_typed_reader_reads_what_diagnosis_wrote)
{
    g_autoptr(SchedOutcome) o = seed004(1, false);
    const SchedDiag *m = find(o, "mismatch");
    g_autoptr(SchedDetail) md = sched_detail_parse(m->detail);
    cr_assert_not_null(md);
    cr_assert_str_eq(md->group, "1");
    cr_assert(md->has_seq);
    cr_assert_eq(md->seq, 4);
    cr_assert_str_eq(md->policy, "recorded");
    cr_assert_eq(md->signatures->len, 2);
    const SchedDetailSig *maj = &g_array_index(md->signatures, SchedDetailSig, md->majority);
    cr_assert_eq(maj->count, 160 * 64);
    cr_assert_eq(maj->ranks->len, 3);
    cr_assert_eq(maj->root, -1);
    cr_assert_eq(md->culprits->len, 1);
    cr_assert_eq(g_array_index(md->culprits, SchedDetailCulprit, 0).rank, 1);
    cr_assert_null(g_array_index(md->culprits, SchedDetailCulprit, 0).reason);

    const SchedDiag *d = find(o, "deadlock");
    g_autoptr(SchedDetail) dd = sched_detail_parse(d->detail);
    cr_assert_not_null(dd);
    cr_assert_eq(dd->instances->len, 1);
    const SchedDetailInstance *in = &g_array_index(dd->instances, SchedDetailInstance, 0);
    cr_assert_str_eq(in->group, "1");
    cr_assert_eq(in->seq, 4);
    cr_assert(in->mismatched);
    cr_assert_eq(in->arrived->len, 4);
    cr_assert_eq(dd->blocked->len, 4);
    cr_assert_eq(g_array_index(dd->blocked, SchedDetailBlocked, 0).instance, 0);
    cr_assert_eq(dd->culprits->len, 1);
    cr_assert_str_eq(g_array_index(dd->culprits, SchedDetailCulprit, 0).reason, "mismatch");
    cr_assert_eq(dd->cycles->len, 0);

    cr_assert_null(sched_detail_parse(NULL));
    cr_assert_null(sched_detail_parse("[1, 2]"));
    cr_assert_null(sched_detail_parse("not json"));
}

/* ---- issue 24: what a record shows beyond each rank's blocking point ---- */

static SchedArrival arrival(uint8_t kind, uint64_t seq, uint64_t count, uint32_t name)
{
    return (SchedArrival){.arrive_ns = 10,
                          .pg_seq = seq,
                          .count = count,
                          .layer = -1,
                          .name = name,
                          .root = -1,
                          .kind = kind,
                          .dtype = SCHED_DTYPE_FP32};
}

static SchedRunRecord *record_for(const SchedProgram *p)
{
    SchedRunRecord *rec = sched_run_record_new(
        p->n_ranks, (const SchedGroup *const *)p->groups->pdata, p->groups->len, p);
    rec->now_ns = 1000;
    rec->mismatch_policy = "recorded";
    for (uint32_t r = 0; r < p->n_ranks; r++)
        rec->ranks[r].evidence = SCHED_EVIDENCE_RECORD;
    return rec;
}

/* NVIDIA/nccl#899: rank 0 launches on X then Y, rank 1 on Y then X, one stream each. Every call
 * is matched, yet each waits for the other: a cycle across the two communicators, both calls
 * named, nobody blamed. */
Test(postmortem, opposite_launch_orders_on_two_communicators_are_an_ordering_cycle)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t both[] = {0, 1};
    int32_t x = sched_program_add_group(p, "comm X", both, 2);
    int32_t y = sched_program_add_group(p, "comm Y", both, 2);
    uint32_t ar = sched_program_name(p, "AllReduce");
    g_autoptr(SchedRunRecord) rec = record_for(p);
    SchedArrival a = arrival(SCHED_OP_ALL_REDUCE, 1, 1024, ar);
    sched_run_record_arrive(rec, 0, x, 1, &a);
    sched_run_record_arrive(rec, 1, y, 1, &a);
    cr_assert_not_null(sched_run_record_note(rec, 1, x, 1, false, NULL));
    cr_assert_not_null(sched_run_record_note(rec, 0, y, 1, false, NULL));
    sched_run_record_seal(rec);
    g_autoptr(SchedOutcome) o = sched_diagnose_record(rec);
    const SchedDiag *d = find(o, "deadlock");
    cr_assert_not_null(d);
    cr_assert_null(find(o, "mismatch"));
    g_autofree char *cul = detail_ints(d, "culprits");
    cr_assert_str_eq(cul, "");
    cr_assert_not_null(strstr(d->message, "cycle: ranks 0-1"), "%s", d->message);
    cr_assert_not_null(strstr(d->message, "rank 0 waits in AllReduce (group comm X, seq 1) for "
                                          "rank 1"),
                       "%s", d->message);
    cr_assert_not_null(strstr(d->message, "which waits in AllReduce (group comm Y, seq 1) for "
                                          "rank 0"),
                       "%s", d->message);
    cr_assert_not_null(strstr(d->message, "cross-communicator ordering deadlock"), "%s",
                       d->message);
}

/* The same two ranks blocked on two pairwise groups without evidence that the waited-for rank
 * called the call too: a cycle, but not said to be a matched ordering deadlock. */
Test(postmortem, a_cycle_without_queued_calls_is_not_called_matched)
{
    g_autoptr(SchedProgram) p = sched_program_new(2);
    int32_t both[] = {0, 1};
    int32_t x = sched_program_add_group(p, "comm X", both, 2);
    int32_t y = sched_program_add_group(p, "comm Y", both, 2);
    uint32_t ar = sched_program_name(p, "AllReduce");
    g_autoptr(SchedRunRecord) rec = record_for(p);
    SchedArrival a = arrival(SCHED_OP_ALL_REDUCE, 1, 1024, ar);
    sched_run_record_arrive(rec, 0, x, 1, &a);
    sched_run_record_arrive(rec, 1, y, 1, &a);
    sched_run_record_seal(rec);
    g_autoptr(SchedOutcome) o = sched_diagnose_record(rec);
    const SchedDiag *d = find(o, "deadlock");
    cr_assert_not_null(d);
    cr_assert_not_null(strstr(d->message, "cycle: ranks 0-1"), "%s", d->message);
    cr_assert_null(strstr(d->message, "ordering deadlock"), "%s", d->message);
}

/* vllm#23448: rank 0 completed SeqNum 5729 and waits in 5730; rank 3 never finished 5729. Rank
 * 3 is one call behind: the culprit, and no cycle between them. */
Test(postmortem, one_call_behind_is_the_culprit_not_a_cycle)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t pair[] = {0, 3};
    int32_t g = sched_program_add_group(p, "4", pair, 2);
    uint32_t bc = sched_program_name(p, "BROADCAST");
    g_autoptr(SchedRunRecord) rec = record_for(p);
    rec->ranks[1].state = rec->ranks[2].state = SCHED_SEEN_UNKNOWN;
    rec->ranks[1].evidence = rec->ranks[2].evidence = SCHED_EVIDENCE_NONE;
    SchedArrival a0 = arrival(SCHED_OP_BROADCAST, 5730, 3612672, bc);
    SchedArrival a3 = arrival(SCHED_OP_BROADCAST, 5729, 3612672, bc);
    sched_run_record_arrive(rec, 0, g, 5730, &a0);
    sched_run_record_arrive(rec, 3, g, 5729, &a3);
    cr_assert_not_null(sched_run_record_note(rec, 0, g, 5729, true, NULL));
    cr_assert_null(sched_run_record_note(rec, 0, g, 7, true, NULL), "no instance 7");
    sched_run_record_seal(rec);
    g_autoptr(SchedOutcome) o = sched_diagnose_record(rec);
    const SchedDiag *d = find(o, "deadlock");
    cr_assert_not_null(d);
    g_autofree char *cul = detail_ints(d, "culprits");
    cr_assert_str_eq(cul, "3", "%s", d->message);
    g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
    cr_assert_eq(det->cycles->len, 0, "%s", d->message);
    cr_assert_str_eq(g_array_index(det->culprits, SchedDetailCulprit, 0).reason, "behind");
    cr_assert_not_null(strstr(d->message, "never finished a call its peers completed"), "%s",
                       d->message);
}

/* Without the note that rank 0 completed 5729, the same ends look like a cycle. */
Test(postmortem, without_the_completed_side_one_call_apart_reads_as_a_cycle)
{
    g_autoptr(SchedProgram) p = sched_program_new(4);
    int32_t pair[] = {0, 3};
    int32_t g = sched_program_add_group(p, "4", pair, 2);
    uint32_t bc = sched_program_name(p, "BROADCAST");
    g_autoptr(SchedRunRecord) rec = record_for(p);
    SchedArrival a0 = arrival(SCHED_OP_BROADCAST, 5730, 3612672, bc);
    SchedArrival a3 = arrival(SCHED_OP_BROADCAST, 5729, 3612672, bc);
    sched_run_record_arrive(rec, 0, g, 5730, &a0);
    sched_run_record_arrive(rec, 3, g, 5729, &a3);
    sched_run_record_seal(rec);
    g_autoptr(SchedOutcome) o = sched_diagnose_record(rec);
    g_autoptr(SchedDetail) det = sched_detail_parse(find(o, "deadlock")->detail);
    cr_assert_eq(det->cycles->len, 1);
    cr_assert_eq(det->culprits->len, 0);
}

/* A member that completed its side (its signature not on record) does not vote: rank 0 brings
 * 1024, rank 1 brings 2048, rank 2 completed the call — a tie, nobody blamed by vote (its copied
 * signature would otherwise make rank 1 the minority). */
Test(postmortem, a_completed_side_does_not_vote)
{
    g_autoptr(SchedProgram) p = sched_program_new(3);
    int32_t all[] = {0, 1, 2};
    int32_t g = sched_program_add_group(p, "0", all, 3);
    uint32_t ar = sched_program_name(p, "AllReduce");
    g_autoptr(SchedRunRecord) rec = record_for(p);
    SchedArrival a0 = arrival(SCHED_OP_ALL_REDUCE, 5, 1024, ar);
    SchedArrival a1 = arrival(SCHED_OP_ALL_REDUCE, 5, 2048, ar);
    sched_run_record_arrive(rec, 0, g, 5, &a0);
    sched_run_record_arrive(rec, 1, g, 5, &a1);
    rec->ranks[2].state = SCHED_SEEN_IDLE;
    cr_assert_not_null(sched_run_record_note(rec, 2, g, 5, true, NULL));
    sched_run_record_seal(rec);
    g_autoptr(SchedOutcome) o = sched_diagnose_record(rec);
    const SchedDiag *m = find(o, "mismatch");
    cr_assert_not_null(m);
    g_autofree char *cul = detail_ints(m, "culprits");
    cr_assert_str_eq(cul, "", "%s", m->message);
}

/* Rank sets for people: runs, strided runs (a DP group across TP groups of 8), the cap. */
Test(format, ranks_brief)
{
    int32_t dp[128];
    uint32_t n = 0;
    for (int32_t r = 0; r < 1024; r += 8)
        if (r != 608)
            dp[n++] = r;
    g_autofree char *a = sched_format_ranks_brief(dp, n, 0);
    cr_assert_str_eq(a, "0,8,...,600,616,624,...,1016");
    int32_t mixed[] = {0, 1, 2, 3, 5, 9, 20, 30, 40, 50, 51};
    g_autofree char *b = sched_format_ranks_brief(mixed, G_N_ELEMENTS(mixed), 0);
    cr_assert_str_eq(b, "0-3,5,9,20,30,...,50,51");
    g_autofree char *c = sched_format_ranks(mixed, G_N_ELEMENTS(mixed));
    cr_assert_str_eq(c, "0-3,5,9,20,30,40,50-51", "the parseable form is unchanged");
    int32_t odd[] = {1, 4, 6, 11, 13, 17, 23, 25};
    g_autofree char *d = sched_format_ranks_brief(odd, G_N_ELEMENTS(odd), 10);
    cr_assert_str_eq(d, "1,4,6,11,... (8 ranks)");
}
