/* tests/src/store/test-store.c — the results database: schema and views, one transaction per run
 * (a run killed mid-way leaves no row), concurrent writers lose nothing, a second writer never
 * waits for a simulation, readers work under a held write lock, invalid runs, and a foreign or
 * newer database is refused and left byte-identical. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store-test.h"

static char *tmp_db(void)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-store-XXXXXX", NULL);
    cr_assert_not_null(dir);
    return g_build_filename(dir, "sub", "t.db", NULL); /* a missing folder is created */
}

static int64_t scalar(Store *s, const char *sql)
{
    return store_test_scalar(s, sql);
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
    StoreRunInfo info = {.name = name, .kind = "program", .scenario = "text", .timeline = "full"};
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
        StoreRunInfo info = {.name = "killed", .kind = "program", .timeline = "full"};
        StoreRun *r = store_run_begin(s, &info, p, NULL);
        if (!r)
            _exit(11);
        SchedConfig c = sched_config_default();
        c.record = store_run_record;
        c.record_data = r;
        SchedOutcome *o = sched_engine_run(p, &c);
        (void)o;
        /* Rows are staged by now; nothing of the run is in the database. */
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
    cr_assert_eq(scalar(s, "SELECT count(DISTINCT run_id) FROM rank_ops"), 1);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM names WHERE run_id <> 1"), 0);
    cr_assert_eq(scalar(s, "PRAGMA integrity_check = 1"), 0); /* "ok" reads as 0 */
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
                StoreRunInfo info = {.name = "par", .kind = "program", .timeline = "full"};
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
    cr_assert_eq(scalar(s, "SELECT count(*) FROM rank_ops"), PROCS * RUNS * 4 * 50 * 2);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM (SELECT run_id FROM rank_ops GROUP BY run_id "
                           "HAVING count(*) = 400)"),
                 PROCS * RUNS);
}

Test(store, invalid_runs_are_recorded_whole)
{
    g_autofree char *path = tmp_db();
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    StoreRunInfo info = {.name = "bad", .kind = "program", .path = "bad.yaml", .scenario = "ranks: x", .timeline = "full"};
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

/* Regression (issue 9): a run held the write lock for its whole simulation, so a second writer
 * waited (then failed after 300 s). Now a run that is still streaming records does not hold
 * any lock: another connection that never waits (issue 27: an ordering fact, not a clock)
 * stores a whole run meanwhile, and commits first. */
Test(regress, a_second_writer_does_not_wait_for_a_simulation)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) a = store_open(path, NULL);
    g_autoptr(Store) b = store_open(path, NULL);
    cr_assert(a && b);
    /* b never waits: no busy handler, no retry — it fails at once if anyone holds the lock */
    sqlite3_busy_handler(store_db(b), NULL, NULL);
    b->wait.give_up_us = 0;
    g_autoptr(SchedProgram) big = program(20000);
    StoreRunInfo info = {.name = "first", .kind = "program", .timeline = "full"};
    StoreRun *r = store_run_begin(a, &info, big, NULL);
    cr_assert_not_null(r);
    /* the first run's engine: stop after half the program, still "simulating" */
    SchedConfig c = sched_config_default();
    c.record = store_run_record;
    c.record_data = r;
    g_autoptr(SchedOutcome) o = sched_engine_run(big, &c);
    g_autoptr(SchedProgram) p = program(2);
    int64_t id = store_one(b, p, "second");
    cr_assert_eq(id, 1);
    /* a reader sees the second run while the first is still open */
    g_autoptr(Store) reader = store_open_readonly(path, NULL);
    cr_assert_eq(scalar(reader, "SELECT count(*) FROM runs"), 1);
    g_autoptr(GError) err = NULL;
    cr_assert_eq(store_run_finish(r, o, "ok", 0, 1.0, &err), 2, "%s", err ? err->message : "");
    cr_assert_eq(scalar(reader, "SELECT count(*) FROM rank_ops WHERE run_id = 2"), 4 * 20000 * 2);
}

/* Regression (issue 9): readers took the write lock on open. A read-only open works while
 * another connection holds BEGIN IMMEDIATE, and writes nothing (query_only). */
