/* sched/engine.c — the event loop: actors, rendezvous, faults, watchdog. Findings are made by
 * sched/diagnose.c from the engine's record (sched/record.h), which the engine keeps pointing
 * at its own state. See engine.h for the semantics and costs. */
#include "engine-private.h"

#include "diagnose.h"

#include <math.h>
#include <string.h>

enum { EV_RESUME = 1, EV_NET = 2, EV_CRASH = 3 };

SchedConfig sched_config_default(void)
{
    SchedConfig c;
    memset(&c, 0, sizeof c);
    c.on_mismatch = SCHED_MISMATCH_HANG;
    c.collective_timeout_ns = 600LL * 1000000000LL;
    c.straggler_threshold_ns = 10LL * 1000000000LL;
    c.fabric.contention = true;
    c.timeline = SCHED_TIMELINE_FULL;
    return c;
}

static inline void emit(Engine *e, const SchedRecord *r)
{
    if (e->cfg.record)
        e->cfg.record(e->cfg.record_data, r);
}

/* The record of rank `rank`'s arrival `ar` at instance `inst`, ending at `end_ns` (-1: never). */
static SchedRecord arrival_record(const Instance *inst, const SchedArrival *ar, uint32_t rank,
                                  int64_t end_ns)
{
    return (SchedRecord){
        .rank = rank,
        .kind = ar->kind,
        .dtype = ar->dtype,
        .flags = ar->segment ? SCHED_RECORD_SEGMENT : 0,
        .layer = ar->layer,
        .name = ar->name,
        .group = inst->r.group,
        .idx = ar->idx,
        .seq = inst->r.seq,
        .count = ar->count,
        .tokens = ar->tokens,
        .start_ns = ar->arrive_ns,
        .end_ns = end_ns,
    };
}

/* ---- the record diagnosis reads ---- */

/* The record at the current time (per-instance findings read only the instance, the groups,
 * the names and the settings, never the rank states). */
static SchedRunRecord *engine_record(Engine *e)
{
    e->rec->now_ns = e->now;
    return e->rec;
}

static const char *mismatch_policy_name(SchedMismatchPolicy p)
{
    return p == SCHED_MISMATCH_HANG    ? "hang"
           : p == SCHED_MISMATCH_ABORT ? "abort"
                                       : "continue";
}

/* The record over the engine's groups and names, with the judge's settings. */
static void engine_record_init(Engine *e)
{
    SchedRunRecord *rec = sched_run_record_new(
        e->n_ranks, (const SchedGroup *const *)e->defs->pdata, e->n_groups, e->p);
    rec->timeout_ns = e->cfg.collective_timeout_ns;
    rec->watchdog_hccl = e->cfg.watchdog_hccl;
    rec->mismatch_policy = mismatch_policy_name(e->cfg.on_mismatch);
    e->rec = rec;
}

static SchedSeen actor_seen(ActorState st)
{
    switch (st) {
    case ACT_COMPUTING:
        return SCHED_SEEN_COMPUTING;
    case ACT_DELAYING:
        return SCHED_SEEN_DELAYING;
    case ACT_BLOCKED:
        return SCHED_SEEN_BLOCKED;
    case ACT_DONE:
        return SCHED_SEEN_DONE;
    case ACT_CRASHED:
        return SCHED_SEEN_CRASHED;
    default:
        return SCHED_SEEN_RUNNING;
    }
}

/* Before a whole-run finding (timeout, deadlock): the live instances in first-arrival order
 * and what each rank is doing. O(ranks + live instances); runs once per run. */
static SchedRunRecord *engine_record_refresh(Engine *e)
{
    SchedRunRecord *rec = engine_record(e);
    g_ptr_array_set_size(rec->instances, 0);
    for (Instance *inst = e->live_head; inst; inst = inst->live_next)
        g_ptr_array_add(rec->instances, &inst->r);
    for (uint32_t r = 0; r < e->n_ranks; r++) {
        const Actor *a = &e->actors[r];
        rec->ranks[r] = (SchedRankSeen){
            .state = actor_seen(a->st),
            .evidence = SCHED_EVIDENCE_SIMULATED,
            .end_ns = a->stats.end_ns,
            .waiting = a->st == ACT_BLOCKED && a->waiting ? &a->waiting->r : NULL,
            .doing_name = a->cur.name,
            .doing_layer = a->cur.layer,
            .doing_until_ns = a->cur.end_ns,
            .calls = a->stats.ops,
        };
    }
    return rec;
}

/* An error of the engine's own (time overflow) at the current time; `msg` is copied. */
static void engine_diag(Engine *e, const char *kind, int32_t rank, int32_t group, uint64_t seq,
                        int32_t layer, const char *op, const char *msg)
{
    SchedDiag *d = sched_diag_new(kind, SCHED_SEV_ERROR, rank, group, seq, layer, op, msg, NULL);
    d->time_ns = e->now;
    sched_outcome_add_diag(e->out, d);
}

/* ---- groups and p2p channels ---- */

