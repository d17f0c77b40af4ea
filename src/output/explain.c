/* src/output/explain.c — the hang story from diagnostics' detail JSON; see explain.h.
 *
 * The diagnostics are first gathered into a Story: the collective instances ranks were left
 * waiting in (from `deadlock` and `timeout` details, and from a `mismatch` that stopped the
 * run with on_mismatch: abort), the cycles and the culprits. Text and DOT are two views of it.
 * The details are read with sched_detail_parse (sched/diagnose.h); strings point into those
 * typed details, which the Story keeps alive.
 */
#include "explain.h"
#include "explain-private.h"

#include <stdlib.h>
#include <string.h>


/* Text lists are cut after this many entries ("... and N more"). */
#define MAX_TEXT_ITEMS 16

static void inst_free(gpointer p)
{
    Inst *in = p;
    g_array_unref(in->arrived);
    g_array_unref(in->waiting);
    g_array_unref(in->missing);
    g_free(in);
}

static Inst *inst_new(const char *source)
{
    Inst *in = g_new0(Inst, 1);
    in->source = source;
    in->layer = -1;
    in->since_ns = -1;
    in->fired_ns = -1;
    in->arrived = g_array_new(FALSE, FALSE, sizeof(int32_t));
    in->waiting = g_array_new(FALSE, FALSE, sizeof(int32_t));
    in->missing = g_array_new(FALSE, FALSE, sizeof(Missing));
    return in;
}

/* Ranks outside the arrays are skipped wherever the arrays are indexed. */
#define MAX_GROWN_RANKS (1 << 20)

static void story_see(Story *s, int64_t rank)
{
    if (s->grow && rank >= 0 && rank < MAX_GROWN_RANKS && rank + 1 > s->n)
        s->n = (int32_t)rank + 1;
}

static void see_ranks(Story *s, const GArray *ranks, GArray *out)
{
    for (guint i = 0; i < ranks->len; i++) {
        int32_t r = g_array_index(ranks, int32_t, i);
        story_see(s, r);
        g_array_append_val(out, r);
    }
}

/* The diagnostic's detail, typed (sched_detail_parse); the Story keeps it alive, so strings
 * read from it stay valid. NULL when there is none. */
static const SchedDetail *parse_detail(Story *s, const SchedDiag *d)
{
    SchedDetail *det = sched_detail_parse(d->detail);
    if (det)
        g_ptr_array_add(s->details, det);
    return det;
}

static void add_culprit(Story *s, int32_t rank, const char *reason)
{
    for (guint i = 0; i < s->culprits->len; i++)
        if (g_array_index(s->culprits, Culprit, i).rank == rank)
            return;
    Culprit c = {rank, reason};
    story_see(s, rank);
    g_array_append_val(s->culprits, c);
}

static void read_missing(Story *s, const GArray *missing, Inst *in)
{
    for (guint i = 0; missing && i < missing->len; i++) {
        const SchedDetailMissing *m = &g_array_index(missing, SchedDetailMissing, i);
        Missing x = {m->rank, m->state, m->doing};
        if (x.rank < 0)
            continue;
        story_see(s, x.rank);
        g_array_append_val(in->missing, x);
    }
}

static void read_deadlock(Story *s, const SchedDiag *d, const SchedDetail *det)
{
    s->deadlock = d;
    if (!det)
        return;
    s->hw_deadlock = det->hardware;
    guint base = s->insts->len;
    for (guint k = 0; k < det->instances->len; k++) {
        const SchedDetailInstance *io = &g_array_index(det->instances, SchedDetailInstance, k);
        Inst *in = inst_new("deadlock");
        in->group = io->group;
        in->seq = (int64_t)io->seq;
        in->op = io->op;
        in->layer = io->layer;
        in->mismatched = io->mismatched;
        see_ranks(s, io->arrived, in->arrived);
        read_missing(s, io->missing, in);
        in->hardware = io->hardware;
        g_ptr_array_add(s->insts, in);
    }
    for (guint i = 0; i < det->blocked->len; i++) {
        const SchedDetailBlocked *b = &g_array_index(det->blocked, SchedDetailBlocked, i);
        int64_t k = b->instance;
        int32_t r = b->rank;
        if (k < 0 || base + (guint)k >= s->insts->len || r < 0)
            continue;
        Inst *in = g_ptr_array_index(s->insts, base + (guint)k);
        story_see(s, r);
        g_array_append_val(in->waiting, r);
        int64_t since = (int64_t)(b->since_us * 1e3 + 0.5);
        if (since >= 0 && (in->since_ns < 0 || since < in->since_ns))
            in->since_ns = since;
    }
    for (guint i = 0; i < det->cycles->len; i++) {
        GArray *ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        see_ranks(s, g_ptr_array_index(det->cycles, i), ranks);
        g_ptr_array_add(s->cycles, ranks);
    }
    for (guint i = 0; i < det->culprits->len; i++) {
        const SchedDetailCulprit *c = &g_array_index(det->culprits, SchedDetailCulprit, i);
        if (c->rank >= 0)
            add_culprit(s, c->rank, c->reason ? c->reason : "?");
    }
}

