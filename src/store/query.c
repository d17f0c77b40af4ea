/* src/store/query.c — stored runs read back into outcomes; see query.h. */
#include "query.h"

#include "store-private.h"
#include "store-serve.h"
#include "store-values.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

G_DEFINE_QUARK(ranksim - query - error - quark, query_error)

static bool sql_fail(GError **error, Store *st, const char *what)
{
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQL, "%s: %s: %s", store_path(st), what,
                sqlite3_errmsg(store_db(st)));
    return false;
}

/* A text column as valid UTF-8 (store-values.h), or NULL. Caller frees. */
static char *col_text(sqlite3_stmt *s, int col)
{
    return store_value_text(sqlite3_column_text(s, col));
}

/* Microseconds (REAL) back to integer nanoseconds; NULL reads as 0. */
static int64_t col_ns(sqlite3_stmt *s, int col)
{
    if (sqlite3_column_type(s, col) == SQLITE_NULL)
        return 0;
    return (int64_t)llround(sqlite3_column_double(s, col) * 1e3);
}

/* Largest run id, 0 for an empty database, -1 on a read error. */
static int64_t latest_id(Store *st, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st), "SELECT MAX(id) FROM runs", -1, &s, NULL) != SQLITE_OK) {
        sql_fail(error, st, "reading runs");
        return -1;
    }
    int64_t id = 0;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return id;
}

static bool run_exists(Store *st, int64_t id)
{
    sqlite3_stmt *s = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(store_db(st), "SELECT 1 FROM runs WHERE id = ?", -1, &s, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(s, 1, id);
        found = sqlite3_step(s) == SQLITE_ROW;
    }
    sqlite3_finalize(s);
    return found;
}

int64_t query_run_resolve(Store *st, const char *arg, GError **error)
{
    g_return_val_if_fail(st != NULL && arg != NULL, -1);
    int64_t latest = latest_id(st, error);
    if (latest < 0)
        return -1;
    bool is_latest = g_ascii_strcasecmp(arg, "latest") == 0;
    /* latest~N: the Nth run before the latest, in id order (git's HEAD~N) */
    guint64 back = 0;
    bool is_back = g_ascii_strncasecmp(arg, "latest~", 7) == 0 &&
                   g_ascii_string_to_unsigned(arg + 7, 10, 0, G_MAXINT64, &back, NULL);
    guint64 id = 0;
    if (!is_latest && !is_back && !g_ascii_string_to_unsigned(arg, 10, 1, G_MAXINT64, &id, NULL)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_BAD_ARGUMENT,
                    "'%s' is not a run; expected a run id (1, 2, ...), 'latest' or 'latest~N' "
                    "(the Nth run before it; see 'ranksim runs')",
                    arg);
        return -1;
    }
    if (latest == 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "no runs in DB %s yet (run 'ranksim run SCENARIO --db %s' first)",
                    store_path(st), store_path(st));
        return -1;
    }
    if (is_latest)
        return latest;
    if (is_back) {
        sqlite3_stmt *s = NULL;
        int64_t found = -1;
        if (sqlite3_prepare_v2(store_db(st),
                               "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", -1, &s,
                               NULL) == SQLITE_OK) {
            sqlite3_bind_int64(s, 1, (int64_t)back);
            if (sqlite3_step(s) == SQLITE_ROW)
                found = sqlite3_column_int64(s, 0);
        }
        sqlite3_finalize(s);
        if (found < 0)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "%s: DB %s holds fewer than %" G_GUINT64_FORMAT " runs", arg,
                        store_path(st), back + 1);
        return found;
    }
    if (!run_exists(st, (int64_t)id)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "run %" G_GUINT64_FORMAT " not found in DB %s (latest is %" G_GINT64_FORMAT ")",
                    id, store_path(st), latest);
        return -1;
    }
    return (int64_t)id;
}

