/* tests/src/import/test-import-run.c — from an ImportSet to a verdict (import-run.c and
 * import-verdict.c), on sets built here the way the readers fill them: the ordering deadlock of
 * NVIDIA/nccl#899 from enqueue-only lines with their streams; ranks one call apart (vllm#23448)
 * from watchdog lines and PG status; watchdog verdicts with no call; an idle rank known only
 * from its PG status; WARN lines, EI0002 wait-for edges and vLLM symptoms as findings of their
 * own; and the inconclusive outcome (never HEALTHY without evidence) with what is missing and
 * what to collect. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../../sched/diagnose.h"
#include "../../../src/import/import.h"
#include "../run-binary.h"

static const SchedDiag *find(const SchedOutcome *o, const char *kind)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, kind) == 0)
            return d;
    }
    return NULL;
}

static uint32_t group(ImportSet *s, const char *name, const int32_t *ranks, uint32_t n)
{
    return import_set_group(s, name, NULL, ranks, n, false);
}

static ImportRank *present(ImportSet *s, int32_t r)
{
    ImportRank *ir = import_set_rank(s, r);
    if (!ir->present) {
        ir->present = true;
        ir->path = g_strdup("pasted.log");
    }
    return ir;
}

/* A call of rank r (appended in order). */
static void call(ImportSet *s, int32_t r, uint32_t g, uint64_t seq, SchedOpKind kind,
                 uint64_t count, ImportState st, uint64_t stream)
{
    ImportRank *ir = present(s, r);
    ImportEntry e = {
        .group = g,
        .seq = seq,
        .order = ir->entries->len,
        .kind = kind,
        .dtype = SCHED_DTYPE_FP32,
        .dtype_known = true,
        .count = count,
        .root = -1,
        .peer = -1,
        .name = import_set_string(s, sched_op_kind_name(kind)),
        .state = st,
        .created_ns = -1,
        .completed_ns = -1,
        .stream = stream,
    };
    g_array_append_val(ir->entries, e);
}

static void status(ImportSet *s, int32_t r, uint32_t g, uint64_t enq, uint64_t done)
{
    ImportRank *ir = present(s, r);
    ImportPgStatus ps = {.group = g, .last_enqueued = enq, .last_completed = done};
    g_array_append_val(ir->pg_status, ps);
}

static void finding(ImportSet *s, ImportFindingKind kind, int32_t rank, int32_t peer, int32_t g,
                    uint64_t seq, const char *what, const char *text)
{
    ImportFinding f = {
        .kind = kind,
        .rank = rank,
        .peer = peer,
        .group = g,
        .seq = seq,
        .what = what,
        .text = import_set_string(s, text),
        .source = g_strdup("pasted.log:7"),
    };
    g_array_append_val(s->findings, f);
}

/* NVIDIA/nccl#899: rank 0 launches AllReduce on comm X then on comm Y, rank 1 on Y then X, all on
 * one stream each. Every call is matched by every member, yet neither completes: a deadlock
 * cycle naming both calls, nobody blamed, exit 3. */
Test(import_run, opposite_orders_on_one_stream_are_an_ordering_deadlock)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_NCCL);
    int32_t both[] = {0, 1};
    uint32_t x = group(s, "comm 0xaaa", both, 2), y = group(s, "comm 0xbbb", both, 2);
    call(s, 0, x, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0x7f01);
    call(s, 0, y, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0x7f01);
    call(s, 1, y, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0x9e02);
    call(s, 1, x, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0x9e02);
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    const SchedDiag *d = find(run->outcome, "deadlock");
    cr_assert_not_null(d);
    cr_assert_not_null(strstr(d->message, "cross-communicator ordering deadlock"), "%s",
                       d->message);
    cr_assert_not_null(strstr(d->message, "(group comm 0xaaa, seq 1)"), "%s", d->message);
    cr_assert_not_null(strstr(d->message, "(group comm 0xbbb, seq 1)"), "%s", d->message);
    g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
    cr_assert_eq(det->culprits->len, 0);
    cr_assert_eq(det->cycles->len, 1);
}

/* The same lines without streams: nothing says the calls share one, so no order across
 * communicators is assumed; every call matched, completions unseen: inconclusive, never
 * healthy. */
