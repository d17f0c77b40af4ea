/* tests/src/store/test-hostile-db.c — every reader on a schema-valid database holding hostile
 * values (issue 27): a rank of 2^40, negative counts and sizes, text that is not UTF-8 (with a
 * terminal escape), JSON nested 100,000 levels deep, times at INT64's ends. The database is
 * built here: real runs stored by ranksim, then edited the way anyone with sqlite3 can. No
 * reader may crash, abort (GLib-ERROR on a 64 GB allocation), hang (the test's timeout) or
 * print a GLib/Json CRITICAL; each ends with exit 0, 1 or 2 (a refusal it can explain). */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

#include "../run-binary.h"

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg);
}

/* `sql` with ?1 bound to `blob` bytes as TEXT (not UTF-8 when the bytes are not). */
static void exec_text(sqlite3 *db, const char *sql, const char *bytes, int len)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    sqlite3_bind_text(st, 1, bytes, len, SQLITE_TRANSIENT);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

/* Runs 1 (three-way-cycle: groups, a hang diagnostic), 2 (healthy-tp-layers: shared time
 * lines) and 3 (a served workload: memory, phases, steps, requests), then hostile edits. */
static char *hostile_db(void)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-hostile-XXXXXX", NULL);
    char *db = g_build_filename(dir, "h.db", NULL);
    const char *scns[] = {SCN("three-way-cycle.yaml"), SCN("healthy-tp-layers.yaml"),
                          SCN("llama70b-tp4-poisson-200.yaml")};
    for (size_t i = 0; i < G_N_ELEMENTS(scns); i++) {
        Result r = ranksim((const char *[]){"run", scns[i], "--db", db, "-q", NULL});
        cr_assert(r.code == 0 || r.code == 3, "%s: %s", scns[i], r.err);
        result_clear(&r);
    }
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    exec(h, "BEGIN");
    static const char bad[] = "\xff\xfe\x1b]52;c;aGk=\x07" "bad";
    GString *deep = g_string_new(NULL);
    for (int i = 0; i < 100000; i++)
        g_string_append_c(deep, '[');
    exec_text(h, "UPDATE runs SET name = ?1, scenario = ?1, hardware = ?1, model = ?1", bad, -1);
    exec(h, "UPDATE runs SET ranks = 1099511627776, rank_ops = -5, events = -1,"
            " sim_end_us = 1e300, wall_ms = -1e300 WHERE id = 1");
    exec(h, "UPDATE runs SET ranks = -7 WHERE id = 2");
    exec(h, "UPDATE runs SET ranks = 2147483650 WHERE id = 3");
    exec_text(h, "UPDATE groups SET size = 1099511627776, ranks = ?1 WHERE run_id = 1 AND id = 0",
              deep->str, (int)deep->len);
    exec(h, "UPDATE groups SET size = -3, ranks = '[1e400, -1, 99999999999999999999, \"x\", {}]'"
            " WHERE run_id = 1 AND id = 1");
    exec_text(h, "UPDATE groups SET name = ?1, ranks = ?1 WHERE run_id = 1 AND id = 2", bad, -1);
    exec_text(h, "UPDATE diagnostics SET detail = ?1", deep->str, (int)deep->len);
    exec_text(h, "UPDATE diagnostics SET message = ?1, op_name = ?1, group_name = ?1", bad, -1);
    exec(h, "UPDATE diagnostics SET rank = 1099511627776, layer = -9, seq = -1");
    exec_text(h, "UPDATE names SET name = ?1 WHERE run_id IN (1, 2)", bad, -1);
    exec(h, "INSERT OR REPLACE INTO names(run_id, id, name) VALUES (2, 4294967295, 'far')");
    exec(h, "INSERT OR REPLACE INTO ranks(run_id, rank, state, end_us, ops)"
            " VALUES (1, 4294967299, 'done', 1e308, 1099511627776),"
            " (1, -4, 'done', -1e308, -5), (2, 2147483647, 'done', 1, 1)");
    exec(h, "UPDATE op_rows SET count = 4611686018427387904, idx = -9,"
            " start_ns = -9223372036854775808, end_ns = 9223372036854775807, tokens = -1,"
            " seq = -1, layer = 2147483648, dtype = 999, kind = 999 WHERE run_id = 1");
    exec(h, "UPDATE timeline_ops SET count = 4611686018427387904, idx = idx + 1000000000000,"
            " start_ns = -9223372036854775808, dtype = 999, kind = 999 WHERE run_id = 2");
    exec(h, "UPDATE rank_timelines SET rank = rank + 1099511627776 WHERE run_id = 2 AND rank = 0");
    exec(h, "UPDATE rank_groups SET slot = slot + 100000000, group_id = -5 WHERE run_id = 2");
    exec(h, "UPDATE memory SET bytes = -1 WHERE run_id = 3");
    exec(h, "INSERT INTO memory(run_id, rank, component, bytes)"
            " VALUES (3, 1099511627776, 'weights', 1)");
    exec_text(h, "UPDATE memory_plans SET bytes = -9223372036854775808, shape = ?1"
                 " WHERE run_id = 3", deep->str, (int)deep->len);
    exec(h, "UPDATE rank_memory_plans SET plan = 1099511627776 WHERE run_id = 3 AND rank = 0");
    exec(h, "INSERT INTO rank_memory_plans(run_id, rank, plan) VALUES (3, -1, 0),"
            " (3, 1099511627776, 0)");
    exec(h, "UPDATE memory_runs SET hbm_bytes = -1, kv_tokens = 9223372036854775807,"
            " max_concurrency = 1e308, kv_block_size = 0, max_model_len = -1");
    exec(h, "UPDATE serve_runs SET requests = 1099511627776, steps = 1099511627776,"
            " kv_blocks = -1, block_tokens = 0, simulated_steps = -1");
    exec(h, "UPDATE requests SET prompt = 9223372036854775807, output = -1, dp = 2147483648,"
            " id = id + 1099511627776, arrival_us = 1e300 WHERE run_id = 3 AND id < 20");
    exec(h, "UPDATE steps SET dp = 1099511627776, seqs = -1,"
            " prefill_tokens = 9223372036854775807 WHERE run_id = 3 AND step < 5");
    exec(h, "UPDATE phases SET rank = rank + 1099511627776,"
            " allocated_bytes = -9223372036854775808 WHERE run_id = 3");
    exec(h, "COMMIT");
    sqlite3_close(h);
    g_string_free(deep, TRUE);
    return db;
}