void query_run_free(QueryRun *r)
{
    if (!r)
        return;
    if (r->strings)
        g_string_chunk_free(r->strings);
    if (r->notes)
        g_ptr_array_unref(r->notes);
    sched_outcome_free(r->outcome);
    g_free(r);
}

/* Column `col` as a string kept by `r` (NULL stays NULL). */
static const char *col_keep(QueryRun *r, sqlite3_stmt *s, int col)
{
    g_autofree char *t = col_text(s, col);
    return t ? g_string_chunk_insert(r->strings, t) : NULL;
}

static SchedOutcome *outcome_new(void)
{
    SchedOutcome *o = g_new0(SchedOutcome, 1);
    o->diags = g_ptr_array_new();
    o->groups = g_ptr_array_new_with_free_func(g_free);
    o->group_members = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    return o;
}

/* "[0,1,2]" -> GArray<int32_t>; malformed text gives an empty array. */
static GArray *parse_members(const char *json)
{
    GArray *m = g_array_new(FALSE, FALSE, sizeof(int32_t));
    /* checked first: a hand-edited file may nest it 100,000 deep (the parser recurses) */
    g_autoptr(JsonNode) node = store_value_json_ok(json) ? json_from_string(json, NULL) : NULL;
    if (!node || !JSON_NODE_HOLDS_ARRAY(node))
        return m;
    JsonArray *a = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(a) && i < STORE_MAX_RANKS; i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64)
            continue;
        int64_t r = json_node_get_int(e);
        if (!store_value_rank_ok(r))
            continue; /* not a rank */
        int32_t r32 = (int32_t)r;
        g_array_append_val(m, r32);
    }
    return m;
}

static bool load_groups(Store *st, int64_t id, SchedOutcome *o, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT id, name, ranks FROM groups WHERE run_id = ? ORDER BY id", -1,
                           &s, NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading groups");
    sqlite3_bind_int64(s, 1, id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        /* Ids are dense from 0; a gap (never written by ranksim) is filled so indexes hold. */
        int64_t gid = sqlite3_column_int64(s, 0);
        while ((int64_t)o->groups->len < gid) {
            g_ptr_array_add(o->groups, g_strdup("?"));
            g_ptr_array_add(o->group_members, g_array_new(FALSE, FALSE, sizeof(int32_t)));
        }
        g_ptr_array_add(o->groups, col_text(s, 1));
        g_ptr_array_add(o->group_members, parse_members((const char *)sqlite3_column_text(s, 2)));
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || sql_fail(error, st, "reading groups");
}

static bool load_ranks(Store *st, int64_t id, SchedOutcome *o, GError **error)
{
    static const char *const states[] = {"done",    "blocked", "crashed",
                                         "stopped", "unknown", "not run"};
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, state, end_us, compute_us, comm_us, wait_us, ops"
                           " FROM ranks WHERE run_id = ? ORDER BY rank",
                           -1, &s, NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading ranks");
    sqlite3_bind_int64(s, 1, id);
    GArray *ranks = g_array_new(FALSE, TRUE, sizeof(SchedRankStats));
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(s, 0);
        if (!store_value_rank_ok(r))
            continue; /* not a rank ranksim wrote */
        if ((int64_t)ranks->len <= r)
            g_array_set_size(ranks, (guint)r + 1);
        SchedRankStats *x = &g_array_index(ranks, SchedRankStats, r);
        const char *state = (const char *)sqlite3_column_text(s, 1);
        for (int k = 0; k < 4; k++)
            if (state && strcmp(state, states[k]) == 0)
                x->state = (SchedRankState)k;
        x->end_ns = col_ns(s, 2);
        x->compute_ns = col_ns(s, 3);
        x->comm_ns = col_ns(s, 4);
        x->wait_ns = col_ns(s, 5);
        x->ops = (uint64_t)sqlite3_column_int64(s, 6);
    }
    sqlite3_finalize(s);
    o->n_ranks = ranks->len;
    o->ranks = (SchedRankStats *)(void *)g_array_free(ranks, FALSE);
    return rc == SQLITE_DONE || sql_fail(error, st, "reading ranks");
}

