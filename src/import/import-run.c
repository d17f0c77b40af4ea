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

/* NCCL logs print enqueues only: which instances completed, by two rules.
 * - Signatures: an instance completes only when every member called it with the same
 *   signature (NCCL does not compare counts: a disagreeing instance is where a hang starts).
 * - Streams: calls of one rank on one known stream run in launch order (CUDA executes a
 *   stream's kernels in order), so a call completes only after the one before it on its
 *   stream. An instance is complete when it is matched and each member's call of it is at the
 *   head of its stream: found from the bottom up (a worklist: each completion readies the next
 *   call on the same streams), O(calls). Instances whose calls wait on each other across
 *   streams never complete — NVIDIA/nccl#899: two ranks launching on two communicators in
 *   opposite orders on one stream have every call matched, yet neither call completes.
 *   Calls without a known stream (ImportEntry.stream 0) are ordered by nothing but their
 *   communicator. */
typedef struct {
    uint32_t rank;
    guint idx;
} EntryRef;

typedef struct {
    GArray *refs; /* EntryRef: the members' calls of it */
    const ImportEntry *first;
    guint ready;  /* members whose call of it is at the head of its stream */
    bool disagree;
} InstCalls;

static void inst_calls_free(gpointer p)
{
    InstCalls *c = p;
    g_array_unref(c->refs);
    g_free(c);
}

/* For each entry of a rank the index of the next one on the same known stream (-1 none), and
 * whether it starts its stream (or has none). */
static void stream_links(const ImportRank *ir, guint n, gint *next, bool *head)
{
    g_autoptr(GHashTable) last = g_hash_table_new(import_hash_u64, g_int64_equal);
    for (guint i = 0; i < n; i++) {
        const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
        next[i] = -1;
        head[i] = true;
        if (!e->stream)
            continue;
        gpointer prev = g_hash_table_lookup(last, &e->stream);
        if (prev) {
            next[GPOINTER_TO_UINT(prev) - 1] = (gint)i;
            head[i] = false;
        }
        g_hash_table_insert(last, (gpointer)&e->stream, GUINT_TO_POINTER(i + 1));
    }
}

/* Whether instance `c` can complete: matched by every member, each call at its stream's head. */
static bool inst_ready(const ImportSet *s, const InstCalls *c)
{
    const ImportGroup *g = g_ptr_array_index(s->groups, c->first->group);
    return !c->disagree && c->refs->len == g->ranks->len && c->ready == c->refs->len;
}

/* NCCL: the instances that completed (keys of inst_key), by the rules above. */
static GHashTable *complete_instances(const ImportSet *s)
{
    g_autoptr(GHashTable) insts =
        g_hash_table_new_full(import_hash_u64, g_int64_equal, g_free, inst_calls_free);
    g_autoptr(GPtrArray) nexts = g_ptr_array_new_with_free_func(g_free);
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        guint n = ir->present ? ir->entries->len : 0;
        gint *next = g_new(gint, n + 1);
        g_autofree bool *head = g_new(bool, n + 1);
        stream_links(ir, n, next, head);
        g_ptr_array_add(nexts, next);
        for (guint i = 0; i < n; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            gint64 k = (gint64)inst_key(e->group, e->seq);
            InstCalls *c = g_hash_table_lookup(insts, &k);
            if (!c) {
                c = g_new0(InstCalls, 1);
                c->refs = g_array_new(FALSE, FALSE, sizeof(EntryRef));
                c->first = e;
                g_hash_table_insert(insts, g_memdup2(&k, sizeof k), c);
            }
            c->disagree |= !same_sig(c->first, e);
            EntryRef ref = {r, i};
            g_array_append_val(c->refs, ref);
            c->ready += head[i];
        }
    }
    GHashTable *done = g_hash_table_new_full(import_hash_u64, g_int64_equal, g_free, NULL);
    g_autoptr(GArray) work = g_array_new(FALSE, FALSE, sizeof(gint64));
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, insts);
    while (g_hash_table_iter_next(&it, &k, &v))
        if (inst_ready(s, v))
            g_array_append_val(work, *(gint64 *)k);
    for (guint w = 0; w < work->len; w++) {
        gint64 key = g_array_index(work, gint64, w);
        g_hash_table_add(done, g_memdup2(&key, sizeof key));
        const InstCalls *c = g_hash_table_lookup(insts, &key);
        for (guint j = 0; j < c->refs->len; j++) {
            const EntryRef *ref = &g_array_index(c->refs, EntryRef, j);
            gint nx = ((gint *)g_ptr_array_index(nexts, ref->rank))[ref->idx];
            if (nx < 0)
                continue;
            const ImportRank *ir = g_ptr_array_index(s->ranks, ref->rank);
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, nx);
            gint64 nk = (gint64)inst_key(e->group, e->seq);
            InstCalls *nc = g_hash_table_lookup(insts, &nk);
            nc->ready++;
            if (inst_ready(s, nc) && !g_hash_table_contains(done, &nk))
                g_array_append_val(work, nk);
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
    GArray *queued_calls; /* QueuedCall: calls queued behind a blocking point, for the record */
    GArray *placed;       /* SchedRecord: the calls watchdog verdicts place ranks in (rows) */
    uint64_t queued_total, foreign;
};