Test(import_run, without_streams_matched_enqueues_are_inconclusive)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_NCCL);
    int32_t both[] = {0, 1};
    uint32_t x = group(s, "comm 0xaaa", both, 2), y = group(s, "comm 0xbbb", both, 2);
    call(s, 0, x, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0);
    call(s, 0, y, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0);
    call(s, 1, y, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0);
    call(s, 1, x, 1, SCHED_OP_ALL_REDUCE, 1024, IMPORT_STATE_UNKNOWN, 0);
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_INCONCLUSIVE);
    cr_assert_null(find(run->outcome, "no_hang"));
    const SchedDiag *d = find(run->outcome, "inconclusive");
    cr_assert_not_null(d);
    cr_assert_not_null(strstr(d->message, "enqueue"), "%s", d->message);
    cr_assert_not_null(strstr(d->message, "TORCH_NCCL_TRACE_BUFFER_SIZE"), "%s", d->message);
    cr_assert_str_eq(import_verdict_status(run->verdict), "inconclusive");
}

/* vllm#23448: rank 0 times out at SeqNum 5730 (its PG status: last completed 5729), rank 3 at
 * 5729 (last completed 5728). Rank 3 never finished the broadcast rank 0 completed: one call
 * behind, the culprit; no cycle between them. */
Test(import_run, one_call_apart_blames_the_rank_behind)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_WATCHDOG);
    int32_t pair[] = {0, 3};
    uint32_t g = group(s, "4", pair, 2);
    call(s, 0, g, 5730, SCHED_OP_BROADCAST, 3612672, IMPORT_STATE_STARTED, 0);
    status(s, 0, g, 6464, 5729);
    call(s, 3, g, 5729, SCHED_OP_BROADCAST, 3612672, IMPORT_STATE_STARTED, 0);
    status(s, 3, g, 6464, 5728);
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    const SchedDiag *d = find(run->outcome, "deadlock");
    cr_assert_not_null(d);
    g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
    cr_assert_eq(det->cycles->len, 0, "%s", d->message);
    cr_assert_eq(det->culprits->len, 1, "%s", d->message);
    cr_assert_eq(g_array_index(det->culprits, SchedDetailCulprit, 0).rank, 3);
    cr_assert_str_eq(g_array_index(det->culprits, SchedDetailCulprit, 0).reason, "behind");
}

/* Watchdog verdicts with no call read (the readers left only findings): ranks 0-2 blocked in
 * SeqNum 1 (ALLREDUCE, 128 elements, from the line); rank 3 of the 4-rank group left no line.
 * A hang, rank 3 a candidate with its reason, and where to search. */
Test(import_run, watchdog_lines_alone_place_the_victims_and_name_the_silent_rank)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_WATCHDOG);
    int32_t tp[] = {0, 1, 2, 3};
    uint32_t g = group(s, "0", tp, 4);
    for (int32_t r = 0; r < 3; r++) {
        present(s, r);
        finding(s, IMPORT_FINDING_TIMEOUT, r, -1, (int32_t)g, 1, "watchdog",
                "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
                "OpType=ALLREDUCE, NumelIn=128, NumelOut=128, Timeout(ms)=600000)");
    }
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    cr_assert_eq(run->outcome->ranks[0].state, SCHED_RANK_BLOCKED);
    cr_assert_eq(run->outcome->ranks[3].state, SCHED_RANK_UNKNOWN);
    /* the calls the lines name are rows (collectives, match) */
    cr_assert_eq(run->records->len, 3);
    for (guint i = 0; i < 3; i++) {
        const SchedRecord *rec = &g_array_index(run->records, SchedRecord, i);
        cr_assert_eq(rec->seq, 1);
        cr_assert_eq(rec->count, 128);
        cr_assert_eq(rec->kind, SCHED_OP_ALL_REDUCE);
        cr_assert_eq(rec->end_ns, -1);
    }
    const SchedDiag *c = find(run->outcome, "candidates");
    cr_assert_not_null(c);
    cr_assert_not_null(strstr(c->message, "rank 3:"), "%s", c->message);
    cr_assert_not_null(strstr(c->message, "SeqNum=1"), "%s", c->message);
    /* the watchdog lines are not an empty ring buffer */
    for (guint i = 0; i < run->notes->len; i++)
        cr_assert_null(strstr(g_ptr_array_index(run->notes, i), "ring buffer"), "%s",
                       (char *)g_ptr_array_index(run->notes, i));
}