static SchedGroup *channel_group_new(uint32_t src, uint32_t dst)
{
    SchedGroup *g = g_new0(SchedGroup, 1);
    g->name = g_strdup_printf("p2p:%u->%u", src, dst);
    g->n = 2;
    g->ranks = g_new(int32_t, 2);
    g->ranks[0] = (int32_t)src;
    g->ranks[1] = (int32_t)dst;
    g->sorted = g_new(int32_t, 2);
    g->sorted_pos = g_new(uint32_t, 2);
    bool lo_first = src < dst;
    g->sorted[0] = (int32_t)(lo_first ? src : dst);
    g->sorted[1] = (int32_t)(lo_first ? dst : src);
    g->sorted_pos[0] = lo_first ? 0 : 1;
    g->sorted_pos[1] = lo_first ? 1 : 0;
    return g;
}

static void channel_group_free(gpointer data)
{
    SchedGroup *g = data;
    g_free(g->name);
    g_free(g->ranks);
    g_free(g->sorted);
    g_free(g->sorted_pos);
    g_free(g);
}

static uint64_t channel_key(uint32_t src, uint32_t dst)
{
    return ((uint64_t)src << 32) | dst;
}

/* Finds every (src, dst) pair the program uses for send/recv and gives it a group. Lists
 * without p2p ops are skipped after one scan. */
static void engine_build_channels(Engine *e, GPtrArray *defs)
{
    const SchedProgram *p = e->p;
    g_autofree int8_t *has_p2p = g_new0(int8_t, p->lists->len);
    for (guint li = 0; li < p->lists->len; li++) {
        const SchedOpList *l = g_ptr_array_index(p->lists, li);
        for (uint32_t i = 0; i < l->len; i++)
            if (sched_op_is_p2p(l->ops[i].kind))
                has_p2p[li] = 1;
    }
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        if (!has_p2p[p->list_of_rank[r]])
            continue;
        const SchedOpList *l = sched_program_ops(p, r);
        for (uint32_t i = 0; i < l->len; i++) {
            const SchedOp *op = &l->ops[i];
            if (!sched_op_is_p2p(op->kind))
                continue;
            uint32_t peer = (uint32_t)op->group;
            uint32_t src = op->kind == SCHED_OP_SEND ? r : peer;
            uint32_t dst = op->kind == SCHED_OP_SEND ? peer : r;
            uint64_t key = channel_key(src, dst);
            if (g_hash_table_contains(e->channels, &key))
                continue;
            SchedGroup *g = channel_group_new(src, dst);
            g_ptr_array_add(e->own_groups, g);
            g_ptr_array_add(defs, g);
            uint64_t *k = g_new(uint64_t, 1);
            *k = key;
            g_hash_table_insert(e->channels, k, GUINT_TO_POINTER(defs->len));
        }
    }
}

/* ---- instances ---- */

static Instance *instance_get(Engine *e, int32_t gid, uint64_t seq, int64_t now)
{
    GroupRt *g = &e->groups[gid];
    for (Instance *it = g->live; it; it = it->grp_next)
        if (it->r.seq == seq)
            return it;
    Instance *inst = g->free;
    if (inst) {
        g->free = inst->grp_next;
    } else {
        inst = g_new0(Instance, 1);
        inst->id = e->instances->len;
        inst->r.n = g->def->n;
        inst->r.arr = g_new(SchedArrival, inst->r.n);
        g_ptr_array_add(e->instances, inst);
    }
    inst->r.group = gid;
    inst->r.seq = seq;
    inst->r.arrived = 0;
    inst->r.poisoned = inst->r.mismatched = inst->r.completing = inst->unwatched = false;
    inst->r.first_arrive_ns = inst->r.last_arrive_ns = now;
    memset(inst->r.arr, 0, sizeof(SchedArrival) * inst->r.n);
    inst->grp_next = g->live;
    g->live = inst;
    /* Instances are created in time order, so appending keeps the list sorted by first
     * arrival: its head is always the next watchdog deadline. */
    inst->live_next = NULL;
    inst->live_prev = e->live_tail;
    if (e->live_tail)
        e->live_tail->live_next = inst;
    else
        e->live_head = inst;
    e->live_tail = inst;
    return inst;
}

static void live_unlink(Engine *e, Instance *inst)
{
    if (inst->live_prev)
        inst->live_prev->live_next = inst->live_next;
    else
        e->live_head = inst->live_next;
    if (inst->live_next)
        inst->live_next->live_prev = inst->live_prev;
    else
        e->live_tail = inst->live_prev;
    inst->live_prev = inst->live_next = NULL;
}

static void live_move_to_tail(Engine *e, Instance *inst)
{
    live_unlink(e, inst);
    inst->live_prev = e->live_tail;
    if (e->live_tail)
        e->live_tail->live_next = inst;
    else
        e->live_head = inst;
    e->live_tail = inst;
}

static Instance *watch_head(const Engine *e)
{
    Instance *i = e->live_head;
    while (i && i->unwatched)
        i = i->live_next;
    return i;
}

