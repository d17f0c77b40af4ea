/* src/import/import-run.c — an ImportSet made into a run: the program (groups and names), each rank's
 * state (blocked at its oldest call that did not complete, idle, or unknown without a record)
 * written into the neutral record (sched/record.h) and diagnosed there (sched_diagnose_record),
 * and the calls as op records for the `collectives` table.
 *
 * Rules (doc/import.md):
 * - Completion: a Flight Recorder entry completed when its state says so. NCCL logs print the
 *   enqueue only, so an instance counts as completed when every member called it with the same
 *   signature (NCCL does not check counts; a disagreeing instance is where a hang starts).
 * - A rank's blocking point is its oldest call (by its own record order) that did not complete.
 *   Calls queued after it were enqueued by the CPU, never reached by the device: they are not
 *   arrivals and are left out of the records (counted in a note). Calls that completed after
 *   it (another PG's stream) are kept.
 * - Times: relative to the earliest recorded enqueue. Clocks of different hosts are not
 *   aligned by torch; that is said in a note when there are several hosts' worth of ranks.
 */
#include "import.h"

#include <string.h>

#include "../../sched/diagnose.h"

#define UNTIMED_STEP_NS 1000 /* one call = 1 us on the axis of an untimed record */

void import_run_free(ImportRun *r)
{
    if (!r)
        return;
    sched_program_free(r->program);
    if (r->records)
        g_array_unref(r->records);
    sched_outcome_free(r->outcome);
    g_ptr_array_unref(r->notes);
    g_free(r);
}

static bool same_sig(const ImportEntry *a, const ImportEntry *b)
{
    if (sched_op_is_p2p(a->kind) && sched_op_is_p2p(b->kind))
        return a->count == b->count && a->dtype == b->dtype;
    return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype &&
           g_strcmp0(a->dtype_name, b->dtype_name) == 0 && a->root == b->root;
}

/* Key of (group, seq) for the NCCL completion rule. */
static guint64 inst_key(uint32_t group, uint64_t seq)
{
    return ((guint64)group << 40) ^ seq;
}

static int32_t n_ranks_of(const ImportSet *s)
{
    int32_t n = (int32_t)s->ranks->len;
    for (guint i = 0; i < s->groups->len; i++) {
        const ImportGroup *g = g_ptr_array_index(s->groups, i);
        for (guint j = 0; j < g->ranks->len; j++)
            n = MAX(n, g_array_index(g->ranks, int32_t, j) + 1);
    }
    return n;
}

/* NCCL: which instances every member called with one signature. */
static GHashTable *complete_instances(const ImportSet *s)
{
    /* key -> (members seen << 1 | disagree) */
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    g_autoptr(GHashTable) first = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        if (!ir->present)
            continue;
        for (guint i = 0; i < ir->entries->len; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            gint64 *k = g_new(gint64, 1);
            *k = (gint64)inst_key(e->group, e->seq);
            gpointer v = g_hash_table_lookup(seen, k);
            guint64 cnt = GPOINTER_TO_SIZE(v);
            const ImportEntry *f = g_hash_table_lookup(first, k);
            bool dis = (cnt & 1) || (f && !same_sig(f, e));
            cnt = (((cnt >> 1) + 1) << 1) | dis;
            if (!f) {
                gint64 *k2 = g_new(gint64, 1);
                *k2 = *k;
                g_hash_table_insert(first, k2, (gpointer)e);
            }
            g_hash_table_replace(seen, k, GSIZE_TO_POINTER(cnt));
        }
    }
    GHashTable *done = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, seen);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        guint64 cnt = GPOINTER_TO_SIZE(v);
        guint64 key = (guint64) * (gint64 *)k;
        const ImportGroup *g = g_ptr_array_index(s->groups, (guint)(key >> 40));
        if (!(cnt & 1) && (cnt >> 1) == g->ranks->len) {
            gint64 *kk = g_new(gint64, 1);
            *kk = *(gint64 *)k;
            g_hash_table_add(done, kk);
        }
    }
    return done;
}

static bool entry_complete(const ImportEntry *e, GHashTable *nccl_done)
{
    if (e->state == IMPORT_STATE_COMPLETED)
        return true;
    if (e->state != IMPORT_STATE_UNKNOWN || !nccl_done)
        return false;
    gint64 k = (gint64)inst_key(e->group, e->seq);
    return g_hash_table_contains(nccl_done, &k);
}