/* A rank whose only line is its PG status with nothing in flight (last enqueued = last
 * completed = 7) while its peers time out in call 8: it never enqueued call 8 — idle, the
 * culprit. */
Test(import_run, pg_status_with_nothing_in_flight_makes_the_idle_culprit)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_WATCHDOG);
    int32_t three[] = {0, 1, 2};
    uint32_t g = group(s, "0", three, 3);
    call(s, 0, g, 8, SCHED_OP_ALL_REDUCE, 64, IMPORT_STATE_SCHEDULED, 0);
    call(s, 1, g, 8, SCHED_OP_ALL_REDUCE, 64, IMPORT_STATE_SCHEDULED, 0);
    status(s, 2, g, 7, 7);
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    g_autoptr(SchedDetail) det = sched_detail_parse(find(run->outcome, "deadlock")->detail);
    cr_assert_eq(det->culprits->len, 1);
    cr_assert_eq(g_array_index(det->culprits, SchedDetailCulprit, 0).rank, 2);
    cr_assert_str_eq(g_array_index(det->culprits, SchedDetailCulprit, 0).reason, "idle");
}

/* vllm#44185: only vLLM's shm_broadcast lines. A symptom quoted, and inconclusive: no
 * collective or rank is named. */
Test(import_run, symptoms_alone_are_inconclusive_and_quoted)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_VLLM);
    for (int i = 0; i < 3; i++)
        finding(s, IMPORT_FINDING_SYMPTOM, -1, -1, -1, 0, "shm_broadcast",
                "No available shared memory broadcast block found in 60 seconds.");
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_INCONCLUSIVE);
    const SchedDiag *sy = find(run->outcome, "symptom");
    cr_assert_not_null(sy);
    cr_assert_not_null(strstr(sy->message, "pasted.log:7: \"No available shared memory"),
                       "%s", sy->message);
    cr_assert_not_null(strstr(sy->message, "2 more"), "%s", sy->message);
    const SchedDiag *in = find(run->outcome, "inconclusive");
    cr_assert_not_null(in);
    cr_assert_not_null(strstr(in->message, "NCCL_DEBUG_SUBSYS=COLL"), "%s", in->message);
    cr_assert_not_null(strstr(in->message, "no collective call was read"), "%s", in->message);
}

/* EI0002: ranks 25 and 26 wait for the Notify record of rank 24, whose own log was read and
 * shows no wait: the sink of the wait-for graph, the culprit. */
Test(import_run, ei0002_edges_end_at_the_culprit)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_CANN);
    present(s, 24);
    present(s, 25);
    present(s, 26);
    finding(s, IMPORT_FINDING_WAIT_EDGE, 25, 24, -1, 0, "notify",
            "EI0002: The Notify register has not received the Notify record from remote rank: "
            "[24]");
    finding(s, IMPORT_FINDING_WAIT_EDGE, 26, 24, -1, 0, "notify",
            "EI0002: The Notify register has not received the Notify record from remote rank: "
            "[24]");
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    const SchedDiag *w = find(run->outcome, "wait_for");
    cr_assert_not_null(w);
    cr_assert_eq(w->rank, 24, "%s", w->message);
    cr_assert_not_null(strstr(w->message, "rank 24 is waited for and waits for nobody"), "%s",
                       w->message);
}

/* Two ranks waiting for each other (EI0002 both ways): a cycle, nobody the culprit. */
Test(import_run, ei0002_edges_both_ways_are_a_cycle)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_CANN);
    present(s, 0);
    present(s, 1);
    finding(s, IMPORT_FINDING_WAIT_EDGE, 0, 1, -1, 0, "notify", "EI0002 ... remote rank: [1]");
    finding(s, IMPORT_FINDING_WAIT_EDGE, 1, 0, -1, 0, "notify", "EI0002 ... remote rank: [0]");
    g_autoptr(ImportRun) run = import_run_build(s);
    const SchedDiag *w = find(run->outcome, "wait_for");
    cr_assert_not_null(w);
    cr_assert_eq(w->rank, -1);
    cr_assert_not_null(strstr(w->message, "cycle: ranks 0-1"), "%s", w->message);
}

