/* tests/src/run/test-sweep.c — `ranksim sweep` as users meet it: the cross product stored exactly
 * once per variant whatever the completion order (-j 2), invalid variants as `invalid` rows,
 * the special workload.prefill key, Ctrl-C, and bad arguments. Runs the built binary
 * (RANKSIM_BINARY) and reads the database it wrote with SQLite. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../run-binary.h"

static char *tmp_db(void)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-sweep-XXXXXX", NULL);
    cr_assert(dir);
    return g_build_filename(dir, "s.db", NULL);
}

static sqlite3 *db_open(const char *path)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

static int64_t db_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Number of runs whose stored scenario names `label` as its variant, or whose (invalid)
 * diagnostic does. */
static int64_t runs_of_variant(sqlite3 *db, const char *label)
{
    g_autofree char *sql = g_strdup_printf(
        "SELECT COUNT(*) FROM runs WHERE scenario LIKE '%%# ranksim sweep variant: %s' || "
        "char(10) || '%%' OR (status = 'invalid' AND id IN (SELECT run_id FROM diagnostics "
        "WHERE message LIKE 'sweep variant %s:%%'))",
        label, label);
    return db_int(db, sql);
}

/* Table rows (stdout lines that start with a variant number) with this outcome. */
static guint table_rows(const char *out, const char *outcome)
{
    guint n = 0;
    g_autofree char *pat = g_strdup_printf(" %s ", outcome);
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    for (char **l = lines; *l; l++) {
        const char *p = *l;
        while (*p == ' ')
            p++;
        if (g_ascii_isdigit(*p) && strstr(*l, pat))
            n++;
    }
    return n;
}

Test(sweep, program_cross_product_stored_once_with_invalid_rows)
{
    g_autofree char *db = tmp_db();
    Result r = ranksim((const char *[]){
        "sweep", SCN("lse-size-mismatch.yaml"), "--vary", "watchdog.collective_timeout_s=0,300",
        "--vary", "on_mismatch=hang,abort,bogus", "-j", "2", "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    /* The table: every variant, in cross-product order (the first --vary varies slowest). */
    cr_assert(strstr(r.out, "collective_timeout_s"), "%s", r.out);
    cr_assert(strstr(r.out, "first diagnostic"), "%s", r.out);
    cr_assert(strstr(r.out, "6 variants, 0 ok, 4 failed, 2 invalid"), "%s", r.out);
    const char *row1 = strstr(r.out, "\n1  0 ");
    const char *row3 = strstr(r.out, "\n3  0 ");
    const char *row4 = strstr(r.out, "\n4  300 ");
    cr_assert(row1 && row3 && row4 && row1 < row3 && row3 < row4, "%s", r.out);
    cr_assert(strstr(row3, "invalid"), "%s", r.out);
    cr_assert(strstr(r.out, "unknown value 'bogus'"), "%s", r.out);
    /* Plain progress lines on stderr when it is not a terminal: one per variant. */
    cr_assert(strstr(r.err, "[6/6]"), "%s", r.err);
    cr_assert_null(strstr(r.err, "\r"), "%s", r.err);

    sqlite3 *sdb = db_open(db);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs"), 6);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs WHERE status = 'invalid'"), 2);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs WHERE status = 'failed'"), 4);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(DISTINCT id) FROM runs"), 6);
    static const char *const to[] = {"0", "300"};
    static const char *const pol[] = {"hang", "abort", "bogus"};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            g_autofree char *label =
                g_strdup_printf("watchdog.collective_timeout_s=%s, on_mismatch=%s", to[i], pol[j]);
            cr_assert_eq(runs_of_variant(sdb, label), 1,
                         "variant %s stored %" G_GINT64_FORMAT " times", label,
                         runs_of_variant(sdb, label));
        }
    /* Every failed run is complete: its ranks and its diagnostics are there. */
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM ranks"), 4 * 4);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs r WHERE status = 'failed' AND NOT EXISTS"
                             " (SELECT 1 FROM diagnostics d WHERE d.run_id = r.id"
                             "  AND d.kind = 'mismatch')"),
                 0);
    /* --timeline none is the default for sweeps. */
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs WHERE timeline <> 'none'"), 0);
    sqlite3_close(sdb);
    result_clear(&r);
}

