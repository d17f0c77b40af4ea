/* src/store/store-trace.c — a stored run read back section by section for its trace; see
 * store-trace.h. Each section is one prepared statement stepped row by row. */
#include "store-trace.h"
#include "store-values.h"

#include <gio/gio.h>
#include <inttypes.h>

#include "store-private.h"

struct StoreTraceReader {
    Store *store;
    sqlite3 *db;
    int64_t run_id;
    char *where;  /* the filter as SQL on rank_ops o ("" when none) */
    bool own_txn; /* the read transaction is ours to end */
};

static void stmt_free(sqlite3_stmt *st)
{
    sqlite3_finalize(st);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, stmt_free)

static bool set_sql_error(StoreTraceReader *r, GError **error, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: trace of run %" PRId64 ": %s: %s",
                store_path(r->store), r->run_id, what, sqlite3_errmsg(r->db));
    return false;
}

/* Steps a statement: true with *row set while there are rows, false with `error` set on a
 * SQLite failure. */
static bool step(StoreTraceReader *r, sqlite3_stmt *st, bool *row, const char *what,
                 GError **error)
{
    int rc = sqlite3_step(st);
    *row = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE || set_sql_error(r, error, what);
}

/* Prepares `sql` with the run id bound to ?1. */
static sqlite3_stmt *prepare(StoreTraceReader *r, const char *sql, const char *what,
                             GError **error)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        set_sql_error(r, error, what);
        sqlite3_finalize(st);
        return NULL;
    }
    sqlite3_bind_int64(st, 1, r->run_id);
    return st;
}

static StoreText col_text(sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return (StoreText){s, s ? (gsize)sqlite3_column_bytes(st, col) : 0};
}

static bool col_null(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL;
}

/* The filter as SQL conditions on rank_ops o (numbers only: nothing user-typed is pasted);
 * ?2 is the blocked end. */
static char *filter_sql(const StoreOpFilter *f)
{
    GString *s = g_string_new(NULL);
    if (f->ranks) {
        g_string_append(s, " AND (");
        for (guint i = 0; i + 1 < f->ranks->len; i += 2)
            g_string_append_printf(s, "%so.rank BETWEEN %" G_GINT64_FORMAT " AND %" G_GINT64_FORMAT,
                                   i ? " OR " : "", g_array_index(f->ranks, int64_t, i),
                                   g_array_index(f->ranks, int64_t, i + 1));
        g_string_append_c(s, ')');
    }
    if (f->layer_lo >= 0)
        g_string_append_printf(s, " AND o.layer BETWEEN %" G_GINT64_FORMAT " AND %" G_GINT64_FORMAT,
                               f->layer_lo, f->layer_hi);
    if (f->to_ns >= 0)
        g_string_append_printf(s, " AND o.start_ns < %" G_GINT64_FORMAT, f->to_ns);
    if (f->from_ns >= 0)
        g_string_append_printf(s, " AND COALESCE(o.end_ns, ?2) >= %" G_GINT64_FORMAT, f->from_ns);
    return g_string_free(s, FALSE);
}

StoreTraceReader *store_trace_begin(Store *s, int64_t run_id, const StoreOpFilter *filter,
                                    GError **error)
{
    static const StoreOpFilter all = STORE_OP_FILTER_ALL;
    StoreTraceReader *r = g_new0(StoreTraceReader, 1);
    r->store = s;
    r->db = store_db(s);
    r->run_id = run_id;
    r->where = filter_sql(filter ? filter : &all);
    /* One read transaction, so every section sees the same snapshot — unless the caller is
     * already inside a transaction on this connection. */
    r->own_txn = sqlite3_get_autocommit(r->db) != 0;
    if (r->own_txn && sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        set_sql_error(r, error, "begin");
        r->own_txn = false;
        store_trace_end(r);
        return NULL;
    }
    return r;
}

void store_trace_end(StoreTraceReader *r)
{
    if (!r)
        return;
    if (r->own_txn)
        sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
    g_free(r->where);
    g_free(r);
}