static void instance_release(Engine *e, Instance *inst)
{
    GroupRt *g = &e->groups[inst->r.group];
    Instance **pp = &g->live;
    while (*pp != inst)
        pp = &(*pp)->grp_next;
    *pp = inst->grp_next;
    live_unlink(e, inst);
    inst->gen++;
    inst->grp_next = g->free;
    g->free = inst;
}

static NetCollKind net_kind(uint8_t kind)
{
    switch (kind) {
    case SCHED_OP_ALL_REDUCE:
        return NET_ALL_REDUCE;
    case SCHED_OP_REDUCE_SCATTER:
        return NET_REDUCE_SCATTER;
    case SCHED_OP_ALL_GATHER:
        return NET_ALL_GATHER;
    case SCHED_OP_ALL_TO_ALL:
        return NET_ALL_TO_ALL;
    case SCHED_OP_BROADCAST:
        return NET_BROADCAST;
    case SCHED_OP_BARRIER:
        return NET_BARRIER;
    default:
        return NET_P2P;
    }
}

/* Queues an event for every flow whose next event time the fabric changed. */
static void drain_fabric(Engine *e)
{
    uint32_t flow, gen;
    int64_t t;
    while (net_fabric_pop_changed(e->fabric, &flow, &t, &gen))
        sched_queue_push(&e->q, t < SCHED_TIME_MAX ? t : SCHED_TIME_MAX, EV_NET, flow, gen);
}

static void schedule_completion(Engine *e, Instance *inst, int64_t now)
{
    const SchedArrival *a0 = &inst->r.arr[0];
    uint64_t max_count = 0;
    for (uint32_t i = 0; i < inst->r.n; i++)
        if (inst->r.arr[i].count > max_count)
            max_count = inst->r.arr[i].count;
    uint64_t esize = sched_dtype_size((SchedDtype)a0->dtype);
    /* saturating: the fabric's time then saturates too (a `time` error, not a wrap) */
    uint64_t bytes = max_count > UINT64_MAX / esize ? UINT64_MAX : max_count * esize;
    inst->r.completing = true;
    net_fabric_start(e->fabric, now, (uint32_t)inst->r.group, net_kind(a0->kind), bytes, inst->id);
    drain_fabric(e);
}

/* Every member is here: check the signatures, then complete or apply the mismatch policy. */
static void instance_full(Engine *e, Instance *inst, int64_t now)
{
    const SchedArrival *a0 = &inst->r.arr[0];
    bool p2p = sched_op_is_p2p(a0->kind);
    bool agree = true;
    for (uint32_t i = 1; i < inst->r.n && agree; i++)
        agree = sched_arrival_same_signature(a0, &inst->r.arr[i], p2p);
    bool shape_ok = true;
    if (agree && inst->r.n > 1 &&
        (a0->kind == SCHED_OP_REDUCE_SCATTER || a0->kind == SCHED_OP_ALL_TO_ALL))
        shape_ok = a0->count % inst->r.n == 0;
    for (uint32_t i = 0; i < inst->r.n; i++)
        if (e->actors[e->groups[inst->r.group].def->ranks[i]].st == ACT_CRASHED)
            inst->r.poisoned = true;
    if (agree && shape_ok) {
        if (!inst->r.poisoned)
            schedule_completion(e, inst, now);
        return;
    }
    inst->r.mismatched = true;
    sched_diagnose_mismatch(engine_record(e), &inst->r, agree, e->out);
    switch (e->cfg.on_mismatch) {
    case SCHED_MISMATCH_HANG:
        inst->r.poisoned = true;
        break;
    case SCHED_MISMATCH_ABORT:
        inst->r.poisoned = true;
        e->stop = true;
        break;
    case SCHED_MISMATCH_CONTINUE:
        if (!inst->r.poisoned)
            schedule_completion(e, inst, now);
        break;
    }
}

static void instance_complete(Engine *e, Instance *inst, int64_t now)
{
    if (inst->r.poisoned)
        return;
    const GroupRt *g = &e->groups[inst->r.group];
    if (e->cfg.straggler_threshold_ns > 0 &&
        inst->r.last_arrive_ns - inst->r.first_arrive_ns > e->cfg.straggler_threshold_ns)
        sched_diagnose_straggler(engine_record(e), &inst->r, e->cfg.straggler_threshold_ns,
                                 e->out);
    /* A send and its recv may carry different names: not a divergence. */
    if (!g->divergence_reported && !inst->r.mismatched && !sched_op_is_p2p(inst->r.arr[0].kind)) {
        for (uint32_t i = 1; i < inst->r.n; i++) {
            if (inst->r.arr[i].name != inst->r.arr[0].name ||
                inst->r.arr[i].layer != inst->r.arr[0].layer) {
                sched_diagnose_divergence(engine_record(e), &inst->r, e->out);
                e->groups[inst->r.group].divergence_reported = true;
                break;
            }
        }
    }
    bool rec = e->cfg.timeline >= SCHED_TIMELINE_COLLECTIVES;
    for (uint32_t i = 0; i < inst->r.n; i++) {
        uint32_t rank = (uint32_t)g->def->ranks[i];
        Actor *a = &e->actors[rank];
        const SchedArrival *ar = &inst->r.arr[i];
        if (rec) {
            SchedRecord r = arrival_record(inst, ar, rank, now);
            emit(e, &r);
        }
        if (ar->eager)
            continue; /* it went on when it arrived */
        a->stats.wait_ns += inst->r.last_arrive_ns - ar->arrive_ns;
        a->stats.comm_ns += now - inst->r.last_arrive_ns;
        a->waiting = NULL;
        a->st = ACT_READY;
        sched_queue_push(&e->q, now, EV_RESUME, rank, 0);
    }
    instance_release(e, inst);
}

