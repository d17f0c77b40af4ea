/* src/store/query-diff.c — the per-run totals `ranksim diff` compares: communication time by
 * collective, memory by component, the peak rank, the KV budget; see query.h. Each is one
 * aggregate statement over the run's rows (the collectives view: O(rows of the run)). */
#include "query.h"

#include <math.h>

#include "store-private.h"

GHashTable *query_comm_totals(Store *st, int64_t id)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT name, SUM(done_us - arrive_us), COUNT(*) FROM collectives"
                           " WHERE run_id = ? AND done_us IS NOT NULL GROUP BY name",
                           -1, &s, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_int64(s, 1, id);
    GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    while (sqlite3_step(s) == SQLITE_ROW) {
        QueryCommTotal *t = g_new(QueryCommTotal, 1);
        t->ns = (int64_t)llround(sqlite3_column_double(s, 1) * 1e3);
        t->calls = sqlite3_column_int64(s, 2);
        g_hash_table_insert(h, g_strdup((const char *)sqlite3_column_text(s, 0)), t);
    }
    sqlite3_finalize(s);
    return h;
}

GHashTable *query_memory_max(Store *st, int64_t id, GPtrArray *order)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT component, MAX(bytes) FROM memory WHERE run_id = ?"
                           " GROUP BY component",
                           -1, &s, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_int64(s, 1, id);
    GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(s, 0);
        if (!c)
            continue;
        int64_t *v = g_new(int64_t, 1);
        *v = sqlite3_column_int64(s, 1);
        if (!g_ptr_array_find_with_equal_func(order, c, g_str_equal, NULL))
            g_ptr_array_add(order, g_strdup(c));
        g_hash_table_insert(h, g_strdup(c), v);
    }
    sqlite3_finalize(s);
    if (!g_hash_table_size(h)) {
        g_hash_table_unref(h);
        return NULL;
    }
    return h;
}

int64_t query_memory_peak(Store *st, int64_t id)
{
    sqlite3_stmt *s = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT MAX(t) FROM (SELECT SUM(bytes) AS t FROM memory"
                           " WHERE run_id = ? GROUP BY rank)",
                           -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, id);
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
            v = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    return v;
}

bool query_kv_budgets(Store *st, int64_t a, int64_t b, int64_t *kv_a, int64_t *kv_b)
{
    if (!query_has_table(st, "memory_runs"))
        return false;
    sqlite3_stmt *s = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(store_db(st),
                           "SELECT a.min_kv_budget_bytes, b.min_kv_budget_bytes"
                           " FROM memory_runs a, memory_runs b"
                           " WHERE a.run_id = ? AND b.run_id = ?",
                           -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, a);
        sqlite3_bind_int64(s, 2, b);
        if (sqlite3_step(s) == SQLITE_ROW) {
            *kv_a = sqlite3_column_int64(s, 0);
            *kv_b = sqlite3_column_int64(s, 1);
            found = true;
        }
    }
    sqlite3_finalize(s);
    return found;
}