Test(regress, a_reader_works_under_a_held_write_lock)
{
    g_autofree char *path = tmp_db();
    {
        g_autoptr(Store) s = store_open(path, NULL);
        g_autoptr(SchedProgram) p = program(2);
        store_one(s, p, "one");
    }
    sqlite3 *locker = NULL;
    cr_assert_eq(sqlite3_open(path, &locker), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(locker, "BEGIN IMMEDIATE; DELETE FROM runs;", NULL, NULL, NULL),
                 SQLITE_OK);
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) r = store_open_readonly(path, &err);
    cr_assert_not_null(r, "%s", err ? err->message : "");
    cr_assert_eq(scalar(r, "SELECT count(*) FROM runs"), 1); /* the committed snapshot */
    /* it opened and read while the lock was held (the locker still holds it): it never asked
     * for the lock — an ordering fact, no clock */
    cr_assert(!sqlite3_get_autocommit(locker));
    cr_assert_neq(sqlite3_exec(store_db(r), "DELETE FROM runs", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_exec(locker, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(locker);
    g_autoptr(GError) e2 = NULL;
    g_autoptr(Store) none = store_open_readonly("/nonexistent/ranksim.db", &e2);
    cr_assert_null(none);
    cr_assert(g_error_matches(e2, STORE_ERROR, STORE_ERROR_MISSING));
}

static char *file_sum(const char *path)
{
    g_autofree char *data = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(path, &data, &len, NULL));
    return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
}

/* Regression (issue 9): a foreign SQLite file with its own `runs` table got 13 tables added and
 * its user_version stamped. Now it is recognised by reading only: byte-identical afterwards,
 * STORE_ERROR_FOREIGN, one line. Same for a newer ranksim's file and a text file. */
Test(regress, a_foreign_database_is_left_byte_identical)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-foreign-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "theirs.db", NULL);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "CREATE TABLE runs(id INTEGER PRIMARY KEY, athlete TEXT, km REAL);"
                              "INSERT INTO runs(athlete, km) VALUES ('ann', 10.5);",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    g_autofree char *before = file_sum(path);
    for (int ro = 0; ro < 2; ro++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(Store) s = ro ? store_open_readonly(path, &err) : store_open(path, &err);
        cr_assert_null(s);
        cr_assert(g_error_matches(err, STORE_ERROR, STORE_ERROR_FOREIGN), "%s", err->message);
        cr_assert(strstr(err->message, "not a ranksim results database (tables: runs;"), "%s",
                  err->message);
        cr_assert_null(strchr(err->message, '\n'));
        cr_assert(store_error_is_user(err));
    }
    g_autofree char *after = file_sum(path);
    cr_assert_str_eq(before, after);

    /* a newer ranksim's file: ours, but refused untouched */
    g_autofree char *newer = g_build_filename(dir, "newer.db", NULL);
    {
        g_autoptr(Store) s = store_open(newer, NULL);
        cr_assert_not_null(s);
        sqlite3_exec(store_db(s), "PRAGMA user_version = 99", NULL, NULL, NULL);
    }
    g_autofree char *nb = file_sum(newer);
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(newer, &err);
    cr_assert_null(s);
    cr_assert(g_error_matches(err, STORE_ERROR, STORE_ERROR_NEWER), "%s", err->message);
    g_autofree char *na = file_sum(newer);
    cr_assert_str_eq(nb, na);

    /* not SQLite at all */
    g_autofree char *text = g_build_filename(dir, "notes.db", NULL);
    cr_assert(g_file_set_contents(text,
                                  "just some notes, long enough to look like a header of "
                                  "something that is not a database at all.\n",
                                  -1, NULL));
    g_autofree char *tb = file_sum(text);
    g_autoptr(GError) e3 = NULL;
    g_autoptr(Store) t = store_open(text, &e3);
    cr_assert_null(t);
    cr_assert(g_error_matches(e3, STORE_ERROR, STORE_ERROR_FOREIGN), "%s", e3->message);
    g_autofree char *ta = file_sum(text);
    cr_assert_str_eq(tb, ta);
}

/* doc/database.md states the schema version the code writes. */
Test(regress, database_doc_states_the_schema_version)
{
    g_autofree char *doc = NULL;
    cr_assert(g_file_get_contents(RANKSIM_SOURCE_DIR "/doc/database.md", &doc, NULL, NULL));
    g_autofree char *want = g_strdup_printf("(currently **%d**)", STORE_SCHEMA_VERSION);
    cr_assert(strstr(doc, want), "doc/database.md does not say %s", want);
}

/* A version-3 file (ranks.state without 'unknown') is upgraded in place: its rows kept, the
 * new state accepted, the views still working. */