/* ---- actors ---- */

/* The op at the actor's pc after leaving finished repeats and entering new ones, or NULL
 * when the program is over. Does not consume it. */
static const SchedOp *actor_peek(Actor *a)
{
    for (;;) {
        while (a->depth > 0 && a->pc == a->stack[a->depth - 1].end) {
            Frame *f = &a->stack[a->depth - 1];
            if (++f->iter < f->times) {
                a->pc = f->start;
                if (f->layer_start >= 0)
                    a->layer = f->layer_start + (int32_t)f->iter;
            } else {
                a->layer = f->outer_layer;
                a->depth--;
            }
        }
        if (a->pc >= a->len)
            return NULL;
        const SchedOp *op = &a->ops[a->pc];
        if (op->kind != SCHED_OP_REPEAT)
            return op;
        if (op->times == 0) {
            a->pc += 1 + op->body_len;
            continue;
        }
        g_assert(a->depth < SCHED_MAX_REPEAT_DEPTH);
        Frame *f = &a->stack[a->depth++];
        f->start = a->pc + 1;
        f->end = a->pc + 1 + op->body_len;
        f->times = op->times;
        f->iter = 0;
        f->layer_start = op->layer_start;
        f->outer_layer = a->layer;
        if (op->layer_start >= 0)
            a->layer = op->layer_start;
        a->pc = f->start;
    }
}

static void crash_rank(Engine *e, uint32_t rank, const char *why, const char *reason)
{
    Actor *a = &e->actors[rank];
    if (a->st == ACT_DONE || a->st == ACT_CRASHED || a->st == ACT_STOPPED)
        return;
    if (a->st == ACT_COMPUTING) {
        if (e->cfg.timeline == SCHED_TIMELINE_FULL) {
            SchedRecord r = a->cur;
            r.end_ns = -1;
            emit(e, &r);
        }
        /* Only the part that ran counts. */
        a->stats.compute_ns -= a->cur.end_ns - e->now;
    }
    if (a->st == ACT_BLOCKED && a->waiting) {
        Instance *inst = a->waiting;
        inst->r.poisoned = true;
        /* The watchdog watches the members still alive: restart its clock from the earliest
         * surviving arrival, or stop watching until someone else arrives. Crashes are rare, so
         * re-sorting the live list here (O(live)) is fine. */
        const SchedGroup *g = e->groups[inst->r.group].def;
        int64_t first = INT64_MAX;
        for (uint32_t i = 0; i < inst->r.n; i++)
            if (inst->r.arr[i].present && (uint32_t)g->ranks[i] != rank &&
                e->actors[g->ranks[i]].st != ACT_CRASHED && inst->r.arr[i].arrive_ns < first)
                first = inst->r.arr[i].arrive_ns;
        live_unlink(e, inst);
        if (first == INT64_MAX) {
            inst->unwatched = true;
        } else {
            inst->r.first_arrive_ns = first;
        }
        /* re-insert sorted by first_arrive_ns */
        Instance *after = e->live_tail;
        while (after && after->r.first_arrive_ns > inst->r.first_arrive_ns)
            after = after->live_prev;
        inst->live_prev = after;
        inst->live_next = after ? after->live_next : e->live_head;
        if (inst->live_next)
            inst->live_next->live_prev = inst;
        else
            e->live_tail = inst;
        if (after)
            after->live_next = inst;
        else
            e->live_head = inst;
    }
    a->st = ACT_CRASHED;
    a->stats.end_ns = e->now;
    sched_diagnose_crash(engine_record(e), rank, a->layer, why, reason, e->out);
}

typedef enum { FAULT_NONE = 0, FAULT_SKIP, FAULT_CRASH } FaultAction;

/* Counts this occurrence of `op` for the rank's faults and returns what to do; adds any
 * injected delay to *delay_ns. */