/* What a rank's record says at its end; made into the run's record at finish. */
typedef struct {
    SchedSeen state;      /* SCHED_SEEN_IDLE, _BLOCKED or _UNKNOWN (rank_end reads it only for
                             ranks added, so a zeroed entry is never taken for one) */
    int32_t group;        /* blocked: the instance it waits in */
    uint64_t seq;
    SchedArrival arrival; /* blocked: what it brought, when */
    int64_t last_ns;      /* idle: when its last recorded call completed (relative) */
    uint64_t calls;       /* calls kept in its records */
} RankEnd;

struct ImportRunBuilder {
    const ImportSet *s; /* grows while a stream merges; complete at finish */
    bool timed;
    int64_t t0;
    GHashTable *nccl_done; /* owned; NCCL logs only */
    GPtrArray *names;      /* char*, borrowed from the set: the program's name table, in order */
    GHashTable *name_ids;  /* name text -> id + 1 */
    GHashTable *ptr_ids;   /* name pointer -> id + 1 (one pointer per name per dump) */
    GArray *ends;          /* RankEnd by rank */
    GArray *added;         /* bool by rank */
    GPtrArray *members;    /* int32_t* (sorted ranks, first the count) by group id, lazily */
    int64_t end, timeout_ms, min_created;
    GArray *silent, *wrapped, *queued_ranks;
    uint64_t queued_total, foreign;
};

ImportRunBuilder *import_run_builder_new(const ImportSet *s, int64_t t0, bool nccl)
{
    ImportRunBuilder *b = g_new0(ImportRunBuilder, 1);
    b->s = s;
    b->timed = t0 >= 0;
    b->t0 = t0;
    b->nccl_done = nccl ? complete_instances(s) : NULL;
    b->names = g_ptr_array_new();
    b->name_ids = g_hash_table_new(g_str_hash, g_str_equal);
    b->ptr_ids = g_hash_table_new(g_direct_hash, g_direct_equal);
    b->ends = g_array_new(FALSE, TRUE, sizeof(RankEnd));
    b->added = g_array_new(FALSE, TRUE, sizeof(bool));
    b->members = g_ptr_array_new_with_free_func(g_free);
    b->min_created = INT64_MAX;
    b->silent = g_array_new(FALSE, FALSE, sizeof(int32_t));
    b->wrapped = g_array_new(FALSE, FALSE, sizeof(int32_t));
    b->queued_ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
    return b;
}

static void builder_free(ImportRunBuilder *b)
{
    if (b->nccl_done)
        g_hash_table_unref(b->nccl_done);
    g_ptr_array_unref(b->names);
    g_hash_table_unref(b->name_ids);
    g_hash_table_unref(b->ptr_ids);
    g_array_unref(b->ends);
    g_array_unref(b->added);
    g_ptr_array_unref(b->members);
    g_array_unref(b->silent);
    g_array_unref(b->wrapped);
    g_array_unref(b->queued_ranks);
    g_free(b);
}

void import_run_builder_free(ImportRunBuilder *b)
{
    if (b)
        builder_free(b);
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, c = *(const int32_t *)y;
    return (a > c) - (a < c);
}

/* Whether global rank r is a member of set group g (sorted copies made on first use). */
static bool member_of(ImportRunBuilder *b, uint32_t g, int32_t r)
{
    if (g >= b->s->groups->len)
        return false;
    while (b->members->len <= g)
        g_ptr_array_add(b->members, NULL);
    int32_t *m = g_ptr_array_index(b->members, g);
    if (!m) {
        const ImportGroup *grp = g_ptr_array_index(b->s->groups, g);
        m = g_new(int32_t, grp->ranks->len + 1);
        m[0] = (int32_t)grp->ranks->len;
        memcpy(m + 1, grp->ranks->data, grp->ranks->len * sizeof(int32_t));
        qsort(m + 1, grp->ranks->len, sizeof(int32_t), cmp_i32);
        g_ptr_array_index(b->members, g) = m;
    }
    return bsearch(&r, m + 1, (size_t)m[0], sizeof(int32_t), cmp_i32) != NULL;
}