bool store_trace_run(StoreTraceReader *r, StoreCellFn fn, void *data, GError **error)
{
    g_autoptr(sqlite3_stmt) st = prepare(
        r,
        /* figures a writer other than ranksim may have put out of range read as NULL
         * (store-values.h): the rank count bounds the trace's loops */
        "SELECT id, name, kind, status, exit_code,"
        " CASE WHEN typeof(ranks) = 'integer' AND ranks BETWEEN 0 AND " G_STRINGIFY(
            STORE_MAX_RANKS) " THEN ranks END AS ranks,"
        " CASE WHEN sim_end_us >= 0 AND sim_end_us < 4.6e15 THEN sim_end_us END AS sim_end_us,"
        " CASE WHEN events >= 0 THEN events END AS events,"
        " CASE WHEN rank_ops >= 0 THEN rank_ops END AS rank_ops,"
        " CASE WHEN wall_ms >= 0 AND wall_ms < 1e300 THEN wall_ms END AS wall_ms,"
        " created_at, path, timeline, version FROM runs WHERE id = ?",
        "read run", error);
    bool row;
    if (!st || !step(r, st, &row, "read run", error))
        return false;
    if (!row) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "run %" PRId64 " not found in %s",
                    r->run_id, store_path(r->store));
        return false;
    }
    for (int c = 0; c < sqlite3_column_count(st); c++) {
        StoreCell cell = {.column = sqlite3_column_name(st, c)};
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER:
            cell.type = STORE_CELL_INT;
            cell.i = sqlite3_column_int64(st, c);
            break;
        case SQLITE_FLOAT:
            cell.type = STORE_CELL_REAL;
            cell.d = sqlite3_column_double(st, c);
            break;
        case SQLITE_NULL:
            cell.type = STORE_CELL_NULL;
            break;
        default:
            cell.type = STORE_CELL_TEXT;
            cell.text = col_text(st, c);
            break;
        }
        fn(data, &cell);
    }
    return true;
}

bool store_trace_hang(StoreTraceReader *r, int64_t *timeouts, char **hang_detail,
                      GError **error)
{
    *timeouts = 0;
    *hang_detail = NULL;
    g_autoptr(sqlite3_stmt) st =
        prepare(r,
                "SELECT (SELECT count(*) FROM diagnostics WHERE run_id = ?1 AND kind = 'timeout'),"
                " (SELECT detail FROM diagnostics WHERE run_id = ?1 AND kind = 'hang_surface'"
                "  ORDER BY id LIMIT 1)",
                "read diagnostics", error);
    bool row;
    if (!st || !step(r, st, &row, "read diagnostics", error))
        return false;
    if (row) {
        *timeouts = MAX(sqlite3_column_int64(st, 0), 0);
        /* JSON the trace parses: one a parser should not see is dropped (store-values.h) */
        const char *detail = (const char *)sqlite3_column_text(st, 1);
        *hang_detail = store_value_json_ok(detail) ? g_strdup(detail) : NULL;
    }
    return true;
}

bool store_trace_work_end(StoreTraceReader *r, int64_t *end_ns, GError **error)
{
    *end_ns = -1;
    g_autoptr(sqlite3_stmt) st = prepare(
        r, "SELECT MAX(end_ns) FROM rank_ops WHERE run_id = ?1 AND end_ns IS NOT NULL", "read ops",
        error);
    bool row;
    if (!st || !step(r, st, &row, "read ops", error))
        return false;
    if (row && !col_null(st, 0))
        *end_ns = sqlite3_column_int64(st, 0);
    return true;
}

bool store_trace_hardware(StoreTraceReader *r, char **line, GError **error)
{
    *line = NULL;
    g_autoptr(sqlite3_stmt) st =
        prepare(r, "SELECT hardware FROM runs WHERE id = ?", "read run", error);
    bool row;
    if (!st || !step(r, st, &row, "read run", error))
        return false;
    if (row)
        *line = store_value_text(sqlite3_column_text(st, 0));
    return true;
}