static void read_timeout(Story *s, const SchedDiag *d, const SchedDetail *det)
{
    Inst *in = inst_new("timeout");
    in->group = det ? det->group : NULL;
    in->seq = det ? (int64_t)det->seq : 0;
    in->op = d->op_name;
    in->layer = d->layer;
    in->since_ns = (int64_t)((det ? det->arrive_us : -1) * 1e3 + 0.5);
    in->fired_ns = d->time_ns;
    if (det) {
        see_ranks(s, det->arrived, in->arrived);
        see_ranks(s, det->waiting, in->waiting);
        read_missing(s, det->missing, in);
        in->hardware = det->hardware;
    }
    g_ptr_array_add(s->insts, in);
    /* The late members are to blame unless they wait elsewhere (then the chain goes on). */
    for (guint i = 0; i < in->missing->len; i++) {
        const Missing *m = &g_array_index(in->missing, Missing, i);
        if (g_strcmp0(m->state, "blocked") != 0)
            add_culprit(s, m->rank,
                        g_strcmp0(m->state, "crashed") == 0    ? "crashed"
                        : g_strcmp0(m->state, "finished") == 0 ? "finished"
                                                               : "late");
    }
}

/* A mismatch that stopped the run (on_mismatch: abort) left every member waiting in it. */
static void read_mismatch(Story *s, const SchedDiag *d, const SchedDetail *det, GPtrArray *aborted)
{
    if (!det)
        return;
    for (guint i = 0; i < det->culprits->len; i++)
        add_culprit(s, g_array_index(det->culprits, SchedDetailCulprit, i).rank, "mismatch");
    if (det->majority < 0)
        s->tie = true;
    const char *policy = det->policy;
    if (policy && strcmp(policy, "continue") == 0 && !s->continued)
        s->continued = det->group ? det->group : "?";
    if (!policy || strcmp(policy, "abort") != 0)
        return;
    Inst *in = inst_new("mismatch");
    in->group = det->group;
    in->seq = (int64_t)det->seq;
    in->op = d->op_name;
    in->layer = d->layer;
    in->mismatched = true;
    in->since_ns = d->time_ns;
    for (guint i = 0; i < det->signatures->len; i++)
        see_ranks(s, g_array_index(det->signatures, SchedDetailSig, i).ranks, in->arrived);
    g_array_append_vals(in->waiting, in->arrived->data, in->arrived->len);
    g_ptr_array_add(aborted, in);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

Story *explain_story_new(const SchedOutcome *o)
{
    Story *s = g_new0(Story, 1);
    s->details = g_ptr_array_new_with_free_func((GDestroyNotify)sched_detail_free);
    s->insts = g_ptr_array_new_with_free_func(inst_free);
    s->cycles = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    s->culprits = g_array_new(FALSE, FALSE, sizeof(Culprit));
    s->n = (int32_t)o->n_ranks;
    s->grow = o->n_ranks == 0;
    g_autoptr(GPtrArray) aborted = g_ptr_array_new_with_free_func(inst_free);
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        story_see(s, d->rank);
        bool diverges = strcmp(d->kind, "mismatch") == 0 || strcmp(d->kind, "divergence") == 0 ||
                        strcmp(d->kind, "shape") == 0;
        if (diverges && !s->divergence)
            s->divergence = d;
        const SchedDetail *det = parse_detail(s, d);
        if (strcmp(d->kind, "deadlock") == 0 && !s->deadlock)
            read_deadlock(s, d, det);
        else if (strcmp(d->kind, "timeout") == 0)
            read_timeout(s, d, det);
        else if (strcmp(d->kind, "mismatch") == 0)
            read_mismatch(s, d, det, aborted);
    }
    /* An aborted mismatch is a waiting instance only if no deadlock/timeout covers it. */
    for (guint i = 0; i < aborted->len; i++) {
        Inst *a = g_ptr_array_index(aborted, i);
        bool covered = false;
        for (guint k = 0; k < s->insts->len && !covered; k++) {
            Inst *in = g_ptr_array_index(s->insts, k);
            covered = in->seq == a->seq && g_strcmp0(in->group, a->group) == 0;
        }
        if (!covered)
            g_ptr_array_add(s->insts, g_ptr_array_steal_index(aborted, i--));
    }
    for (guint k = 0; k < s->insts->len; k++) {
        Inst *in = g_ptr_array_index(s->insts, k);
        g_array_sort(in->waiting, cmp_i32);
        g_array_sort(in->arrived, cmp_i32);
    }
    return s;
}