static FaultAction actor_faults(Engine *e, Actor *a, const SchedOp *op, int64_t *delay_ns,
                                const char **reason)
{
    FaultAction act = FAULT_NONE;
    for (uint32_t i = 0; i < a->fault_n; i++) {
        FaultRt *f = &e->faults[a->fault_first + i];
        if (f->f.op_name < 0 || (uint32_t)f->f.op_name != op->name)
            continue;
        if (++f->seen != f->f.occurrence)
            continue;
        switch (f->f.kind) {
        case SCHED_FAULT_CRASH:
            act = FAULT_CRASH;
            *reason = f->f.reason;
            break;
        case SCHED_FAULT_SKIP:
            if (act == FAULT_NONE)
                act = FAULT_SKIP;
            break;
        case SCHED_FAULT_DELAY:
            *delay_ns += f->f.delay_ns;
            break;
        case SCHED_FAULT_SLOWDOWN:
            break;
        }
    }
    return act;
}

static inline bool can_run_ahead(const Engine *e, int64_t t)
{
    const SchedEvent *next = sched_queue_peek(&e->q);
    if (next && t >= next->time_ns)
        return false;
    if (e->cfg.collective_timeout_ns > 0) {
        const Instance *w = watch_head(e);
        if (w && t > w->r.first_arrive_ns + e->cfg.collective_timeout_ns)
            return false;
    }
    return true;
}

/* Simulated time would pass SCHED_TIME_MAX: a scenario beyond what integer ns can hold.
 * Reported as an error and the run stops there, rather than wrapping around. */
static void time_overflow(Engine *e, uint32_t rank, const SchedOp *op)
{
    g_autofree char *msg = g_strdup_printf(
        "time: rank %u's %s would end beyond %.0f simulated days, the longest time the engine "
        "represents; the run stops here (check durations, repeat counts and slowdown factors)",
        rank, sched_program_name_str(e->p, op->name), (double)SCHED_TIME_MAX / 1e9 / 86400.0);
    engine_diag(e, "time", (int32_t)rank, -1, 0, e->actors[rank].layer,
                sched_program_name_str(e->p, op->name), msg);
    e->stop = true;
}

/* A collective's transfer would end at or beyond SCHED_TIME_MAX (the fabric saturates there:
 * a vanishing bandwidth or link-fault factor). Reported at the time it was found; the run
 * stops with its members blocked in it. */
static void collective_time_overflow(Engine *e, const Instance *inst)
{
    const SchedArrival *a0 = &inst->r.arr[0];
    const char *op = sched_program_name_str(e->p, a0->name);
    g_autofree char *msg = g_strdup_printf(
        "time: %s (group %s, seq %" G_GUINT64_FORMAT ") would end beyond %.0f simulated days, "
        "the longest time the engine represents; the run stops here (check the hardware's "
        "bandwidths, link-fault factors and the collective's size)",
        op, e->groups[inst->r.group].def->name, inst->r.seq, (double)SCHED_TIME_MAX / 1e9 / 86400.0);
    engine_diag(e, "time", -1, inst->r.group, inst->r.seq, a0->layer, op, msg);
    e->stop = true;
}

/* Returns true when the actor goes on at once (an eager arrival), false when it blocks. */
static bool actor_arrive(Engine *e, uint32_t rank, Actor *a, const SchedOp *op, int64_t now)
{
    e->now = now; /* the actor may have run ahead of the last event */
    int32_t gid;
    if (sched_op_is_p2p(op->kind)) {
        uint32_t peer = (uint32_t)op->group;
        uint64_t key =
            op->kind == SCHED_OP_SEND ? channel_key(rank, peer) : channel_key(peer, rank);
        gid = (int32_t)GPOINTER_TO_UINT(g_hash_table_lookup(e->channels, &key)) - 1;
    } else {
        gid = op->group;
    }
    g_assert(gid >= 0 && (uint32_t)gid < e->n_groups);
    GroupRt *g = &e->groups[gid];
    int32_t mi = sched_group_index_of(g->def, (int32_t)rank);
    g_assert(mi >= 0);
    uint64_t seq = ++g->member_seq[mi];
    Instance *inst = instance_get(e, gid, seq, now);
    if (inst->unwatched) {
        /* Its earlier members all crashed: the watchdog restarts from this arrival, which is
         * the latest time so far, so the instance moves to the tail of the live list. */
        inst->unwatched = false;
        inst->r.first_arrive_ns = now;
        live_move_to_tail(e, inst);
    }
    SchedArrival *ar = &inst->r.arr[mi];
    ar->arrive_ns = now;
    ar->idx = a->idx;
    ar->pg_seq = g->def->unwatched_kinds & (1u << op->kind) ? 0 : ++g->member_pg_seq[mi];
    ar->count = op->count;
    ar->tokens = op->tokens;
    ar->layer = op->layer >= 0 ? op->layer : a->layer;
    ar->name = op->name;
    ar->root = op->root;
    ar->kind = op->kind;
    ar->dtype = op->dtype;
    ar->present = true;
    ar->eager = (op->flags & SCHED_OP_FLAG_EAGER) != 0;
    ar->segment = (op->flags & SCHED_OP_FLAG_SEGMENT) != 0;
    inst->r.arrived++;
    inst->r.last_arrive_ns = now;
    a->idx++;
    a->stats.ops++;
    e->rank_ops++;
    a->stats.end_ns = now;
    if (!ar->eager) {
        a->st = ACT_BLOCKED;
        a->waiting = inst;
        a->wait_since_ns = now;
    }
    if (inst->r.arrived == inst->r.n)
        instance_full(e, inst, now);
    return ar->eager;
}

