/* src/cli/cmd-match.c — `ranksim match IMPORTED_RUN SCENARIO`: confront a hypothesis with the
 * evidence. The scenario is simulated (and stored, so `diff` can compare), its collectives are
 * aligned with the imported ones group by group, and the verdict says whether the simulation
 * reproduces the real hang — same group, same instance, same sizes per rank, same culprits —
 * or where the two first diverge.
 *
 * Alignment (doc/import.md): an imported group pairs with a simulated group of the same
 * members; the imported sequence numbers count the start-up collectives too (warm-up, profile
 * run, graph capture), so simulated seq s stands for imported seq s + offset. The pairing and
 * offset are the ones under which the most (rank, instance) signatures agree; when both runs
 * hang in paired groups, the offset that lines the two hangs up is preferred if it agrees as
 * well as the best. Groups without a counterpart are listed, not judged.
 */
#include <json-glib/json-glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "../store/query.h"
#include "../run/runner.h"
#include "../input/scenario.h"
#include "../store/store.h"

typedef struct {
    const char *kind;  /* interned kind name */
    const char *dtype; /* interned dtype name */
    uint64_t count;
    char *name;
    bool done;
} Call;

typedef struct {
    char *name;
    GArray *ranks;     /* int32, sorted */
    GHashTable *calls; /* (seq << 24 | rank) -> Call* */
    uint64_t min_seq, max_seq;
    GArray *seqs;      /* uint64: the distinct seqs with a call, sorted (group_seal) */
    GHashTable *first; /* rank -> first seq it recorded here (the dump's ring buffer start) */
} Group;

typedef struct {
    int group; /* index in the side's groups */
    uint64_t seq;
} Inst;

typedef struct {
    const char *label; /* "dump" | "simulation" */
    GPtrArray *groups; /* Group* */
    bool hang;
    int hang_group; /* index, -1 */
    uint64_t hang_seq;
    char *hang_kind;  /* "mismatch" | "deadlock" */
    GArray *culprits; /* int32 sorted */
    GArray *blocked;  /* Inst: every instance the deadlock holds ranks in */
    bool *unknown;    /* per rank: no record (imports); NULL for a simulation */
    uint32_t n_ranks;
} Side;

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

static void side_clear(Side *s)
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

static gint cmp_u64(gconstpointer a, gconstpointer b)
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
    g_array_sort(g->seqs, cmp_u64);
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

static const Call *group_call(const Group *g, uint64_t seq, int32_t rank)
{
    gint64 k = (gint64)key(seq, rank);
    return g_hash_table_lookup(g->calls, &k);
}

static bool same_call(const Call *a, const Call *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->count == b->count;
}

/* Culprits of a diagnostic's detail JSON: ints, or objects with "rank". */
static GArray *culprits_of(const char *detail)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    if (!detail)
        return out;
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, detail, -1, NULL))
        return out;
    JsonNode *root = json_parser_get_root(p);
    if (!JSON_NODE_HOLDS_OBJECT(root))
        return out;
    JsonObject *o = json_node_get_object(root);
    if (!json_object_has_member(o, "culprits"))
        return out;
    JsonNode *cn = json_object_get_member(o, "culprits");
    if (!JSON_NODE_HOLDS_ARRAY(cn))
        return out;
    JsonArray *a = json_node_get_array(cn);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        int32_t r = -1;
        if (JSON_NODE_HOLDS_OBJECT(e) && json_object_has_member(json_node_get_object(e), "rank"))
            r = (int32_t)json_object_get_int_member(json_node_get_object(e), "rank");
        else if (JSON_NODE_HOLDS_VALUE(e))
            r = (int32_t)json_node_get_int(e);
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