static uint32_t name_id(ImportRunBuilder *b, const char *name)
{
    gpointer id = g_hash_table_lookup(b->ptr_ids, name);
    if (id)
        return GPOINTER_TO_UINT(id) - 1;
    id = g_hash_table_lookup(b->name_ids, name);
    if (!id) {
        g_ptr_array_add(b->names, (gpointer)name);
        id = GUINT_TO_POINTER(b->names->len);
        g_hash_table_insert(b->name_ids, (gpointer)name, id);
    }
    g_hash_table_insert(b->ptr_ids, (gpointer)name, id);
    return GPOINTER_TO_UINT(id) - 1;
}

/* Whether a non-empty record lost the rank's blocking point: pg_status says calls between
 * the last completed one and the oldest kept entry that did not complete were dropped, or
 * (without pg_status) the buffer wrapped and its oldest kept entry never completed. Such a
 * record (like an empty ring buffer: the Flight Recorder off, its default before torch 2.10)
 * says nothing about where the rank is: unknown, not idle or blocked at a guess; pg_status
 * confirming the head keeps it (dumps of only active entries). */
static bool lost_blocking_point(const ImportRunBuilder *b, const ImportRank *ir)
{
    return ir->head_check != 1 &&
           (ir->head_check < 0 ||
            (ir->truncated &&
             !entry_complete(&g_array_index(ir->entries, ImportEntry, 0), b->nccl_done)));
}

void import_run_builder_rank(ImportRunBuilder *b, uint32_t r, GArray *out)
{
    const ImportSet *s = b->s;
    if (b->ends->len <= r) {
        g_array_set_size(b->ends, r + 1);
        g_array_set_size(b->added, r + 1);
    }
    g_array_index(b->added, bool, r) = true;
    RankEnd *end = &g_array_index(b->ends, RankEnd, r);
    const ImportRank *ir = r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
    if (!ir || !ir->present) {
        *end = (RankEnd){.state = SCHED_SEEN_UNKNOWN};
        return;
    }
    for (guint i = 0; i < ir->entries->len; i++) {
        const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
        if (e->created_ns > 0)
            b->min_created = MIN(b->min_created, e->created_ns);
        b->timeout_ms = MAX(b->timeout_ms, e->timeout_ms);
    }
    bool empty = ir->entries->len == 0;
    bool overwritten = !empty && lost_blocking_point(b, ir);
    if (empty || overwritten) {
        *end = (RankEnd){.state = SCHED_SEEN_UNKNOWN};
        int32_t rr = (int32_t)r;
        g_array_append_val(empty ? b->silent : b->wrapped, rr);
        return;
    }
    const ImportEntry *head = NULL;
    uint64_t idx = 0, queued = 0;
    int64_t last = 0, t0 = b->t0;
    for (guint i = 0; i < ir->entries->len; i++) {
        const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
        /* A reader guarantees membership; a call on a group without the rank is dropped
         * rather than trusted. */
        if (!member_of(b, e->group, (int32_t)r)) {
            b->foreign++;
            continue;
        }
        bool done = entry_complete(e, b->nccl_done);
        if (head && !done) {
            queued++;
            continue;
        }
        if (!head && !done)
            head = e;
        int64_t start = b->timed ? (e->created_ns > 0 ? e->created_ns - t0 : last)
                                 : (int64_t)idx * UNTIMED_STEP_NS;
        int64_t stop = -1;
        if (done) {
            if (b->timed && e->completed_ns > 0)
                stop = MAX(e->completed_ns - t0, start);
            else
                stop = b->timed ? start : start + UNTIMED_STEP_NS;
        }
        SchedRecord rec = {
            .rank = r,
            .kind = (uint8_t)e->kind,
            .dtype = (uint8_t)e->dtype,
            .layer = -1,
            .name = name_id(b, e->name),
            .group = (int32_t)e->group,
            .idx = idx++,
            .seq = e->seq,
            .count = e->count,
            .start_ns = start,
            .end_ns = stop,
        };
        g_array_append_val(out, rec);
        last = MAX(last, stop >= 0 ? stop : start);
        b->end = MAX(b->end, last);
        if (e == head) {
            *end = (RankEnd){.state = SCHED_SEEN_BLOCKED,
                             .group = (int32_t)e->group,
                             .seq = e->seq,
                             .arrival = {.arrive_ns = start,
                                         .pg_seq = e->seq, /* the recorded SeqNum */
                                         .count = e->count,
                                         .layer = -1,
                                         .name = rec.name,
                                         .root = e->root,
                                         .kind = (uint8_t)e->kind,
                                         .dtype = (uint8_t)e->dtype,
                                         .present = true}};
        }
    }
    if (!head)
        *end = (RankEnd){.state = SCHED_SEEN_IDLE, .last_ns = last};
    end->calls = idx;
    end->arrival.idx = idx;
    if (queued) {
        int32_t rr = (int32_t)r;
        g_array_append_val(b->queued_ranks, rr);
        b->queued_total += queued;
    }
}