Test(sweep, model_pcp_sizes_some_rejected_by_vllm_rules)
{
    g_autofree char *db = tmp_db();
    Result r = ranksim((const char *[]){"sweep", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"),
                                        "--vary", "parallel.prefill_context_parallel_size=1,2,4",
                                        "-j", "2", "--db", db, "-q", NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert_str_empty(r.err, "-q prints no progress: %s", r.err);
    cr_assert(strstr(r.out, "3 variants, 1 ok, 0 failed, 2 invalid"), "%s", r.out);
    /* DCP 4 needs TP x PCP divisible by 4: PCP 1 and 2 are vLLM errors, stored as rows. */
    cr_assert(strstr(r.out, "decode_context_parallel_size"), "%s", r.out);
    sqlite3 *sdb = db_open(db);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs WHERE status = 'invalid'"), 2);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs WHERE status = 'ok' AND ranks = 4"), 1);
    cr_assert_eq(runs_of_variant(sdb, "parallel.prefill_context_parallel_size=4"), 1);
    cr_assert_eq(runs_of_variant(sdb, "parallel.prefill_context_parallel_size=1"), 1);
    /* The KV budget column: the smallest budget over the ranks, from the memory plan. */
    const char *row3 = strstr(r.out, "\n3  4 ");
    cr_assert(row3 && strstr(row3, " GiB "), "%s", r.out);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM memory_runs"), 1);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM memory"),
                 4 * 9); /* model/memory.h's nine components */
    /* The tensor lists only with --memory-detail. */
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM memory_items"), 0);
    sqlite3_close(sdb);
    result_clear(&r);

    g_autofree char *db2 = tmp_db();
    r = ranksim((const char *[]){"sweep", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"), "--vary",
                                 "parallel.prefill_context_parallel_size=4", "--memory-detail",
                                 "--db", db2, "-q", NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    sdb = db_open(db2);
    cr_assert_gt(db_int(sdb, "SELECT COUNT(*) FROM memory_items"), 0);
    sqlite3_close(sdb);
    result_clear(&r);
}

Test(sweep, workload_prefill_keeps_the_files_other_steps)
{
    /* The file: a prefill of 633 then a decode of 2 x 633. Varying the prefill puts each value
     * into that step and keeps the decode step: the 633 variant is the file itself. */
    g_autofree char *db = tmp_db();
    Result r =
        ranksim((const char *[]){"sweep", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"), "--vary",
                                 "workload.prefill=512,633,4096", "--db", db, "-j", "2", NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "3 variants, 3 ok"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"run", "-q", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"), "--db",
                                 db, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    sqlite3 *sdb = db_open(db);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs WHERE scenario LIKE"
                             " '%applied as: --prefill 4096 (into the workload''s steps)%'"),
                 1);
    /* the file's workload block is kept as written */
    cr_assert_eq(
        db_int(sdb, "SELECT COUNT(*) FROM runs WHERE scenario LIKE '%decode: [633, 633]%'"), 4);
    int64_t t633 = db_int(sdb, "SELECT sim_end_us * 1000 FROM runs WHERE overrides ="
                               " 'workload.prefill=633'");
    int64_t file = db_int(sdb, "SELECT sim_end_us * 1000 FROM runs WHERE sweep_id IS NULL");
    cr_assert_eq(t633, file);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(DISTINCT sim_end_us) FROM runs"), 3);
    int64_t t512 = db_int(sdb, "SELECT sim_end_us FROM runs WHERE overrides LIKE '%=512'");
    int64_t t4096 = db_int(sdb, "SELECT sim_end_us FROM runs WHERE overrides LIKE '%=4096'");
    cr_assert_lt(t512, t4096);
    /* one sweep: its first stored run's id names it */
    cr_assert_eq(
        db_int(sdb, "SELECT COUNT(DISTINCT sweep_id) FROM runs WHERE sweep_id IS NOT NULL"), 1);
    cr_assert_eq(
        db_int(sdb, "SELECT COUNT(*) FROM runs WHERE sweep_id = (SELECT MIN(id) FROM runs)"), 3);
    sqlite3_close(sdb);
    result_clear(&r);

    /* A prompt longer than max_model_len=4096 is the loader's error, at the file's line. */
    g_autofree char *db2 = tmp_db();
    r = ranksim((const char *[]){"sweep", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"), "--vary",
                                 "workload.prefill=5000", "--db", db2, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "invalid"), "%s", r.out);
    cr_assert(strstr(r.out, "max_model_len"), "%s", r.out);
    result_clear(&r);
}

/* -j 1 and -j 3 store the same rows under the same run ids: runs are stored in variant order
 * whatever the completion order, 18 variants so that more than one batch of runs is written
 * (cmd-sweep.c's BATCH_RUNS is 16). */
Test(sweep, same_rows_and_run_ids_with_one_or_three_jobs)
{
    g_autofree char *db1 = tmp_db(), *db2 = tmp_db();
    const char *vary = "on_mismatch=hang,abort,continue";
    const char *vary2 = "straggler_threshold_s=0,1,2,3,4,5";
    Result a = ranksim((const char *[]){"sweep", SCN("mismatch-abort.yaml"), "--vary", vary,
                                        "--vary", vary2, "-j", "1", "--db", db1, "-q", NULL});
    Result b = ranksim((const char *[]){"sweep", SCN("mismatch-abort.yaml"), "--vary", vary,
                                        "--vary", vary2, "-j", "3", "--db", db2, "-q", NULL});
    cr_assert_eq(a.code, 0, "%s%s", a.out, a.err);
    cr_assert_eq(b.code, 0, "%s%s", b.out, b.err);
    sqlite3 *x = db_open(db1), *y = db_open(db2);
    const char *sql =
        "SELECT group_concat(id || ':' || sweep_id || ':' || v || '=' || status || '@' ||"
        " sim_end_us, ';') FROM (SELECT id, sweep_id, status, sim_end_us,"
        " substr(scenario, instr(scenario, '# ranksim sweep variant')) AS v FROM runs ORDER BY id)";
    sqlite3_stmt *s1 = NULL, *s2 = NULL;
    cr_assert_eq(sqlite3_prepare_v2(x, sql, -1, &s1, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(y, sql, -1, &s2, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(s1), SQLITE_ROW);
    cr_assert_eq(sqlite3_step(s2), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(s1, 0),
                     (const char *)sqlite3_column_text(s2, 0));
    sqlite3_finalize(s1);
    sqlite3_finalize(s2);
    /* variant order: the first --vary slowest, its first value first */
    cr_assert_eq(db_int(y, "SELECT COUNT(*) FROM runs WHERE id = 1 AND scenario LIKE "
                           "'%variant: on_mismatch=hang, straggler_threshold_s=0' || char(10) || "
                           "'%'"),
                 1);
    cr_assert_eq(db_int(y, "SELECT COUNT(*) FROM runs WHERE id = 18 AND scenario LIKE "
                           "'%variant: on_mismatch=continue, straggler_threshold_s=5' || char(10) "
                           "|| '%'"),
                 1);
    cr_assert_eq(db_int(x, "SELECT COUNT(*) FROM runs"), 18);
    cr_assert_eq(db_int(y, "SELECT COUNT(*) FROM runs"), 18);
    cr_assert_eq(db_int(y, "SELECT COUNT(DISTINCT sweep_id) FROM runs"), 1);
    sqlite3_close(x);
    sqlite3_close(y);
    result_clear(&a);
    result_clear(&b);
}

/* Ctrl-C after the first finished variant: the runs in flight are committed, nothing new is
 * started, the table is printed and the exit status is 130. */
Test(sweep, sigint_finishes_in_flight_runs_and_exits_130)
{
    g_autofree char *db = tmp_db();
    GString *values = g_string_new(NULL);
    for (int p = 1000; p <= 4000; p += 50)
        g_string_append_printf(values, "%s%d", values->len ? "," : "", p);
    g_autofree char *vary = g_strdup_printf("workload.prefill=%s", values->str);
    g_string_free(values, TRUE);
    const char *argv[] = {RANKSIM_BINARY,
                          "sweep",
                          SCN("glm5-1024-ranks-prefill.yaml"),
                          "--vary",
                          vary,
                          "-j",
                          "2",
                          "--db",
                          db,
                          NULL};
    GPid pid;
    int out_fd, err_fd;
    GError *err = NULL;
    cr_assert(g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL,
                                       NULL, &pid, NULL, &out_fd, &err_fd, &err),
              "spawn: %s", err ? err->message : "");
    /* Wait for the first finished variant ("[1/61] ..."). */
    GString *errtxt = g_string_new(NULL);
    char buf[4096];
    while (!strstr(errtxt->str, "[1/")) {
        ssize_t n = read(err_fd, buf, sizeof buf);
        cr_assert_gt(n, 0, "stderr closed before the first variant finished: %s", errtxt->str);
        g_string_append_len(errtxt, buf, n);
    }
    kill(pid, SIGINT);
    ssize_t n;
    while ((n = read(err_fd, buf, sizeof buf)) > 0)
        g_string_append_len(errtxt, buf, n);
    GString *outtxt = g_string_new(NULL);
    while ((n = read(out_fd, buf, sizeof buf)) > 0)
        g_string_append_len(outtxt, buf, n);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    g_spawn_close_pid(pid);
    close(out_fd);
    close(err_fd);
    cr_assert(WIFEXITED(status), "killed instead of exiting: %d\n%s", status, errtxt->str);
    cr_assert_eq(WEXITSTATUS(status), 130, "%s\n%s", outtxt->str, errtxt->str);
    cr_assert(strstr(errtxt->str, "interrupted"), "%s", errtxt->str);
    cr_assert(strstr(outtxt->str, "not run (interrupted)"), "%s", outtxt->str);

    /* What was reported as stored is what the database holds: complete runs only. */
    sqlite3 *sdb = db_open(db);
    int64_t stored = db_int(sdb, "SELECT COUNT(*) FROM runs");
    cr_assert_gt(stored, 0);
    cr_assert_lt(stored, 61);
    guint ok_rows = table_rows(outtxt->str, "ok");
    cr_assert_eq((int64_t)ok_rows, stored, "%s", outtxt->str);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs WHERE status <> 'ok'"), 0);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM ranks"), stored * 1024);
    sqlite3_close(sdb);
    g_string_free(outtxt, TRUE);
    g_string_free(errtxt, TRUE);
}