/* The instances of a deadlock's detail JSON ("instances": [{group, seq}]). */
static void blocked_of(Side *s, const char *detail)
{
    g_autoptr(JsonParser) p = json_parser_new();
    if (!detail || !json_parser_load_from_data(p, detail, -1, NULL))
        return;
    JsonNode *root = json_parser_get_root(p);
    if (!JSON_NODE_HOLDS_OBJECT(root) ||
        !json_object_has_member(json_node_get_object(root), "instances"))
        return;
    JsonArray *a = json_object_get_array_member(json_node_get_object(root), "instances");
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_OBJECT(e))
            continue;
        JsonObject *o = json_node_get_object(e);
        if (!json_object_has_member(o, "group") || !json_object_has_member(o, "seq"))
            continue;
        Inst x = {group_by_name(s, json_object_get_string_member(o, "group")),
                  (uint64_t)json_object_get_int_member(o, "seq")};
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

/* The imported side from the database. */
static bool load_import(Store *st, int64_t id, const QueryRun *qr, Side *s, GError **error)
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
    sqlite3 *db = store_db(st);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT group_name, seq, rank, kind, count, dtype, name, done_us IS NOT "
                           "NULL FROM collectives WHERE run_id = ?",
                           -1, &q, NULL) != SQLITE_OK)
        goto sql;
    sqlite3_bind_int64(q, 1, id);
    while (sqlite3_step(q) == SQLITE_ROW) {
        Group *g = g_hash_table_lookup(by_name, (const char *)sqlite3_column_text(q, 0));
        if (!g)
            continue;
        group_add(g, (uint64_t)sqlite3_column_int64(q, 1), sqlite3_column_int(q, 2),
                  (const char *)sqlite3_column_text(q, 3), (const char *)sqlite3_column_text(q, 5),
                  (uint64_t)sqlite3_column_int64(q, 4), (const char *)sqlite3_column_text(q, 6),
                  sqlite3_column_int(q, 7) != 0);
    }
    sqlite3_finalize(q);
    for (guint i = 0; i < s->groups->len; i++)
        group_seal(g_ptr_array_index(s->groups, i));
    s->n_ranks = qr->outcome->n_ranks;
    s->unknown = g_new0(bool, s->n_ranks + 1);
    for (uint32_t r = 0; r < s->n_ranks; r++)
        s->unknown[r] = qr->outcome->ranks[r].state == SCHED_RANK_UNKNOWN;
    side_hang(s, qr->outcome, qr->outcome->groups);
    return true;
sql:
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQL, "%s: %s", store_path(st), sqlite3_errmsg(db));
    return false;
}

static void load_sim(const SchedProgram *p, const SchedOutcome *o, GArray *recs, Side *s)
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

static bool same_members(const Group *a, const Group *b)
{
    return a->ranks->len == b->ranks->len &&
           memcmp(a->ranks->data, b->ranks->data, a->ranks->len * sizeof(int32_t)) == 0;
}

/* Whether the dump's silence about (seq, rank) says nothing: the rank left no record, or its
 * ring buffer starts after seq in this group. */
static bool dump_silent(const Side *imp, const Group *ig, uint64_t seq, int32_t rank)
{
    if (imp->unknown && rank >= 0 && (uint32_t)rank < imp->n_ranks && imp->unknown[rank])
        return true;
    gpointer f = g_hash_table_lookup(ig->first, GINT_TO_POINTER(rank + 1));
    return !f || seq < (uint64_t)GPOINTER_TO_SIZE(f);
}

/* Agreeing minus disagreeing (rank, instance) pairs when simulated seq s stands for imported
 * s + off, over the calls both sides have. */
static int64_t score(const Group *imp, const Group *sim, uint64_t off)
{
    int64_t n = 0;
    for (guint k = 0; k < sim->seqs->len; k++) {
        uint64_t s = g_array_index(sim->seqs, uint64_t, k);
        for (guint i = 0; i < imp->ranks->len; i++) {
            int32_t r = g_array_index(imp->ranks, int32_t, i);
            const Call *a = group_call(imp, s + off, r), *b = group_call(sim, s, r);
            if (a && b)
                n += same_call(a, b) ? 1 : -1;
        }
    }
    return n;
}