/* The reader ended by itself with 0, 1 or 2 and printed no GLib or Json complaint. */
static void expect_clean(const char *const *args)
{
    Result r = ranksim(args); /* asserts a normal exit: no signal, no abort */
    g_autofree char *cmd = g_strjoinv(" ", (char **)args);
    cr_assert(r.code == 0 || r.code == 1 || r.code == 2, "%s: exit %d: %s", cmd, r.code, r.err);
    cr_assert_null(strstr(r.err, "CRITICAL"), "%s: %s", cmd, r.err);
    cr_assert_null(strstr(r.err, "-ERROR"), "%s: %s", cmd, r.err);
    cr_assert_null(strstr(r.err, "WARNING **"), "%s: %s", cmd, r.err);
    result_clear(&r);
}

Test(hostile_db, every_reader_survives_hostile_values, .timeout = 280)
{
    g_autofree char *db = hostile_db();
    g_autofree char *dir = g_path_get_dirname(db);
    g_autofree char *trace = g_build_filename(dir, "t.json", NULL);
    g_autofree char *svg = g_build_filename(dir, "p.svg", NULL);
    g_autofree char *dot = g_build_filename(dir, "d.dot", NULL);
    const char *const cmds[][10] = {
        {"runs", "--db", db, NULL},
        {"runs", "--json", "--db", db, NULL},
        {"report", "1", "--db", db, NULL},
        {"report", "2", "--db", db, NULL},
        {"report", "3", "--db", db, NULL},
        {"report", "1", "--json", "--db", db, NULL},
        {"report", "3", "--json", "--db", db, NULL},
        {"explain", "1", "--db", db, NULL},
        {"explain", "2", "--db", db, NULL},
        {"explain", "3", "--db", db, NULL},
        {"explain", "1", "--json", "--db", db, NULL},
        {"explain", "1", "--dot", dot, "--db", db, NULL},
        {"explain", "2", "--dot", dot, "--db", db, NULL},
        {"trace", "1", "-o", trace, "--db", db, NULL},
        {"trace", "2", "-o", trace, "--db", db, NULL},
        {"plot", "1", "-o", svg, "--db", db, NULL},
        {"plot", "2", "-o", svg, "--db", db, NULL},
        {"diff", "1", "2", "--db", db, NULL},
        {"diff", "2", "3", "--db", db, NULL},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++)
        expect_clean(cmds[i]);
}
