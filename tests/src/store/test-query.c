/* tests/src/store/test-query.c — the commands that read the results database (report, runs, explain,
 * trace, diff) and the modules behind them (src/query: a stored run read back into the outcome
 * the engine produced; src/explain: the hang story and its DOT graph).
 *
 * Oracles: a run read back equals the outcome it was stored from, field by field; `report`
 * prints what `run` printed; `trace RUN` writes the file `run --trace` wrote. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>

#include "../../../src/output/explain.h"
#include "../../../src/store/query.h"
#include "../../../src/run/runner.h"
#include "../../../src/input/scenario.h"
#include "../../../src/store/store.h"

#include "../run-binary.h"

/* A database with run 1 = three-way-cycle, 2 = lse-size-mismatch, 3 = healthy-tp-layers, each
 * stored by `ranksim run` (whose outputs and traces are kept for comparison). */
typedef struct {
    char *dir;
    char *db;
    char *run_out[4];  /* `run` stdout by run id */
    char *run_json[4]; /* `run --json` is run 4..6: same scenarios */
} Fixture;

static Fixture fx;

static void fixture_setup(void)
{
    fx.dir = g_dir_make_tmp("ranksim-query-XXXXXX", NULL);
    fx.db = g_build_filename(fx.dir, "q.db", NULL);
    static const char *const scns[] = {"three-way-cycle.yaml", "lse-size-mismatch.yaml",
                                       "healthy-tp-layers.yaml"};
    for (int i = 0; i < 3; i++) {
        g_autofree char *path = g_build_filename(RANKSIM_SOURCE_DIR, "scenarios", scns[i], NULL);
        g_autofree char *trace = g_strdup_printf("%s/run%d.json", fx.dir, i + 1);
        Result r = ranksim((const char *[]){"run", path, "--db", fx.db, "--trace", trace, NULL});
        cr_assert_eq(r.code, i == 2 ? 0 : 3, "%s%s", r.out, r.err);
        fx.run_out[i + 1] = g_steal_pointer(&r.out);
        result_clear(&r);
    }
    for (int i = 0; i < 3; i++) {
        g_autofree char *path = g_build_filename(RANKSIM_SOURCE_DIR, "scenarios", scns[i], NULL);
        Result r = ranksim((const char *[]){"run", path, "--db", fx.db, "--json", NULL});
        fx.run_json[i + 1] = g_steal_pointer(&r.out);
        result_clear(&r);
    }
}

static void fixture_teardown(void)
{
    for (int i = 0; i < 4; i++) {
        g_free(fx.run_out[i]);
        g_free(fx.run_json[i]);
    }
    g_free(fx.db);
    g_free(fx.dir);
    memset(&fx, 0, sizeof fx);
}

/* The part of a text report from "diagnostics"/"ranks:" to the end of the rank table. */
static char *report_body(const char *text)
{
    const char *a = strstr(text, "\ndiagnostics (");
    if (!a)
        a = strstr(text, "\nranks:");
    cr_assert(a, "%s", text);
    const char *b = strstr(a, "\nstored as run");
    cr_assert(b, "%s", text);
    return g_strndup(a, (gsize)(b - a));
}

TestSuite(query, .init = fixture_setup, .fini = fixture_teardown);

