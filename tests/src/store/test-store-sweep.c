/* tests/src/store/test-store-sweep.c — store_sweep_assign puts exactly the runs of its range in
 * the sweep (runs outside keep theirs), store_sweep_scratch turns off syncing, a batch of runs
 * is one transaction in which each run is undone alone. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

#include "../../../src/store/store-private.h"
#include "../../../src/store/store-sweep.h"

static char *tmp_db(void)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-store-sweep-XXXXXX", NULL);
    cr_assert_not_null(dir);
    return g_build_filename(dir, "t.db", NULL);
}

static char *text(Store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    char *out = g_strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

/* Four runs, each the first run of a sweep of its own (as a worker's database holds it). */
static Store *four_runs(const char *path)
{
    g_autoptr(GError) err = NULL;
    Store *s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    StoreRunInfo info = {.name = "v", .kind = "program", .path = "v.yaml", .scenario = "x",
                         .timeline = "none", .sweep_id = -1};
    for (int i = 1; i <= 4; i++)
        cr_assert_eq(store_insert_invalid(s, &info, "no", &err), i);
    return s;
}

Test(store_sweep, assigns_exactly_its_range)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = four_runs(path);
    g_autoptr(GError) err = NULL;
    cr_assert(store_sweep_assign(s, 2, 3, 2, &err), "%s", err ? err->message : "");
    g_autofree char *got = text(s, "SELECT group_concat(id || ':' || sweep_id, ' ') FROM runs");
    cr_assert_str_eq(got, "1:1 2:2 3:2 4:4");
}

Test(store_sweep, works_inside_an_open_transaction)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = four_runs(path);
    cr_assert(store_exec(s, "BEGIN IMMEDIATE", NULL));
    cr_assert(store_sweep_assign(s, 1, 4, 1, NULL));
    cr_assert(store_exec(s, "ROLLBACK", NULL));
    g_autofree char *got = text(s, "SELECT group_concat(sweep_id, ' ') FROM runs");
    cr_assert_str_eq(got, "1 2 3 4", "a rolled-back assignment leaves the runs as they were");
}

Test(store_sweep, scratch_does_not_sync)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = four_runs(path);
    cr_assert(store_sweep_scratch(s, NULL));
    g_autofree char *got = text(s, "PRAGMA synchronous");
    cr_assert_str_eq(got, "0");
}

static int64_t count(Store *s, const char *sql)
{
    g_autofree char *t = text(s, sql);
    return g_ascii_strtoll(t, NULL, 10);
}

/* A batch: runs stored inside it get consecutive ids, a reader sees none of them before the
 * commit, and all of them after. */
Test(store_sweep, batch_is_seen_whole_at_its_commit)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = four_runs(path);
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) r = store_open_readonly(path, &err);
    cr_assert_not_null(r, "%s", err ? err->message : "");
    StoreRunInfo info = {.name = "b", .kind = "program", .path = "b.yaml", .scenario = "x",
                         .timeline = "none", .sweep_id = 5};
    cr_assert(store_sweep_batch_begin(s, &err), "%s", err ? err->message : "");
    for (int i = 5; i <= 7; i++)
        cr_assert_eq(store_insert_invalid(s, &info, "no", &err), i, "%s",
                     err ? err->message : "");
    cr_assert_eq(count(r, "SELECT COUNT(*) FROM runs"), 4, "the batch is not committed yet");
    cr_assert(store_sweep_batch_commit(s, &err), "%s", err ? err->message : "");
    cr_assert_eq(count(r, "SELECT COUNT(*) FROM runs"), 7);
    cr_assert_eq(count(r, "SELECT COUNT(*) FROM diagnostics WHERE run_id >= 5"), 3);
}

/* A run's own transaction inside a batch is a savepoint: rolling it back undoes that run only;
 * outside a batch it is the whole transaction. */
Test(store_sweep, run_inside_a_batch_is_undone_alone)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = four_runs(path);
    g_autoptr(GError) err = NULL;
    StoreRunInfo info = {.name = "b", .kind = "program", .path = "b.yaml", .scenario = "x",
                         .timeline = "none", .sweep_id = 5};
    bool nested = true;
    cr_assert(store_run_txn_begin(s, &nested, &err));
    cr_assert_not(nested, "no batch open: a transaction of its own");
    store_run_txn_rollback(s, nested);
    cr_assert(store_sweep_batch_begin(s, &err));
    cr_assert_eq(store_insert_invalid(s, &info, "kept", &err), 5);
    cr_assert(store_run_txn_begin(s, &nested, &err));
    cr_assert(nested);
    cr_assert_eq(store_insert_invalid(s, &info, "undone", &err), 6);
    store_run_txn_rollback(s, nested);
    cr_assert_eq(store_insert_invalid(s, &info, "kept too", &err), 6);
    cr_assert(store_sweep_batch_commit(s, &err), "%s", err ? err->message : "");
    g_autofree char *got = text(s, "SELECT group_concat(run_id || '=' || message, ' ') FROM"
                                   " diagnostics WHERE run_id >= 5");
    cr_assert_str_eq(got, "5=kept 6=kept too");
    cr_assert_eq(count(s, "SELECT COUNT(*) FROM runs"), 6);
}
