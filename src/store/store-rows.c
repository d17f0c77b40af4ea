/* src/store/store-rows.c — a stored run's op rows read back one at a time; see store-rows.h. */
#include "store-rows.h"

#include <string.h>

#include "store-private.h"
#include "store-values.h"

static bool rows_error(GError **error, Store *st, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", what,
                sqlite3_errmsg(store_db(st)));
    return false;
}

/* Columns 1-7 of a row statement (kind, start_ns, end_ns, group or slot, seq, count, name_id)
 * as an op row; column 0 (rank or time line) is the caller's. */
static StoreOpRow op_row(sqlite3_stmt *s, int64_t rank)
{
    return (StoreOpRow){
        .rank = rank,
        .kind = sqlite3_column_int(s, 1),
        .start_ns = sqlite3_column_int64(s, 2),
        .end_ns = sqlite3_column_type(s, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 3),
        .group = sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 4),
        .seq = sqlite3_column_int64(s, 5),
        .count = (uint64_t)sqlite3_column_int64(s, 6),
        .name_id = (uint32_t)sqlite3_column_int64(s, 7),
    };
}

GPtrArray *store_rows_names(Store *st, int64_t run_id, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st), "SELECT id, name FROM names WHERE run_id = ? ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK) {
        rows_error(error, st, "names");
        return NULL;
    }
    sqlite3_bind_int64(s, 1, run_id);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    while (sqlite3_step(s) == SQLITE_ROW) {
        int64_t id64 = sqlite3_column_int64(s, 0);
        if (id64 < 0 || id64 >= STORE_MAX_NAMES)
            continue; /* not an id ranksim wrote (store-values.h) */
        guint id = (guint)id64;
        if (id >= names->len)
            g_ptr_array_set_size(names, id + 1);
        g_free(g_ptr_array_index(names, id));
        names->pdata[id] = store_value_text(sqlite3_column_text(s, 1));
    }
    sqlite3_finalize(s);
    return names;
}

bool store_rows_ops(Store *st, int64_t run_id, StoreOpRowFn fn, void *data, GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, kind, start_ns, end_ns, group_id, seq, count, name_id"
                           " FROM rank_ops WHERE run_id = ? ORDER BY rank, idx",
                           -1, &s, NULL) != SQLITE_OK)
        return rows_error(error, st, "op rows");
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        StoreOpRow row = op_row(s, sqlite3_column_int64(s, 0));
        fn(data, &row);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rows_error(error, st, "op rows");
}

void store_shared_rows_clear(StoreSharedRows *t)
{
    for (uint32_t r = 0; t->slots && r < t->n_ranks; r++)
        if (t->slots[r])
            g_array_unref(t->slots[r]);
    g_free(t->slots);
    g_free(t->timeline);
    if (t->rows)
        g_ptr_array_unref(t->rows);
    memset(t, 0, sizeof *t);
}

/* Whether the run has rows in timeline_ops (false too for a file without the table). */
static bool has_timelines(Store *st, int64_t run_id)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st), "SELECT 1 FROM timeline_ops WHERE run_id = ? LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(s, 1, run_id);
    bool yes = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return yes;
}

/* timeline_ops of the run: each time line's rows, its stored id mapped to an index in `ids`. */
static bool read_timeline_rows(Store *st, int64_t run_id, StoreSharedRows *t, GHashTable *ids,
                               GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT timeline, kind, start_ns, end_ns, slot, seq, count, name_id"
                           " FROM timeline_ops WHERE run_id = ? ORDER BY timeline, idx",
                           -1, &s, NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    int64_t cur = INT64_MIN;
    GArray *rows = NULL;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t tl = sqlite3_column_int64(s, 0);
        if (tl != cur || !rows) {
            cur = tl;
            rows = g_array_new(FALSE, FALSE, sizeof(StoreOpRow));
            g_hash_table_insert(ids, g_memdup2(&tl, sizeof tl), GUINT_TO_POINTER(t->rows->len));
            g_ptr_array_add(t->rows, rows);
        }
        StoreOpRow row = op_row(s, -1);
        g_array_append_val(rows, row);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rows_error(error, st, "time lines");
}