void explain_story_free(Story *s)
{
    g_ptr_array_unref(s->insts);
    g_ptr_array_unref(s->cycles);
    g_array_unref(s->culprits);
    g_ptr_array_unref(s->details); /* last: the others borrow its strings */
    g_free(s);
}

/* cycle id + 1 per rank (0 = in no cycle); caller frees. */
int32_t *explain_cycle_of(const Story *s)
{
    int32_t *c = g_new0(int32_t, s->n > 0 ? s->n : 1);
    for (guint k = 0; k < s->cycles->len; k++) {
        GArray *cy = g_ptr_array_index(s->cycles, k);
        for (guint i = 0; i < cy->len; i++) {
            int32_t r = g_array_index(cy, int32_t, i);
            if (r >= 0 && r < s->n)
                c[r] = (int32_t)k + 1;
        }
    }
    return c;
}

/* Instance index each rank waits in, -1 for none; caller frees. */
int32_t *explain_waits_in(const Story *s)
{
    int32_t *w = g_new(int32_t, s->n > 0 ? s->n : 1);
    for (int32_t r = 0; r < s->n; r++)
        w[r] = -1;
    for (guint k = 0; k < s->insts->len; k++) {
        Inst *in = g_ptr_array_index(s->insts, k);
        for (guint i = 0; i < in->waiting->len; i++) {
            int32_t r = g_array_index(in->waiting, int32_t, i);
            if (r >= 0 && r < s->n && w[r] < 0)
                w[r] = (int32_t)k;
        }
    }
    return w;
}

const Culprit *explain_culprit_of(const Story *s, int32_t rank)
{
    for (guint i = 0; i < s->culprits->len; i++)
        if (g_array_index(s->culprits, Culprit, i).rank == rank)
            return &g_array_index(s->culprits, Culprit, i);
    return NULL;
}

/* The culprit ranks that arrived at instance `in` and are not waiting in it: they died inside
 * the collective (a crash while waiting). Caller frees. */
static GArray *crashed_inside(const Story *s, const Inst *in)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; i < in->arrived->len; i++) {
        int32_t r = g_array_index(in->arrived, int32_t, i);
        bool waiting = false;
        for (guint j = 0; j < in->waiting->len && !waiting; j++)
            waiting = g_array_index(in->waiting, int32_t, j) == r;
        const Culprit *c = explain_culprit_of(s, r);
        if (!waiting && c && g_strcmp0(c->reason, "crashed") == 0)
            g_array_append_val(out, r);
    }
    return out;
}

/* What a rank was doing, from any instance that lists it as missing; NULL if none does. */
static const Missing *missing_info(const Story *s, int32_t rank)
{
    for (guint k = 0; k < s->insts->len; k++) {
        Inst *in = g_ptr_array_index(s->insts, k);
        for (guint i = 0; i < in->missing->len; i++)
            if (g_array_index(in->missing, Missing, i).rank == rank)
                return &g_array_index(in->missing, Missing, i);
    }
    return NULL;
}

/* ---- text ---- */

char *explain_fmt_ranks(GArray *ranks)
{
    g_autoptr(GArray) sorted = g_array_copy(ranks);
    g_array_sort(sorted, cmp_i32);
    return sched_format_ranks((const int32_t *)(void *)sorted->data, sorted->len);
}

static const char *plural_rank(guint n)
{
    return n == 1 ? "rank" : "ranks";
}

/* "op (group g, seq 3, layer 5)" */
char *explain_fmt_where(const char *op, const char *group, int64_t seq, int32_t layer)
{
    g_autofree char *l = layer >= 0 ? g_strdup_printf(", layer %d", layer) : g_strdup("");
    return g_strdup_printf("%s (group %s, seq %" G_GINT64_FORMAT "%s)", op ? op : "?",
                           group ? group : "?", seq, l);
}

/* "rank 3 (finished at 1 ms); ranks 4-5 (crashed at 2 ms)": missing ranks folded by what
 * they were doing. */
static char *fmt_missing(GArray *missing)
{
    GString *out = g_string_new(NULL);
    g_autofree bool *done = g_new0(bool, missing->len + 1);
    guint groups = 0;
    for (guint i = 0; i < missing->len; i++) {
        if (done[i])
            continue;
        const Missing *a = &g_array_index(missing, Missing, i);
        g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (guint j = i; j < missing->len; j++) {
            const Missing *b = &g_array_index(missing, Missing, j);
            if (!done[j] && g_strcmp0(a->doing, b->doing) == 0) {
                done[j] = true;
                g_array_append_val(ranks, b->rank);
            }
        }
        if (groups++ == MAX_TEXT_ITEMS / 2) {
            g_string_append(out, "; ...");
            break;
        }
        g_autofree char *rs = explain_fmt_ranks(ranks);
        g_string_append_printf(out, "%s%s %s (%s)", out->len ? "; " : "", plural_rank(ranks->len),
                               rs, a->doing ? a->doing : "?");
    }
    return g_string_free(out, FALSE);
}

