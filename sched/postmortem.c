/* sched/postmortem.c — a recorded run's state laid out as the engine's own (actors, group
 * run-time, live instances with their arrivals), then judged by sched/diagnose.c: the findings
 * of an imported hang and of a simulated one come from the same code. */
#include "postmortem.h"

#include <string.h>

#include "engine-private.h"

typedef struct {
    int32_t group;
    uint64_t seq;
    uint32_t rank;
} HeadKey;

static int cmp_head(const void *x, const void *y)
{
    const HeadKey *a = x, *b = y;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int cmp_first_arrival(const void *x, const void *y)
{
    const Instance *a = *(Instance *const *)x, *b = *(Instance *const *)y;
    if (a->first_arrive_ns != b->first_arrive_ns)
        return a->first_arrive_ns < b->first_arrive_ns ? -1 : 1;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static SchedOutcome *outcome_new(const SchedProgram *p)
{
    SchedOutcome *o = g_new0(SchedOutcome, 1);
    o->n_ranks = p->n_ranks;
    o->ranks = g_new0(SchedRankStats, p->n_ranks);
    o->diags = g_ptr_array_new();
    o->groups = g_ptr_array_new_with_free_func(g_free);
    o->group_members = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint i = 0; i < p->groups->len; i++) {
        const SchedGroup *g = sched_program_group(p, (int32_t)i);
        g_ptr_array_add(o->groups, g_strdup(g->name));
        GArray *m = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), g->n);
        g_array_append_vals(m, g->ranks, g->n);
        g_ptr_array_add(o->group_members, m);
    }
    return o;
}

/* Whether every present member brought the same signature. */
static bool agree(const Instance *inst)
{
    const Arrival *ref = NULL;
    for (uint32_t i = 0; i < inst->n; i++) {
        if (!inst->arr[i].present)
            continue;
        if (!ref)
            ref = &inst->arr[i];
        else if (!arrival_same_signature(ref, &inst->arr[i], sched_op_is_p2p(ref->kind)))
            return false;
    }
    return true;
}

