/* src/store/store-prune.c — deleting stored runs in one transaction; see store-prune.h. */
#include "store-prune.h"

#include "query.h"
#include "store-private.h"

/* Every table that holds rows of a run, by the column naming the run. `runs` last. */
static const char *const run_tables[] = {
    "names",       "groups",      "ranks",    "op_rows",      "timeline_ops",  "rank_timelines",
    "rank_groups", "diagnostics", "memory",   "memory_items", "not_simulated", "memory_runs",
    "phases",      "steps",       "requests", "serve_runs",
};

static bool exec_sql(Store *s, const char *sql, GError **error)
{
    char *msg = NULL;
    sqlite3 *db = store_db(s);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return true;
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", store_path(s),
                msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return false;
}

/* The selected ids into the temporary table prune_ids (inside the transaction). */
static bool select_ids(Store *s, const StorePruneSpec *spec, GError **error)
{
    bool ok = exec_sql(s,
                       "CREATE TEMP TABLE IF NOT EXISTS prune_ids(id INTEGER PRIMARY KEY);"
                       "DELETE FROM prune_ids;",
                       error);
    sqlite3_stmt *st = NULL;
    if (ok && spec->ids &&
        sqlite3_prepare_v2(store_db(s), "INSERT OR IGNORE INTO prune_ids SELECT id FROM runs"
                                        " WHERE id = ?",
                           -1, &st, NULL) == SQLITE_OK) {
        for (guint i = 0; ok && i < spec->ids->len; i++) {
            sqlite3_bind_int64(st, 1, g_array_index(spec->ids, int64_t, i));
            ok = sqlite3_step(st) == SQLITE_DONE;
            sqlite3_reset(st);
        }
    }
    sqlite3_finalize(st);
    if (ok && spec->sweep_id) {
        g_autofree char *sql = g_strdup_printf("INSERT OR IGNORE INTO prune_ids SELECT id FROM "
                                               "runs WHERE sweep_id = %" G_GINT64_FORMAT,
                                               spec->sweep_id);
        ok = exec_sql(s, sql, error);
    }
    if (ok && spec->older_than_s >= 0) {
        g_autofree char *sql = g_strdup_printf(
            "INSERT OR IGNORE INTO prune_ids SELECT id FROM runs WHERE"
            " julianday(created_at) < julianday('now') - %" G_GINT64_FORMAT " / 86400.0",
            spec->older_than_s);
        ok = exec_sql(s, sql, error);
    }
    return ok;
}

/* How many ids prune_ids holds, and the smallest and largest. */
static void count_ids(Store *s, StorePruned *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_db(s), "SELECT count(*), min(id), max(id) FROM prune_ids", -1,
                           &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        out->runs = sqlite3_column_int64(st, 0);
        out->lo = sqlite3_column_int64(st, 1);
        out->hi = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
}

/* Every row of the runs in prune_ids, `runs` last. */
static bool delete_ids(Store *s, GError **error)
{
    bool ok = true;
    for (size_t t = 0; ok && t < G_N_ELEMENTS(run_tables); t++) {
        if (!query_has_table(s, run_tables[t]))
            continue; /* a file from before the table existed */
        g_autofree char *sql = g_strdup_printf(
            "DELETE FROM %s WHERE run_id IN (SELECT id FROM prune_ids)", run_tables[t]);
        ok = exec_sql(s, sql, error);
    }
    return ok && exec_sql(s, "DELETE FROM runs WHERE id IN (SELECT id FROM prune_ids)", error);
}

bool store_prune(Store *s, const StorePruneSpec *spec, StorePruned *out, GError **error)
{
    *out = (StorePruned){0};
    if (!exec_sql(s, "BEGIN IMMEDIATE", error))
        return false;
    bool ok = select_ids(s, spec, error);
    if (ok)
        count_ids(s, out);
    if (ok && !spec->dry_run && out->runs)
        ok = delete_ids(s, error);
    if (!ok) {
        exec_sql(s, "ROLLBACK", NULL);
        return false;
    }
    if (!exec_sql(s, spec->dry_run ? "ROLLBACK" : "COMMIT", error))
        return false;
    return !spec->vacuum || spec->dry_run || exec_sql(s, "VACUUM", error);
}