bool store_trace_groups(StoreTraceReader *r, StoreTraceGroupFn fn, void *data, GError **error)
{
    g_autoptr(sqlite3_stmt) st =
        prepare(r, "SELECT id, name, ranks FROM groups WHERE run_id = ?", "read groups", error);
    if (!st)
        return false;
    for (;;) {
        bool row;
        if (!step(r, st, &row, "read groups", error))
            return false;
        if (!row)
            return true;
        fn(data, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2));
    }
}

bool store_trace_blocked(StoreTraceReader *r, StoreTraceBlockedFn fn, void *data,
                         GError **error)
{
    g_autoptr(sqlite3_stmt) st = prepare(r,
                                         "SELECT group_id, seq, rank FROM rank_ops WHERE run_id = ?"
                                         " AND end_ns IS NULL AND group_id IS NOT NULL",
                                         "read blocked", error);
    if (!st)
        return false;
    for (;;) {
        bool row;
        if (!step(r, st, &row, "read blocked", error))
            return false;
        if (!row)
            return true;
        fn(data, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
           sqlite3_column_int64(st, 2));
    }
}

bool store_trace_ops(StoreTraceReader *r, int64_t blocked_end_ns, StoreTraceOpFn fn, void *data,
                     GError **error)
{
    enum { RANK, IDX, LAYER, NAME, KIND, TOKENS, GROUP, GROUP_ID, SEQ, COUNT, DTYPE, START, END };
    g_autofree char *sql =
        g_strdup_printf("SELECT o.rank, o.idx, o.layer, COALESCE(n.name, 'name ' || o.name_id),"
                        " COALESCE(k.name, 'kind ' || o.kind), o.tokens,"
                        " COALESCE(g.name, 'group ' || o.group_id), o.group_id, o.seq, o.count,"
                        " COALESCE(d.name, 'dtype ' || o.dtype), o.start_ns, o.end_ns"
                        " FROM rank_ops o"
                        " LEFT JOIN names n ON n.run_id = o.run_id AND n.id = o.name_id"
                        " LEFT JOIN op_kinds k ON k.id = o.kind"
                        " LEFT JOIN dtypes d ON d.id = o.dtype"
                        " LEFT JOIN groups g ON g.run_id = o.run_id AND g.id = o.group_id"
                        " WHERE o.run_id = ?1%s ORDER BY o.rank, o.idx",
                        r->where);
    g_autoptr(sqlite3_stmt) st = prepare(r, sql, "read ops", error);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 2, blocked_end_ns);
    for (;;) {
        bool row;
        if (!step(r, st, &row, "read ops", error))
            return false;
        if (!row)
            return true;
        StoreTraceOp op = {
            .rank = sqlite3_column_int64(st, RANK),
            .idx = sqlite3_column_int64(st, IDX),
            .has_layer = !col_null(st, LAYER),
            .layer = sqlite3_column_int64(st, LAYER),
            .name = col_text(st, NAME),
            .kind = col_text(st, KIND),
            .has_tokens = !col_null(st, TOKENS),
            .tokens = sqlite3_column_int64(st, TOKENS),
            .has_group = !col_null(st, GROUP_ID),
            .group_id = sqlite3_column_int64(st, GROUP_ID),
            .seq = sqlite3_column_int64(st, SEQ),
            .count = sqlite3_column_int64(st, COUNT),
            .group = col_text(st, GROUP),
            .dtype = col_text(st, DTYPE),
            .start_ns = sqlite3_column_int64(st, START),
            .has_end = !col_null(st, END),
            .end_ns = sqlite3_column_int64(st, END),
        };
        if (!fn(data, &op, error))
            return false;
    }
}