SchedOutcome *sched_postmortem(const SchedProgram *p, const SchedPmRank *ranks,
                               const SchedPmConfig *cfg)
{
    const uint32_t n = p->n_ranks;
    Engine e = {0};
    e.p = p;
    e.cfg = sched_config_default();
    e.cfg.collective_timeout_ns = cfg->timeout_ns;
    e.cfg.faults = NULL;
    e.cfg.n_faults = 0;
    e.postmortem = true;
    e.now = cfg->end_ns;
    e.n_ranks = n;
    e.actors = g_new0(Actor, n);
    e.n_groups = p->groups->len;
    e.groups = g_new0(GroupRt, e.n_groups ? e.n_groups : 1);
    for (uint32_t i = 0; i < e.n_groups; i++)
        e.groups[i].def = sched_program_group(p, (int32_t)i);
    e.instances = g_ptr_array_new();
    e.out = outcome_new(p);

    g_autoptr(GArray) heads = g_array_new(FALSE, FALSE, sizeof(HeadKey));
    uint64_t calls = 0;
    for (uint32_t r = 0; r < n; r++) {
        const SchedPmRank *pr = &ranks[r];
        Actor *a = &e.actors[r];
        a->stats.ops = pr->calls;
        a->idx = pr->calls;
        calls += pr->calls;
        switch (pr->state) {
        case SCHED_PM_IDLE:
            a->st = ACT_DONE;
            a->stats.end_ns = pr->last_ns;
            break;
        case SCHED_PM_UNKNOWN:
            a->st = ACT_UNKNOWN;
            a->stats.end_ns = 0;
            break;
        case SCHED_PM_BLOCKED: {
            g_assert(pr->group >= 0 && (uint32_t)pr->group < e.n_groups);
            g_assert(sched_group_index_of(e.groups[pr->group].def, (int32_t)r) >= 0);
            a->st = ACT_BLOCKED;
            a->wait_since_ns = pr->arrive_ns;
            a->stats.end_ns = pr->arrive_ns;
            HeadKey k = {pr->group, pr->seq, r};
            g_array_append_val(heads, k);
            break;
        }
        }
    }
    e.rank_ops = calls;

    /* One instance per distinct (group, seq) among the blocked ranks. */
    g_array_sort(heads, cmp_head);
    for (guint i = 0; i < heads->len;) {
        const HeadKey *k0 = &g_array_index(heads, HeadKey, i);
        const SchedGroup *g = e.groups[k0->group].def;
        Instance *inst = g_new0(Instance, 1);
        inst->id = e.instances->len;
        inst->group = k0->group;
        inst->seq = k0->seq;
        inst->n = g->n;
        inst->arr = g_new0(Arrival, g->n);
        inst->first_arrive_ns = INT64_MAX;
        inst->last_arrive_ns = INT64_MIN;
        g_ptr_array_add(e.instances, inst);
        guint j = i;
        for (; j < heads->len; j++) {
            const HeadKey *k = &g_array_index(heads, HeadKey, j);
            if (k->group != k0->group || k->seq != k0->seq)
                break;
            const SchedPmRank *pr = &ranks[k->rank];
            int32_t mi = sched_group_index_of(g, (int32_t)k->rank);
            inst->arr[mi] = (Arrival){.arrive_ns = pr->arrive_ns,
                                      .idx = pr->calls,
                                      .count = pr->count,
                                      .layer = -1,
                                      .name = pr->name,
                                      .root = pr->root,
                                      .kind = pr->kind,
                                      .dtype = pr->dtype,
                                      .present = true};
            inst->arrived++;
            inst->first_arrive_ns = MIN(inst->first_arrive_ns, pr->arrive_ns);
            inst->last_arrive_ns = MAX(inst->last_arrive_ns, pr->arrive_ns);
            e.actors[k->rank].waiting = inst;
        }
        i = j;
    }

    /* The live list in first-arrival order, as the engine keeps it. */
    g_autoptr(GPtrArray) order = g_ptr_array_copy(e.instances, NULL, NULL);
    g_ptr_array_sort(order, cmp_first_arrival);
    for (guint i = 0; i < order->len; i++) {
        Instance *inst = g_ptr_array_index(order, i);
        inst->live_prev = e.live_tail;
        if (e.live_tail)
            e.live_tail->live_next = inst;
        else
            e.live_head = inst;
        e.live_tail = inst;
    }

    /* Signatures: an instance whose members all arrived, or left no record, and disagree. */
    for (guint i = 0; i < order->len; i++) {
        Instance *inst = g_ptr_array_index(order, i);
        const SchedGroup *g = e.groups[inst->group].def;
        uint32_t accounted = 0;
        for (uint32_t m = 0; m < inst->n; m++)
            accounted += inst->arr[m].present || e.actors[g->ranks[m]].st == ACT_UNKNOWN;
        if (accounted == inst->n && inst->arrived >= 2 && !agree(inst)) {
            inst->mismatched = inst->poisoned = true;
            diagnose_mismatch(&e, inst, false);
        }
    }

    if (heads->len) {
        diagnose_deadlock(&e);
    } else {
        uint32_t unknown = 0;
        for (uint32_t r = 0; r < n; r++)
            unknown += e.actors[r].st == ACT_UNKNOWN;
        char *msg = g_strdup_printf(
            "no hang in the record: every recorded collective of the %u rank%s read completed%s. "
            "A hang, if there was one, lies outside what was recorded: CPU-side, or in "
            "collectives the record cannot see (CUDA-graph replays, PyNccl and custom "
            "all-reduce bypass the Flight Recorder)",
            n - unknown, n - unknown == 1 ? "" : "s",
            unknown ? " (some ranks left no record)" : "");
        diag_add(&e, "no_hang", SCHED_SEV_WARNING, -1, -1, 0, -1, NULL, msg, NULL);
    }

    /* The outcome: one state per rank. */
    SchedOutcome *o = e.out;
    o->end_ns = cfg->end_ns;
    o->rank_ops = calls;
    for (uint32_t r = 0; r < n; r++) {
        const Actor *a = &e.actors[r];
        SchedRankStats *s = &o->ranks[r];
        *s = a->stats;
        s->state = a->st == ACT_BLOCKED   ? SCHED_RANK_BLOCKED
                   : a->st == ACT_UNKNOWN ? SCHED_RANK_UNKNOWN
                                          : SCHED_RANK_DONE;
        if (a->st == ACT_BLOCKED)
            s->wait_ns = cfg->end_ns > a->wait_since_ns ? cfg->end_ns - a->wait_since_ns : 0;
    }
    for (guint i = 0; i < o->diags->len; i++)
        if (((SchedDiag *)g_ptr_array_index(o->diags, i))->severity == SCHED_SEV_ERROR)
            o->failed = true;

    for (guint i = 0; i < e.instances->len; i++) {
        Instance *inst = g_ptr_array_index(e.instances, i);
        g_free(inst->arr);
        g_free(inst);
    }
    g_ptr_array_unref(e.instances);
    g_free(e.groups);
    g_free(e.actors);
    return o;
}