/* Runs the actor from `now` until it blocks, finishes, or must wait for simulated time. */
static void actor_run(Engine *e, uint32_t rank, int64_t now)
{
    Actor *a = &e->actors[rank];
    for (;;) {
        const SchedOp *op = actor_peek(a);
        if (!op) {
            a->st = ACT_DONE;
            a->stats.end_ns = now;
            return;
        }
        int64_t delay = 0;
        if (a->fault_n && !a->faults_checked) {
            const char *reason = NULL;
            FaultAction act = actor_faults(e, a, op, &delay, &reason);
            if (act == FAULT_CRASH) {
                e->now = now;
                crash_rank(e, rank, sched_program_name_str(e->p, op->name), reason);
                return;
            }
            if (act == FAULT_SKIP) {
                a->pc++;
                continue;
            }
        }
        a->faults_checked = false;
        if (op->kind == SCHED_OP_COMPUTE) {
            double d = (double)op->dur_ns * a->slowdown + (double)delay;
            if (!(d < (double)(SCHED_TIME_MAX - now))) {
                e->now = now;
                time_overflow(e, rank, op);
                return;
            }
            int64_t dur = (int64_t)llround(d);
            a->pc++;
            SchedRecord r = {
                .rank = rank,
                .kind = SCHED_OP_COMPUTE,
                .flags = op->flags & SCHED_OP_FLAG_SEGMENT ? SCHED_RECORD_SEGMENT : 0,
                .layer = op->layer >= 0 ? op->layer : a->layer,
                .bound = op->bound,
                .name = op->name,
                .group = -1,
                .idx = a->idx,
                .tokens = op->tokens,
                .start_ns = now,
                .end_ns = now + dur,
            };
            a->idx++;
            a->stats.ops++;
            a->stats.compute_ns += dur;
            e->rank_ops++;
            if (can_run_ahead(e, r.end_ns)) {
                if (e->cfg.timeline == SCHED_TIMELINE_FULL)
                    emit(e, &r);
                now = r.end_ns;
                a->stats.end_ns = now;
                continue;
            }
            a->cur = r;
            a->st = ACT_COMPUTING;
            sched_queue_push(&e->q, r.end_ns, EV_RESUME, rank, 0);
            return;
        }
        if (delay > SCHED_TIME_MAX - now) {
            e->now = now;
            time_overflow(e, rank, op);
            return;
        }
        if (delay > 0) {
            /* A late arrival (e.g. a JIT compile before the kernel): wait, then come back to
             * this op with its faults already applied. */
            a->faults_checked = true;
            a->stats.compute_ns += delay;
            a->st = ACT_DELAYING;
            sched_queue_push(&e->q, now + delay, EV_RESUME, rank, 0);
            return;
        }
        a->pc++;
        if (actor_arrive(e, rank, a, op, now))
            continue;
        return;
    }
}

static void on_resume(Engine *e, uint32_t rank, int64_t now)
{
    Actor *a = &e->actors[rank];
    switch (a->st) {
    case ACT_COMPUTING:
        if (e->cfg.timeline == SCHED_TIMELINE_FULL)
            emit(e, &a->cur);
        a->stats.end_ns = now;
        break;
    case ACT_READY:
    case ACT_DELAYING:
        break;
    default:
        return; /* crashed or stopped meanwhile */
    }
    a->st = ACT_READY;
    actor_run(e, rank, now);
}

/* ---- findings over the whole run ---- */

/* The watchdog's deadline `at_ns` passed: a `timeout` for each watched live instance whose
 * deadline is due. Returns how many were written. */
static guint engine_timeout(Engine *e, int64_t at_ns)
{
    e->now = at_ns;
    const int64_t timeout = e->cfg.collective_timeout_ns;
    SchedRunRecord *rec = engine_record_refresh(e);
    guint written = 0;
    for (Instance *inst = e->live_head; inst; inst = inst->live_next) {
        if (inst->unwatched)
            continue;
        if (inst->r.first_arrive_ns + timeout > at_ns)
            break;
        written += sched_diagnose_timeout(rec, &inst->r, e->out);
    }
    return written;
}

static void engine_deadlock(Engine *e)
{
    sched_diagnose_deadlock(engine_record_refresh(e), e->out);
}

/* ---- set-up and the loop ---- */

static int cmp_fault_rank(const void *x, const void *y)
{
    const FaultRt *a = x, *b = y;
    return (a->f.rank > b->f.rank) - (a->f.rank < b->f.rank);
}

