/* src/store/query-list.c — the listing of `ranksim runs` read from the `runs` table; see
 * query.h. One statement: the last N runs (of a sweep), each with its first error (else
 * warning) joined in. Costs: O(N) rows and strings; the diagnostics' index on run_id finds
 * each first finding. */
#include "query.h"

#include "store-private.h"
#include "store-values.h"

static void listed_free(gpointer p)
{
    QueryListedRun *r = p;
    g_string_chunk_free(r->strings);
    g_free(r);
}

static const char *keep(QueryListedRun *r, sqlite3_stmt *s, int col)
{
    g_autofree char *t = store_value_text(sqlite3_column_text(s, col));
    return t ? g_string_chunk_insert(r->strings, t) : NULL;
}

enum {
    RUN_ID,
    RUN_NAME,
    RUN_KIND,
    RUN_STATUS,
    RUN_EXIT,
    RUN_RANKS,
    RUN_END,
    RUN_CREATED,
    RUN_MODEL,
    RUN_LAYOUT,
    RUN_HW,
    RUN_VLLM,
    RUN_OVERRIDES,
    RUN_SWEEP,
    RUN_DIAG_ID, /* the inner select's first finding, joined below */
    RUN_DIAG_KIND,
    RUN_DIAG_MSG,
};

static QueryListedRun *listed_row(sqlite3_stmt *s)
{
    QueryListedRun *r = g_new0(QueryListedRun, 1);
    r->strings = g_string_chunk_new(256);
    r->info = (StoreRunInfo){
        .id = sqlite3_column_int64(s, RUN_ID),
        .name = keep(r, s, RUN_NAME),
        .kind = keep(r, s, RUN_KIND),
        .status = keep(r, s, RUN_STATUS),
        .exit_code = sqlite3_column_int(s, RUN_EXIT),
        .created_at = keep(r, s, RUN_CREATED),
        .model = keep(r, s, RUN_MODEL),
        .layout = keep(r, s, RUN_LAYOUT),
        .hardware = keep(r, s, RUN_HW),
        .vllm = keep(r, s, RUN_VLLM),
        .overrides = keep(r, s, RUN_OVERRIDES),
        .sweep_id = sqlite3_column_int64(s, RUN_SWEEP), /* NULL: 0, not from a sweep */
    };
    r->ranks =
        sqlite3_column_type(s, RUN_RANKS) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, RUN_RANKS);
    r->has_end = sqlite3_column_type(s, RUN_END) != SQLITE_NULL;
    r->sim_end_us = sqlite3_column_double(s, RUN_END);
    r->diag_kind = keep(r, s, RUN_DIAG_KIND);
    r->diag_message = keep(r, s, RUN_DIAG_MSG);
    return r;
}

static int64_t count_runs(Store *st, int64_t sweep)
{
    sqlite3_stmt *s = NULL;
    int64_t total = 0;
    g_autofree char *sql =
        g_strdup_printf("SELECT COUNT(*) FROM runs%s", sweep ? " WHERE sweep_id = ?2" : "");
    if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) == SQLITE_OK) {
        if (sweep)
            sqlite3_bind_int64(s, 2, sweep);
        if (sqlite3_step(s) == SQLITE_ROW)
            total = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    return total;
}

GPtrArray *query_runs_list(Store *st, int64_t limit, int64_t sweep, int64_t *total,
                           GError **error)
{
    sqlite3 *db = store_db(st);
    /* Files before schema 7 have no labels: NULL columns then. */
    bool labels = query_has_column(st, "runs", "sweep_id");
    bool hw = query_has_column(st, "runs", "hardware");
    if (sweep && !labels) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_BAD_ARGUMENT,
                    "%s: no sweep ids in this file (written before ranksim stored them)",
                    store_path(st));
        return NULL;
    }
    *total = count_runs(st, sweep);
    g_autofree char *sql = g_strdup_printf(
        "SELECT r.*, d.kind, d.message FROM"
        " (SELECT id, name, kind, status, exit_code, ranks, sim_end_us, created_at, %s, %s,"
        "  (SELECT id FROM diagnostics d WHERE d.run_id = runs.id"
        "   ORDER BY severity = 'warning', id LIMIT 1) AS diag"
        "  FROM runs%s ORDER BY id DESC LIMIT ?1) r"
        " LEFT JOIN diagnostics d ON d.id = r.diag ORDER BY r.id",
        labels ? "model, layout" : "NULL, NULL",
        labels ? (hw ? "hardware, vllm, overrides, sweep_id" : "NULL, vllm, overrides, sweep_id")
               : (hw ? "hardware, NULL, NULL, NULL" : "NULL, NULL, NULL, NULL"),
        sweep ? " WHERE sweep_id = ?2" : "");
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQL, "%s: reading runs: %s", store_path(st),
                    sqlite3_errmsg(db));
        return NULL;
    }
    sqlite3_bind_int64(s, 1, limit > 0 ? limit : -1);
    if (sweep)
        sqlite3_bind_int64(s, 2, sweep);
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func(listed_free);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        g_ptr_array_add(rows, listed_row(s));
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQL, "%s: reading runs: %s", store_path(st),
                    sqlite3_errmsg(db));
        return NULL;
    }
    return g_steal_pointer(&rows);
}