Test(query, runs_lists_every_run)
{
    Result r = ranksim((const char *[]){"runs", "--db", fx.db, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "three-way-cycle"), "%s", r.out);
    cr_assert(strstr(r.out, "lse-size-mismatch"), "%s", r.out);
    cr_assert(strstr(r.out, "healthy-tp-layers"), "%s", r.out);
    cr_assert(strstr(r.out, "FAILED"), "%s", r.out);
    cr_assert(strstr(r.out, "mismatch in group pcp seq 1"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"runs", "--db", fx.db, "--limit", "2", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert_null(strstr(r.out, "three-way-cycle"), "%s", r.out);
    cr_assert(strstr(r.out, "4 older runs not shown"), "%s", r.out);
    result_clear(&r);
}

Test(query, report_prints_what_run_printed)
{
    for (int id = 1; id <= 3; id++) {
        g_autofree char *ids = g_strdup_printf("%d", id);
        Result r = ranksim((const char *[]){"report", ids, "--db", fx.db, NULL});
        cr_assert_eq(r.code, 0, "%s", r.err);
        g_autofree char *want = report_body(fx.run_out[id]);
        g_autofree char *got = report_body(r.out);
        cr_assert_str_eq(got, want);
        /* The headline too (up to the wall time, which is the stored one). */
        g_autofree char *h1 = g_strndup(fx.run_out[id], strcspn(fx.run_out[id], "\n"));
        g_autofree char *h2 = g_strndup(r.out, strcspn(r.out, "\n"));
        cr_assert_str_eq(h2, h1);
        result_clear(&r);
    }
    Result r = ranksim((const char *[]){"report", "latest", "--db", fx.db, NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(g_str_has_prefix(r.out, "healthy-tp-layers: HEALTHY"), "%s", r.out);
    cr_assert(strstr(r.out, "stored as run 6"), "%s", r.out);
    result_clear(&r);
}

/* `report --json` has the same diagnostics (with detail objects) and rank stats as `run
 * --json` of the same scenario. */
Test(query, report_json_matches_run_json)
{
    for (int id = 1; id <= 3; id++) {
        g_autofree char *ids = g_strdup_printf("%d", id + 3);
        Result r = ranksim((const char *[]){"report", ids, "--db", fx.db, "--json", NULL});
        cr_assert_eq(r.code, 0, "%s", r.err);
        g_autoptr(JsonNode) a = json_from_string(fx.run_json[id], NULL);
        g_autoptr(JsonNode) b = json_from_string(r.out, NULL);
        cr_assert(a && b, "%s", r.out);
        JsonObject *oa = json_node_get_object(a), *ob = json_node_get_object(b);
        static const char *const same[] = {"diagnostics", "rank_stats", "status", "exit_code",
                                           "ranks",       "sim_end_us", "events", "hardware"};
        for (size_t k = 0; k < G_N_ELEMENTS(same); k++)
            cr_assert(json_node_equal(json_object_get_member(oa, same[k]),
                                      json_object_get_member(ob, same[k])),
                      "run %s: member %s differs", ids, same[k]);
        cr_assert_eq(json_object_get_int_member(ob, "run_id"), id + 3);
        result_clear(&r);
    }
}

Test(query, explain_three_way_cycle)
{
    g_autofree char *dot = g_build_filename(fx.dir, "cycle.dot", NULL);
    Result r = ranksim((const char *[]){"explain", "1", "--db", fx.db, "--dot", dot, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "FAILED"), "%s", r.out);
    cr_assert(strstr(r.out, "first divergence:"), "%s", r.out);
    cr_assert(strstr(r.out, "all_gather (group a, seq 1)"), "%s", r.out);
    cr_assert(strstr(r.out, "ranks 0-2 wait on each other: 0 -> 1 -> 2 -> 0"), "%s", r.out);
    cr_assert(strstr(r.out, "none by rule"), "%s", r.out);
    cr_assert(strstr(r.out, "PyTorch's watchdog would fire on ranks 0-2 after 600.000 s"), "%s",
              r.out);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(dot, &text, NULL, NULL));
    cr_assert(g_str_has_prefix(text, "digraph "), "%s", text);
    cr_assert(strstr(text, "n0 [label=\"rank 0\\nwaiting\"]"), "%s", text);
    /* edges are labelled with the instance each wait is in */
    cr_assert(strstr(text, "n0 -> n1 [label=\"all_gather a #1\", color=red"), "%s", text);
    cr_assert(strstr(text, "n1 -> n2 [label=\"all_gather b #1\", color=red"), "%s", text);
    cr_assert(strstr(text, "n2 -> n0 [label=\"all_gather c #1\", color=red"), "%s", text);
    cr_assert_null(strstr(text, "style=filled"), "no culprit in a pure cycle: %s", text);
    /* Balanced braces; Graphviz accepts it when it is installed. */
    int depth = 0;
    for (const char *p = text; *p; p++)
        depth += (*p == '{') - (*p == '}');
    cr_assert_eq(depth, 0);
    g_autofree char *dot_bin = g_find_program_in_path("dot");
    if (dot_bin) {
        int status = 0;
        const char *argv[] = {dot_bin, "-Tsvg", dot, "-o", "/dev/null", NULL};
        cr_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL,
                               &status, NULL));
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "dot rejected %s", text);
    }
    result_clear(&r);
}

