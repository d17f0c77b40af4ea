/* tests/src/test-store.c — the results database: schema and views, one transaction per run
 * (a run killed mid-way leaves no row), concurrent writers lose nothing, invalid runs, and a
 * database from a newer ranksim is refused. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/store.h"

static char *tmp_db(void)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-store-XXXXXX", NULL);
    cr_assert_not_null(dir);
    return g_build_filename(dir, "sub", "t.db", NULL); /* a missing folder is created */
}

static int64_t scalar(Store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(store_db(s)));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* 4 ranks, TP all-reduce over `layers` layers. */
static SchedProgram *program(uint32_t layers)
{
    SchedProgram *p = sched_program_new(4);
    int32_t all[] = {0, 1, 2, 3};
    int32_t g = sched_program_add_group(p, "tp", all, 4);
    SchedOp ops[] = {
        sched_op_repeat(layers, 2, 0),
        sched_op_compute(sched_program_name(p, "attn"), 1000, 8),
        sched_op_collective(SCHED_OP_ALL_REDUCE, sched_program_name(p, "tp_all_reduce"), g, 64,
                            SCHED_DTYPE_BF16),
    };
    for (uint32_t r = 0; r < 4; r++)
        sched_program_set_ops(p, r, ops, 3);
    return p;
}

static int64_t store_one(Store *s, SchedProgram *p, const char *name)
{
    g_autoptr(GError) err = NULL;
    StoreRunInfo info = {name, "program", NULL, "text", "full", NULL};
    StoreRun *r = store_run_begin(s, &info, p, &err);
    cr_assert_not_null(r, "%s", err ? err->message : "");
    SchedConfig c = sched_config_default();
    c.record = store_run_record;
    c.record_data = r;
    g_autoptr(SchedOutcome) o = sched_engine_run(p, &c);
    int64_t id = store_run_finish(r, o, "ok", 0, 1.0, &err);
    cr_assert_geq(id, 1, "%s", err ? err->message : "");
    return id;
}

Test(store, run_rows_and_contract_views)
{
    g_autofree char *path = tmp_db();
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    g_autoptr(SchedProgram) p = program(3);
    int64_t id = store_one(s, p, "demo");
    cr_assert_eq(scalar(s, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs WHERE status = 'ok' AND ranks = 4"), 1);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM ops"), 4 * 3 * 2);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM collectives"), 4 * 3);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM collectives WHERE group_name = 'tp' AND "
                           "kind = 'all_reduce' AND dtype = 'bf16' AND name = 'tp_all_reduce' "
                           "AND done_us IS NOT NULL"),
                 12);
    cr_assert_eq(scalar(s, "SELECT max(seq) FROM collectives"), 3);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM ops WHERE name = 'attn' AND kind = 'compute' "
                           "AND layer = 2 AND tokens = 8"),
                 4);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM ranks WHERE state = 'done'"), 4);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM groups WHERE name = 'tp' AND ranks = '[0,1,2,3]'"),
                 1);
    cr_assert_eq(id, 1);
    cr_assert_eq(store_one(s, p, "again"), 2);
}

Test(store, a_run_killed_midway_leaves_no_rows)
{
    g_autofree char *path = tmp_db();
    g_autoptr(GError) err = NULL;
    {
        g_autoptr(Store) s = store_open(path, &err);
        cr_assert_not_null(s);
        g_autoptr(SchedProgram) p = program(2);
        store_one(s, p, "kept");
    }
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* Child: start a long run, stream plenty of rows, then die without committing. */
        Store *s = store_open(path, NULL);
        if (!s)
            _exit(10);
        SchedProgram *p = program(20000);
        StoreRunInfo info = {"killed", "program", NULL, NULL, "full", NULL};
        StoreRun *r = store_run_begin(s, &info, p, NULL);
        if (!r)
            _exit(11);
        SchedConfig c = sched_config_default();
        c.record = store_run_record;
        c.record_data = r;
        SchedOutcome *o = sched_engine_run(p, &c);
        (void)o;
        /* Rows are in the database file's WAL by now, uncommitted. */
        kill(getpid(), SIGKILL);
        _exit(12);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d", status);
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs WHERE name = 'killed'"), 0);
    cr_assert_eq(scalar(s, "SELECT count(DISTINCT run_id) FROM op_rows"), 1);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM names WHERE run_id <> 1"), 0);
    cr_assert_eq(scalar(s, "PRAGMA integrity_check = 1") , 0); /* "ok" reads as 0 */
}

Test(store, concurrent_writers_lose_nothing)
{
    g_autofree char *path = tmp_db();
    {
        g_autoptr(Store) s = store_open(path, NULL);
        cr_assert_not_null(s);
    }
    enum { PROCS = 4, RUNS = 5 };
    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            Store *s = store_open(path, NULL);
            if (!s)
                _exit(10);
            SchedProgram *p = program(50);
            for (int k = 0; k < RUNS; k++) {
                StoreRunInfo info = {"par", "program", NULL, NULL, "full", NULL};
                StoreRun *r = store_run_begin(s, &info, p, NULL);
                if (!r)
                    _exit(11);
                SchedConfig c = sched_config_default();
                c.record = store_run_record;
                c.record_data = r;
                SchedOutcome *o = sched_engine_run(p, &c);
                if (store_run_finish(r, o, "ok", 0, 1.0, NULL) < 0)
                    _exit(12);
                sched_outcome_free(o);
            }
            sched_program_free(p);
            store_close(s);
            _exit(0);
        }
    }
    for (int i = 0; i < PROCS; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d status %d", i, status);
    }
    g_autoptr(Store) s = store_open(path, NULL);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs"), PROCS * RUNS);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM op_rows"), PROCS * RUNS * 4 * 50 * 2);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM (SELECT run_id FROM op_rows GROUP BY run_id "
                           "HAVING count(*) = 400)"),
                 PROCS * RUNS);
}

Test(store, invalid_runs_are_recorded_whole)
{
    g_autofree char *path = tmp_db();
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    StoreRunInfo info = {"bad", "program", "bad.yaml", "ranks: x", "full", NULL};
    int64_t id = store_insert_invalid(s, &info, "bad.yaml:1: key 'ranks': not an integer", &err);
    cr_assert_eq(id, 1);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs WHERE status = 'invalid' AND exit_code = 2"),
                 1);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM diagnostics WHERE kind = 'config'"), 1);
}

Test(store, newer_schema_is_refused)
{
    g_autofree char *path = tmp_db();
    {
        g_autoptr(Store) s = store_open(path, NULL);
        cr_assert_not_null(s);
        sqlite3_exec(store_db(s), "PRAGMA user_version = 99", NULL, NULL, NULL);
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_null(s);
    cr_assert(strstr(err->message, "newer ranksim"), "%s", err->message);
}

Test(store, unwritable_location_is_an_error_not_a_crash)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open("/proc/ranksim-cannot/x.db", &err);
    cr_assert_null(s);
    cr_assert_not_null(err);
}
