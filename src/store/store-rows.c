/* src/store/store-rows.c — a stored run's op rows read back one at a time; see store-rows.h. */
#include "store-rows.h"

#include "store-private.h"

static bool rows_error(GError **error, Store *st, const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", what,
                sqlite3_errmsg(store_db(st)));
    return false;
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
        guint id = (guint)sqlite3_column_int64(s, 0);
        if (id >= names->len)
            g_ptr_array_set_size(names, id + 1);
        g_free(g_ptr_array_index(names, id));
        names->pdata[id] = g_strdup((const char *)sqlite3_column_text(s, 1));
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
        StoreOpRow row = {
            .rank = sqlite3_column_int64(s, 0),
            .kind = sqlite3_column_int(s, 1),
            .start_ns = sqlite3_column_int64(s, 2),
            .end_ns = sqlite3_column_type(s, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 3),
            .group = sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 4),
            .seq = sqlite3_column_int64(s, 5),
            .count = (uint64_t)sqlite3_column_int64(s, 6),
            .name_id = (uint32_t)sqlite3_column_int64(s, 7),
        };
        fn(data, &row);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE || rows_error(error, st, "op rows");
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