/* A call a rank made behind its blocking point: the record notes it on the instance (a cycle
 * whose calls were all made is an ordering deadlock). */
typedef struct {
    uint32_t rank;
    int32_t group;
    uint64_t seq;
} QueuedCall;

/* Watchdog and PG-status evidence beyond a rank's calls (see apply_status). */
static bool has_other_evidence(const ImportSet *s, const ImportRank *ir)
{
    if (ir->pg_status && ir->pg_status->len)
        return true;
    for (guint i = 0; i < s->findings->len; i++)
        if (g_array_index(s->findings, ImportFinding, i).rank == ir->rank)
            return true;
    return false;
}

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
    b->queued_calls = g_array_new(FALSE, FALSE, sizeof(QueuedCall));
    b->placed = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
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
    g_array_unref(b->queued_calls);
    g_array_unref(b->placed);
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
        /* a log with watchdog or status lines but no call is not an empty ring buffer */
        if (!empty || !has_other_evidence(s, ir))
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
            QueuedCall q = {r, (int32_t)e->group, e->seq};
            g_array_append_val(b->queued_calls, q);
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

/* PyTorch's OpType (postmortem.md (c), the watchdog's WorkNCCL(...)) as a kind; -1 unknown. */
static int optype_kind(const char *text)
{
    static const struct {
        const char *op;
        SchedOpKind kind;
    } t[] = {{"_REDUCE_SCATTER_BASE", SCHED_OP_REDUCE_SCATTER},
             {"REDUCE_SCATTER", SCHED_OP_REDUCE_SCATTER},
             {"_ALLGATHER_BASE", SCHED_OP_ALL_GATHER},
             {"ALLGATHER", SCHED_OP_ALL_GATHER},
             {"ALLREDUCE", SCHED_OP_ALL_REDUCE},
             {"ALLTOALL", SCHED_OP_ALL_TO_ALL},
             {"BROADCAST", SCHED_OP_BROADCAST},
             {"BARRIER", SCHED_OP_BARRIER},
             {"SEND", SCHED_OP_SEND},
             {"RECV", SCHED_OP_RECV}};
    const char *o = text ? strstr(text, "OpType=") : NULL;
    if (!o)
        return -1;
    o += 7;
    for (size_t i = 0; i < G_N_ELEMENTS(t); i++)
        if (g_str_has_prefix(o, t[i].op))
            return (int)t[i].kind;
    return -1;
}

/* A watchdog verdict (IMPORT_FINDING_TIMEOUT) on a rank whose record holds no call: the rank is
 * blocked in the call the line names, with the kind and NumelIn the line carries (named by its
 * OpType). A rank whose calls place it elsewhere keeps its record's state. */