/* nccl#214: NCCL's "Mismatched collective detected ... around rank 9": the line quoted, a hang,
 * rank 9 a candidate. */
Test(import_run, a_warn_line_is_a_finding_and_names_a_candidate)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_NCCL);
    present(s, 8);
    finding(s, IMPORT_FINDING_WARN, 8, 9, -1, 0, "mismatch",
            "init.cu:1197 NCCL WARN Mismatched collective detected, please check your "
            "collective calls at and around rank 9");
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    const SchedDiag *w = find(run->outcome, "nccl_warn");
    cr_assert_not_null(w);
    cr_assert_not_null(strstr(w->message, "Mismatched collective detected"), "%s", w->message);
    const SchedDiag *c = find(run->outcome, "candidates");
    cr_assert_not_null(c);
    cr_assert_not_null(strstr(c->message, "rank 9:"), "%s", c->message);
}

/* A Flight Recorder set where every rank's calls completed: healthy. The same with a group whose
 * evidence says 4 members while 2 were seen: inconclusive, naming the group. */
Test(import_run, healthy_only_with_every_member_seen)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_FR);
    int32_t both[] = {0, 1};
    uint32_t g = group(s, "0", both, 2);
    for (int32_t r = 0; r < 2; r++)
        for (uint64_t q = 1; q <= 3; q++)
            call(s, r, g, q, SCHED_OP_ALL_REDUCE, 8, IMPORT_STATE_COMPLETED, 0);
    {
        g_autoptr(ImportRun) run = import_run_build(s);
        cr_assert_eq(run->verdict, IMPORT_VERDICT_HEALTHY);
        cr_assert_not_null(find(run->outcome, "no_hang"));
    }
    ((ImportGroup *)g_ptr_array_index(s->groups, g))->size = 4;
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_INCONCLUSIVE);
    const SchedDiag *in = find(run->outcome, "inconclusive");
    cr_assert_not_null(in);
    cr_assert_not_null(strstr(in->message, "group 0 has 4 members, the lines show 2"), "%s",
                       in->message);
}

/* Completed calls that disagree (PyTorch's fr_trace test case 4: a broadcast of 5x5 on rank 0,
 * 4x4 on rank 1): a mismatch though nothing hangs; and a call completed on one rank that the
 * other, whose record covers the group, never made: unmatched. */
Test(import_run, completed_calls_are_compared_when_nothing_hangs)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_FR);
    int32_t both[] = {0, 1};
    uint32_t g = group(s, "0", both, 2);
    call(s, 0, g, 1, SCHED_OP_BROADCAST, 16, IMPORT_STATE_COMPLETED, 0);
    call(s, 1, g, 1, SCHED_OP_BROADCAST, 16, IMPORT_STATE_COMPLETED, 0);
    call(s, 0, g, 2, SCHED_OP_BROADCAST, 25, IMPORT_STATE_COMPLETED, 0);
    call(s, 1, g, 2, SCHED_OP_BROADCAST, 16, IMPORT_STATE_COMPLETED, 0);
    call(s, 1, g, 3, SCHED_OP_BROADCAST, 16, IMPORT_STATE_COMPLETED, 0);
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    const SchedDiag *m = find(run->outcome, "mismatch");
    cr_assert_not_null(m);
    cr_assert_eq(m->seq, 2);
    g_autoptr(SchedDetail) det = sched_detail_parse(m->detail);
    cr_assert_not_null(det);
    cr_assert_eq(det->signatures->len, 2);
    cr_assert_eq(det->majority, -1, "1 rank against 1: a tie");
    cr_assert_str_eq(det->group, "0");
    const SchedDiag *u = find(run->outcome, "unmatched");
    cr_assert_not_null(u);
    cr_assert_eq(u->rank, 0);
    cr_assert_eq(u->seq, 3);
    cr_assert_null(find(run->outcome, "no_hang"));
}

