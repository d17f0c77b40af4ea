/* sched/record.c — the neutral record of a run: building it from arrivals; see record.h. */
#include "record.h"

typedef struct {
    int32_t group;
    uint64_t seq;
} InstKey;

static guint key_hash(gconstpointer p)
{
    const InstKey *k = p;
    return g_int64_hash(&k->seq) * 31u + (guint)k->group;
}

static gboolean key_equal(gconstpointer x, gconstpointer y)
{
    const InstKey *a = x, *b = y;
    return a->group == b->group && a->seq == b->seq;
}

static void instance_free(gpointer data)
{
    SchedInstance *inst = data;
    g_free(inst->arr);
    g_free(inst);
}

SchedRunRecord *sched_run_record_new(uint32_t n_ranks, const SchedGroup *const *groups,
                                     uint32_t n_groups, const SchedProgram *names)
{
    SchedRunRecord *rec = g_new0(SchedRunRecord, 1);
    rec->n_ranks = n_ranks;
    rec->ranks = g_new0(SchedRankSeen, n_ranks ? n_ranks : 1);
    for (uint32_t r = 0; r < n_ranks; r++)
        rec->ranks[r].doing_layer = -1;
    rec->groups = groups;
    rec->n_groups = n_groups;
    rec->names = names;
    rec->instances = g_ptr_array_new();
    rec->mismatch_policy = "hang";
    rec->by_key = g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
    rec->owned = g_ptr_array_new_with_free_func(instance_free);
    return rec;
}

void sched_run_record_free(SchedRunRecord *rec)
{
    if (!rec)
        return;
    g_ptr_array_unref(rec->instances);
    g_hash_table_unref(rec->by_key);
    g_ptr_array_unref(rec->owned);
    g_free(rec->ranks);
    g_free(rec);
}

SchedInstance *sched_run_record_arrive(SchedRunRecord *rec, uint32_t rank, int32_t group,
                                       uint64_t seq, const SchedArrival *a)
{
    g_assert(rank < rec->n_ranks);
    g_assert(group >= 0 && (uint32_t)group < rec->n_groups);
    const SchedGroup *g = rec->groups[group];
    int32_t mi = sched_group_index_of(g, (int32_t)rank);
    g_assert(mi >= 0);
    InstKey key = {group, seq};
    SchedInstance *inst = g_hash_table_lookup(rec->by_key, &key);
    if (!inst) {
        inst = g_new0(SchedInstance, 1);
        inst->group = group;
        inst->seq = seq;
        inst->n = g->n;
        inst->arr = g_new0(SchedArrival, g->n);
        inst->first_arrive_ns = INT64_MAX;
        inst->last_arrive_ns = INT64_MIN;
        g_hash_table_insert(rec->by_key, g_memdup2(&key, sizeof key), inst);
        g_ptr_array_add(rec->owned, inst);
    }
    inst->arr[mi] = *a;
    inst->arr[mi].present = true;
    inst->arrived++;
    inst->first_arrive_ns = MIN(inst->first_arrive_ns, a->arrive_ns);
    inst->last_arrive_ns = MAX(inst->last_arrive_ns, a->arrive_ns);
    SchedRankSeen *s = &rec->ranks[rank];
    s->state = SCHED_SEEN_BLOCKED;
    s->waiting = inst;
    s->end_ns = a->arrive_ns;
    return inst;
}

SchedInstance *sched_run_record_note(SchedRunRecord *rec, uint32_t rank, int32_t group,
                                     uint64_t seq, bool done, const SchedArrival *a)
{
    if (group < 0 || (uint32_t)group >= rec->n_groups)
        return NULL;
    InstKey key = {group, seq};
    SchedInstance *inst = g_hash_table_lookup(rec->by_key, &key);
    int32_t mi = inst ? sched_group_index_of(rec->groups[group], (int32_t)rank) : -1;
    if (mi < 0 || inst->arr[mi].present)
        return NULL;
    if (!done) {
        inst->arr[mi].queued = true;
        return inst;
    }
    const SchedArrival *ref = a;
    for (uint32_t i = 0; i < inst->n && !ref; i++)
        if (inst->arr[i].present)
            ref = &inst->arr[i];
    inst->arr[mi] = *ref;
    inst->arr[mi].present = inst->arr[mi].done = true;
    inst->arr[mi].queued = false;
    inst->arrived++;
    return inst;
}

static int cmp_first_arrival(const void *x, const void *y)
{
    const SchedInstance *a = *(SchedInstance *const *)x, *b = *(SchedInstance *const *)y;
    if (a->first_arrive_ns != b->first_arrive_ns)
        return a->first_arrive_ns < b->first_arrive_ns ? -1 : 1;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

void sched_run_record_seal(SchedRunRecord *rec)
{
    g_ptr_array_set_size(rec->instances, 0);
    for (guint i = 0; i < rec->owned->len; i++)
        g_ptr_array_add(rec->instances, g_ptr_array_index(rec->owned, i));
    g_ptr_array_sort(rec->instances, cmp_first_arrival);
}