Test(query, explain_lse_mismatch_names_the_culprit)
{
    Result r = ranksim((const char *[]){"explain", "2", "--db", fx.db, "--dot", "-", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(g_str_has_prefix(r.out, "digraph "), "--dot - prints only the graph: %s", r.out);
    /* alike ranks are one node; each side shows the signature it brought */
    cr_assert(strstr(r.out, "n0 [label=\"rank 0 — culprit\\nbrought all_gather 9792 fp32\", "
                            "style=filled"),
              "%s", r.out);
    cr_assert(strstr(r.out, "n1 [label=\"ranks 1-3 (3)\\nbrought all_gather 10240 fp32\"]"), "%s",
              r.out);
    cr_assert(strstr(r.out, "signatures disagree"), "%s", r.out);
    cr_assert(strstr(r.out, "n0 -> n1 [dir=none"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"explain", "2", "--db", fx.db, NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "all_gather 9792 (153 rows x 64) fp32 from dcp_lse_all_gather on "
                            "rank 0  <- culprit"),
              "%s", r.out);
    cr_assert(strstr(r.out, "all_gather 10240 (160 rows x 64) fp32 from dcp_lse_all_gather on "
                            "ranks 1-3  (majority)"),
              "%s", r.out);
    cr_assert(strstr(r.out, "rank 0: brought a minority signature"), "%s", r.out);
    cr_assert(strstr(r.out, "NumelIn=9792"), "%s", r.out);
    result_clear(&r);
}

Test(query, explain_healthy_run)
{
    Result r = ranksim((const char *[]){"explain", "3", "--db", fx.db, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "HEALTHY — nothing to explain"), "%s", r.out);
    result_clear(&r);
    r = ranksim((const char *[]){"explain", "latest", "--db", fx.db, "--dot", "-", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(g_str_has_prefix(r.out, "digraph "), "%s", r.out);
    cr_assert(strstr(r.out, "healthy"), "%s", r.out);
    result_clear(&r);
}

Test(query, trace_equals_run_trace)
{
    for (int id = 1; id <= 3; id++) {
        g_autofree char *ids = g_strdup_printf("%d", id);
        g_autofree char *out = g_strdup_printf("%s/trace%d.json", fx.dir, id);
        g_autofree char *want_path = g_strdup_printf("%s/run%d.json", fx.dir, id);
        Result r = ranksim((const char *[]){"trace", ids, "-o", out, "--db", fx.db, NULL});
        cr_assert_eq(r.code, 0, "%s", r.err);
        cr_assert(strstr(r.out, "ui.perfetto.dev"), "%s", r.out);
        g_autofree char *got = NULL, *want = NULL;
        cr_assert(g_file_get_contents(out, &got, NULL, NULL));
        cr_assert(g_file_get_contents(want_path, &want, NULL, NULL));
        cr_assert_str_eq(got, want, "trace of run %d differs from run --trace", id);
        result_clear(&r);
    }
}

Test(query, diff_two_runs)
{
    Result r = ranksim((const char *[]){"diff", "2", "3", "--db", fx.db, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "A: run 2 (lse-size-mismatch), failed, exit 3"), "%s", r.out);
    cr_assert(strstr(r.out, "B: run 3 (healthy-tp-layers), ok, exit 0"), "%s", r.out);
    /* what was given differently comes first, before any figure */
    const char *inputs = strstr(r.out, "inputs that differ (A / B):");
    cr_assert(inputs && inputs < strstr(r.out, "ranks"), "%s", r.out);
    cr_assert(strstr(r.out, "hardware: b200"), "%s", r.out);
    cr_assert(strstr(r.out, "scenario line"), "%s", r.out);
    cr_assert(strstr(r.out, "per rank"), "%s", r.out);
    cr_assert(strstr(r.out, "blocked           done"), "%s", r.out);
    cr_assert(strstr(r.out, "communication by collective"), "%s", r.out);
    cr_assert(strstr(r.out, "tp_all_reduce"), "%s", r.out);
    cr_assert(strstr(r.out, "error    mismatch             1      0   <- differs"), "%s", r.out);
    cr_assert_null(strstr(r.out, "memory per rank"), "no memory rows yet: %s", r.out);
    result_clear(&r);

    /* The same run against itself: no differences anywhere. */
    r = ranksim((const char *[]){"diff", "3", "6", "--db", fx.db, NULL});
    cr_assert_eq(r.code, 0);
    cr_assert_null(strstr(r.out, "differs"), "%s", r.out);
    cr_assert(strstr(r.out, "inputs: the same scenario, settings and hardware"), "%s", r.out);
    cr_assert(strstr(r.out, "\n  0-3 "), "identical ranks fold: %s", r.out);
    cr_assert(strstr(r.out, "\n  4-7 "), "identical ranks fold: %s", r.out);
    result_clear(&r);
}

/* The whitespace-separated fields of the first line of `out` that starts (after spaces) with
 * `label` followed by a space. */
static GStrv fields_of(const char *out, const char *label)
{
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    for (char **l = lines; *l; l++) {
        const char *p = *l;
        while (*p == ' ')
            p++;
        if (g_str_has_prefix(p, label) && p[strlen(label)] == ' ') {
            g_autofree char *rest = g_strdup(p + strlen(label));
            GStrv f = g_regex_split_simple("\\s+", g_strstrip(rest), 0, 0);
            return f;
        }
    }
    cr_assert_fail("no line '%s' in: %s", label, out);
    return NULL;
}

/* Memory per component, when the `memory` table has rows for both runs (rows written here the
 * way a model run writes them). */
Test(query, diff_memory_when_present)
{
    g_autofree char *db = g_build_filename(fx.dir, "mem.db", NULL);
    g_autofree char *src = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(fx.db, &src, &len, NULL));
    /* A copy (WAL mode: checkpointed by the run processes' close). */
    cr_assert(g_file_set_contents(db, src, (gssize)len, NULL));
    sqlite3 *sdb = NULL;
    cr_assert_eq(sqlite3_open(db, &sdb), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(
        sdb,
        "CREATE TABLE IF NOT EXISTS memory(run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
        " component TEXT NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (run_id, rank, component))"
        " WITHOUT ROWID;"
        "INSERT INTO memory VALUES (1, 0, 'weights', 10737418240), (1, 0, 'kv_cache', 1073741824),"
        " (1, 1, 'weights', 10737418240), (1, 1, 'kv_cache', 2147483648),"
        " (2, 0, 'weights', 5368709120), (2, 0, 'kv_cache', 1073741824);",
        NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s", msg ? msg : "");
    sqlite3_close(sdb);
    Result r = ranksim((const char *[]){"diff", "1", "2", "--db", db, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "memory per rank"), "%s", r.out);
    g_auto(GStrv) w = fields_of(r.out, "weights");
    cr_assert_str_eq(w[0], "10.000");
    cr_assert_str_eq(w[1], "5.000");
    cr_assert_str_eq(w[2], "-5.000");
    cr_assert_str_eq(w[3], "-50.0%");
    g_auto(GStrv) kv = fields_of(r.out, "kv_cache");
    cr_assert_str_eq(kv[0], "2.000", "the largest rank's");
    g_auto(GStrv) tot = fields_of(r.out, "total (peak rank)");
    cr_assert_str_eq(tot[0], "12.000");
    cr_assert_str_eq(tot[1], "6.000");
    cr_assert_lt(strstr(r.out, "weights"), strstr(r.out, "kv_cache"), "memory.h's order");
    result_clear(&r);
    /* Only one side has a plan: said, not compared. */
    r = ranksim((const char *[]){"diff", "1", "3", "--db", db, NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "only run 1 has a memory plan"), "%s", r.out);
    result_clear(&r);
}

/* A model run's memory plan comes back from the memory tables: `report --json --memory-detail`
 * equals `run --json --memory-detail` apart from the wall time, and the text tables match. */
Test(query, report_memory_plan_matches_run)
{
    g_autofree char *db = g_build_filename(fx.dir, "model.db", NULL);
    const char *scn = SCN("glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml");
    Result run =
        ranksim((const char *[]){"run", scn, "--db", db, "--json", "--memory-detail", NULL});
    cr_assert_eq(run.code, 3, "%s", run.err);
    Result rep = ranksim(
        (const char *[]){"report", "latest", "--db", db, "--json", "--memory-detail", NULL});
    cr_assert_eq(rep.code, 0, "%s", rep.err);
    g_autoptr(JsonNode) a = json_from_string(run.out, NULL);
    g_autoptr(JsonNode) b = json_from_string(rep.out, NULL);
    cr_assert(a && b);
    JsonObject *oa = json_node_get_object(a), *ob = json_node_get_object(b);
    cr_assert(json_object_has_member(oa, "memory"), "%s", run.out);
    json_object_remove_member(oa, "wall_ms");
    json_object_remove_member(ob, "wall_ms");
    cr_assert(json_node_equal(a, b), "report differs from run:\n%s\n%s", run.out, rep.out);
    result_clear(&run);
    result_clear(&rep);

    run = ranksim((const char *[]){"run", scn, "--db", db, NULL});
    rep = ranksim((const char *[]){"report", "latest", "--db", db, NULL});
    const char *ma = strstr(run.out, "\nmemory per rank");
    const char *mb = strstr(rep.out, "\nmemory per rank");
    cr_assert(ma && mb, "%s\n%s", run.out, rep.out);
    cr_assert_eq(strncmp(ma, mb, strlen(ma)), 0, "%s\n---\n%s", ma, mb);
    result_clear(&run);
    result_clear(&rep);

    /* diff shows the components of two model runs (FlashInfer's workspace, outside the budget,
     * is only in the first). */
    run = ranksim((const char *[]){"run", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"), "--db", db,
                                   "-q", NULL});
    cr_assert_eq(run.code, 0, "%s", run.err);
    rep = ranksim((const char *[]){"diff", "2", "3", "--db", db, NULL});
    cr_assert_eq(rep.code, 0, "%s", rep.err);
    g_auto(GStrv) ws = fields_of(rep.out, "outside_budget");
    cr_assert_str_neq(ws[0], ws[1], "%s", rep.out);
    cr_assert(strstr(rep.out, "KV budget (min rank)"), "%s", rep.out);
    result_clear(&run);
    result_clear(&rep);
}

Test(query, bad_arguments_exit_2)
{
    g_autofree char *missing = g_build_filename(fx.dir, "none.db", NULL);
    struct {
        const char *args[8];
        const char *msg;
    } cases[] = {
        {{"report", "99", "--db", fx.db, NULL}, "run 99 not found in DB"},
        {{"report", "99", "--db", fx.db, NULL}, "(latest is 6)"},
        {{"report", "abc", "--db", fx.db, NULL}, "'abc' is not a run"},
        {{"report", "0", "--db", fx.db, NULL}, "'0' is not a run"},
        {{"report", "1", "2", "--db", fx.db, NULL}, "at most one RUN"},
        {{"report", "--db", missing, NULL}, "no results database"},
        {{"explain", "--db", fx.db, NULL}, "missing RUN"},
        {{"explain", "7", "--db", fx.db, NULL}, "run 7 not found"},
        {{"trace", "1", "--db", fx.db, NULL}, "missing -o"},
        {{"trace", "--db", fx.db, "-o", "x.json", NULL}, "missing RUN"},
        {{"diff", "1", "--db", fx.db, NULL}, "two runs"},
        {{"diff", "1", "42", "--db", fx.db, NULL}, "run 42 not found"},
        {{"runs", "--limit", "-1", "--db", fx.db, NULL}, "--limit -1"},
        {{"runs", "extra", "--db", fx.db, NULL}, "unexpected argument"},
        {{"runs", "--db", missing, NULL}, "no results database"},
        {{"report", "--bogus", NULL}, "bogus"},
        {{"help", "frobnicate", NULL}, "unknown command"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Result r = ranksim(cases[i].args);
        cr_assert_eq(r.code, 2, "case %zu: exit %d: %s%s", i, r.code, r.out, r.err);
        cr_assert(strstr(r.err, cases[i].msg), "case %zu: '%s' not in: %s", i, cases[i].msg, r.err);
        result_clear(&r);
    }
    cr_assert_not(g_file_test(missing, G_FILE_TEST_EXISTS), "a read command created the DB");
    /* An unwritable output is an environment error. */
    Result r = ranksim(
        (const char *[]){"trace", "1", "-o", "/nonexistent/dir/t.json", "--db", fx.db, NULL});
    cr_assert_eq(r.code, 1, "%s", r.err);
    result_clear(&r);
}

Test(query, help_for_every_command)
{
    static const char *const cmds[] = {"run",     "sweep", "runs", "report",
                                       "explain", "trace", "diff"};
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
        Result r = ranksim((const char *[]){"help", cmds[i], NULL});
        cr_assert_eq(r.code, 0, "help %s: %s", cmds[i], r.err);
        cr_assert(g_str_has_prefix(r.out, "Usage:"), "help %s: %s", cmds[i], r.out);
        g_autofree char *usage = g_strdup_printf("%s [OPTION", cmds[i]);
        cr_assert(strstr(r.out, usage), "help %s: %s", cmds[i], r.out);
        cr_assert(strstr(r.out, "--help"), "help %s: %s", cmds[i], r.out);
        result_clear(&r);
        r = ranksim((const char *[]){cmds[i], "--help", NULL});
        cr_assert_eq(r.code, 0);
        result_clear(&r);
    }
    Result r = ranksim((const char *[]){"help", NULL});
    cr_assert_eq(r.code, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++)
        cr_assert(strstr(r.out, cmds[i]), "usage lists %s: %s", cmds[i], r.out);
    result_clear(&r);
}

/* ---- the modules, in process ---- */

static void assert_same_outcome(const SchedOutcome *a, const SchedOutcome *b, const char *what)
{
    cr_assert_eq(a->failed, b->failed, "%s", what);
    cr_assert_eq(a->end_ns, b->end_ns, "%s", what);
    cr_assert_eq(a->events, b->events, "%s", what);
    cr_assert_eq(a->rank_ops, b->rank_ops, "%s", what);
    cr_assert_eq(a->n_ranks, b->n_ranks, "%s", what);
    for (uint32_t r = 0; r < a->n_ranks; r++) {
        const SchedRankStats *x = &a->ranks[r], *y = &b->ranks[r];
        cr_assert(x->state == y->state && x->end_ns == y->end_ns &&
                      x->compute_ns == y->compute_ns && x->comm_ns == y->comm_ns &&
                      x->wait_ns == y->wait_ns && x->ops == y->ops,
                  "%s: rank %u differs", what, r);
    }
    cr_assert_eq(a->groups->len, b->groups->len, "%s", what);
    for (guint g = 0; g < a->groups->len; g++) {
        cr_assert_str_eq(g_ptr_array_index(a->groups, g), g_ptr_array_index(b->groups, g));
        GArray *ma = g_ptr_array_index(a->group_members, g);
        GArray *mb = g_ptr_array_index(b->group_members, g);
        cr_assert_eq(ma->len, mb->len);
        cr_assert_eq(memcmp(ma->data, mb->data, ma->len * sizeof(int32_t)), 0);
    }
    cr_assert_eq(a->diags->len, b->diags->len, "%s", what);
    for (guint i = 0; i < a->diags->len; i++) {
        const SchedDiag *x = g_ptr_array_index(a->diags, i), *y = g_ptr_array_index(b->diags, i);
        cr_assert_str_eq(x->kind, y->kind, "%s", what);
        cr_assert_eq(x->severity, y->severity);
        cr_assert_eq(x->rank, y->rank, "%s: diag %u rank", what, i);
        cr_assert_eq(x->group, y->group, "%s: diag %u group", what, i);
        cr_assert_eq(x->seq, y->seq);
        cr_assert_eq(x->layer, y->layer);
        cr_assert_eq(x->time_ns, y->time_ns, "%s: diag %u time", what, i);
        cr_assert_str_eq(x->message, y->message);
        cr_assert_eq(!x->op_name, !y->op_name);
        if (x->op_name)
            cr_assert_str_eq(x->op_name, y->op_name);
        cr_assert_eq(!x->detail, !y->detail);
        if (x->detail)
            cr_assert_str_eq(x->detail, y->detail);
    }
}

/* Oracle: store an outcome, read it back, compare every field; then explain both the same. */
Test(query, stored_outcome_reads_back_identical, .init = NULL, .fini = NULL)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-query-XXXXXX", NULL);
    g_autofree char *dbp = g_build_filename(dir, "rt.db", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) st = store_open(dbp, &err);
    cr_assert(st, "%s", err ? err->message : "");
    static const char *const scns[] = {"three-way-cycle.yaml",
                                       "lse-size-mismatch.yaml",
                                       "healthy-tp-layers.yaml",
                                       "watchdog-timeout.yaml",
                                       "crash-mid-run.yaml",
                                       "skip-divergence.yaml",
                                       "mismatch-abort.yaml",
                                       "pipeline-p2p.yaml",
                                       "glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml"};
    for (size_t i = 0; i < G_N_ELEMENTS(scns); i++) {
        g_autofree char *path = g_build_filename(RANKSIM_SOURCE_DIR, "scenarios", scns[i], NULL);
        g_autoptr(Scenario) sc = runner_load(path, NULL, &err);
        cr_assert(sc, "%s", err ? err->message : "");
        g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
        g_autoptr(RunnerResult) res =
            runner_simulate(sc, SCHED_TIMELINE_NONE, runner_collect_record, recs, NULL, NULL);
        int64_t id = runner_store(st, sc, "none", res, recs, 1.0, &err);
        cr_assert_gt(id, 0, "%s", err ? err->message : "");
        cr_assert_eq(query_run_resolve(st, "latest", NULL), id);
        g_autoptr(QueryRun) back = query_run_load(st, id, &err);
        cr_assert(back, "%s", err ? err->message : "");
        cr_assert_str_eq(back->info.status, res->status);
        cr_assert_eq(back->info.exit_code, res->exit_code);
        cr_assert_str_eq(back->info.name, sc->name);
        assert_same_outcome(res->outcome, back->outcome, scns[i]);
        g_autofree char *d1 = explain_dot("t", res->outcome);
        g_autofree char *d2 = explain_dot("t", back->outcome);
        cr_assert_str_eq(d1, d2);
        char *t1 = NULL, *t2 = NULL;
        size_t l1 = 0, l2 = 0;
        FILE *f1 = open_memstream(&t1, &l1), *f2 = open_memstream(&t2, &l2);
        explain_text(f1, "t", res->outcome);
        explain_text(f2, "t", back->outcome);
        fclose(f1);
        fclose(f2);
        cr_assert_str_eq(t1, t2);
        free(t1);
        free(t2);
    }
    /* Resolution errors. */
    g_clear_error(&err);
    cr_assert_eq(query_run_resolve(st, "100", &err), -1);
    cr_assert(g_error_matches(err, QUERY_ERROR, QUERY_ERROR_NOT_FOUND));
    g_autofree char *want = g_strdup_printf("(latest is %zu)", G_N_ELEMENTS(scns));
    cr_assert(strstr(err->message, want), "%s", err->message);
    g_clear_error(&err);
    cr_assert_eq(query_run_resolve(st, "-3", &err), -1);
    cr_assert(g_error_matches(err, QUERY_ERROR, QUERY_ERROR_BAD_ARGUMENT));
}

Test(query, empty_database_has_no_latest, .init = NULL, .fini = NULL)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-query-XXXXXX", NULL);
    g_autofree char *dbp = g_build_filename(dir, "empty.db", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) st = store_open(dbp, &err);
    cr_assert(st);
    cr_assert_eq(query_run_resolve(st, "latest", &err), -1);
    cr_assert(g_error_matches(err, QUERY_ERROR, QUERY_ERROR_NOT_FOUND));
    cr_assert(strstr(err->message, "no runs"), "%s", err->message);
    Result r = ranksim((const char *[]){"report", "--db", dbp, NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "no runs in DB"), "%s", r.err);
    result_clear(&r);
}

Test(query, explain_short_messages, .init = NULL, .fini = NULL)
{
    g_autofree char *a = query_short_message("abc\ndef", 10);
    cr_assert_str_eq(a, "abc");
    g_autofree char *b = query_short_message("— 0123456789", 8);
    cr_assert_str_eq(b, "— 012...");
    g_autofree char *c = query_diag_summary("config", "x.yaml: bad", 40);
    cr_assert_str_eq(c, "config: x.yaml: bad");
    g_autofree char *d = query_diag_summary("deadlock", "deadlock at 1 s", 40);
    cr_assert_str_eq(d, "deadlock at 1 s");
}

/* latest~N names the Nth run before the latest (as git's HEAD~N): the fixture stores six runs,
 * so latest~5 is run 1 and latest~6 does not exist. */
Test(query, latest_tilde_n)
{
    Result a = ranksim((const char *[]){"report", "latest~5", "--db", fx.db, "--json", NULL});
    cr_assert_eq(a.code, 0, "%s", a.err);
    cr_assert(strstr(a.out, "\"run_id\" : 1,"), "%s", a.out);
    result_clear(&a);
    Result b = ranksim((const char *[]){"report", "latest~0", "--db", fx.db, "--json", NULL});
    Result c = ranksim((const char *[]){"report", "latest", "--db", fx.db, "--json", NULL});
    cr_assert_eq(b.code, 0);
    cr_assert_str_eq(b.out, c.out);
    result_clear(&b);
    result_clear(&c);
    Result d = ranksim((const char *[]){"report", "latest~6", "--db", fx.db, NULL});
    cr_assert_eq(d.code, 2);
    cr_assert(strstr(d.err, "holds fewer than 7 runs"), "%s", d.err);
    result_clear(&d);
}

/* --json on runs, explain and diff: one valid JSON document each, with the fields scripts
 * read. */
Test(query, json_everywhere)
{
    const char *const cmds[][5] = {
        {"runs", "--json", NULL},
        {"explain", "1", "--json", NULL},
        {"diff", "1", "2", "--json", NULL},
    };
    const char *const want[] = {"runs", "explanation", "sim_end_delta_us"};
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
        const char *args[8] = {NULL};
        size_t n = 0;
        for (; cmds[i][n]; n++)
            args[n] = cmds[i][n];
        args[n++] = "--db";
        args[n++] = fx.db;
        Result r = ranksim(args);
        cr_assert_eq(r.code, 0, "%s: %s", cmds[i][0], r.err);
        g_autoptr(GError) err = NULL;
        g_autoptr(JsonNode) j = json_from_string(r.out, &err);
        cr_assert_not_null(j, "%s: %s", cmds[i][0], err ? err->message : r.out);
        cr_assert(JSON_NODE_HOLDS_OBJECT(j));
        cr_assert(json_object_has_member(json_node_get_object(j), want[i]), "%s: %s", cmds[i][0],
                  r.out);
        result_clear(&r);
    }
}

/* ranksim plot: a PNG at least 800 px wide (its IHDR says so) and an SVG of a failed run; an
 * unknown extension is exit 2 and leaves no file. */
Test(query, plot_writes_png_and_svg)
{
    g_autofree char *png = g_build_filename(fx.dir, "hang.png", NULL);
    g_autofree char *svg = g_build_filename(fx.dir, "hang.svg", NULL);
    g_autofree char *bad = g_build_filename(fx.dir, "hang.bmp", NULL);
    Result r = ranksim((const char *[]){"plot", "2", "--db", fx.db, "-o", png, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    g_autofree char *data = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(png, &data, &len, NULL));
    cr_assert(len > 24 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0);
    const unsigned char *u = (const unsigned char *)data;
    uint32_t width = (uint32_t)u[16] << 24 | (uint32_t)u[17] << 16 | (uint32_t)u[18] << 8 | u[19];
    cr_assert_geq(width, 800);
    r = ranksim((const char *[]){"plot", "2", "--db", fx.db, "-o", svg, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    g_autofree char *sv = NULL;
    cr_assert(g_file_get_contents(svg, &sv, NULL, NULL));
    cr_assert(strstr(sv, "<svg"), "not an SVG");
    r = ranksim((const char *[]){"plot", "2", "--db", fx.db, "-o", bad, NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "valid: a file name ending in .png, .svg or .pdf"), "%s", r.err);
    cr_assert_not(g_file_test(bad, G_FILE_TEST_EXISTS));
    result_clear(&r);
}