static void text_divergence(FILE *out, const Story *s, const SchedOutcome *o)
{
    const SchedDiag *d = s->divergence;
    fprintf(out, "\nfirst divergence:\n");
    g_autofree char *t = sched_format_ns(d->time_ns);
    g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
    if (strcmp(d->kind, "mismatch") == 0) {
        g_autofree char *where = explain_fmt_where(
            d->op_name, det ? det->group : NULL,
            det && det->has_seq ? (int64_t)det->seq : (int64_t)d->seq, d->layer);
        const char *policy = det ? det->policy : NULL;
        if (g_strcmp0(policy, "recorded") == 0)
            fprintf(out,
                    "  mismatch at %s in %s (recorded) — the members called NCCL with "
                    "different signatures:\n",
                    t, where);
        else
            fprintf(out,
                    "  mismatch at %s in %s (on_mismatch: %s) — the members called NCCL with "
                    "different signatures:\n",
                    t, where, policy ? policy : "?");
        int64_t majority = det ? det->majority : -1;
        for (guint i = 0; det && i < det->signatures->len; i++) {
            const SchedDetailSig *sg = &g_array_index(det->signatures, SchedDetailSig, i);
            g_autofree char *rs = explain_fmt_ranks(sg->ranks);
            g_autofree char *ls =
                sg->layer >= 0 ? g_strdup_printf(", layer %d", sg->layer) : g_strdup("");
            g_autofree char *root =
                sg->root >= 0 ? g_strdup_printf(" root %d", sg->root) : g_strdup("");
            const char *tag = majority < 0             ? "  (no majority: a tie)"
                              : (int64_t)i == majority ? "  (majority)"
                                                       : "  <- culprit (minority)";
            /* the numbers that differ, as the model counts them: rows of the step */
            g_autofree char *rows =
                sg->tokens > 0 && sg->count % sg->tokens == 0
                    ? g_strdup_printf(" (%" G_GINT64_FORMAT " rows x %" G_GINT64_FORMAT ")",
                                      sg->tokens, sg->count / sg->tokens)
                : sg->tokens > 0 ? g_strdup_printf(" (%" G_GINT64_FORMAT " rows)", sg->tokens)
                                 : g_strdup("");
            fprintf(out, "    %s %" G_GINT64_FORMAT "%s %s%s from %s%s on %s %s%s\n",
                    sg->kind ? sg->kind : "?", sg->count, rows, sg->dtype ? sg->dtype : "?",
                    root, sg->op ? sg->op : "?", ls, plural_rank(sg->ranks->len), rs, tag);
        }
    } else if (strcmp(d->kind, "divergence") == 0) {
        const char *group = d->group >= 0 && (guint)d->group < o->groups->len
                                ? g_ptr_array_index(o->groups, (guint)d->group)
                                : "?";
        fprintf(out,
                "  divergence at %s in group %s seq %" G_GUINT64_FORMAT " (a warning: NCCL "
                "matches calls by order only, so the run went on with the wrong data) — the "
                "signatures agreed but the ranks were at different ops:\n",
                t, group, d->seq);
        for (guint i = 0; det && i < det->members->len; i++) {
            const SchedDetailSig *m = &g_array_index(det->members, SchedDetailSig, i);
            g_autofree char *rs = explain_fmt_ranks(m->ranks);
            g_autofree char *ls =
                m->layer >= 0 ? g_strdup_printf(", layer %d", m->layer) : g_strdup("");
            fprintf(out, "    %s%s on %s %s\n", m->op ? m->op : "?", ls,
                    plural_rank(m->ranks->len), rs);
        }
    } else {
        fprintf(out, "  %s at %s: %s\n", d->kind, t, d->message);
    }
}

/* No mismatch and no divergence: the first instance left waiting, and what its missing
 * members were doing. */