/* Each rank's evidence is named in a note; ranks with the same phrase folded. */
Test(import_run, each_ranks_evidence_is_noted)
{
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_WATCHDOG);
    int32_t tp[] = {0, 1, 2, 3};
    uint32_t g = group(s, "2", tp, 4);
    call(s, 0, g, 9, SCHED_OP_ALL_REDUCE, 8, IMPORT_STATE_STARTED, 0);
    call(s, 1, g, 9, SCHED_OP_ALL_REDUCE, 8, IMPORT_STATE_STARTED, 0);
    present(s, 0)->evidence = g_strdup("watchdog lines, PG 2");
    present(s, 1)->evidence = g_strdup("watchdog lines, PG 2");
    g_autoptr(ImportRun) run = import_run_build(s);
    bool found = false;
    for (guint i = 0; i < run->notes->len; i++) {
        const char *n = g_ptr_array_index(run->notes, i);
        if (g_str_has_prefix(n, "each rank's evidence")) {
            found = true;
            cr_assert_not_null(strstr(n, "ranks 0-1: watchdog lines, PG 2 (pasted.log)"), "%s",
                               n);
            cr_assert_not_null(strstr(n, "ranks 2-3: nothing read"), "%s", n);
        }
    }
    cr_assert(found);
}

/* The story of an imported run through the binary: an inconclusive import exits 4, is listed
 * and reported INCONCLUSIVE; explain of any import names each rank's evidence, never says
 * "simulated", and for a hang says where to look next. */
Test(import_run, imported_runs_are_told_as_recorded)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-run-XXXXXX", NULL);
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    const char *imp1[] = {"import", "--db", db, "-q",
                          RANKSIM_SOURCE_DIR "/tests/data/import/fr-other/empty-buffers", NULL};
    Result r = ranksim(imp1);
    cr_assert_eq(r.code, 4, "%s", r.err);
    result_clear(&r);
    const char *rep[] = {"report", "--db", db, "1", NULL};
    r = ranksim(rep);
    cr_assert_not_null(strstr(r.out, "INCONCLUSIVE"), "%s", r.out);
    cr_assert_null(strstr(r.out, "HEALTHY"), "%s", r.out);
    result_clear(&r);
    const char *runs[] = {"runs", "--db", db, NULL};
    r = ranksim(runs);
    cr_assert_not_null(strstr(r.out, "INCONCLUSIVE"), "%s", r.out);
    result_clear(&r);
    const char *imp2[] = {"import", "--db", db, "-q",
                          RANKSIM_SOURCE_DIR "/tests/data/import/fr-other/torchcomms", NULL};
    r = ranksim(imp2);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    for (int id = 1; id <= 2; id++) {
        g_autofree char *ids = g_strdup_printf("%d", id);
        const char *ex[] = {"explain", "--db", db, ids, NULL};
        r = ranksim(ex);
        cr_assert_eq(r.code, 0, "%s", r.err);
        cr_assert_null(strstr(r.out, "simulated"), "%s", r.out);
        cr_assert_not_null(strstr(r.out, "evidence (what was read of each rank)"), "%s", r.out);
        if (id == 2) {
            cr_assert_not_null(strstr(r.out, "rank 1: made no further call"), "%s", r.out);
            cr_assert_not_null(strstr(r.out, "`SeqNum=2`"), "%s", r.out);
        }
        result_clear(&r);
    }
}

/* NCCL Inspector records (one JSON object per completed call, per communicator): processes
 * joined by host:pid and communicator id, a group per (communicator, collective type) with the
 * communicator's size, calls numbered coll_sn + 1; a rank with one completed all-reduce fewer is
 * behind (`unmatched`). */