int64_t import_run_builder_min_created(const ImportRunBuilder *b)
{
    return b->min_created == INT64_MAX ? -1 : b->min_created;
}

/* Rank r's end as the builder saw it; a rank never added, or without a record, is unknown. */
static RankEnd rank_end(const ImportRunBuilder *b, uint32_t r)
{
    const ImportSet *s = b->s;
    bool added = r < b->added->len && g_array_index(b->added, bool, r);
    const ImportRank *ir = r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
    if (!added || !ir || !ir->present || r >= b->ends->len)
        return (RankEnd){.state = SCHED_SEEN_UNKNOWN};
    return g_array_index(b->ends, RankEnd, r);
}

/* The neutral record of the set: each rank's state with the file it came from, the instances
 * the blocked ranks wait in. */
static SchedRunRecord *record_of(const ImportRunBuilder *b, const SchedProgram *p, int64_t end_ns,
                                 int64_t timeout_ns)
{
    SchedRunRecord *rec =
        sched_run_record_new(p->n_ranks, (const SchedGroup *const *)p->groups->pdata,
                             p->groups->len, p);
    rec->now_ns = end_ns;
    rec->timeout_ns = timeout_ns;
    rec->mismatch_policy = "recorded";
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        RankEnd end = rank_end(b, r);
        const ImportRank *ir = r < b->s->ranks->len ? g_ptr_array_index(b->s->ranks, r) : NULL;
        bool read = ir && ir->present;
        if (end.state == SCHED_SEEN_BLOCKED)
            sched_run_record_arrive(rec, r, end.group, end.seq, &end.arrival);
        SchedRankSeen *seen = &rec->ranks[r];
        seen->state = end.state;
        seen->evidence = read ? SCHED_EVIDENCE_RECORD : SCHED_EVIDENCE_NONE;
        seen->source = read ? ir->path : NULL;
        seen->calls = end.calls;
        if (end.state == SCHED_SEEN_IDLE)
            seen->end_ns = end.last_ns;
        else if (end.state == SCHED_SEEN_UNKNOWN)
            seen->end_ns = 0;
    }
    sched_run_record_seal(rec);
    return rec;
}

ImportRun *import_run_build(const ImportSet *s)
{
    bool untimed_format = false;
    int64_t t0 = INT64_MAX;
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        for (guint i = 0; ir->present && i < ir->entries->len; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            if (e->state == IMPORT_STATE_UNKNOWN)
                untimed_format = true;
            if (e->created_ns > 0)
                t0 = MIN(t0, e->created_ns);
        }
    }
    ImportRunBuilder *b = import_run_builder_new(s, t0 == INT64_MAX ? -1 : t0, untimed_format);
    GArray *records = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    const int32_t n = n_ranks_of(s);
    for (uint32_t r = 0; r < (uint32_t)MAX(n, 1); r++)
        import_run_builder_rank(b, r, records);
    ImportRun *run = import_run_builder_finish(b);
    g_array_unref(run->records);
    run->records = records;
    return run;
}