static int32_t group_id(const SchedOutcome *o, const char *name)
{
    for (guint i = 0; name && i < o->groups->len; i++)
        if (strcmp(g_ptr_array_index(o->groups, i), name) == 0)
            return (int32_t)i;
    return -1;
}

/* The run's not-simulated settings (schema 3; absent in older databases: none). */
static bool load_not_simulated(Store *st, int64_t id, GPtrArray *out, GError **error)
{
    if (!query_has_table(st, "not_simulated"))
        return true;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT note FROM not_simulated WHERE run_id = ? ORDER BY idx", -1, &s,
                           NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading not_simulated");
    sqlite3_bind_int64(s, 1, id);
    while (sqlite3_step(s) == SQLITE_ROW)
        g_ptr_array_add(out, g_strdup((const char *)sqlite3_column_text(s, 0)));
    sqlite3_finalize(s);
    return true;
}

static bool load_diags(Store *st, int64_t id, SchedOutcome *o, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT kind, severity, rank, group_name, seq, layer, op_name, message,"
                           " detail, time_us FROM diagnostics WHERE run_id = ? ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading diagnostics");
    sqlite3_bind_int64(s, 1, id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        g_autofree char *kind = col_text(s, 0);
        const char *sev = (const char *)sqlite3_column_text(s, 1);
        int64_t rank = sqlite3_column_int64(s, 2), layer = sqlite3_column_int64(s, 5);
        bool null_rank = sqlite3_column_type(s, 2) == SQLITE_NULL || !store_value_rank_ok(rank);
        bool null_layer =
            sqlite3_column_type(s, 5) == SQLITE_NULL || layer < 0 || layer > G_MAXINT32;
        g_autofree char *group = col_text(s, 3), *op = col_text(s, 6), *msg = col_text(s, 7),
                        *detail = col_text(s, 8);
        /* a detail is JSON the report parses: one a parser should not see is dropped */
        if (detail && !store_value_json_ok(detail))
            g_clear_pointer(&detail, g_free);
        int64_t seq = sqlite3_column_int64(s, 4);
        SchedDiag *d = sched_diag_new(
            g_intern_string(kind ? kind : "?"),
            sev && strcmp(sev, "warning") == 0 ? SCHED_SEV_WARNING : SCHED_SEV_ERROR,
            null_rank ? -1 : (int32_t)rank, group_id(o, group), seq < 0 ? 0 : (uint64_t)seq,
            null_layer ? -1 : (int32_t)layer, op, msg, detail);
        if (!d->message)
            d->message = g_strdup("");
        d->time_ns = col_ns(s, 9);
        sched_outcome_add_diag(o, d);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || sql_fail(error, st, "reading diagnostics");
}

/* What the run ran (schema 7's runs columns) and its weights' formats (memory_runs); left
 * NULL where an older file has no such column. */
static void load_labels(Store *st, QueryRun *r)
{
    sqlite3_stmt *s = NULL;
    if (query_has_column(st, "runs", "sweep_id") &&
        sqlite3_prepare_v2(store_db(st),
                           "SELECT model, layout, vllm, overrides, sweep_id FROM runs WHERE id = ?",
                           -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, r->info.id);
        if (sqlite3_step(s) == SQLITE_ROW) {
            r->info.model = col_keep(r, s, 0);
            r->info.layout = col_keep(r, s, 1);
            r->info.vllm = col_keep(r, s, 2);
            r->info.overrides = col_keep(r, s, 3);
            r->info.sweep_id = sqlite3_column_int64(s, 4);
        }
    }
    sqlite3_finalize(s);
    s = NULL;
    if (query_has_column(st, "memory_runs", "weights_format") &&
        sqlite3_prepare_v2(store_db(st), "SELECT weights_format FROM memory_runs WHERE run_id = ?",
                           -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, r->info.id);
        if (sqlite3_step(s) == SQLITE_ROW)
            r->info.weights = col_keep(r, s, 0);
    }
    sqlite3_finalize(s);
}

