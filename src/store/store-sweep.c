/* src/store/store-sweep.c — naming the sweep of copied runs, a local sweep's batches of runs in
 * one transaction; see store-sweep.h. */
#include "store-sweep.h"

#include "store-private.h"

bool store_sweep_assign(Store *s, int64_t first_id, int64_t last_id, int64_t sweep_id,
                        GError **error)
{
    g_return_val_if_fail(sweep_id > 0 && first_id <= last_id, false);
    sqlite3 *db = store_db(s);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "UPDATE runs SET sweep_id = ?1 WHERE id BETWEEN ?2 AND ?3",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, sweep_id);
        sqlite3_bind_int64(st, 2, first_id);
        sqlite3_bind_int64(st, 3, last_id);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: setting the sweep of runs %"
                    G_GINT64_FORMAT "-%" G_GINT64_FORMAT ": %s%s", store_path(s), first_id,
                    last_id, sqlite3_errmsg(db), store_error_advice(sqlite3_extended_errcode(db)));
        return false;
    }
    return true;
}

bool store_sweep_scratch(Store *s, GError **error)
{
    return store_exec(s, "PRAGMA synchronous = OFF", error);
}

bool store_sweep_batch_begin(Store *s, GError **error)
{
    g_return_val_if_fail(!s->readonly, false);
    return store_exec(s, "BEGIN IMMEDIATE", error);
}

bool store_sweep_batch_commit(Store *s, GError **error)
{
    if (!store_exec(s, "COMMIT", error)) {
        store_exec(s, "ROLLBACK", NULL);
        return false;
    }
    /* The batch's pages copied into the database now, while the workers compute the next
     * variants: left to the close, the copy and its syncs (the WAL's, the file's) came after the
     * last variant, 40 ms of a 0.3 s sweep here (perf sched). Best effort: a checkpoint that
     * cannot run now (a reader holds an old snapshot) leaves the pages for a later one. */
    sqlite3_wal_checkpoint_v2(store_db(s), NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return true;
}