Test(store, version_3_is_upgraded_with_its_rows)
{
    g_autofree char *path = tmp_db();
    {
        /* rows one per rank, as every ranksim before schema 7 stored them */
        g_setenv("RANKSIM_OPS_PER_RANK", "1", TRUE);
        g_autoptr(Store) s = store_open(path, NULL);
        g_unsetenv("RANKSIM_OPS_PER_RANK");
        cr_assert_not_null(s);
        g_autoptr(SchedProgram) p = program(2);
        cr_assert_eq(store_one(s, p, "old"), 1);
        sqlite3 *db = store_db(s);
        /* Put back version 3's ranks table, as older ranksim created it. */
        cr_assert_eq(
            sqlite3_exec(
                db,
                "ALTER TABLE ranks RENAME TO r4;"
                "CREATE TABLE ranks(run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
                " state TEXT NOT NULL CHECK (state IN ('done','blocked','crashed','stopped')),"
                " end_us REAL, compute_us REAL, comm_us REAL, wait_us REAL, ops INTEGER,"
                " PRIMARY KEY (run_id, rank)) WITHOUT ROWID;"
                "INSERT INTO ranks SELECT * FROM r4; DROP TABLE r4;"
                /* and op_rows as a rowid table with an index on run_id (the
                   views go; the upgrade creates them again) */
                "DROP VIEW ops; DROP VIEW collectives; DROP VIEW rank_ops;"
                "DROP TABLE timeline_ops; DROP TABLE rank_timelines;"
                "DROP TABLE rank_groups;"
                "CREATE TABLE o3(run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
                " idx INTEGER NOT NULL, layer INTEGER, name_id INTEGER NOT NULL,"
                " kind INTEGER NOT NULL, tokens INTEGER, group_id INTEGER,"
                " seq INTEGER, count INTEGER, dtype INTEGER,"
                " start_ns INTEGER NOT NULL, end_ns INTEGER);"
                "INSERT INTO o3 SELECT run_id, rank, idx, layer, name_id, kind,"
                " tokens, group_id, seq, count, dtype, start_ns, end_ns"
                " FROM op_rows;"
                "DROP TABLE op_rows; ALTER TABLE o3 RENAME TO op_rows;"
                "CREATE INDEX op_rows_run ON op_rows(run_id);"
                "PRAGMA user_version = 3;",
                NULL, NULL, NULL),
            SQLITE_OK, "%s", sqlite3_errmsg(db));
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_eq(scalar(s, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    cr_assert_gt(scalar(s, "SELECT count(*) FROM ranks WHERE run_id = 1"), 0);
    cr_assert_eq(sqlite3_exec(store_db(s),
                              "INSERT INTO ranks(run_id, rank, state) VALUES (9, 0, 'unknown')",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(store_db(s)));
    /* and version 10's 'not run' (a deployment that fails at start-up) */
    cr_assert_eq(sqlite3_exec(store_db(s),
                              "INSERT INTO ranks(run_id, rank, state) VALUES (9, 1, 'not run')",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(store_db(s)));
    cr_assert_gt(scalar(s, "SELECT count(*) FROM collectives WHERE run_id = 1"), 0);
    /* A new run is stored as shared time lines; the views show both runs alike. */
    g_autoptr(SchedProgram) p = program(2);
    int64_t before = scalar(s, "SELECT count(*) FROM op_rows");
    cr_assert_eq(store_one(s, p, "new"), 2);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM op_rows"), before);
    cr_assert_gt(scalar(s, "SELECT count(*) FROM timeline_ops WHERE run_id = 2"), 0);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM rank_ops WHERE run_id = 2"), before);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM collectives WHERE run_id = 2"),
                 scalar(s, "SELECT count(*) FROM collectives WHERE run_id = 1"));
    cr_assert_eq(scalar(s, "SELECT count(*) FROM (SELECT rank, idx, layer, name, kind, tokens,"
                           " start_us, end_us FROM ops WHERE run_id = 1 EXCEPT SELECT rank, idx,"
                           " layer, name, kind, tokens, start_us, end_us FROM ops"
                           " WHERE run_id = 2)"),
                 0);
}

/* A version-8 file (runs.status without 'inconclusive') is upgraded in place: its runs kept
 * with their ids, AUTOINCREMENT going on after them, the new status accepted. */
Test(store, version_8_runs_accept_inconclusive_after_the_upgrade)
{
    g_autofree char *path = tmp_db();
    {
        g_autoptr(Store) s = store_open(path, NULL);
        cr_assert_not_null(s);
        g_autoptr(SchedProgram) p = program(2);
        cr_assert_eq(store_one(s, p, "old"), 1);
        cr_assert_eq(store_one(s, p, "old2"), 2);
        sqlite3 *db = store_db(s);
        /* Put back version 8's runs table. */
        cr_assert_eq(
            sqlite3_exec(
                db,
                "ALTER TABLE runs RENAME TO r8;"
                "CREATE TABLE runs(id INTEGER PRIMARY KEY AUTOINCREMENT,"
                " name TEXT NOT NULL, kind TEXT NOT NULL,"
                " status TEXT NOT NULL CHECK (status IN ('ok','failed','invalid')),"
                " exit_code INTEGER NOT NULL, ranks INTEGER, sim_end_us REAL, events INTEGER,"
                " wall_ms REAL, created_at TEXT NOT NULL, scenario TEXT,"
                " path TEXT, rank_ops INTEGER, timeline TEXT, version TEXT, hardware TEXT,"
                " model TEXT, layout TEXT, vllm TEXT, overrides TEXT, sweep_id INTEGER);"
                "INSERT INTO runs SELECT * FROM r8; DROP TABLE r8;"
                "PRAGMA user_version = 8;",
                NULL, NULL, NULL),
            SQLITE_OK, "%s", sqlite3_errmsg(db));
        cr_assert_neq(sqlite3_exec(db,
                                   "UPDATE runs SET status = 'inconclusive' WHERE id = 1",
                                   NULL, NULL, NULL),
                      SQLITE_OK, "version 8 refuses the status");
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    g_autoptr(SchedProgram) p = program(2);
    cr_assert_eq(store_one(s, p, "new"), 3, "ids go on after the kept runs");
    cr_assert_eq(scalar(s, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs WHERE name LIKE 'old%'"), 2);
    cr_assert_eq(sqlite3_exec(store_db(s), "UPDATE runs SET status = 'inconclusive' WHERE id = 1",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(store_db(s)));
    cr_assert_eq(scalar(s, "SELECT count(*) FROM sqlite_master WHERE name = 'r8' OR name = "
                           "'runs_v8'"),
                 0);
}

/* The checksum of `path`, or "absent" when there is no such file. */
static char *file_sum_or_absent(const char *path)
{
    if (!g_file_test(path, G_FILE_TEST_EXISTS))
        return g_strdup("absent");
    return file_sum(path);
}

/* Regression (issue 27): a foreign SQLite file in WAL mode, whose writer left its -wal and -shm
 * behind, was checkpointed by the refusing open's close: the file's bytes changed and its -wal
 * and -shm disappeared while the message said "left untouched". Now the file is recognised by
 * a read-only probe that never checkpoints: the file and its -wal hash the same afterwards and
 * the -shm is still there. */
Test(regress, a_foreign_wal_database_is_not_checkpointed)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-foreign-wal-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "theirs.db", NULL);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "PRAGMA journal_mode=WAL;"
                              "CREATE TABLE laps(id INTEGER PRIMARY KEY, athlete TEXT, s REAL);"
                              "INSERT INTO laps(athlete, s) VALUES ('ann', 71.5);",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert(g_file_test(wal, G_FILE_TEST_EXISTS) && g_file_test(shm, G_FILE_TEST_EXISTS));
    g_autofree char *db_before = file_sum(path);
    g_autofree char *wal_before = file_sum(wal);
    for (int ro = 0; ro < 2; ro++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(Store) s = ro ? store_open_readonly(path, &err) : store_open(path, &err);
        cr_assert_null(s);
        cr_assert(g_error_matches(err, STORE_ERROR, STORE_ERROR_FOREIGN), "%s",
                  err ? err->message : "(opened)");
        cr_assert(strstr(err->message, "left untouched"), "%s", err->message);
        g_autofree char *db_after = file_sum(path);
        g_autofree char *wal_after = file_sum_or_absent(wal);
        cr_assert_str_eq(db_before, db_after, "the file changed (open %s)",
                         ro ? "read-only" : "for writing");
        cr_assert_str_eq(wal_before, wal_after, "the -wal changed (open %s)",
                         ro ? "read-only" : "for writing");
        cr_assert(g_file_test(shm, G_FILE_TEST_EXISTS), "the -shm disappeared");
    }
}

static void collect_record(void *data, const SchedRecord *rec)
{
    g_array_append_val((GArray *)data, *rec);
}

/* Regression (issue 27): the streaming import took the write lock at store_stream_begin and
 * merged its input under it, so a concurrent run waited and was lost after the busy timeout.
 * Now nothing is locked until store_stream_commit: while an import's rows stream in, another
 * connection takes the write lock at once (no busy handler: it would fail if anyone held it)
 * and commits; the import then commits after it, with all its rows. */
Test(regress, a_streaming_import_holds_no_lock_while_it_reads)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = store_open(path, NULL);
    cr_assert_not_null(s);
    g_autoptr(GError) err = NULL;
    StoreStream *st = store_stream_begin(s, &err);
    cr_assert_not_null(st, "%s", err ? err->message : "");
    /* the rows of a real run of 4 ranks x 8 records */
    g_autoptr(SchedProgram) p = program(2);
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    SchedConfig c = sched_config_default();
    c.record = collect_record;
    c.record_data = rows;
    g_autoptr(SchedOutcome) o = sched_engine_run(p, &c);
    cr_assert_eq(rows->len, 16);
    const SchedRecord *recs = (const SchedRecord *)(void *)rows->data;
    cr_assert(store_stream_ops(st, recs, 8, &err), "%s", err ? err->message : "");
    sqlite3 *other = NULL;
    cr_assert_eq(sqlite3_open(path, &other), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(other,
                              "BEGIN IMMEDIATE;"
                              "INSERT INTO runs(name, kind, status, exit_code, created_at)"
                              " VALUES ('concurrent', 'program', 'ok', 0, 'now');"
                              "COMMIT;",
                              NULL, NULL, NULL),
                 SQLITE_OK, "a writer found the lock held: %s", sqlite3_errmsg(other));
    sqlite3_close(other);
    cr_assert(store_stream_ops(st, recs + 8, 8, &err), "%s", err ? err->message : "");
    StoreRunInfo info = {.name = "imported", .kind = "import", .timeline = "full"};
    int64_t id = store_stream_commit(st, &info, p, o, "ok", 0, 1.0, &err);
    cr_assert_eq(id, 2, "%s", err ? err->message : "");
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs"), 2);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM op_rows WHERE run_id = 2"), 16);
    /* an aborted stream leaves nothing */
    StoreStream *gone = store_stream_begin(s, &err);
    cr_assert(store_stream_ops(gone, recs, 16, &err));
    store_stream_abort(gone);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM runs"), 2);
}

static void count_notice(const char *message, void *data)
{
    cr_assert(strstr(message, "another ranksim"), "%s", message);
    (*(int *)data)++;
}

/* Regression (issue 27): a writer that found the lock held said only "database is locked
 * (BEGIN IMMEDIATE)". Now, while it waits, the program is told once that another ranksim holds
 * the lock, and a wait that gives up (no progress from the holder) says so and what to do. The
 * wait's limits are shortened here (they are minutes in use). */
Test(regress, a_writer_waiting_for_the_lock_says_who_holds_it)
{
    g_autofree char *path = tmp_db();
    g_autoptr(Store) s = store_open(path, NULL);
    cr_assert_not_null(s);
    int told = 0;
    store_set_wait_notice(s, count_notice, &told);
    s->wait.give_up_us = 300000;
    s->wait.notice_us = 0;
    sqlite3 *locker = NULL;
    cr_assert_eq(sqlite3_open(path, &locker), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(locker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    g_autoptr(GError) err = NULL;
    StoreRunInfo info = {.name = "bad", .kind = "model"};
    cr_assert_lt(store_insert_invalid(s, &info, "no", &err), 0);
    cr_assert_eq(told, 1);
    cr_assert(strstr(err->message, "another ranksim (or another program) has held this "
                                   "database's write lock"),
              "%s", err->message);
    cr_assert(strstr(err->message, "try again"), "%s", err->message);
    sqlite3_exec(locker, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(locker);
    /* once the lock is free the same Store writes */
    g_clear_error(&err);
    cr_assert_eq(store_insert_invalid(s, &info, "no", &err), 1, "%s", err ? err->message : "");
}

/* Issue 27: SQLite's bare messages ("disk I/O error" on a write) get what happened and what to
 * do. */
Test(regress, sqlite_failures_say_what_to_do)
{
    cr_assert(strstr(store_error_advice(SQLITE_IOERR_WRITE), "full disk"));
    cr_assert(strstr(store_error_advice(SQLITE_FULL), "the disk is full"));
    cr_assert(strstr(store_error_advice(SQLITE_BUSY), "another ranksim"));
    cr_assert(strstr(store_error_advice(SQLITE_READONLY), "cannot be written"));
    cr_assert_str_eq(store_error_advice(SQLITE_CONSTRAINT), "");
}