static void engine_init(Engine *e, const SchedProgram *p, const SchedConfig *cfg)
{
    memset(e, 0, sizeof *e);
    e->p = p;
    e->cfg = *cfg;
    /* A watchdog beyond the longest representable time never fires; clamping keeps every
     * deadline (first arrival + timeout <= 2 x SCHED_TIME_MAX) representable. */
    if (e->cfg.collective_timeout_ns > SCHED_TIME_MAX)
        e->cfg.collective_timeout_ns = SCHED_TIME_MAX;
    e->n_ranks = p->n_ranks;
    e->cfg.fabric.n_ranks = p->n_ranks;
    sched_queue_init(&e->q, (size_t)p->n_ranks * 2 + 16);
    e->own_groups = g_ptr_array_new_with_free_func(channel_group_free);
    e->channels = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    e->instances = g_ptr_array_new();

    GPtrArray *defs = e->defs = g_ptr_array_new();
    for (guint i = 0; i < p->groups->len; i++)
        g_ptr_array_add(defs, g_ptr_array_index(p->groups, i));
    engine_build_channels(e, defs);
    e->n_groups = defs->len;
    e->groups = g_new0(GroupRt, e->n_groups);
    e->fabric = net_fabric_new(&e->cfg.fabric);
    for (uint32_t i = 0; i < e->n_groups; i++) {
        e->groups[i].def = g_ptr_array_index(defs, i);
        e->groups[i].member_seq = g_new0(uint64_t, e->groups[i].def->n);
        e->groups[i].member_pg_seq = g_new(uint64_t, e->groups[i].def->n);
        for (uint32_t m = 0; m < e->groups[i].def->n; m++)
            e->groups[i].member_pg_seq[m] = e->groups[i].def->seq_base;
        uint32_t fid =
            net_fabric_add_group(e->fabric, e->groups[i].def->ranks, e->groups[i].def->n);
        g_assert(fid == i);
        net_fabric_set_group_impl(e->fabric, fid, e->groups[i].def->impl);
    }

    e->actors = g_new0(Actor, p->n_ranks);
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        const SchedOpList *l = sched_program_ops(p, r);
        e->actors[r].ops = l->ops;
        e->actors[r].len = l->len;
        e->actors[r].layer = -1;
        e->actors[r].slowdown = 1.0;
    }

    /* Faults sorted by rank (stable order within a rank) so each actor owns a range. */
    e->n_faults = cfg->n_faults;
    e->faults = g_new0(FaultRt, e->n_faults ? e->n_faults : 1);
    for (uint32_t i = 0; i < e->n_faults; i++)
        e->faults[i].f = cfg->faults[i];
    /* qsort is not stable; faults are few, so an insertion sort keeps the order. */
    for (uint32_t i = 1; i < e->n_faults; i++)
        for (uint32_t j = i; j > 0 && cmp_fault_rank(&e->faults[j - 1], &e->faults[j]) > 0; j--) {
            FaultRt t = e->faults[j];
            e->faults[j] = e->faults[j - 1];
            e->faults[j - 1] = t;
        }
    for (uint32_t i = 0; i < e->n_faults; i++) {
        const SchedFault *f = &e->faults[i].f;
        g_assert(f->rank >= 0 && (uint32_t)f->rank < p->n_ranks);
        Actor *a = &e->actors[f->rank];
        if (a->fault_n == 0)
            a->fault_first = i;
        a->fault_n++;
        if (f->kind == SCHED_FAULT_SLOWDOWN)
            a->slowdown *= f->factor;
    }

    e->out = sched_outcome_new(p->n_ranks);
    for (uint32_t i = 0; i < e->n_groups; i++) {
        const SchedGroup *g = e->groups[i].def;
        sched_outcome_add_group(e->out, g->name, g->ranks, g->n);
    }
    engine_record_init(e);
}

static void engine_free(Engine *e)
{
    for (guint i = 0; i < e->instances->len; i++) {
        Instance *inst = g_ptr_array_index(e->instances, i);
        g_free(inst->r.arr);
        g_free(inst);
    }
    g_ptr_array_free(e->instances, TRUE);
    for (uint32_t i = 0; i < e->n_groups; i++) {
        g_free(e->groups[i].member_seq);
        g_free(e->groups[i].member_pg_seq);
    }
    g_free(e->groups);
    sched_run_record_free(e->rec);
    g_ptr_array_free(e->defs, TRUE);
    g_ptr_array_free(e->own_groups, TRUE);
    g_hash_table_destroy(e->channels);
    g_free(e->actors);
    g_free(e->faults);
    net_fabric_free(e->fabric);
    sched_queue_clear(&e->q);
}

