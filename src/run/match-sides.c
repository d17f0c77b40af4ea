/* src/run/match-sides.c — the two sides `match` aligns, built: an imported run's groups and
 * calls read from the database, a simulation's from its records, and each side's hang (its
 * first mismatch, else its deadlock) with its culprits; see match-private.h. The diagnostics'
 * detail (culprits, a deadlock's instances) is read with sched/'s one typed reader.
 */
#include "match-private.h"

#include <string.h>

#include "../../sched/diagnose.h"
#include "../store/store-rows.h"

static void call_free(gpointer p)
{
    Call *c = p;
    g_free(c->name);
    g_free(c);
}

static void group_free(gpointer p)
{
    Group *g = p;
    g_free(g->name);
    g_array_unref(g->ranks);
    g_hash_table_unref(g->calls);
    if (g->seqs)
        g_array_unref(g->seqs);
    g_hash_table_unref(g->first);
    g_free(g);
}

void match_side_clear(Side *s)
{
    if (s->groups)
        g_ptr_array_unref(s->groups);
    g_free(s->hang_kind);
    if (s->culprits)
        g_array_unref(s->culprits);
    if (s->blocked)
        g_array_unref(s->blocked);
    g_free(s->unknown);
}

static int cmp_i32(gconstpointer a, gconstpointer b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static guint64 key(uint64_t seq, int32_t rank)
{
    return (seq << 24) | (guint64)(uint32_t)rank;
}

static Group *group_new(const char *name, const int32_t *ranks, guint n)
{
    Group *g = g_new0(Group, 1);
    g->name = g_strdup(name);
    g->ranks = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), n);
    g_array_append_vals(g->ranks, ranks, n);
    g_array_sort(g->ranks, cmp_i32);
    g->calls = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, call_free);
    g->first = g_hash_table_new(g_direct_hash, g_direct_equal);
    g->min_seq = UINT64_MAX;
    return g;
}

gint match_cmp_u64(gconstpointer a, gconstpointer b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* After the last group_add: the sorted distinct seqs. */
static void group_seal(Group *g)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    g->seqs = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, g->calls);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
        uint64_t seq = (uint64_t) * (gint64 *)k >> 24;
        if (!g_hash_table_contains(seen, &seq)) {
            gint64 *kk = g_new(gint64, 1);
            *kk = (gint64)seq;
            g_hash_table_add(seen, kk);
            g_array_append_val(g->seqs, seq);
        }
    }
    g_array_sort(g->seqs, match_cmp_u64);
}

static void group_add(Group *g, uint64_t seq, int32_t rank, const char *kind, const char *dtype,
                      uint64_t count, const char *name, bool done)
{
    if (seq == 0 || seq >= (UINT64_C(1) << 40) || rank < 0 || rank >= (1 << 24))
        return;
    gint64 *k = g_new(gint64, 1);
    *k = (gint64)key(seq, rank);
    Call *c = g_new0(Call, 1);
    c->kind = g_intern_string(kind);
    c->dtype = g_intern_string(dtype);
    c->count = count;
    c->name = g_strdup(name);
    c->done = done;
    g_hash_table_replace(g->calls, k, c);
    gpointer f = g_hash_table_lookup(g->first, GINT_TO_POINTER(rank + 1));
    if (!f || (uint64_t)GPOINTER_TO_SIZE(f) > seq)
        g_hash_table_insert(g->first, GINT_TO_POINTER(rank + 1), GSIZE_TO_POINTER((gsize)seq));
    g->min_seq = MIN(g->min_seq, seq);
    g->max_seq = MAX(g->max_seq, seq);
}

const Call *match_group_call(const Group *g, uint64_t seq, int32_t rank)
{
    gint64 k = (gint64)key(seq, rank);
    return g_hash_table_lookup(g->calls, &k);
}

bool match_same_call(const Call *a, const Call *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->count == b->count;
}

/* Culprits of a diagnostic's detail (sched_detail_parse), ascending. */
static GArray *culprits_of(const char *detail)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g_autoptr(SchedDetail) det = sched_detail_parse(detail);
    for (guint i = 0; det && i < det->culprits->len; i++) {
        int32_t r = g_array_index(det->culprits, SchedDetailCulprit, i).rank;
        if (r >= 0)
            g_array_append_val(out, r);
    }
    g_array_sort(out, cmp_i32);
    return out;
}

static int group_by_name(const Side *s, const char *name)
{
    for (guint i = 0; name && i < s->groups->len; i++)
        if (strcmp(((Group *)g_ptr_array_index(s->groups, i))->name, name) == 0)
            return (int)i;
    return -1;
}

/* The instances of a deadlock's detail (sched_detail_parse) that name a group and a seq. */
static void blocked_of(Side *s, const char *detail)
{
    g_autoptr(SchedDetail) det = sched_detail_parse(detail);
    for (guint i = 0; det && i < det->instances->len; i++) {
        const SchedDetailInstance *in = &g_array_index(det->instances, SchedDetailInstance, i);
        if (!in->group || !in->has_seq)
            continue;
        Inst x = {group_by_name(s, in->group), in->seq};
        if (x.group >= 0)
            g_array_append_val(s->blocked, x);
    }
}

