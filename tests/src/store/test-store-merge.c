/* tests/src/store/test-store-merge.c — merging results databases (src/store/store-merge.h):
 * every table of the schema is one merge knows (so a table added without merge handling it
 * fails here), run ids remapped with their rows, a run already present not copied twice, the
 * shards of a sweep joined and two runs of one sweep kept apart, an unknown table or an older
 * schema refused leaving the output as it was, and a refused input in a multi-input
 * transaction leaving the others. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

#include "../../../src/store/store-merge.h"
#include "../../../src/store/store-private.h"

static char *tmp_path(const char *name)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-merge-XXXXXX", NULL);
    cr_assert_not_null(dir);
    return g_build_filename(dir, name, NULL);
}

static int64_t scalar(Store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(store_db(s)));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static bool listed(const char *const *list, const char *t)
{
    for (; *list; list++)
        if (strcmp(*list, t) == 0)
            return true;
    return false;
}

/* A new database's tables are exactly runs, the lookup tables and the run tables merge
 * copies; each run table names its run in run_id. */
Test(store_merge, every_schema_table_is_merged)
{
    g_autofree char *path = tmp_path("schema.db");
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(store_db(s),
                                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                                    " AND name NOT LIKE 'sqlite_%'",
                                    -1, &st, NULL),
                 SQLITE_OK);
    int tables = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        tables++;
        cr_expect(strcmp(t, "runs") == 0 || listed(STORE_MERGE_RUN_TABLES, t) ||
                      listed(STORE_MERGE_LOOKUP_TABLES, t),
                  "table '%s' is in the schema but not in src/store/store-merge.c's lists: a "
                  "merge would refuse every database (or, listed, copy it per run)",
                  t);
    }
    sqlite3_finalize(st);
    int listed_n = 1;
    for (const char *const *t = STORE_MERGE_RUN_TABLES; *t; t++, listed_n++) {
        g_autofree char *sql = g_strdup_printf(
            "SELECT count(*) FROM pragma_table_info('%s') WHERE name = 'run_id'", *t);
        cr_expect_eq(scalar(s, sql), 1, "run table '%s' has no run_id column (or no table)", *t);
    }
    for (const char *const *t = STORE_MERGE_LOOKUP_TABLES; *t; t++)
        listed_n++;
    cr_expect_eq(tables, listed_n, "%d tables in the schema, %d known to merge", tables, listed_n);
}

/* 2 ranks, one all-reduce. */
static SchedProgram *program(void)
{
    SchedProgram *p = sched_program_new(2);
    int32_t all[] = {0, 1};
    int32_t g = sched_program_add_group(p, "tp", all, 2);
    SchedOp ops[] = {
        sched_op_compute(sched_program_name(p, "attn"), 1000, 8),
        sched_op_collective(SCHED_OP_ALL_REDUCE, sched_program_name(p, "tp_all_reduce"), g, 64,
                            SCHED_DTYPE_BF16),
    };
    for (uint32_t r = 0; r < 2; r++)
        sched_program_set_ops(p, r, ops, 2);
    return p;
}

/* Stores one run labelled `label` (sweep: 0 none, -1 first of a sweep, > 0 that sweep). */
static int64_t store_one(Store *s, const char *label, int64_t sweep, double wall_ms)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(SchedProgram) p = program();
    StoreRunInfo info = {.name = label, .kind = "program", .path = "s.yaml",
                         .scenario = "ranks: 2\n", .timeline = "full", .overrides = label,
                         .sweep_id = sweep};
    SchedConfig c = sched_config_default();
    g_autoptr(SchedOutcome) o = sched_engine_run(p, &c);
    int64_t id = store_run_insert(s, &info, p, NULL, 0, o, NULL, "ok", 0, wall_ms, &err);
    cr_assert_geq(id, 1, "%s", err ? err->message : "");
    return id;
}