/* Records what never completed and fills the per-rank outcome. */
static void engine_finish(Engine *e)
{
    for (Instance *inst = e->live_head; inst; inst = inst->live_next) {
        const GroupRt *g = &e->groups[inst->r.group];
        for (uint32_t i = 0; i < inst->r.n; i++) {
            const SchedArrival *ar = &inst->r.arr[i];
            if (!ar->present)
                continue;
            SchedRecord r = arrival_record(inst, ar, (uint32_t)g->def->ranks[i], -1);
            emit(e, &r);
        }
    }
    for (uint32_t r = 0; r < e->n_ranks; r++) {
        Actor *a = &e->actors[r];
        SchedRankStats *s = &e->out->ranks[r];
        *s = a->stats;
        switch (a->st) {
        case ACT_DONE:
            s->state = SCHED_RANK_DONE;
            break;
        case ACT_CRASHED:
            s->state = SCHED_RANK_CRASHED;
            break;
        case ACT_BLOCKED:
            s->state = SCHED_RANK_BLOCKED;
            s->end_ns = a->wait_since_ns;
            s->wait_ns += e->now - a->wait_since_ns;
            break;
        case ACT_COMPUTING:
            if (e->cfg.timeline == SCHED_TIMELINE_FULL) {
                SchedRecord rec = a->cur;
                rec.end_ns = -1;
                emit(e, &rec);
            }
            s->compute_ns -= a->cur.end_ns - e->now;
            s->state = SCHED_RANK_STOPPED;
            s->end_ns = e->now;
            break;
        default:
            s->state = SCHED_RANK_STOPPED;
            s->end_ns = e->now;
            break;
        }
    }
    /* A rank that ran its last compute ops ahead (can_run_ahead) ended after the last event:
     * the run ends with the latest of them, not at e->now (one rank alone has no event at all). */
    int64_t end = e->now;
    for (uint32_t r = 0; r < e->n_ranks; r++)
        if (e->out->ranks[r].state == SCHED_RANK_DONE && e->out->ranks[r].end_ns > end)
            end = e->out->ranks[r].end_ns;
    e->out->end_ns = end;
    e->out->events = e->events;
    e->out->rank_ops = e->rank_ops;
    for (guint i = 0; i < e->out->diags->len; i++)
        if (((SchedDiag *)g_ptr_array_index(e->out->diags, i))->severity == SCHED_SEV_ERROR)
            e->out->failed = true;
}

SchedOutcome *sched_engine_run(const SchedProgram *p, const SchedConfig *cfg)
{
    Engine e;
    engine_init(&e, p, cfg);
    for (uint32_t r = 0; r < p->n_ranks; r++)
        sched_queue_push(&e.q, 0, EV_RESUME, r, 0);
    for (uint32_t i = 0; i < e.n_faults; i++)
        if (e.faults[i].f.kind == SCHED_FAULT_CRASH && e.faults[i].f.at_ns >= 0 &&
            e.faults[i].f.at_ns <= SCHED_TIME_MAX) /* later: never within representable time */
            sched_queue_push(&e.q, e.faults[i].f.at_ns, EV_CRASH, (uint32_t)e.faults[i].f.rank,
                             i); /* arg: the fault, for its reason */

    const int64_t timeout = e.cfg.collective_timeout_ns;
    SchedEvent ev;
    while (!e.stop && sched_queue_pop(&e.q, &ev)) {
        const Instance *w = timeout > 0 ? watch_head(&e) : NULL;
        if (w && ev.time_ns > w->r.first_arrive_ns + timeout) {
            if (engine_timeout(&e, w->r.first_arrive_ns + timeout)) {
                e.stop = true;
                break;
            }
        }
        g_assert(ev.time_ns >= e.now);
        if (ev.type == EV_NET && ev.time_ns >= SCHED_TIME_MAX &&
            net_fabric_flow_gen(e.fabric, ev.target) == (uint32_t)ev.arg) {
            /* The fabric saturated this flow's end: it would never end. Reported (and the run
             * ends) at the last real time, not 73 years later. */
            collective_time_overflow(
                &e, g_ptr_array_index(e.instances, net_fabric_flow_tag(e.fabric, ev.target)));
            break;
        }
        e.now = ev.time_ns;
        if ((++e.events & (SCHED_PROGRESS_EVENTS - 1)) == 0 && cfg->progress)
            cfg->progress(cfg->progress_data, e.now, e.rank_ops, e.events);
        switch (ev.type) {
        case EV_RESUME:
            on_resume(&e, ev.target, ev.time_ns);
            break;
        case EV_NET: {
            if (net_fabric_flow_gen(e.fabric, ev.target) != (uint32_t)ev.arg)
                break; /* superseded: the flow's rate changed */
            uint64_t tag = net_fabric_flow_tag(e.fabric, ev.target);
            if (net_fabric_step(e.fabric, ev.target, ev.time_ns))
                instance_complete(&e, g_ptr_array_index(e.instances, tag), ev.time_ns);
            drain_fabric(&e);
            break;
        }
        case EV_CRASH:
            crash_rank(&e, ev.target, NULL, ev.arg < e.n_faults ? e.faults[ev.arg].f.reason : NULL);
            break;
        default:
            g_assert_not_reached();
        }
    }
    if (!e.stop) {
        bool blocked = false;
        for (uint32_t r = 0; r < e.n_ranks && !blocked; r++)
            blocked = e.actors[r].st == ACT_BLOCKED;
        if (blocked)
            engine_deadlock(&e);
    }
    engine_finish(&e);
    SchedOutcome *out = e.out;
    engine_free(&e);
    return out;
}