QueryRun *query_run_load(Store *st, int64_t id, GError **error)
{
    g_return_val_if_fail(st != NULL, NULL);
    sqlite3_stmt *s = NULL;
    /* A version-1 file (read-only commands never upgrade it) has no runs.hardware. */
    bool v1 = !query_has_column(st, "runs", "hardware");
    if (sqlite3_prepare_v2(store_db(st),
                           v1 ? "SELECT name, kind, path, status, exit_code, wall_ms, created_at,"
                                " timeline, version, NULL, sim_end_us, events, rank_ops"
                                " FROM runs WHERE id = ?"
                              : "SELECT name, kind, path, status, exit_code, wall_ms, created_at,"
                                " timeline, version, hardware, sim_end_us, events, rank_ops"
                                " FROM runs WHERE id = ?",
                           -1, &s, NULL) != SQLITE_OK) {
        sql_fail(error, st, "reading runs");
        return NULL;
    }
    sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        if (rc == SQLITE_DONE)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "run %" G_GINT64_FORMAT " not found in DB %s", id, store_path(st));
        else
            sql_fail(error, st, "reading runs");
        return NULL;
    }
    g_autoptr(QueryRun) r = g_new0(QueryRun, 1);
    r->strings = g_string_chunk_new(256);
    r->notes = g_ptr_array_new_with_free_func(g_free);
    r->info = (StoreRunInfo){
        .id = id,
        .name = col_keep(r, s, 0),
        .kind = col_keep(r, s, 1),
        .path = col_keep(r, s, 2),
        .status = col_keep(r, s, 3),
        .exit_code = sqlite3_column_int(s, 4),
        .wall_ms = sqlite3_column_double(s, 5),
        .created_at = col_keep(r, s, 6),
        .timeline = col_keep(r, s, 7),
        .version = col_keep(r, s, 8),
        .hardware = col_keep(r, s, 9),
        .not_simulated = r->notes,
    };
    r->outcome = outcome_new();
    r->outcome->end_ns = col_ns(s, 10);
    r->outcome->events = (uint64_t)sqlite3_column_int64(s, 11);
    r->outcome->rank_ops = (uint64_t)sqlite3_column_int64(s, 12);
    sqlite3_finalize(s);
    load_labels(st, r);
    if (!load_groups(st, id, r->outcome, error) || !load_ranks(st, id, r->outcome, error) ||
        !load_diags(st, id, r->outcome, error) || !load_not_simulated(st, id, r->notes, error))
        return NULL;
    return g_steal_pointer(&r);
}