/* The hang of an outcome: its first mismatch, else its deadlock's first instance; and every
 * instance its deadlock holds ranks in. */
static void side_hang(Side *s, const SchedOutcome *o, GPtrArray *group_names)
{
    s->blocked = g_array_new(FALSE, FALSE, sizeof(Inst));
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "deadlock") == 0)
            blocked_of(s, d->detail);
    }
    const SchedDiag *pick = NULL;
    for (guint i = 0; i < o->diags->len && !pick; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "mismatch") == 0)
            pick = d;
    }
    for (guint i = 0; i < o->diags->len && !pick; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "deadlock") == 0 || strcmp(d->kind, "timeout") == 0)
            pick = d;
    }
    s->hang_group = -1;
    s->culprits = g_array_new(FALSE, FALSE, sizeof(int32_t));
    if (!pick)
        return;
    s->hang = true;
    s->hang_kind = g_strdup(pick->kind);
    s->hang_seq = pick->seq;
    const char *gname = pick->group >= 0 && (guint)pick->group < group_names->len
                            ? g_ptr_array_index(group_names, (guint)pick->group)
                            : NULL;
    for (guint i = 0; gname && i < s->groups->len; i++)
        if (strcmp(((Group *)g_ptr_array_index(s->groups, i))->name, gname) == 0)
            s->hang_group = (int)i;
    /* The culprits: the mismatch's vote, or the deadlock's. */
    g_array_unref(s->culprits);
    s->culprits = culprits_of(pick->detail);
    if (!s->culprits->len)
        for (guint i = 0; i < o->diags->len; i++) {
            const SchedDiag *d = g_ptr_array_index(o->diags, i);
            if (strcmp(d->kind, "deadlock") == 0) {
                g_array_unref(s->culprits);
                s->culprits = culprits_of(d->detail);
            }
        }
}

/* One collectives row of the imported run into its group. */
static void add_collective(void *data, const StoreCollectiveRow *row)
{
    GHashTable *by_name = data;
    Group *g = g_hash_table_lookup(by_name, row->group);
    if (g)
        group_add(g, row->seq, row->rank, row->kind, row->dtype, row->count, row->name, row->done);
}

/* The imported side from the database. */
bool match_load_import(Store *st, int64_t id, const QueryRun *qr, Side *s, GError **error)
{
    s->label = "dump";
    s->groups = g_ptr_array_new_with_free_func(group_free);
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
    /* The groups as query_run_load read them (names and members, in id order). */
    const SchedOutcome *o = qr->outcome;
    for (guint i = 0; i < o->groups->len; i++) {
        const GArray *m = g_ptr_array_index(o->group_members, i);
        Group *g =
            group_new(g_ptr_array_index(o->groups, i), (const int32_t *)(void *)m->data, m->len);
        g_ptr_array_add(s->groups, g);
        g_hash_table_insert(by_name, g->name, g);
    }
    if (!store_rows_collectives(st, id, add_collective, by_name, error))
        return false;
    for (guint i = 0; i < s->groups->len; i++)
        group_seal(g_ptr_array_index(s->groups, i));
    s->n_ranks = qr->outcome->n_ranks;
    s->unknown = g_new0(bool, s->n_ranks + 1);
    for (uint32_t r = 0; r < s->n_ranks; r++)
        s->unknown[r] = qr->outcome->ranks[r].state == SCHED_RANK_UNKNOWN;
    side_hang(s, qr->outcome, qr->outcome->groups);
    return true;
}

void match_load_sim(const SchedProgram *p, const SchedOutcome *o, GArray *recs, Side *s)
{
    s->label = "simulation";
    s->groups = g_ptr_array_new_with_free_func(group_free);
    for (guint i = 0; i < p->groups->len; i++) {
        const SchedGroup *g = sched_program_group(p, (int32_t)i);
        g_ptr_array_add(s->groups, group_new(g->name, g->ranks, g->n));
    }
    for (guint i = 0; i < recs->len; i++) {
        const SchedRecord *r = &g_array_index(recs, SchedRecord, i);
        if (!sched_op_is_collective((SchedOpKind)r->kind) || r->group < 0 ||
            (guint)r->group >= s->groups->len)
            continue;
        group_add(g_ptr_array_index(s->groups, (guint)r->group), r->seq, (int32_t)r->rank,
                  sched_op_kind_name((SchedOpKind)r->kind), sched_dtype_name((SchedDtype)r->dtype),
                  r->count, sched_program_name_str(p, r->name), r->end_ns >= 0);
    }
    for (guint i = 0; i < s->groups->len; i++)
        group_seal(g_ptr_array_index(s->groups, i));
    s->n_ranks = o->n_ranks;
    side_hang(s, o, o->groups);
}

char *match_fmt_ranks(GArray *a)
{
    if (!a->len)
        return g_strdup("none");
    return sched_format_ranks((const int32_t *)(void *)a->data, a->len);
}

char *match_fmt_call(const Call *c)
{
    if (!c)
        return g_strdup("no call");
    return g_strdup_printf("%s %s %" G_GUINT64_FORMAT " %s (%s)", c->name, c->kind, c->count,
                           c->dtype, c->done ? "completed" : "never completed");
}