ImportRun *import_run_builder_finish(ImportRunBuilder *b)
{
    const ImportSet *s = b->s;
    ImportRun *run = g_new0(ImportRun, 1);
    run->notes = g_ptr_array_new_with_free_func(g_free);
    run->records = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    run->timed = b->timed;
    run->t0_ns = b->timed ? b->t0 : -1;
    const int32_t n = n_ranks_of(s);
    run->program = sched_program_new((uint32_t)MAX(n, 1));
    SchedProgram *p = run->program;
    for (guint i = 0; i < s->groups->len; i++) {
        const ImportGroup *g = g_ptr_array_index(s->groups, i);
        g_autofree char *nm = g->p2p ? g_strdup_printf("%s p2p", g->name) : g_strdup(g->name);
        sched_program_add_group(p, nm, (const int32_t *)(void *)g->ranks->data, g->ranks->len);
    }
    for (uint32_t r = 0; r < p->n_ranks; r++)
        sched_program_set_ops(p, r, NULL, 0);
    for (guint i = 0; i < b->names->len; i++)
        sched_program_name(p, g_ptr_array_index(b->names, i)); /* ids as the builder gave them */
    g_autoptr(GArray) missing = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        bool added = r < b->added->len && g_array_index(b->added, bool, r);
        const ImportRank *ir = r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
        if (!added || !ir || !ir->present) {
            int32_t rr = (int32_t)r;
            g_array_append_val(missing, rr);
        }
    }
    GArray *silent = b->silent, *wrapped = b->wrapped, *queued_ranks = b->queued_ranks;
    uint64_t queued_total = b->queued_total, foreign = b->foreign;
    int64_t end = b->end, timeout_ms = b->timeout_ms;

    if (missing->len) {
        g_autofree char *ms =
            sched_format_ranks((const int32_t *)(void *)missing->data, missing->len);
        g_ptr_array_add(run->notes,
                        g_strdup_printf("no record of rank%s %s: what %s did is unknown, and no "
                                        "finding blames %s",
                                        missing->len > 1 ? "s" : "", ms,
                                        missing->len > 1 ? "they" : "it",
                                        missing->len > 1 ? "them" : "it"));
    }
    if (silent->len) {
        g_autofree char *ss =
            sched_format_ranks((const int32_t *)(void *)silent->data, silent->len);
        g_ptr_array_add(run->notes,
                        g_strdup_printf("rank%s %s recorded no collective (an empty ring buffer: "
                                        "the Flight Recorder was off, TORCH_FR_BUFFER_SIZE=0 or "
                                        "TORCH_NCCL_TRACE_BUFFER_SIZE=0): treated as without a "
                                        "record",
                                        silent->len > 1 ? "s" : "", ss));
    }
    if (wrapped->len) {
        g_autofree char *ws =
            sched_format_ranks((const int32_t *)(void *)wrapped->data, wrapped->len);
        g_ptr_array_add(run->notes,
                        g_strdup_printf("rank%s %s: the ring buffer wrapped past the blocking "
                                        "point (the oldest kept entry never completed; the one "
                                        "waited in was overwritten): treated as without a record; "
                                        "a larger TORCH_FR_BUFFER_SIZE keeps it",
                                        wrapped->len > 1 ? "s" : "", ws));
    }
    if (queued_total) {
        g_autofree char *qs =
            sched_format_ranks((const int32_t *)(void *)queued_ranks->data, queued_ranks->len);
        g_ptr_array_add(run->notes,
                        g_strdup_printf("%" G_GUINT64_FORMAT " call%s queued behind the blocking "
                                        "point (rank%s %s) left out: enqueued by the CPU, never "
                                        "reached, so not arrivals",
                                        queued_total, queued_total > 1 ? "s" : "",
                                        queued_ranks->len > 1 ? "s" : "", qs));
    }
    if (foreign)
        g_ptr_array_add(run->notes,
                        g_strdup_printf("%" G_GUINT64_FORMAT " call%s on a group that does not "
                                        "list the calling rank left out",
                                        foreign, foreign > 1 ? "s" : ""));
    if (!run->timed)
        g_ptr_array_add(run->notes,
                        g_strdup("the record has no times (NCCL INFO lines carry none): the time "
                                 "axis is each rank's call position, 1 us per call"));
    else if (s->format == IMPORT_FORMAT_FR || s->format == IMPORT_FORMAT_HCCL)
        g_ptr_array_add(run->notes,
                        g_strdup("times are the recorded enqueue times (time_created_ns) from "
                                 "the earliest; completions as the watchdog discovered them; "
                                 "different hosts' clocks are not aligned"));

    g_autoptr(SchedRunRecord) rec = record_of(b, p, end, timeout_ms * 1000000);
    run->outcome = sched_diagnose_record(rec);
    builder_free(b);
    return run;
}
