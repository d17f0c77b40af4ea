/* src/store/store-prune.c — deleting stored runs in one transaction; see store-prune.h. */
#include "store-prune.h"

#include "query.h"
#include "store-merge.h"
#include "store-private.h"

static bool exec_sql(Store *s, const char *sql, GError **error)
{
    char *msg = NULL;
    sqlite3 *db = store_db(s);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return true;
    g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s%s", store_path(s),
                msg ? msg : sqlite3_errmsg(db), store_error_advice(sqlite3_extended_errcode(db)));
    sqlite3_free(msg);
    return false;
}

/* " OR "-joined conditions selecting the runs of `spec` from `runs`, with ?1.. for the ids
 * (bound by bind_selection). Read only: a dry run works on a read-only file. */
static char *selection_sql(const StorePruneSpec *spec)
{
    GString *w = g_string_new("0");
    guint n_ids = spec->ids ? spec->ids->len : 0;
    if (n_ids) {
        g_string_append(w, " OR id IN (");
        for (guint i = 0; i < n_ids; i++)
            g_string_append_printf(w, "%s?%u", i ? "," : "", i + 1);
        g_string_append(w, ")");
    }
    if (spec->sweep_id)
        g_string_append_printf(w, " OR sweep_id = %" G_GINT64_FORMAT, spec->sweep_id);
    if (spec->older_than_s >= 0)
        g_string_append_printf(
            w, " OR julianday(created_at) < julianday('now') - %" G_GINT64_FORMAT " / 86400.0",
            spec->older_than_s);
    return g_string_free(w, FALSE);
}

/* How many runs the selection holds, and the smallest and largest id. */
static bool count_selected(Store *s, const StorePruneSpec *spec, StorePruned *out, GError **error)
{
    g_autofree char *where = selection_sql(spec);
    g_autofree char *sql =
        g_strdup_printf("SELECT count(*), min(id), max(id) FROM runs WHERE %s", where);
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) == SQLITE_OK;
    for (guint i = 0; ok && spec->ids && i < spec->ids->len; i++)
        sqlite3_bind_int64(st, (int)i + 1, g_array_index(spec->ids, int64_t, i));
    ok = ok && sqlite3_step(st) == SQLITE_ROW;
    if (ok) {
        out->runs = sqlite3_column_int64(st, 0);
        out->lo = sqlite3_column_int64(st, 1);
        out->hi = sqlite3_column_int64(st, 2);
    } else {
        store_sql_error(error, s, "selecting the runs");
    }
    sqlite3_finalize(st);
    return ok;
}

/* The selected ids into the temporary table prune_ids (inside the transaction). */
static bool select_ids(Store *s, const StorePruneSpec *spec, GError **error)
{
    g_autofree char *where = selection_sql(spec);
    g_autofree char *sql =
        g_strdup_printf("INSERT INTO prune_ids SELECT id FROM runs WHERE %s", where);
    if (!exec_sql(s,
                  "CREATE TEMP TABLE IF NOT EXISTS prune_ids(id INTEGER PRIMARY KEY);"
                  "DELETE FROM prune_ids;",
                  error))
        return false;
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) == SQLITE_OK;
    for (guint i = 0; ok && spec->ids && i < spec->ids->len; i++)
        sqlite3_bind_int64(st, (int)i + 1, g_array_index(spec->ids, int64_t, i));
    ok = ok && sqlite3_step(st) == SQLITE_DONE;
    if (!ok)
        store_sql_error(error, s, "selecting the runs");
    sqlite3_finalize(st);
    return ok;
}

/* Every row of the runs in prune_ids, `runs` last. */
static bool delete_ids(Store *s, GError **error)
{
    bool ok = true;
    /* every table that holds rows of a run (merge's list; a test keeps it complete) */
    for (const char *const *t = STORE_MERGE_RUN_TABLES; ok && *t; t++) {
        if (!query_has_table(s, *t))
            continue; /* a file from before the table existed */
        g_autofree char *sql =
            g_strdup_printf("DELETE FROM %s WHERE run_id IN (SELECT id FROM prune_ids)", *t);
        ok = exec_sql(s, sql, error);
    }
    return ok && exec_sql(s, "DELETE FROM runs WHERE id IN (SELECT id FROM prune_ids)", error);
}

bool store_prune(Store *s, const StorePruneSpec *spec, StorePruned *out, GError **vacuum_error,
                 GError **error)
{
    *out = (StorePruned){0};
    if (spec->dry_run)
        return count_selected(s, spec, out, error);
    if (!store_exec(s, "BEGIN IMMEDIATE", error))
        return false;
    bool ok = count_selected(s, spec, out, error);
    if (ok && out->runs)
        ok = select_ids(s, spec, error) && delete_ids(s, error);
    if (!ok || !store_exec(s, "COMMIT", error)) {
        exec_sql(s, "ROLLBACK", NULL);
        *out = (StorePruned){0};
        return false;
    }
    /* Committed: from here a failure is the vacuum's alone (VACUUM cannot run inside the
     * delete's transaction; undoing a committed delete would need a copy of the whole file,
     * i.e. more of the disk space whose lack usually makes VACUUM fail). */
    if (spec->vacuum)
        out->vacuumed = exec_sql(s, "VACUUM", vacuum_error);
    return true;
}