static void text_first_block(FILE *out, const Story *s, const SchedOutcome *o)
{
    fprintf(out, "\nfirst divergence:\n");
    if (!s->insts->len) {
        const SchedDiag *first = NULL;
        for (guint i = 0; i < o->diags->len && !first; i++) {
            const SchedDiag *d = g_ptr_array_index(o->diags, i);
            if (d->severity == SCHED_SEV_ERROR)
                first = d;
        }
        if (first) {
            g_autofree char *t = sched_format_ns(first->time_ns);
            fprintf(out, "  no collective mismatched; the first error, at %s: %s\n", t,
                    first->message);
        } else {
            fprintf(out, "  none found\n");
        }
        return;
    }
    const Inst *in = g_ptr_array_index(s->insts, 0);
    g_autofree char *where = explain_fmt_where(in->op, in->group, in->seq, in->layer);
    g_autofree char *t = sched_format_ns(in->since_ns);
    g_autofree char *arrived = explain_fmt_ranks(in->arrived);
    fprintf(out,
            "  no collective mismatched and no rank diverged; the first instance to %s is\n"
            "  %s, entered at %s: arrived %s %s; missing ",
            strcmp(in->source, "timeout") == 0 ? "time out" : "block", where, t,
            plural_rank(in->arrived->len), arrived);
    g_autoptr(GArray) died = crashed_inside(s, in);
    if (in->missing->len) {
        g_autofree char *m = fmt_missing(in->missing);
        fprintf(out, "%s\n", m);
    } else if (died->len) {
        g_autofree char *d = explain_fmt_ranks(died);
        fprintf(out, "none (every member arrived, but %s %s crashed inside it)\n",
                plural_rank(died->len), d);
    } else {
        fprintf(out, "none (every member arrived but their signatures disagree)\n");
    }
}

/* A shortest cycle through the smallest rank of the component, by BFS inside it. Returns the
 * ranks in order (first repeated at the end), or NULL. */
static GArray *cycle_path(const Story *s, GArray *comp, const int32_t *waits)
{
    if (!comp->len)
        return NULL;
    int32_t start = g_array_index(comp, int32_t, 0);
    g_autoptr(GHashTable) in_comp = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < comp->len; i++)
        g_hash_table_add(in_comp, GINT_TO_POINTER(g_array_index(comp, int32_t, i) + 1));
    g_autoptr(GHashTable) parent = g_hash_table_new(NULL, NULL); /* rank+1 -> parent+1 */
    g_autoptr(GArray) queue = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g_array_append_val(queue, start);
    bool found = false;
    int32_t last = -1;
    for (guint qi = 0; qi < queue->len && !found; qi++) {
        int32_t v = g_array_index(queue, int32_t, qi);
        if (v < 0 || v >= s->n || waits[v] < 0)
            continue;
        const Inst *in = g_ptr_array_index(s->insts, (guint)waits[v]);
        for (guint i = 0; i < in->missing->len && !found; i++) {
            int32_t w = g_array_index(in->missing, Missing, i).rank;
            if (!g_hash_table_contains(in_comp, GINT_TO_POINTER(w + 1)))
                continue;
            if (w == start) {
                found = true;
                last = v;
            } else if (!g_hash_table_contains(parent, GINT_TO_POINTER(w + 1))) {
                g_hash_table_insert(parent, GINT_TO_POINTER(w + 1), GINT_TO_POINTER(v + 1));
                g_array_append_val(queue, w);
            }
        }
    }
    if (!found)
        return NULL;
    GArray *path = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (int32_t v = last; v != start;
         v = GPOINTER_TO_INT(g_hash_table_lookup(parent, GINT_TO_POINTER(v + 1))) - 1)
        g_array_prepend_val(path, v);
    g_array_prepend_val(path, start);
    g_array_append_val(path, start);
    return path;
}

static void text_graph(FILE *out, const Story *s)
{
    fprintf(out, "\nwait-for graph (a waiting rank needs every missing member of its collective: "
                 "AND edges):\n");
    guint shown = 0, edges = 0;
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        edges += in->waiting->len * in->missing->len;
        if (!in->waiting->len || shown >= MAX_TEXT_ITEMS)
            continue;
        shown++;
        g_autofree char *where = explain_fmt_where(in->op, in->group, in->seq, in->layer);
        g_autofree char *w = explain_fmt_ranks(in->waiting);
        g_autoptr(GArray) died = crashed_inside(s, in);
        if (in->missing->len) {
            g_autofree char *m = fmt_missing(in->missing);
            fprintf(out, "  %s: %s %s -> %s\n", where, plural_rank(in->waiting->len), w, m);
        } else if (died->len && !in->mismatched) {
            g_autofree char *d = explain_fmt_ranks(died);
            fprintf(out, "  %s: %s %s -> %s %s, which arrived and crashed inside it\n", where,
                    plural_rank(in->waiting->len), w, plural_rank(died->len), d);
        } else {
            fprintf(out,
                    "  %s: %s %s all arrived, but their signatures disagree (mismatched): "
                    "it never completes\n",
                    where, plural_rank(in->waiting->len), w);
        }
    }
    guint with_waiters = 0;
    for (guint k = 0; k < s->insts->len; k++)
        with_waiters += ((const Inst *)g_ptr_array_index(s->insts, k))->waiting->len > 0;
    if (with_waiters > shown)
        fprintf(out, "  ... and %u more instances\n", with_waiters - shown);
    if (edges)
        fprintf(out, "  (%u edge%s in all; 'ranksim explain RUN --dot FILE' draws them)\n", edges,
                edges == 1 ? "" : "s");
}