typedef struct {
    int sim; /* paired simulated group, -1 */
    uint64_t off;
    int64_t score;
} Pair;

/* The offsets worth scoring: those that line up one agreeing call of the group's first member
 * (at most the first 16 simulated instances of it), plus the one that lines up the two hangs.
 * Bounded by 16 x the dump's calls of that member, whatever the seq numbers are. */
static GArray *candidate_offsets(const Side *imp, const Side *sim, const Group *ig, int gi,
                                 const Group *sg, int k)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    int32_t r0 = g_array_index(ig->ranks, int32_t, 0);
    for (guint j = 0; j < sg->seqs->len && j < 16; j++) {
        uint64_t s = g_array_index(sg->seqs, uint64_t, j);
        const Call *b = group_call(sg, s, r0);
        if (!b)
            continue;
        for (guint m = 0; m < ig->seqs->len; m++) {
            uint64_t si = g_array_index(ig->seqs, uint64_t, m);
            const Call *a = group_call(ig, si, r0);
            if (si >= s && a && same_call(a, b)) {
                uint64_t off = si - s;
                g_array_append_val(out, off);
            }
        }
    }
    if (imp->hang && sim->hang && imp->hang_group == gi && sim->hang_group == k &&
        imp->hang_seq >= sim->hang_seq) {
        uint64_t off = imp->hang_seq - sim->hang_seq;
        g_array_append_val(out, off);
    }
    g_array_sort(out, cmp_u64);
    return out;
}

/* The best pairing of imported group gi. Only a positive score pairs a group, except the
 * hang's group (`any`), which takes its best alignment anyway so that the first divergence can
 * be told. */
static Pair best_pair(const Side *imp, const Side *sim, guint gi, bool *used, bool any)
{
    const Group *ig = g_ptr_array_index(imp->groups, gi);
    Pair best = {-1, 0, 0};
    if (!ig->seqs->len || !ig->ranks->len)
        return best;
    for (guint k = 0; k < sim->groups->len; k++) {
        const Group *sg = g_ptr_array_index(sim->groups, k);
        if (used[k] || !same_members(ig, sg) || !sg->seqs->len)
            continue;
        g_autoptr(GArray) offs = candidate_offsets(imp, sim, ig, (int)gi, sg, (int)k);
        for (guint j = 0; j < offs->len; j++) {
            uint64_t off = g_array_index(offs, uint64_t, j);
            if (j && off == g_array_index(offs, uint64_t, j - 1))
                continue;
            int64_t sc = score(ig, sg, off);
            bool hang_aligned = imp->hang && sim->hang && imp->hang_group == (int)gi &&
                                sim->hang_group == (int)k && sim->hang_seq + off == imp->hang_seq;
            if ((sc > 0 || any) &&
                (best.sim < 0 || sc > best.score || (sc == best.score && hang_aligned)))
                best = (Pair){(int)k, off, sc};
        }
    }
    return best;
}

/* The first (seq, rank) of a paired group where the two sides differ: a different call, a call
 * on one side only, or completion on one side only. Walks the seqs either side has (never the
 * integer range between them) within the simulated span: before it the dump's start-up
 * collectives, after it steps the scenario does not model. The dump's silence where it says
 * nothing (dump_silent) is no difference. */
static bool first_divergence(const Side *imp, const Group *ig, const Group *sg, uint64_t off,
                             uint64_t *seq, int32_t *rank)
{
    guint a = 0, b = 0;
    while (a < ig->seqs->len || b < sg->seqs->len) {
        uint64_t sa = a < ig->seqs->len ? g_array_index(ig->seqs, uint64_t, a) : UINT64_MAX;
        uint64_t sb = b < sg->seqs->len ? g_array_index(sg->seqs, uint64_t, b) + off : UINT64_MAX;
        uint64_t s = MIN(sa, sb);
        if (sa == s)
            a++;
        if (sb == s)
            b++;
        if (s < g_array_index(sg->seqs, uint64_t, 0) + off ||
            s > g_array_index(sg->seqs, uint64_t, sg->seqs->len - 1) + off)
            continue;
        for (guint i = 0; i < ig->ranks->len; i++) {
            int32_t r = g_array_index(ig->ranks, int32_t, i);
            const Call *x = group_call(ig, s, r);
            const Call *y = s > off ? group_call(sg, s - off, r) : NULL;
            if (!x && (!y || dump_silent(imp, ig, s, r)))
                continue;
            if (!x || !y || !same_call(x, y) || x->done != y->done) {
                *seq = s;
                *rank = r;
                return true;
            }
        }
    }
    return false;
}