bool store_trace_flows(StoreTraceReader *r, int64_t blocked_end_ns, StoreTraceFlowFn fn,
                       void *data, GError **error)
{
    enum { GROUP_ID, SEQ, RANK, GROUP, START, END, LAST_START, FIRST_END, MEMBERS, IDX };
    g_autofree char *sql = g_strdup_printf(
        "SELECT group_id, seq, rank, group_name, start_ns, end_ns,"
        "  MAX(start_ns) OVER w, MIN(end_ns) OVER w, COUNT(*) OVER w, idx"
        " FROM (SELECT o.group_id, o.seq, o.rank, o.start_ns, o.idx,"
        "   COALESCE(g.name, 'group ' || o.group_id) AS group_name,"
        "   MAX(o.start_ns, COALESCE(o.end_ns, ?2, o.start_ns)) AS end_ns"
        "  FROM rank_ops o LEFT JOIN groups g ON g.run_id = o.run_id AND g.id = o.group_id"
        "  WHERE o.run_id = ?1 AND o.group_id IS NOT NULL%s)"
        " WINDOW w AS (PARTITION BY group_id, seq ORDER BY rank"
        "  ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
        " ORDER BY group_id, seq, rank",
        r->where);
    g_autoptr(sqlite3_stmt) st = prepare(r, sql, "read collectives", error);
    if (!st)
        return false;
    if (blocked_end_ns >= 0)
        sqlite3_bind_int64(st, 2, blocked_end_ns);
    for (;;) {
        bool row;
        if (!step(r, st, &row, "read collectives", error))
            return false;
        if (!row)
            return true;
        StoreTraceFlow f = {
            .group_id = sqlite3_column_int64(st, GROUP_ID),
            .seq = sqlite3_column_int64(st, SEQ),
            .rank = sqlite3_column_int64(st, RANK),
            .idx = sqlite3_column_int64(st, IDX),
            .group = col_text(st, GROUP),
            .start_ns = sqlite3_column_int64(st, START),
            .end_ns = sqlite3_column_int64(st, END),
            .last_start_ns = sqlite3_column_int64(st, LAST_START),
            .first_end_ns = sqlite3_column_int64(st, FIRST_END),
            .members = sqlite3_column_int64(st, MEMBERS),
        };
        if (!fn(data, &f, error))
            return false;
    }
}

bool store_trace_diagnostics(StoreTraceReader *r, StoreTraceDiagFn fn, void *data,
                             GError **error)
{
    enum { KIND, SEVERITY, RANK, GROUP, SEQ, LAYER, OP, MESSAGE, DETAIL, TIME };
    g_autoptr(sqlite3_stmt) st = prepare(
        r,
        "SELECT kind, severity, rank, group_name, seq, layer, op_name, message, detail, time_us"
        " FROM diagnostics WHERE run_id = ? ORDER BY id",
        "read diagnostics", error);
    if (!st)
        return false;
    for (;;) {
        bool row;
        if (!step(r, st, &row, "read diagnostics", error))
            return false;
        if (!row)
            return true;
        /* a detail is JSON the trace parses: one a parser should not see is dropped */
        bool detail_ok = store_value_json_ok((const char *)sqlite3_column_text(st, DETAIL));
        StoreTraceDiag d = {
            .kind = col_text(st, KIND),
            .severity = col_text(st, SEVERITY),
            .group = col_text(st, GROUP),
            .op = col_text(st, OP),
            .message = col_text(st, MESSAGE),
            .detail = detail_ok ? col_text(st, DETAIL) : (StoreText){NULL, 0},
            .has_rank = !col_null(st, RANK),
            .has_seq = !col_null(st, SEQ),
            .has_layer = !col_null(st, LAYER),
            .has_time = !col_null(st, TIME),
            .rank = sqlite3_column_int64(st, RANK),
            .seq = sqlite3_column_int64(st, SEQ),
            .layer = sqlite3_column_int64(st, LAYER),
            .time_us = sqlite3_column_double(st, TIME),
        };
        if (!fn(data, &d, error))
            return false;
    }
}