static void text_cycles(FILE *out, const Story *s, const int32_t *waits)
{
    fprintf(out, "\ncycles:\n");
    if (!s->cycles->len) {
        fprintf(out, "  none\n");
        return;
    }
    for (guint k = 0; k < s->cycles->len && k < MAX_TEXT_ITEMS; k++) {
        GArray *c = g_ptr_array_index(s->cycles, k);
        g_autofree char *rs = explain_fmt_ranks(c);
        g_autoptr(GArray) path = c->len <= 64 ? cycle_path(s, c, waits) : NULL;
        if (path) {
            GString *p = g_string_new(NULL);
            for (guint i = 0; i < path->len; i++)
                g_string_append_printf(p, "%s%d", i ? " -> " : "", g_array_index(path, int32_t, i));
            fprintf(out, "  ranks %s wait on each other: %s\n", rs, p->str);
            g_string_free(p, TRUE);
        } else {
            fprintf(out, "  ranks %s wait on each other\n", rs);
        }
    }
    if (s->cycles->len > MAX_TEXT_ITEMS)
        fprintf(out, "  ... and %u more cycles\n", s->cycles->len - MAX_TEXT_ITEMS);
}

static const char *culprit_why(const char *reason)
{
    static const char *const whys[][2] = {
        {"finished", "finished its program while others wait on it"},
        {"crashed", "crashed while others wait on it"},
        {"mismatch", "brought a minority signature to a collective"},
        {"late", "late: still busy when the others' wait reached the timeout"},
        {"idle", "made no further call while others wait on it"},
        {"behind", "one call behind: never finished a call its peers completed"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(whys); i++)
        if (strcmp(reason, whys[i][0]) == 0)
            return whys[i][1];
    return reason;
}

static void text_culprits(FILE *out, const Story *s, const int32_t *waits)
{
    fprintf(out, "\nculprits:\n");
    if (!s->culprits->len) {
        if (s->cycles->len)
            fprintf(out, "  none by rule — the ranks entered their groups in different orders (a "
                         "cycle); fix the order of the calls, not a rank\n");
        else if (s->tie)
            fprintf(out, "  none by vote: the signatures tie, so no side is the minority; compare "
                         "the ops above\n");
        else
            fprintf(out, "  none identified\n");
        return;
    }
    for (guint i = 0; i < s->culprits->len && i < MAX_TEXT_ITEMS; i++) {
        const Culprit *c = &g_array_index(s->culprits, Culprit, i);
        const Missing *m = missing_info(s, c->rank);
        g_autofree char *doing = NULL;
        if (m && m->doing)
            doing = g_strdup(m->doing);
        else if (c->rank >= 0 && c->rank < s->n && waits[c->rank] >= 0) {
            const Inst *in = g_ptr_array_index(s->insts, (guint)waits[c->rank]);
            g_autofree char *where = explain_fmt_where(in->op, in->group, in->seq, in->layer);
            doing = g_strdup_printf("waiting in %s", where);
        }
        const char *why = culprit_why(c->reason);
        fprintf(out, "  rank %d: %s%s%s%s\n", c->rank, why, doing ? " (" : "", doing ? doing : "",
                doing ? ")" : "");
    }
    if (s->culprits->len > MAX_TEXT_ITEMS)
        fprintf(out, "  ... and %u more\n", s->culprits->len - MAX_TEXT_ITEMS);
}

/* Timeout(ms)=N inside a WorkNCCL(...) line, or -1. */
static int64_t work_timeout_ms(const char *work)
{
    const char *p = work ? strstr(work, "Timeout(ms)=") : NULL;
    return p ? g_ascii_strtoll(p + strlen("Timeout(ms)="), NULL, 10) : -1;
}

static void text_hardware(FILE *out, const Story *s, const SchedOutcome *o, bool recorded)
{
    fprintf(out, recorded ? "\nwhat the ranks printed (or would print):\n" : "\non hardware:\n");
    bool any = false;
    if (s->hw_deadlock && *s->hw_deadlock) {
        g_auto(GStrv) lines = g_strsplit(s->hw_deadlock, "\n", -1);
        for (char **l = lines; *l; l++) {
            const char *t = g_strstrip(*l);
            if (g_str_has_prefix(t, "on hardware: "))
                t += strlen("on hardware: ");
            if (*t)
                fprintf(out, "  %s\n", t);
        }
        any = true;
    }
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        if (strcmp(in->source, "timeout") != 0)
            continue;
        g_autofree char *at = sched_format_ns(in->fired_ns);
        g_autofree char *w = explain_fmt_ranks(in->waiting);
        fprintf(out,
                "  at t=%s, on %s %s: Watchdog caught collective operation timeout: %s ran "
                "for %" G_GINT64_FORMAT " milliseconds before timing out\n",
                at, plural_rank(in->waiting->len), w, in->hardware ? in->hardware : "WorkNCCL(?)",
                work_timeout_ms(in->hardware));
        any = true;
    }
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        if (strcmp(in->source, "mismatch") == 0) {
            fprintf(out, "  nothing yet: on_mismatch: abort stopped the simulation at the "
                         "mismatch; NCCL would hang there until the watchdog fires\n");
            any = true;
            break;
        }
    }
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "crash") == 0) {
            g_autofree char *t = sched_format_ns(d->time_ns);
            fprintf(out,
                    "  rank %d dies at t=%s (its process exits; the others learn of it only "
                    "through their watchdog)\n",
                    d->rank, t);
            any = true;
        }
    }
    if (s->continued) {
        fprintf(out,
                "  NCCL would hang at the mismatch in group %s (on_mismatch: continue let "
                "the simulation go on past it) until the watchdog fires\n",
                s->continued);
        any = true;
    }
    /* what vLLM itself prints while it hangs (the shared-memory broadcast message, the RPC
     * timeout: model/surface.c), and the fix later vLLM brought, where ranksim knows one */
    static const char *const told[] = {"hang_surface", "fixed_in"};
    for (size_t k = 0; !recorded && k < G_N_ELEMENTS(told); k++)
        for (guint i = 0; i < o->diags->len; i++) {
            const SchedDiag *d = g_ptr_array_index(o->diags, i);
            if (strcmp(d->kind, told[k]) == 0) {
                fprintf(out, "  %s%s\n", k == 1 ? "fix: " : "", d->message);
                any = true;
            }
        }
    if (!any)
        fprintf(out, "  no hang: the failure surfaces as the error above, not as a watchdog "
                     "timeout\n");
}