/* rank_timelines and rank_groups of the run, for ranks below t->n_ranks. */
static bool read_rank_maps(Store *st, int64_t run_id, StoreSharedRows *t, GHashTable *ids,
                           GError **error)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, timeline FROM rank_timelines WHERE run_id = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(s, 0), tl = sqlite3_column_int64(s, 1);
        gpointer v = NULL;
        if (rank >= 0 && rank < t->n_ranks && g_hash_table_lookup_extended(ids, &tl, NULL, &v))
            t->timeline[rank] = (int32_t)GPOINTER_TO_UINT(v);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return rows_error(error, st, "time lines");
    /* a slot is a place among the rank's groups, so below the run's group count: a larger one
     * (a hand-edited file, store-values.h) is skipped, not grown into */
    int64_t n_groups = 0;
    if (sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM groups WHERE run_id = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        n_groups = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT rank, slot, group_id FROM rank_groups WHERE run_id = ?"
                           " ORDER BY rank, slot",
                           -1, &s, NULL) != SQLITE_OK)
        return rows_error(error, st, "time lines");
    sqlite3_bind_int64(s, 1, run_id);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(s, 0), slot = sqlite3_column_int64(s, 1);
        int32_t g = sqlite3_column_int(s, 2);
        if (rank < 0 || rank >= t->n_ranks || slot < 0 || slot >= n_groups)
            continue;
        if (!t->slots[rank])
            t->slots[rank] = g_array_new(FALSE, FALSE, sizeof(int32_t));
        GArray *a = t->slots[rank];
        int32_t none = -1;
        while (a->len <= (guint)slot)
            g_array_append_val(a, none);
        g_array_index(a, int32_t, slot) = g;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rows_error(error, st, "time lines");
}

bool store_rows_shared(Store *st, int64_t run_id, uint32_t n_ranks, StoreSharedRows *out,
                          GError **error)
{
    memset(out, 0, sizeof *out);
    if (!has_timelines(st, run_id))
        return true;
    out->n_ranks = MIN(n_ranks, (uint32_t)STORE_MAX_RANKS); /* the caller's count may be read
                                                             back from the file too */
    n_ranks = out->n_ranks;
    out->timeline = g_new(int32_t, MAX(n_ranks, 1u));
    for (uint32_t r = 0; r < n_ranks; r++)
        out->timeline[r] = -1;
    out->slots = g_new0(GArray *, MAX(n_ranks, 1u));
    out->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    g_autoptr(GHashTable) ids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    if (!read_timeline_rows(st, run_id, out, ids, error) ||
        !read_rank_maps(st, run_id, out, ids, error)) {
        store_shared_rows_clear(out);
        return false;
    }
    return true;
}

bool store_rows_collectives(Store *st, int64_t run_id, StoreCollectiveFn fn, void *data,
                            GError **error)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT group_name, seq, rank, kind, count, dtype, name, done_us IS NOT "
                           "NULL FROM collectives WHERE run_id = ?",
                           -1, &q, NULL) != SQLITE_OK) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", store_path(st),
                    sqlite3_errmsg(store_db(st)));
        return false;
    }
    sqlite3_bind_int64(q, 1, run_id);
    while (sqlite3_step(q) == SQLITE_ROW) {
        StoreCollectiveRow row = {
            .group = (const char *)sqlite3_column_text(q, 0),
            .seq = (uint64_t)sqlite3_column_int64(q, 1),
            .rank = sqlite3_column_int(q, 2),
            .kind = (const char *)sqlite3_column_text(q, 3),
            .count = (uint64_t)sqlite3_column_int64(q, 4),
            .dtype = (const char *)sqlite3_column_text(q, 5),
            .name = (const char *)sqlite3_column_text(q, 6),
            .done = sqlite3_column_int(q, 7) != 0,
        };
        fn(data, &row);
    }
    sqlite3_finalize(q);
    return true;
}