Test(sweep, bad_arguments_exit_2)
{
    g_autofree char *db = tmp_db();
    const char *scn = SCN("lse-size-mismatch.yaml");
    struct {
        const char *args[10];
        const char *msg;
    } cases[] = {
        {{"sweep", scn, "--db", db, NULL}, "no --vary"},
        {{"sweep", "--vary", "on_mismatch=hang", "--db", db, NULL}, "missing SCENARIO"},
        {{"sweep", scn, "--vary", "on_mismatch", "--db", db, NULL}, "expected KEY=V1,V2"},
        {{"sweep", scn, "--vary", "on_mismatch=hang,,abort", "--db", db, NULL}, "empty"},
        {{"sweep", scn, "--vary", "on_mismatch=hang", "--vary", "on_mismatch=abort", "--db", db,
          NULL},
         "varied twice"},
        {{"sweep", scn, "--vary", "workload.prefill=12x", "--db", db, NULL}, "prompt length"},
        {{"sweep", scn, "--vary", "workload.decode=8", "--db", db, NULL}, "BATCH:CONTEXT"},
        {{"sweep", scn, "--vary", "workload.steps=1", "--db", db, NULL}, "workload.prefill"},
        {{"sweep", scn, "--vary", "on_mismatch=hang", "-j", "0", "--db", db, NULL}, "-j 0"},
        {{"sweep", scn, "--vary", "on_mismatch=hang", "--timeline", "most", "--db", db, NULL},
         "--timeline 'most'"},
        {{"sweep", "/nonexistent/x.yaml", "--vary", "on_mismatch=hang", "--db", db, NULL},
         "cannot read"},
        {{"sweep", scn, "--vary", "on_mismatch=hang", "--prefill", "x", "--db", db, NULL},
         "--prefill 'x'"},
        {{"sweep", scn, "--frobnicate", NULL}, "frobnicate"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Result r = ranksim(cases[i].args);
        cr_assert_eq(r.code, 2, "case %zu: exit %d: %s%s", i, r.code, r.out, r.err);
        cr_assert(strstr(r.err, cases[i].msg), "case %zu: '%s' not in: %s", i, cases[i].msg, r.err);
        cr_assert(g_str_has_prefix(r.err, "ranksim: error: "), "case %zu: %s", i, r.err);
        result_clear(&r);
    }
    /* None of them stored anything. */
    if (g_file_test(db, G_FILE_TEST_EXISTS)) {
        sqlite3 *sdb = db_open(db);
        cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs"), 0);
        sqlite3_close(sdb);
    }
}

Test(sweep, help)
{
    Result r = ranksim((const char *[]){"sweep", "--help", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "--vary"), "%s", r.out);
    cr_assert(strstr(r.out, "workload.prefill"), "%s", r.out);
    cr_assert(strstr(r.out, "Exit status"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"help", "sweep", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "--jobs"), "%s", r.out);
    result_clear(&r);
}

/* CI's view: --fail-on failed exits 3 when a variant failed (the LSE mismatch fails whatever
 * the watchdog), --fail-on invalid only when one was rejected; and a --vary key the scenario
 * does not have is exit 2 with the suggestion before anything runs — no database is made. */
Test(sweep, fail_on_and_vary_keys_checked_first)
{
    g_autofree char *db = tmp_db();
    const char *sc = RANKSIM_SOURCE_DIR "/scenarios/lse-size-mismatch.yaml";
    Result r =
        ranksim((const char *[]){"sweep", sc, "--vary", "watchdog.collective_timeout_s=100,200",
                                 "--db", db, "-q", "--fail-on", "failed", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"sweep", sc, "--vary", "watchdog.collective_timeout_s=100,200",
                                 "--db", db, "-q", "--fail-on", "invalid", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    g_autofree char *db2 = tmp_db();
    r = ranksim((const char *[]){"sweep", sc, "--vary", "watchdog.colective_timeout_s=1,2", "--db",
                                 db2, "-q", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "did you mean 'collective_timeout_s'"), "%s", r.err);
    cr_assert_not(g_file_test(db2, G_FILE_TEST_EXISTS));
    result_clear(&r);
    r = ranksim((const char *[]){"sweep", sc, "--vary", "watchdog.collective_timeout_s=1", "--db",
                                 db2, "--fail-on", "some", NULL});
    cr_assert_eq(r.code, 2);
    result_clear(&r);
}

/* sweep --json: one JSON object with every variant's outcome and the counts. */
Test(sweep, json_output)
{
    g_autofree char *db = tmp_db();
    Result r = ranksim((const char *[]){
        "sweep", RANKSIM_SOURCE_DIR "/scenarios/lse-size-mismatch.yaml", "--vary",
        "watchdog.collective_timeout_s=100,200", "--db", db, "-q", "--json", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"variants\" : 2"), "%s", r.out);
    cr_assert(strstr(r.out, "\"outcome\" : \"failed\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"watchdog.collective_timeout_s\" : \"200\""), "%s", r.out);
    cr_assert_eq(r.out[0], '{');
    result_clear(&r);
}

/* Runs are named by what they ran: a sweep variant's name carries its varied keys (by their
 * last component), a `run --set` its overrides, so a FLASHINFER hang is never listed under the
 * base scenario's name. */
Test(sweep, runs_are_named_by_their_overrides)
{
    g_autofree char *db = tmp_db();
    Result r = ranksim(
        (const char *[]){"sweep", RANKSIM_SOURCE_DIR "/scenarios/lse-size-mismatch.yaml", "--vary",
                         "watchdog.collective_timeout_s=100,200", "--db", db, "-q", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"run", RANKSIM_SOURCE_DIR "/scenarios/lse-size-mismatch.yaml",
                                 "--set", "watchdog.collective_timeout_s=300", "--db", db, "-q",
                                 NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    sqlite3 *sdb = db_open(db);
    cr_assert_eq(db_int(sdb, "SELECT count(*) FROM runs WHERE name = "
                             "'lse-size-mismatch[collective_timeout_s=100]'"),
                 1);
    cr_assert_eq(db_int(sdb, "SELECT count(*) FROM runs WHERE name = "
                             "'lse-size-mismatch[collective_timeout_s=200]'"),
                 1);
    cr_assert_eq(db_int(sdb, "SELECT count(*) FROM runs WHERE name = "
                             "'lse-size-mismatch[collective_timeout_s=300]'"),
                 1);
    sqlite3_close(sdb);
}

Test(sweep, zip_links_keys_and_csv_lists_the_variants)
{
    g_autofree char *db = tmp_db();
    Result r = ranksim((const char *[]){"sweep", SCN("lse-size-mismatch.yaml"), "--zip",
                                        "watchdog.collective_timeout_s=0,300", "--zip",
                                        "straggler_threshold_s=0,1", "--vary",
                                        "on_mismatch=hang,abort", "--csv", "-q", "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    /* 2 linked pairs x 2 values = 4 variants (a cross product would be 8) */
    g_auto(GStrv) lines = g_strsplit(r.out, "\r\n", -1);
    cr_assert_eq(g_strv_length(lines), 6, "%s", r.out); /* header, 4 rows, "" after the last */
    cr_assert(g_str_has_prefix(lines[0], "variant,on_mismatch,watchdog.collective_timeout_s,"
                                         "straggler_threshold_s,run_id,sweep_id,outcome,"),
              "%s", lines[0]);
    for (int i = 1; i <= 4; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        /* the pair moves together: 0 with 0, 300 with 1 */
        cr_assert(strcmp(f[2], "0") == 0 ? strcmp(f[3], "0") == 0 : strcmp(f[3], "1") == 0, "%s",
                  lines[i]);
    }
    result_clear(&r);
    /* unequal linked lists are refused before anything runs */
    r = ranksim((const char *[]){"sweep", SCN("lse-size-mismatch.yaml"), "--zip",
                                 "watchdog.collective_timeout_s=0,300", "--zip",
                                 "straggler_threshold_s=0,1,2", "--db", db, NULL});
    cr_assert_eq(r.code, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "equally many"), "%s", r.err);
    result_clear(&r);
}

Test(sweep, the_summary_says_which_values_are_safe)
{
    g_autofree char *db = tmp_db();
    Result r =
        ranksim((const char *[]){"sweep", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"), "--vary",
                                 "engine.attention_backend=FLASHINFER_MLA_SPARSE,"
                                 "FLASHMLA_SPARSE",
                                 "--set", "engine.vllm_without=[55879]", "-q", "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "safe (ok in every variant): attention_backend=FLASHMLA_SPARSE"), "%s",
              r.out);
    cr_assert(strstr(r.out, "not safe (failed or rejected in every variant): "
                            "attention_backend=FLASHINFER_MLA_SPARSE"),
              "%s", r.out);
    cr_assert(strstr(r.out, "ranksim runs --sweep"), "%s", r.out);
    result_clear(&r);
}

/* `prune --sweep` removes the sweep's runs from every table that has a run_id column (found
 * from the schema, so a table added later without prune knowing fails here) and leaves the
 * other runs' rows alone. */
Test(sweep, prune_deletes_a_sweep_from_every_table)
{
    g_autofree char *db = tmp_db();
    Result r = ranksim((const char *[]){
        "run", "-q", SCN("glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml"), "--db", db, NULL});
    cr_assert_eq(r.code, 3, "%s%s", r.out, r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"sweep", "-q", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"),
                                 "--vary", "workload.prefill=512,633", "--timeline", "full",
                                 "--memory-detail", "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"prune", "--sweep", "2", "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "deleted 2 runs between 2 and 3"), "%s", r.out);
    result_clear(&r);
    sqlite3 *sdb = db_open(db);
    cr_assert_eq(db_int(sdb, "SELECT COUNT(*) FROM runs"), 1);
    sqlite3_stmt *s = NULL;
    cr_assert_eq(
        sqlite3_prepare_v2(sdb,
                           "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c"
                           " WHERE m.type = 'table' AND c.name = 'run_id'",
                           -1, &s, NULL),
        SQLITE_OK);
    int tables = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(s, 0);
        g_autofree char *q = g_strdup_printf("SELECT COUNT(*) FROM %s WHERE run_id <> 1", t);
        cr_assert_eq(db_int(sdb, q), 0, "table %s keeps rows of a pruned run", t);
        tables++;
    }
    sqlite3_finalize(s);
    cr_assert_geq(tables, 15);
    cr_assert_gt(db_int(sdb, "SELECT COUNT(*) FROM ops WHERE run_id = 1"), 0);
    cr_assert_gt(db_int(sdb, "SELECT COUNT(*) FROM memory WHERE run_id = 1"), 0);
    sqlite3_close(sdb);
    /* nothing selected, or a bad age: exit 2 and nothing deleted */
    r = ranksim((const char *[]){"prune", "--db", db, NULL});
    cr_assert_eq(r.code, 2);
    result_clear(&r);
    r = ranksim((const char *[]){"prune", "--older-than", "7x", "--db", db, NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "7d"), "%s", r.err);
    result_clear(&r);
}

/* The wait-for DOT folds alike ranks: the 7 ranks left in the all-reduce the crashed rank never
 * joined are one node, with one edge standing for their 7 waits. */
Test(sweep, explain_dot_folds_alike_ranks)
{
    g_autofree char *db = tmp_db();
    Result r = ranksim((const char *[]){"run", "-q", SCN("crash-mid-run.yaml"), "--db", db, NULL});
    cr_assert_eq(r.code, 3, "%s%s", r.out, r.err);
    result_clear(&r);
    r = ranksim((const char *[]){"explain", "latest", "--db", db, "--dot", "-", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "n0 [label=\"ranks 0-4,6-7 (7)\\nwaiting\"]"), "%s", r.out);
    cr_assert(strstr(r.out, "n1 [label=\"rank 5 — culprit\\ncrashed at"), "%s", r.out);
    /* which call the crash at 1 ms interrupts depends on op times: not asserted */
    cr_assert(strstr(r.out, "n0 -> n1 [label=\"tp_all_reduce tp #"), "%s", r.out);
    cr_assert(strstr(r.out, " (7 waits)\"]"), "%s", r.out);
    guint edges = 0;
    for (const char *p = r.out; (p = strstr(p, " -> n")); p++)
        edges++;
    cr_assert_eq(edges, 1, "%s", r.out);
    result_clear(&r);
}