/* The import's own findings (not the engine's): each with its whole message. */
static void text_import_findings(FILE *out, const SchedOutcome *o)
{
    static const char *const kinds[] = {"nccl_warn", "wait_for", "symptom", "hang",
                                        "candidates", "inconclusive"};
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++)
        for (guint i = 0; i < o->diags->len; i++) {
            const SchedDiag *d = g_ptr_array_index(o->diags, i);
            if (strcmp(d->kind, kinds[k]) != 0)
                continue;
            const char *colon = strstr(d->message, ": ");
            const char *body = colon && (size_t)(colon - d->message) == strlen(d->kind)
                                   ? colon + 2
                                   : d->message;
            fprintf(out, "\n%s:\n", d->kind);
            g_auto(GStrv) lines = g_strsplit(body, "\n", -1);
            for (char **l = lines; *l; l++) {
                const char *t = *l;
                while (*t == ' ')
                    t++;
                if (*t)
                    fprintf(out, "  %s\n", t);
            }
        }
}

/* Where to look next: for each call the hang holds ranks in (the deadlock's instances, a
 * mismatch's), the lines that name it in the other ranks' logs and dumps. */
static void text_import_search(FILE *out, const SchedOutcome *o)
{
    guint shown = 0;
    for (guint i = 0; i < o->diags->len && shown < 4; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "deadlock") != 0 && strcmp(d->kind, "mismatch") != 0)
            continue;
        g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
        for (guint k = 0; det && k < det->instances->len && shown < 4; k++, shown++) {
            const SchedDetailInstance *in = &g_array_index(det->instances, SchedDetailInstance, k);
            if (!shown)
                fprintf(out, "\nwhere to look next (the other ranks' logs and dumps):\n");
            fprintf(out,
                    "  group %s call %" G_GUINT64_FORMAT ": `SeqNum=%" G_GUINT64_FORMAT
                    "` in watchdog lines, collective_seq_id %" G_GUINT64_FORMAT
                    " in Flight Recorder dumps, and each rank's `last completed` status for the "
                    "group (did it finish the call before?)\n",
                    in->group ? in->group : "?", in->seq, in->seq, in->seq);
        }
        if (det && !det->instances->len && d->group >= 0 && (guint)d->group < o->groups->len &&
            shown++ < 4) {
            if (shown == 1)
                fprintf(out, "\nwhere to look next (the other ranks' logs and dumps):\n");
            fprintf(out,
                    "  group %s call %" G_GUINT64_FORMAT ": each rank's entry of it (sizes, "
                    "dtype) and the code path that made it on the odd rank\n",
                    (const char *)g_ptr_array_index(o->groups, d->group), d->seq);
        }
    }
}