char *query_run_scenario(Store *st, int64_t id)
{
    sqlite3_stmt *s = NULL;
    char *text = NULL;
    if (sqlite3_prepare_v2(store_db(st), "SELECT scenario FROM runs WHERE id = ?", -1, &s, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(s, 1, id);
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
            text = g_strdup((const char *)sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    return text;
}

ModelServe *query_serve_load(Store *st, int64_t id)
{
    return store_serve_read(store_db(st), id);
}

static int component_index(const char *name)
{
    for (int c = 0; name && c < MODEL_MEM_COUNT; c++)
        if (strcmp(name, model_mem_component_name((ModelMemComponent)c)) == 0)
            return c;
    return -1;
}

static void mem_item_free(gpointer p)
{
    ModelMemItem *it = p;
    g_free(it->name);
    g_free(it->shape);
    g_free(it->dtype);
    g_free(it);
}

/* One item from columns component, name, shape, dtype, bytes starting at `col`; NULL for an
 * unknown component. */
static ModelMemItem *read_item(sqlite3_stmt *s, int col)
{
    int c = component_index((const char *)sqlite3_column_text(s, col));
    if (c < 0)
        return NULL;
    ModelMemItem *it = g_new0(ModelMemItem, 1);
    it->component = (ModelMemComponent)c;
    it->name = col_text(s, col + 1);
    it->shape = col_text(s, col + 2);
    it->dtype = col_text(s, col + 3);
    it->bytes = (uint64_t)sqlite3_column_int64(s, col + 4);
    if (!it->name)
        it->name = g_strdup("?");
    return it;
}

/* A file before schema 11: every rank's items in a memory_items table, in rowid order. */
static bool load_memory_items_v10(Store *st, int64_t id, ModelMemPlan *m, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, component, name, shape, dtype, bytes FROM memory_items"
                           " WHERE run_id = ? ORDER BY rank, rowid",
                           -1, &s, NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading memory_items");
    sqlite3_bind_int64(s, 1, id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(s, 0);
        ModelMemItem *it = r >= 0 && r < m->world ? read_item(s, 1) : NULL;
        if (!it)
            continue;
        ModelMemRank *x = &m->ranks[r];
        if (!x->items)
            x->items = g_ptr_array_new_with_free_func(mem_item_free);
        g_ptr_array_add(x->items, it);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || sql_fail(error, st, "reading memory_items");
}

/* Run `id`'s tensor lists (schema 11): each plan read once, and every rank that has it given
 * a reference to the same array (as the model shares them). */
static bool load_memory_items(Store *st, int64_t id, ModelMemPlan *m, GError **error)
{
    if (!query_has_table(st, "memory_plans"))
        return !query_has_table(st, "memory_items") || load_memory_items_v10(st, id, m, error);
    g_autoptr(GHashTable) plans = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                                        (GDestroyNotify)g_ptr_array_unref);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT plan, component, name, shape, dtype, bytes FROM memory_plans"
                           " WHERE run_id = ? ORDER BY plan, idx",
                           -1, &s, NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading memory_plans");
    sqlite3_bind_int64(s, 1, id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t plan = sqlite3_column_int64(s, 0);
        ModelMemItem *it = read_item(s, 1);
        if (!it)
            continue;
        GPtrArray *items = g_hash_table_lookup(plans, &plan);
        if (!items) {
            items = g_ptr_array_new_with_free_func(mem_item_free);
            g_hash_table_insert(plans, g_memdup2(&plan, sizeof plan), items);
        }
        g_ptr_array_add(items, it);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return sql_fail(error, st, "reading memory_plans");
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, plan FROM rank_memory_plans WHERE run_id = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading rank_memory_plans");
    sqlite3_bind_int64(s, 1, id);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(s, 0), plan = sqlite3_column_int64(s, 1);
        GPtrArray *items = g_hash_table_lookup(plans, &plan);
        if (r < 0 || r >= m->world || !items || m->ranks[r].items)
            continue;
        m->ranks[r].items = g_ptr_array_ref(items);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || sql_fail(error, st, "reading rank_memory_plans");
}

/* The phase rows of run `id` (schema 5); a run without them keeps m->phases NULL. */
static bool load_phases(Store *st, int64_t id, ModelMemPlan *m, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, idx, status, start_us, dur_us, allocated_bytes,"
                           " peak_bytes, free_bytes FROM phases WHERE run_id = ?",
                           -1, &s, NULL) != SQLITE_OK)
        return sql_fail(error, st, "reading phases");
    sqlite3_bind_int64(s, 1, id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(s, 0), k = sqlite3_column_int64(s, 1);
        if (r < 0 || r >= m->world || k < 0 || k >= MODEL_PHASE_COUNT)
            continue;
        if (!m->phases)
            m->phases = g_malloc0_n(m->world, sizeof *m->phases);
        ModelPhaseRow *ph = &m->phases[r][k];
        const char *stt = (const char *)sqlite3_column_text(s, 2);
        ph->status = MODEL_PHASE_OK;
        for (int i = 0; stt && i <= MODEL_PHASE_NOT_REACHED; i++)
            if (strcmp(stt, model_phase_status_name((ModelPhaseStatus)i)) == 0)
                ph->status = (uint8_t)i;
        ph->start_ns = (int64_t)(sqlite3_column_double(s, 3) * 1e3);
        ph->dur_ns = sqlite3_column_type(s, 4) == SQLITE_NULL
                         ? -1
                         : (int64_t)(sqlite3_column_double(s, 4) * 1e3);
        ph->allocated_bytes = (uint64_t)sqlite3_column_int64(s, 5);
        ph->peak_bytes = (uint64_t)sqlite3_column_int64(s, 6);
        ph->free_bytes = sqlite3_column_int64(s, 7);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || sql_fail(error, st, "reading phases");
}

ModelMemPlan *query_memory_load(Store *st, int64_t id, bool items, GError **error)
{
    g_return_val_if_fail(st != NULL, NULL);
    if (!query_has_table(st, "memory_runs") || !query_has_table(st, "memory"))
        return NULL;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT hbm_bytes, requested_bytes, utilization, kv_bytes_per_token,"
                           " (SELECT MAX(rank) FROM memory WHERE run_id = ?1),"
                           " max_model_len, weights_format, vllm_rank, loading_bytes, kv_tokens,"
                           " max_concurrency, kv_block_size, min_kv_budget_bytes, context_bytes,"
                           " cudagraph_in_budget, reserved_in_budget"
                           " FROM memory_runs WHERE run_id = ?1",
                           -1, &s, NULL) != SQLITE_OK) {
        sql_fail(error, st, "reading memory_runs");
        return NULL;
    }
    sqlite3_bind_int64(s, 1, id);
    if (sqlite3_step(s) != SQLITE_ROW || sqlite3_column_type(s, 4) == SQLITE_NULL) {
        sqlite3_finalize(s);
        return NULL;
    }
    int64_t max_rank = sqlite3_column_int64(s, 4);
    g_autoptr(ModelMemPlan) m = g_new0(ModelMemPlan, 1);
    m->hbm_bytes = (uint64_t)sqlite3_column_int64(s, 0);
    m->requested_bytes = (uint64_t)sqlite3_column_int64(s, 1);
    m->utilization = sqlite3_column_double(s, 2);
    uint64_t per_token = (uint64_t)sqlite3_column_int64(s, 3);
    m->max_model_len = (uint32_t)sqlite3_column_int64(s, 5);
    const unsigned char *wf = sqlite3_column_text(s, 6);
    m->weights_format = store_value_text(wf);
    m->vllm.rank =
        sqlite3_column_type(s, 7) == SQLITE_NULL ? -1 : (int32_t)sqlite3_column_int64(s, 7);
    m->vllm.loading_bytes = (uint64_t)sqlite3_column_int64(s, 8);
    m->vllm.kv_tokens = (uint64_t)sqlite3_column_int64(s, 9);
    m->vllm.max_concurrency = sqlite3_column_double(s, 10);
    m->vllm.kv_block_size = (uint32_t)sqlite3_column_int64(s, 11);
    m->vllm.kv_budget_bytes = sqlite3_column_int64(s, 12);
    m->context_bytes = (uint64_t)sqlite3_column_int64(s, 13);
    m->cudagraph_in_budget = sqlite3_column_type(s, 14) == SQLITE_NULL || sqlite3_column_int(s, 14);
    /* runs stored before the column counted the communicators in non-KV */
    m->reserved_in_budget = sqlite3_column_type(s, 15) == SQLITE_NULL || sqlite3_column_int(s, 15);
    sqlite3_finalize(s);
    if (!store_value_rank_ok(max_rank))
        return NULL; /* not a rank ranksim wrote: no plan */
    m->world = (uint32_t)max_rank + 1;
    m->ranks = g_new0(ModelMemRank, m->world);
    m->diags = g_ptr_array_new_with_free_func((GDestroyNotify)sched_diag_free);
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, component, bytes FROM memory WHERE run_id = ?", -1, &s,
                           NULL) != SQLITE_OK) {
        sql_fail(error, st, "reading memory");
        return NULL;
    }
    sqlite3_bind_int64(s, 1, id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(s, 0);
        int c = component_index((const char *)sqlite3_column_text(s, 1));
        if (r >= 0 && r < m->world && c >= 0)
            m->ranks[r].bytes[c] = (uint64_t)sqlite3_column_int64(s, 2);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        sql_fail(error, st, "reading memory");
        return NULL;
    }
    for (uint32_t r = 0; r < m->world; r++) {
        ModelMemRank *x = &m->ranks[r];
        uint64_t non_kv = 0;
        for (int c = 0; c < MODEL_MEM_COUNT; c++)
            if (model_mem_in_non_kv((ModelMemComponent)c, m->cudagraph_in_budget,
                                    m->reserved_in_budget))
                non_kv += x->bytes[c];
        x->kv_budget_bytes = (int64_t)m->requested_bytes - (int64_t)non_kv;
        x->kv_bytes_per_token = per_token;
    }
    if (items && !load_memory_items(st, id, m, error))
        return NULL;
    if (query_has_table(st, "phases") && !load_phases(st, id, m, error))
        return NULL;
    return g_steal_pointer(&m);
}