static void timeouts_as_ends(ImportRunBuilder *b)
{
    const ImportSet *s = b->s;
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
        if (f->kind != IMPORT_FINDING_TIMEOUT || f->rank < 0 || f->group < 0 || !f->seq ||
            (guint)f->rank >= b->ends->len || !g_array_index(b->added, bool, f->rank) ||
            !member_of(b, (uint32_t)f->group, f->rank))
            continue;
        RankEnd *end = &g_array_index(b->ends, RankEnd, f->rank);
        if (end->state != SCHED_SEEN_UNKNOWN)
            continue;
        int kind = optype_kind(f->text);
        const char *numel = f->text ? strstr(f->text, "NumelIn=") : NULL;
        uint64_t count = numel ? g_ascii_strtoull(numel + 8, NULL, 10) : 0;
        const char *name = kind >= 0 ? sched_op_kind_name((SchedOpKind)kind) : "watchdog timeout";
        *end = (RankEnd){.state = SCHED_SEEN_BLOCKED,
                         .group = f->group,
                         .seq = f->seq,
                         .arrival = {.arrive_ns = b->end,
                                     .pg_seq = f->seq,
                                     .count = count,
                                     .layer = -1,
                                     .name = name_id(b, name),
                                     .root = -1,
                                     .kind = (uint8_t)(kind >= 0 ? kind : SCHED_OP_ALL_REDUCE),
                                     .dtype = SCHED_DTYPE_FP32,
                                     .present = true}};
        /* its row, so that `collectives` (and `match`) show the call the line names */
        SchedRecord rec = {
            .rank = (uint32_t)f->rank,
            .kind = end->arrival.kind,
            .dtype = end->arrival.dtype,
            .layer = -1,
            .name = end->arrival.name,
            .group = f->group,
            .idx = end->calls,
            .seq = f->seq,
            .count = count,
            .start_ns = b->end,
            .end_ns = -1,
        };
        g_array_append_val(b->placed, rec);
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

/* The instance (group, seq) some rank blocks in, or NULL. */
static SchedInstance *instance_at(const SchedRunRecord *rec, uint32_t group, uint64_t seq)
{
    for (guint i = 0; i < rec->owned->len; i++) {
        SchedInstance *inst = g_ptr_array_index(rec->owned, i);
        if ((uint32_t)inst->group == group && inst->seq == seq)
            return inst;
    }
    return NULL;
}

static const SchedArrival *first_arrival(const SchedInstance *inst)
{
    for (uint32_t i = 0; i < inst->n; i++)
        if (inst->arr[i].present)
            return &inst->arr[i];
    return NULL;
}

/* A rank without a blocking call whose watchdog status says where it is (postmortem.md (c)):
 * work in flight on a group (last enqueued past last completed) puts it in call
 * last_completed + 1 there, when others block in it (its signature is not in the line: the
 * others' is taken); nothing in flight on a group where others wait for a later call makes it
 * idle there — it never enqueued that call. */
static void status_state(SchedRunRecord *rec, uint32_t r, const ImportRank *ir)
{
    bool in_flight = false, idle_where_waited = false;
    for (guint k = 0; k < ir->pg_status->len; k++) {
        const ImportPgStatus *ps = &g_array_index(ir->pg_status, ImportPgStatus, k);
        if (ps->last_enqueued > ps->last_completed) {
            in_flight = true;
            SchedInstance *inst = instance_at(rec, ps->group, ps->last_completed + 1);
            const SchedArrival *ref = inst ? first_arrival(inst) : NULL;
            int32_t mi = inst ? sched_group_index_of(rec->groups[inst->group], (int32_t)r) : -1;
            if (ref && mi >= 0 && !inst->arr[mi].present) {
                SchedArrival a = *ref;
                a.done = a.queued = false;
                a.nosig = true; /* the status line gives no signature */
                sched_run_record_arrive(rec, r, inst->group, inst->seq, &a);
                return;
            }
            continue;
        }
        for (guint i = 0; i < rec->owned->len && ps->last_enqueued > 0; i++) {
            const SchedInstance *inst = g_ptr_array_index(rec->owned, i);
            int32_t mi = sched_group_index_of(rec->groups[inst->group], (int32_t)r);
            if ((uint32_t)inst->group == ps->group && inst->seq > ps->last_completed && mi >= 0 &&
                !inst->arr[mi].present)
                idle_where_waited = true;
        }
    }
    if (idle_where_waited && !in_flight) {
        rec->ranks[r].state = SCHED_SEEN_IDLE;
        rec->ranks[r].end_ns = 0;
    }
}

/* What the record shows beyond the ranks' blocking points: members that completed the call
 * others block in (their PG status's last completed reaches it: one call apart), the state of
 * ranks known only from status lines, and calls made but queued behind a blocking point. */
static void apply_status(const ImportRunBuilder *b, SchedRunRecord *rec)
{
    const ImportSet *s = b->s;
    for (uint32_t r = 0; r < rec->n_ranks && r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        if (!ir->present || !ir->pg_status)
            continue;
        for (guint k = 0; k < ir->pg_status->len; k++) {
            const ImportPgStatus *ps = &g_array_index(ir->pg_status, ImportPgStatus, k);
            for (guint i = 0; i < rec->owned->len; i++) {
                const SchedInstance *inst = g_ptr_array_index(rec->owned, i);
                if ((uint32_t)inst->group == ps->group && inst->seq <= ps->last_completed)
                    sched_run_record_note(rec, r, inst->group, inst->seq, true, NULL);
            }
        }
        if (rec->ranks[r].state == SCHED_SEEN_UNKNOWN)
            status_state(rec, r, ir);
    }
    for (guint i = 0; i < b->queued_calls->len; i++) {
        const QueuedCall *q = &g_array_index(b->queued_calls, QueuedCall, i);
        sched_run_record_note(rec, q->rank, q->group, q->seq, false, NULL);
    }
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
    apply_status(b, rec);
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
    g_array_append_vals(records, run->records->data, run->records->len);
    g_array_unref(run->records);
    run->records = records;
    return run;
}

/* What was read of rank r, in a phrase: its reader's (ImportRank.evidence) or the format's;
 * "nothing read" when absent. Static or owned by the set. */
static const char *evidence_of(const ImportSet *s, uint32_t r)
{
    const ImportRank *ir = r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
    if (!ir || !ir->present)
        return "nothing read";
    static const char *const names[] = {
        [IMPORT_FORMAT_FR] = "Flight Recorder dump",
        [IMPORT_FORMAT_NCCL] = "NCCL INFO lines",
        [IMPORT_FORMAT_HCCL] = "torch_npu HCCL dump",
        [IMPORT_FORMAT_WATCHDOG] = "watchdog lines",
        [IMPORT_FORMAT_CANN] = "CANN error lines",
        [IMPORT_FORMAT_VLLM] = "vLLM messages",
        [IMPORT_FORMAT_LOGS] = "log lines",
        [IMPORT_FORMAT_INSPECTOR] = "NCCL Inspector records",
    };
    if (ir->evidence)
        return ir->evidence;
    return (guint)s->format < G_N_ELEMENTS(names) && names[s->format] ? names[s->format]
                                                                        : "a record";
}

/* "each rank's evidence — rank 0: watchdog lines, PG 2 (a.log); ranks 1-3: nothing read": ranks
 * with the same phrase folded, the file named when they all come from one. O(ranks). */
static char *evidence_note(const ImportSet *s, uint32_t n)
{
    g_autoptr(GHashTable) by_phrase =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
    g_autoptr(GPtrArray) order = g_ptr_array_new();
    for (uint32_t r = 0; r < n; r++) {
        const char *ph = evidence_of(s, r);
        GArray *ranks = g_hash_table_lookup(by_phrase, ph);
        if (!ranks) {
            ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
            g_hash_table_insert(by_phrase, (gpointer)ph, ranks);
            g_ptr_array_add(order, (gpointer)ph);
        }
        int32_t rr = (int32_t)r;
        g_array_append_val(ranks, rr);
    }
    GString *note = g_string_new("each rank's evidence —");
    for (guint k = 0; k < order->len && k < 16; k++) {
        const char *ph = g_ptr_array_index(order, k);
        GArray *ranks = g_hash_table_lookup(by_phrase, ph);
        const char *file = NULL;
        bool one_file = true;
        for (guint i = 0; i < ranks->len && one_file; i++) {
            int32_t r = g_array_index(ranks, int32_t, i);
            const ImportRank *ir =
                (guint)r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
            const char *p = ir && ir->present ? ir->path : NULL;
            one_file = p && (!file || strcmp(file, p) == 0);
            file = p;
        }
        g_autofree char *base = one_file && file ? g_path_get_basename(file) : NULL;
        g_autofree char *rs = sched_format_ranks((const int32_t *)(void *)ranks->data, ranks->len);
        g_string_append_printf(note, "%s rank%s %s: %s%s%s%s", k ? ";" : "",
                               ranks->len > 1 ? "s" : "", rs, ph, base ? " (" : "",
                               base ? base : "", base ? ")" : "");
    }
    if (order->len > 16)
        g_string_append(note, "; ...");
    return g_string_free(note, FALSE);
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
    timeouts_as_ends(b); /* before the name table is copied: it may add names */
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
                                        "waited in was overwritten): its calls are treated as "
                                        "without a record (its PG status, where it gives one, "
                                        "places it); a larger TORCH_FR_BUFFER_SIZE keeps it",
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
                        g_strdup_printf("the record has no times%s: the time axis is each "
                                        "rank's call position, 1 us per call",
                                        s->format == IMPORT_FORMAT_NCCL
                                            ? " (NCCL INFO lines carry none)"
                                            : ""));
    else if (s->format == IMPORT_FORMAT_FR || s->format == IMPORT_FORMAT_HCCL)
        g_ptr_array_add(run->notes,
                        g_strdup("times are the recorded enqueue times (time_created_ns) from "
                                 "the earliest; completions as the watchdog discovered them; "
                                 "different hosts' clocks are not aligned"));

    g_ptr_array_add(run->notes, evidence_note(s, p->n_ranks));
    g_autoptr(SchedRunRecord) rec = record_of(b, p, end, timeout_ms * 1000000);
    run->outcome = sched_diagnose_record(rec);
    import_verdict_apply(run, s);
    /* the rows of calls only watchdog verdicts show (a streamed set, Flight Recorder dumps,
     * has none) */
    g_array_append_vals(run->records, b->placed->data, b->placed->len);
    builder_free(b);
    return run;
}