void explain_text_import(FILE *out, const char *title, const SchedOutcome *o,
                         const char *status, const GPtrArray *notes)
{
    g_return_if_fail(out != NULL && o != NULL);
    g_autofree char *end = sched_format_ns(o->end_ns);
    if (o->failed)
        explain_text_recorded(out, title, o, true);
    else if (g_strcmp0(status, "inconclusive") == 0)
        fprintf(out,
                "%s: INCONCLUSIVE — the evidence neither shows a hang nor rules one out (%u "
                "ranks, recorded span %s)\n",
                title, o->n_ranks, end);
    else
        fprintf(out,
                "%s: HEALTHY — the record shows no hang: every recorded collective completed "
                "(%u ranks, recorded span %s)\n",
                title, o->n_ranks, end);
    for (guint i = 0; notes && i < notes->len; i++) {
        const char *n = g_ptr_array_index(notes, i);
        const char *dash = strstr(n, " — ");
        if (!g_str_has_prefix(n, "each rank's evidence") || !dash)
            continue;
        fprintf(out, "\nevidence (what was read of each rank):\n");
        g_auto(GStrv) parts = g_strsplit(dash + strlen(" — "), "; ", -1);
        for (char **p = parts; *p; p++)
            fprintf(out, "  %s\n", g_strstrip(*p));
    }
    text_import_findings(out, o);
    text_import_search(out, o);
}

void explain_text(FILE *out, const char *title, const SchedOutcome *o)
{
    explain_text_recorded(out, title, o, false);
}

void explain_text_recorded(FILE *out, const char *title, const SchedOutcome *o, bool recorded)
{
    g_return_if_fail(out != NULL && o != NULL);
    g_autofree char *end = sched_format_ns(o->end_ns);
    if (!o->failed) {
        guint warnings = o->diags->len;
        fprintf(out,
                "%s: HEALTHY — nothing to explain: no rank hung, no collective mismatched "
                "(%u ranks, simulated %s",
                title, o->n_ranks, end);
        if (warnings)
            fprintf(out, "; %u warning%s, see 'ranksim report')\n", warnings,
                    warnings == 1 ? "" : "s");
        else
            fprintf(out, ")\n");
        if (warnings) {
            g_autoptr(Story) s = explain_story_new(o);
            if (s->divergence)
                text_divergence(out, s, o);
        }
        return;
    }
    g_autoptr(Story) s = explain_story_new(o);
    const SchedDiag *first = NULL;
    for (guint i = 0; i < o->diags->len && !first; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (d->severity == SCHED_SEV_ERROR)
            first = d;
    }
    const char *nl = first ? strchr(first->message, '\n') : NULL;
    int len = first ? (nl ? (int)(nl - first->message) : (int)strlen(first->message)) : 0;
    fprintf(out, "%s: FAILED — %.*s\n", title, len, first ? first->message : "");
    guint blocked = 0;
    for (uint32_t r = 0; r < o->n_ranks; r++)
        blocked += o->ranks[r].state == SCHED_RANK_BLOCKED;
    fprintf(out, "  %u ranks, %u left waiting in a collective, %s %s\n", o->n_ranks, blocked,
            recorded ? "recorded span" : "simulated", end);

    if (s->divergence)
        text_divergence(out, s, o);
    else
        text_first_block(out, s, o);
    g_autofree int32_t *waits = explain_waits_in(s);
    if (s->insts->len) {
        text_graph(out, s);
        text_cycles(out, s, waits);
    }
    text_culprits(out, s, waits);
    text_hardware(out, s, o, recorded);
}

GArray *explain_culprits(const SchedOutcome *o)
{
    g_autoptr(Story) s = explain_story_new(o);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; i < s->culprits->len; i++)
        g_array_append_val(out, g_array_index(s->culprits, Culprit, i).rank);
    g_array_sort(out, cmp_i32);
    return out;
}

bool explain_first_instance(const SchedOutcome *o, const char **group, int64_t *seq)
{
    g_autoptr(Story) s = explain_story_new(o);
    const char *g = NULL;
    int64_t q = 0;
    if (s->divergence && s->divergence->group >= 0 &&
        (guint)s->divergence->group < o->groups->len) {
        g = g_ptr_array_index(o->groups, s->divergence->group);
        q = (int64_t)s->divergence->seq;
    } else if (s->insts->len) {
        const Inst *in = g_ptr_array_index(s->insts, 0);
        for (guint k = 0; k < o->groups->len && !g; k++)
            if (g_strcmp0(g_ptr_array_index(o->groups, k), in->group) == 0)
                g = g_ptr_array_index(o->groups, k);
        q = in->seq;
    }
    if (!g)
        return false;
    *group = g;
    *seq = q;
    return true;
}