/* A database at `name` holding a sweep of the labels given, or single runs when !sweep. */
static char *make_db(const char *name, const char *const *labels, bool sweep, double wall0)
{
    char *path = tmp_path(name);
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    int64_t sweep_id = 0;
    for (size_t i = 0; labels[i]; i++) {
        int64_t id = store_one(s, labels[i], sweep ? (sweep_id ? sweep_id : -1) : 0, wall0 + i);
        if (sweep && !sweep_id)
            sweep_id = id;
    }
    return path;
}

static Store *open_out(const char *name, char **path)
{
    *path = tmp_path(name);
    g_autoptr(GError) err = NULL;
    Store *s = store_open(*path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    return s;
}

Test(store_merge, ids_remapped_rows_follow_duplicates_skipped)
{
    const char *a_labels[] = {"x=1", "x=2", NULL};
    g_autofree char *a = make_db("a.db", a_labels, false, 10.0);
    g_autofree char *out_path = NULL;
    g_autoptr(Store) out = open_out("out.db", &out_path);
    store_one(out, "before", 0, 1.0); /* id 1 taken */
    StoreMergeStats st;
    g_autoptr(GError) err = NULL;
    cr_assert(store_merge_file(out, a, &st, &err), "%s", err ? err->message : "");
    cr_assert(st.runs == 2 && st.added == 2 && st.present == 0 && st.first_id == 2 &&
              st.last_id == 3);
    cr_assert_eq(scalar(out, "SELECT count(*) FROM runs"), 3);
    cr_assert_eq(scalar(out, "SELECT id FROM runs WHERE overrides = 'x=2'"), 3);
    /* every run has its names, groups, ranks and time lines under its new id */
    cr_assert_eq(scalar(out, "SELECT count(*) FROM names WHERE run_id = 3"),
                 scalar(out, "SELECT count(*) FROM names WHERE run_id = 1"));
    cr_assert_eq(scalar(out, "SELECT count(*) FROM ranks WHERE run_id = 3"), 2);
    cr_assert_eq(scalar(out, "SELECT count(*) FROM groups WHERE run_id = 2"), 1);
    cr_assert_eq(scalar(out, "SELECT count(*) FROM rank_timelines WHERE run_id = 2"),
                 scalar(out, "SELECT count(*) FROM rank_timelines WHERE run_id = 1"));
    /* again: nothing added */
    cr_assert(store_merge_file(out, a, &st, &err), "%s", err ? err->message : "");
    cr_assert(st.added == 0 && st.present == 2);
    cr_assert_eq(scalar(out, "SELECT count(*) FROM runs"), 3);
}

Test(store_merge, shards_join_one_sweep_repeats_stay_apart)
{
    const char *s1[] = {"k=1", "k=2", NULL}, *s2[] = {"k=3", "k=4", NULL};
    g_autofree char *a = make_db("s1.db", s1, true, 10.0);
    g_autofree char *b = make_db("s2.db", s2, true, 20.0);
    g_autofree char *c = make_db("again.db", s1, true, 30.0); /* the same labels, rerun */
    g_autofree char *out_path = NULL;
    g_autoptr(Store) out = open_out("out.db", &out_path);
    g_autoptr(GError) err = NULL;
    StoreMerge *m = store_merge_begin(out, &err);
    cr_assert_not_null(m, "%s", err ? err->message : "");
    StoreMergeStats st;
    cr_assert(store_merge_add(m, a, &st, &err), "%s", err ? err->message : "");
    cr_assert(st.sweeps == 1 && st.sweeps_joined == 0);
    cr_assert(store_merge_add(m, b, &st, &err), "%s", err ? err->message : "");
    cr_assert(st.sweeps == 1 && st.sweeps_joined == 1);
    cr_assert(store_merge_add(m, c, &st, &err), "%s", err ? err->message : "");
    cr_assert(st.sweeps == 1 && st.sweeps_joined == 0);
    cr_assert(store_merge_commit(m, &err), "%s", err ? err->message : "");
    cr_assert_eq(scalar(out, "SELECT count(*) FROM runs WHERE sweep_id = 1"), 4);
    cr_assert_eq(scalar(out, "SELECT count(*) FROM runs WHERE sweep_id = 5"), 2);
    cr_assert_eq(scalar(out, "SELECT count(DISTINCT sweep_id) FROM runs"), 2);
}

Test(store_merge, unknown_table_and_older_schema_refused)
{
    const char *labels[] = {"x=1", NULL};
    g_autofree char *a = make_db("a.db", labels, false, 10.0);
    g_autofree char *b = make_db("b.db", labels, false, 20.0);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(a, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE extra(run_id INTEGER, x)", NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(sqlite3_open(b, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 1", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    g_autofree char *out_path = NULL;
    g_autoptr(Store) out = open_out("out.db", &out_path);
    g_autoptr(GError) err = NULL;
    cr_assert_not(store_merge_file(out, a, NULL, &err));
    cr_assert(err->code == STORE_ERROR_FOREIGN && strstr(err->message, "extra"), "%s",
              err->message);
    g_clear_error(&err);
    cr_assert_not(store_merge_check(b, &err));
    cr_assert(err->code == STORE_ERROR_OLDER && strstr(err->message, "upgrade a copy"), "%s",
              err->message);
    cr_assert(store_error_is_user(err));
    cr_assert_eq(scalar(out, "SELECT count(*) FROM runs"), 0);
}

/* A refused input inside a transaction rolls back to its savepoint only, even half-way through
 * its runs; the merge's memory of the output is read again, so an input merged before is still
 * seen as present and a sweep seen only in the refused input is forgotten. */
Test(store_merge, refused_input_leaves_the_others)
{
    const char *la[] = {"x=1", "x=2", NULL}, *lb[] = {"x=3", NULL}, *lc[] = {"y=1", "y=2", NULL};
    g_autofree char *a = make_db("a.db", la, true, 10.0);
    g_autofree char *b = make_db("b.db", lb, true, 20.0);
    g_autofree char *c = make_db("c.db", lc, true, 30.0);
    /* c's second run holds a row the output refuses (a CHECK SQLite was told to ignore) */
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(c, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "PRAGMA ignore_check_constraints = 1;"
                              "UPDATE ranks SET state = 'bogus' WHERE run_id = 2",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    g_autofree char *missing = tmp_path("missing.db");
    g_autofree char *out_path = NULL;
    g_autoptr(Store) out = open_out("out.db", &out_path);
    g_autoptr(GError) err = NULL;
    StoreMerge *m = store_merge_begin(out, &err);
    cr_assert_not_null(m);
    cr_assert(store_merge_add(m, a, NULL, &err));
    cr_assert_not(store_merge_add(m, missing, NULL, &err));
    cr_assert_eq(err->code, STORE_ERROR_MISSING);
    g_clear_error(&err);
    cr_assert_not(store_merge_add(m, c, NULL, &err));
    cr_assert(strstr(err->message, "ranks"), "%s", err->message);
    g_clear_error(&err);
    StoreMergeStats st;
    cr_assert(store_merge_add(m, a, &st, &err));
    cr_assert(st.added == 0 && st.present == 2);
    cr_assert(store_merge_add(m, b, &st, &err));
    cr_assert(st.added == 1 && st.sweeps_joined == 1 && st.first_id == 3, "b's run got id %ld",
              (long)st.first_id);
    cr_assert(store_merge_commit(m, &err));
    cr_assert_eq(scalar(out, "SELECT count(*) FROM runs WHERE sweep_id = 1"), 3);
    cr_assert_eq(scalar(out, "SELECT count(*) FROM runs"), 3);
    cr_assert_eq(scalar(out, "SELECT count(*) FROM ranks"), 6);
}