bool query_has_table(Store *st, const char *name)
{
    sqlite3_stmt *s = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(
            store_db(st), "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?",
            -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(s) == SQLITE_ROW;
    }
    sqlite3_finalize(s);
    return found;
}

bool query_has_column(Store *st, const char *table, const char *column)
{
    sqlite3_stmt *s = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(store_db(st), "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1,
                           &s, NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, column, -1, SQLITE_STATIC);
        found = sqlite3_step(s) == SQLITE_ROW;
    }
    sqlite3_finalize(s);
    return found;
}

const SchedDiag *query_first_diag(const SchedOutcome *o)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (d->severity == SCHED_SEV_ERROR)
            return d;
    }
    return o->diags->len ? g_ptr_array_index(o->diags, 0) : NULL;
}

char *query_short_message(const char *message, guint max_chars)
{
    if (!message)
        return g_strdup("");
    const char *nl = strchr(message, '\n');
    g_autofree char *line = nl ? g_strndup(message, (gsize)(nl - message)) : g_strdup(message);
    if (!g_utf8_validate(line, -1, NULL) || max_chars < 4)
        return g_steal_pointer(&line);
    glong n = g_utf8_strlen(line, -1);
    if (n <= (glong)max_chars)
        return g_steal_pointer(&line);
    g_autofree char *cut = g_utf8_substring(line, 0, max_chars - 3);
    return g_strconcat(cut, "...", NULL);
}

char *query_short_name(const char *name, guint max_chars)
{
    if (!name)
        return g_strdup("");
    glong n = g_utf8_validate(name, -1, NULL) ? g_utf8_strlen(name, -1) : 0;
    if (n <= (glong)max_chars || max_chars < 8)
        return query_short_message(name, max_chars);
    /* the head says what ran, the tail (a variant's overrides) which variant it was */
    glong head = (glong)(max_chars - 3) * 2 / 5, tail = (glong)max_chars - 3 - head;
    g_autofree char *a = g_utf8_substring(name, 0, head);
    g_autofree char *b = g_utf8_substring(name, n - tail, n);
    return g_strconcat(a, "...", b, NULL);
}

char *query_diag_summary(const char *kind, const char *message, guint max_chars)
{
    if (!message)
        return g_strdup("");
    if (!kind || g_str_has_prefix(message, kind))
        return query_short_message(message, max_chars);
    g_autofree char *full = g_strdup_printf("%s: %s", kind, message);
    return query_short_message(full, max_chars);
}