static char *fmt_ranks(GArray *a)
{
    if (!a->len)
        return g_strdup("none");
    return sched_format_ranks((const int32_t *)(void *)a->data, a->len);
}

static char *fmt_call(const Call *c)
{
    if (!c)
        return g_strdup("no call");
    return g_strdup_printf("%s %s %" G_GUINT64_FORMAT " %s (%s)", c->name, c->kind, c->count,
                           c->dtype, c->done ? "completed" : "never completed");
}

int cli_match(int argc, char **argv)
{
    g_autofree char *db = NULL, *hardware = NULL;
    g_auto(GStrv) sets = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key", "KEY=VALUE"},
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &hardware,
         "Hardware preset or file, for scenarios that name none", "NAME|FILE"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the verdict as one JSON object", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(
        "IMPORTED_RUN SCENARIO - does the scenario reproduce the imported hang?");
    g_option_context_set_summary(
        ctx, "Simulates SCENARIO (stored as a run), aligns its collectives with those of the\n"
             "imported run group by group (the dump's sequence numbers include start-up\n"
             "collectives: the offset is found), and says whether the simulation reproduces the\n"
             "real hang (same group, same instance, same sizes per rank, same culprits) or\n"
             "where the two first diverge.");
    g_option_context_set_description(
        ctx, "Exit status: 0 reproduced, 3 not reproduced, 2 invalid input, 1 internal error.\n"
             "Rules: doc/import.md.\n");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (argc != 3) {
        cli_error("match: expected IMPORTED_RUN SCENARIO (try 'ranksim match --help')");
        return CLI_EXIT_INVALID;
    }
    const char *db_path = db ? db : CLI_DEFAULT_DB;
    int code = 0;
    g_autoptr(Store) st = cli_store_open_existing(db_path, &code);
    if (!st)
        return code;
    int64_t id = cli_run_resolve(st, argv[1], &code);
    if (id < 0)
        return code;
    g_autoptr(QueryRun) qr = query_run_load(st, id, &err);
    if (!qr) {
        cli_error("%s", err->message);
        return err->code == QUERY_ERROR_SQL ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
    }
    if (g_strcmp0(qr->kind, "import") != 0) {
        cli_error("match: run %" G_GINT64_FORMAT " is a %s run, not an imported one (ranksim "
                  "import makes those)",
                  id, qr->kind ? qr->kind : "?");
        return CLI_EXIT_INVALID;
    }
    Side imp = {0}, sim = {0};
    if (!load_import(st, id, qr, &imp, &err)) {
        cli_error("%s", err->message);
        side_clear(&imp);
        return CLI_EXIT_INTERNAL;
    }
    g_clear_pointer(&st, store_close);

    /* Simulate the hypothesis. */
    const char *path = argv[2];
    ScenarioExtras extras = {(const char *const *)sets,
                             hardware,
                             RUNNER_DEFAULT_MAX_RANK_OPS,
                             NULL,
                             NULL,
                             NULL,
                             false,
                             false,
                             false};
    g_autoptr(Scenario) sc = NULL;
    if (cli_input_paths_check(path, hardware, &err))
        sc = scenario_load_extras(path, &extras, &err);
    if (sc && !runner_check_work(sc, RUNNER_DEFAULT_MAX_RANK_OPS, &err))
        g_clear_pointer(&sc, scenario_free);
    if (!sc) {
        cli_error("%s", err->message);
        side_clear(&imp);
        return CLI_EXIT_INVALID;
    }
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    g_autoptr(RunnerResult) res =
        runner_simulate(sc, SCHED_TIMELINE_COLLECTIVES, runner_collect_record, recs, NULL, NULL);
    load_sim(sc->program, res->outcome, recs, &sim);
    g_autoptr(Store) wst = store_open(db_path, &err);
    int64_t sim_id = -1;
    if (wst)
        sim_id = runner_store(wst, sc, "collectives", res, recs,
                              (double)(g_get_monotonic_time() - t0) / 1000.0, &err);
    if (sim_id < 0) {
        cli_error("%s", err->message);
        side_clear(&imp);
        side_clear(&sim);
        return CLI_EXIT_INTERNAL;
    }

    /* Pair groups, hang group first, then the others in order. */
    g_autofree bool *used = g_new0(bool, sim.groups->len + 1);
    g_autofree Pair *pairs = g_new0(Pair, imp.groups->len + 1);
    for (guint i = 0; i < imp.groups->len; i++)
        pairs[i].sim = -1;
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
    if (imp.hang_group >= 0) {
        guint h = (guint)imp.hang_group;
        g_array_append_val(order, h);
    }
    for (guint i = 0; i < imp.groups->len; i++)
        if ((int)i != imp.hang_group)
            g_array_append_val(order, i);
    for (guint k = 0; k < order->len; k++) {
        guint gi = g_array_index(order, guint, k);
        pairs[gi] = best_pair(&imp, &sim, gi, used, (int)gi == imp.hang_group);
        if (pairs[gi].sim >= 0)
            used[pairs[gi].sim] = true;
    }

    /* The verdict. */
    GString *why = g_string_new(NULL);
    bool reproduced = false;
    const Group *ig =
        imp.hang_group >= 0 ? g_ptr_array_index(imp.groups, (guint)imp.hang_group) : NULL;
    const Pair *hp = imp.hang_group >= 0 ? &pairs[imp.hang_group] : NULL;
    const Group *sg = hp && hp->sim >= 0 ? g_ptr_array_index(sim.groups, (guint)hp->sim) : NULL;
    g_autofree char *ic = fmt_ranks(imp.culprits);
    g_autofree char *scul = fmt_ranks(sim.culprits);
    bool same_group = false, same_instance = false, same_sizes = false, same_culprits = false;
    if (!imp.hang) {
        g_string_append(why, "the imported run shows no hang to reproduce");
    } else if (!ig) {
        g_string_append_printf(why, "the dump's %s names no group", imp.hang_kind);
    } else if (!sim.hang) {
        g_string_append_printf(why,
                               "the simulation is healthy: it does not hang, while the dump "
                               "hangs in group %s seq %" G_GUINT64_FORMAT,
                               ig->name, imp.hang_seq);
    } else if (!sg) {
        g_string_append_printf(why,
                               "no simulated group has the members of the dump's group %s "
                               "with any agreeing call",
                               ig->name);
    } else {
        same_group = sim.hang_group == hp->sim;
        same_instance = same_group && sim.hang_seq + hp->off == imp.hang_seq;
        /* A deadlock holds ranks in several instances, and which comes "first" depends on the
         * hosts' clocks: the same set under the pairing is the same hang. */
        if (!same_instance && strcmp(imp.hang_kind, "deadlock") == 0 &&
            g_strcmp0(sim.hang_kind, "deadlock") == 0 && imp.blocked->len &&
            imp.blocked->len == sim.blocked->len) {
            bool all = true;
            for (guint i = 0; all && i < sim.blocked->len; i++) {
                Inst x = g_array_index(sim.blocked, Inst, i);
                bool found = false;
                for (guint j = 0; !found && j < imp.groups->len; j++)
                    if (pairs[j].sim == x.group)
                        for (guint m = 0; !found && m < imp.blocked->len; m++) {
                            Inst y = g_array_index(imp.blocked, Inst, m);
                            found = y.group == (int)j && y.seq == x.seq + pairs[j].off;
                        }
                all = found;
            }
            same_group = same_instance = all;
        }
        same_sizes = same_instance;
        for (guint i = 0; same_sizes && i < ig->ranks->len; i++) {
            int32_t r = g_array_index(ig->ranks, int32_t, i);
            const Call *a = group_call(ig, imp.hang_seq, r), *b = group_call(sg, sim.hang_seq, r);
            same_sizes = (!a && !b) || (a && b && same_call(a, b)) ||
                         (!a && dump_silent(&imp, ig, imp.hang_seq, r));
        }
        same_culprits = imp.culprits->len == sim.culprits->len &&
                        (!imp.culprits->len || memcmp(imp.culprits->data, sim.culprits->data,
                                                      imp.culprits->len * sizeof(int32_t)) == 0);
        reproduced = same_group && same_instance && same_sizes && same_culprits;
        if (!same_group) {
            const Group *shg =
                sim.hang_group >= 0 ? g_ptr_array_index(sim.groups, (guint)sim.hang_group) : NULL;
            g_string_append_printf(why,
                                   "the simulation hangs in group %s, the dump in %s (paired "
                                   "with simulated %s)",
                                   shg ? shg->name : "?", ig->name, sg->name);
        } else if (!same_instance) {
            g_string_append_printf(why,
                                   "the simulation hangs at seq %" G_GUINT64_FORMAT
                                   " (dump seq %" G_GUINT64_FORMAT " at offset %" G_GUINT64_FORMAT
                                   "), the dump at seq %" G_GUINT64_FORMAT,
                                   sim.hang_seq, sim.hang_seq + hp->off, hp->off, imp.hang_seq);
        } else if (!same_sizes) {
            g_string_append(why, "the same instance, but the per-rank sizes differ");
        } else if (!same_culprits) {
            g_string_append_printf(why,
                                   "the same instance and sizes, but the culprits differ: "
                                   "dump %s, simulation %s",
                                   ic, scul);
        }
    }
    /* Where the paired hang group first diverges (also when reproduced: nothing, or before). */
    uint64_t dseq = 0;
    int32_t drank = -1;
    bool diverges = ig && sg && first_divergence(&imp, ig, sg, hp->off, &dseq, &drank);
    g_autofree char *da = NULL, *dsim = NULL;
    if (diverges) {
        da = fmt_call(group_call(ig, dseq, drank));
        dsim = fmt_call(dseq > hp->off ? group_call(sg, dseq - hp->off, drank) : NULL);
    }

    if (json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "imported_run");
        json_builder_add_int_value(b, id);
        json_builder_set_member_name(b, "simulated_run");
        json_builder_add_int_value(b, sim_id);
        json_builder_set_member_name(b, "reproduced");
        json_builder_add_boolean_value(b, reproduced);
        json_builder_set_member_name(b, "same_group");
        json_builder_add_boolean_value(b, same_group);
        json_builder_set_member_name(b, "same_instance");
        json_builder_add_boolean_value(b, same_instance);
        json_builder_set_member_name(b, "same_sizes");
        json_builder_add_boolean_value(b, same_sizes);
        json_builder_set_member_name(b, "same_culprits");
        json_builder_add_boolean_value(b, same_culprits);
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, why->str);
        json_builder_set_member_name(b, "pairs");
        json_builder_begin_array(b);
        for (guint i = 0; i < imp.groups->len; i++) {
            const Group *g = g_ptr_array_index(imp.groups, i);
            if (!g->max_seq)
                continue;
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "dump_group");
            json_builder_add_string_value(b, g->name);
            json_builder_set_member_name(b, "simulated_group");
            if (pairs[i].sim >= 0)
                json_builder_add_string_value(
                    b, ((Group *)g_ptr_array_index(sim.groups, (guint)pairs[i].sim))->name);
            else
                json_builder_add_null_value(b);
            json_builder_set_member_name(b, "offset");
            json_builder_add_int_value(b, (gint64)pairs[i].off);
            json_builder_set_member_name(b, "agreeing");
            json_builder_add_int_value(b, (gint64)pairs[i].score);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "first_divergence");
        if (diverges) {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "group");
            json_builder_add_string_value(b, ig->name);
            json_builder_set_member_name(b, "seq");
            json_builder_add_int_value(b, (gint64)dseq);
            json_builder_set_member_name(b, "rank");
            json_builder_add_int_value(b, drank);
            json_builder_set_member_name(b, "dump");
            json_builder_add_string_value(b, da);
            json_builder_set_member_name(b, "simulation");
            json_builder_add_string_value(b, dsim);
            json_builder_end_object(b);
        } else {
            json_builder_add_null_value(b);
        }
        json_builder_end_object(b);
        g_autoptr(JsonNode) root = json_builder_get_root(b);
        g_autofree char *txt = json_to_string(root, FALSE);
        printf("%s\n", txt);
    } else {
        printf("match: imported run %" G_GINT64_FORMAT
               " (%s) vs %s (simulated as run %" G_GINT64_FORMAT "): %s\n",
               id, qr->name ? qr->name : "", sc->name, sim_id,
               reproduced ? "REPRODUCED" : "NOT REPRODUCED");
        if (reproduced) {
            const Call *c = imp.culprits->len ? group_call(ig, imp.hang_seq,
                                                           g_array_index(imp.culprits, int32_t, 0))
                                              : NULL;
            g_autofree char *cs = c ? fmt_call(c) : g_strdup("no culprit by rule on either side");
            printf("  same group: dump %s = simulated %s (offset %" G_GUINT64_FORMAT
                   ": the dump counts %" G_GUINT64_FORMAT " earlier collectives on it)\n",
                   ig->name, sg->name, hp->off, hp->off);
            printf("  same instance: dump seq %" G_GUINT64_FORMAT
                   " = simulated seq %" G_GUINT64_FORMAT " (%s)\n",
                   imp.hang_seq, sim.hang_seq, imp.hang_kind);
            printf("  same sizes on every rank; culprit%s %s (%s)\n",
                   imp.culprits->len > 1 ? "s" : "", ic, cs);
        } else {
            printf("  why: %s\n", why->str);
            if (imp.hang && ig)
                printf("  dump: %s in group %s seq %" G_GUINT64_FORMAT ", culprits %s\n",
                       imp.hang_kind, ig->name, imp.hang_seq, ic);
            if (sim.hang)
                printf("  simulation: %s%s%s, culprits %s\n", sim.hang_kind,
                       sim.hang_group >= 0 ? " in group " : "",
                       sim.hang_group >= 0
                           ? ((Group *)g_ptr_array_index(sim.groups, (guint)sim.hang_group))->name
                           : "",
                       scul);
        }
        if (diverges)
            printf("  first divergence in group %s (simulated %s, offset %" G_GUINT64_FORMAT
                   "): seq %" G_GUINT64_FORMAT " rank %d — dump: %s; simulation: %s\n",
                   ig->name, sg->name, hp->off, dseq, drank, da, dsim);
        for (guint i = 0; i < imp.groups->len; i++) {
            const Group *g = g_ptr_array_index(imp.groups, i);
            if (!g->max_seq || (int)i == imp.hang_group)
                continue;
            if (pairs[i].sim >= 0)
                printf("  group %s = simulated %s (offset %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                       " agreeing calls)\n",
                       g->name, ((Group *)g_ptr_array_index(sim.groups, (guint)pairs[i].sim))->name,
                       pairs[i].off, pairs[i].score);
            else
                printf("  group %s: no simulated counterpart agrees with it (not judged)\n",
                       g->name);
        }
    }
    g_string_free(why, TRUE);
    side_clear(&imp);
    side_clear(&sim);
    return reproduced ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