Test(import_run, inspector_records_show_the_rank_behind)
{
    static const char *rec =
        "{\"header\": {\"id\": \"0xabc\", \"comm_name\": \"unknown\", \"rank\": %d, "
        "\"n_ranks\": 2, \"nnodes\": 1}, \"metadata\": {\"hostname\": \"h\", \"pid\": %d}, "
        "\"coll_perf\": {\"coll\": \"AllReduce\", \"coll_sn\": %d, "
        "\"coll_msg_size_bytes\": 4096, \"coll_exec_time_us\": 5}}\n";
    GString *a = g_string_new(NULL), *b = g_string_new(NULL);
    for (int sn = 0; sn < 3; sn++)
        g_string_append_printf(a, rec, 0, 11, sn);
    for (int sn = 0; sn < 2; sn++)
        g_string_append_printf(b, rec, 1, 12, sn);
    cr_assert(import_looks_inspector((const guint8 *)a->str, a->len));
    cr_assert_not(import_looks_inspector((const guint8 *)"{\"pg_config\": {}}", 16));
    g_autoptr(GBytes) ba = g_bytes_new_take(a->str, a->len);
    g_autoptr(GBytes) bb = g_bytes_new_take(b->str, b->len);
    g_string_free(a, FALSE);
    g_string_free(b, FALSE);
    const char *paths[] = {"p11.log", "p12.log"};
    const GBytes *data[] = {ba, bb};
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_INSPECTOR);
    g_autoptr(GError) err = NULL;
    cr_assert(import_inspector_files(s, paths, data, 2, &err), "%s", err ? err->message : "");
    cr_assert_eq(s->groups->len, 1);
    const ImportGroup *g = g_ptr_array_index(s->groups, 0);
    cr_assert_eq(g->ranks->len, 2);
    cr_assert_eq(g->size, 2);
    const ImportRank *r0 = g_ptr_array_index(s->ranks, 0);
    cr_assert_eq(r0->entries->len, 3);
    cr_assert_eq(g_array_index(r0->entries, ImportEntry, 2).seq, 3);
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    const SchedDiag *u = find(run->outcome, "unmatched");
    cr_assert_not_null(u);
    cr_assert_eq(u->rank, 1);
    cr_assert_eq(u->seq, 3);
    /* a malformed record is refused with its file */
    g_autoptr(GBytes) bad = g_bytes_new_static("{\"header\": {\"id\": 3}, \"coll_perf\": {}}", 38);
    const GBytes *bd[] = {bad};
    g_autoptr(ImportSet) s2 = import_set_new(IMPORT_FORMAT_INSPECTOR);
    g_autoptr(GError) e2 = NULL;
    cr_assert_not(import_inspector_files(s2, paths, bd, 1, &e2));
    cr_assert_not_null(strstr(e2->message, "p11.log"), "%s", e2->message);
}

/* NCCL RAS JSON status: per communicator the calls each rank launched of each type; rank 2
 * launched one all-reduce fewer than ranks 0-1 (behind), rank 3 is unresponsive (a symptom
 * quoted, and a candidate). */
Test(import_run, ras_counts_show_the_rank_behind)
{
    static const char *doc =
        "{\"nccl_version\": \"2.29.1\", \"communicators\": [{\"hash\": \"0xfe\", \"size\": 4,"
        " \"ranks\": ["
        "{\"rank\": 0, \"host\": \"h\", \"pid\": 10, \"collective_counts\": {\"AllReduce\": 9}},"
        "{\"rank\": 1, \"host\": \"h\", \"pid\": 11, \"collective_counts\": {\"AllReduce\": 9}},"
        "{\"rank\": 2, \"host\": \"h\", \"pid\": 12, \"collective_counts\": {\"AllReduce\": 8}}],"
        " \"missing_ranks\": [{\"rank\": 3, \"host\": \"h\", \"pid\": 13,"
        " \"status\": {\"unresponsive\": true, \"considered_dead\": false}}]}]}";
    cr_assert(import_looks_ras((const guint8 *)doc, strlen(doc)));
    cr_assert_not(import_looks_inspector((const guint8 *)doc, strlen(doc)));
    g_autoptr(GBytes) b = g_bytes_new_static(doc, strlen(doc));
    const char *paths[] = {"ras.json"};
    const GBytes *data[] = {b};
    g_autoptr(ImportSet) s = import_set_new(IMPORT_FORMAT_INSPECTOR);
    g_autoptr(GError) err = NULL;
    cr_assert(import_inspector_files(s, paths, data, 1, &err), "%s", err ? err->message : "");
    cr_assert_eq(s->groups->len, 1);
    cr_assert_eq(((ImportGroup *)g_ptr_array_index(s->groups, 0))->ranks->len, 4);
    g_autoptr(ImportRun) run = import_run_build(s);
    cr_assert_eq(run->verdict, IMPORT_VERDICT_HANG);
    const SchedDiag *d = find(run->outcome, "behind");
    cr_assert_not_null(d);
    cr_assert_eq(d->rank, 2);
    cr_assert_eq(d->seq, 9);
    const SchedDiag *c = find(run->outcome, "candidates");
    cr_assert_not_null(c);
    cr_assert_not_null(strstr(c->message, "rank 2:"), "%s", c->message);
    cr_assert_not_null(strstr(c->message, "rank 3:"), "%s", c->message);
    cr_assert_not_null(find(run->outcome, "symptom"));
}
