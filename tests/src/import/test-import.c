/* tests/src/import/test-import.c — `ranksim import` and `ranksim match` through the built binary, on
 * the Flight Recorder fixtures of tests/data/import/ (tests/data/import/README.md says what
 * each represents and why its diagnosis is the right one):
 * - seed-004 (4 DCP ranks, rank 0 brings 153 x 64 fp32 where ranks 1-3 bring 160 x 64) in JSON
 *   and in pickles of protocols 2 to 5: a mismatch of 9,792 vs 10,240 elements naming rank 0,
 *   whichever order the files are read in;
 * - a TP group where one rank ran one all-reduce fewer: the idle rank is the culprit;
 * - a cycle over 4 pairwise groups beside 4 healthy ranks: the cycle, nobody healthy blamed;
 * - a missing dump: undecided, never blamed;
 * - bad input: exit 2, one line naming the file, nothing stored;
 * - report, explain --dot, trace and diff on an imported run;
 * - match: reproduced with the FlashInfer scenario, the divergence with FlashMLA. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

#include "../../../src/import/import.h"
#include "../run-binary.h"

#define FR(name) RANKSIM_SOURCE_DIR "/tests/data/import/fr/" name
#define NCCL(name) RANKSIM_SOURCE_DIR "/tests/data/import/nccl/" name

static char *tmp_db(void)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    cr_assert_not_null(dir);
    return g_build_filename(dir, "r.db", NULL);
}

static char *db_text(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(h));
    GString *s = g_string_new(NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (s->len)
            g_string_append_c(s, '\n');
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const unsigned char *t = sqlite3_column_text(st, c);
            g_string_append_printf(s, "%s%s", c ? "|" : "", t ? (const char *)t : "NULL");
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return g_string_free(s, FALSE);
}

static Result import(const char *db, const char *const *paths)
{
    GPtrArray *a = g_ptr_array_new();
    g_ptr_array_add(a, "import");
    g_ptr_array_add(a, "--db");
    g_ptr_array_add(a, (gpointer)db);
    g_ptr_array_add(a, "-q");
    for (const char *const *p = paths; *p; p++)
        g_ptr_array_add(a, (gpointer)*p);
    g_ptr_array_add(a, NULL);
    Result r = ranksim((const char *const *)a->pdata);
    g_ptr_array_free(a, TRUE);
    return r;
}

/* The seed-004 verdict on the latest run of `db`. */
static void assert_seed004(const char *db)
{
    g_autofree char *m = db_text(db, "SELECT rank, group_name, seq, json_extract(detail, "
                                     "'$.culprits') FROM diagnostics WHERE kind = 'mismatch' AND "
                                     "run_id = (SELECT max(id) FROM runs)");
    cr_assert_str_eq(m, "0|1|4|[0]");
    g_autofree char *msg = db_text(db, "SELECT message FROM diagnostics WHERE kind = 'mismatch' "
                                       "AND run_id = (SELECT max(id) FROM runs)");
    cr_assert_not_null(strstr(msg, "9792"), "%s", msg);
    cr_assert_not_null(strstr(msg, "10240"), "%s", msg);
    g_autofree char *d =
        db_text(db, "SELECT json_extract(detail, '$.culprits') FROM diagnostics "
                    "WHERE kind = 'deadlock' AND run_id = (SELECT max(id) FROM runs)");
    cr_assert_str_eq(d, "[{\"rank\":0,\"reason\":\"mismatch\"}]");
}

Test(import, seed004_every_format_and_every_file_order)
{
    static const char *const dirs[] = {"seed004-json", "seed004-p2", "seed004-p3", "seed004-p4",
                                       "seed004-p5"};
    g_autofree char *db = tmp_db();
    for (size_t k = 0; k < G_N_ELEMENTS(dirs); k++) {
        bool json = k == 0;
        char *files[4];
        for (int r = 0; r < 4; r++) {
            g_autofree char *dir =
                g_strdup_printf(RANKSIM_SOURCE_DIR "/tests/data/import/fr/%s", dirs[k]);
            files[r] = g_strdup_printf("%s/nccl_trace_rank_%d%s", dir, r, json ? ".json" : "");
        }
        for (int rot = 0; rot < 4; rot++) {
            const char *paths[5];
            for (int i = 0; i < 4; i++)
                paths[i] = files[(i + rot) % 4];
            paths[4] = NULL;
            Result r = import(db, paths);
            cr_assert_eq(r.code, 3, "%s rotation %d: exit %d: %s", dirs[k], rot, r.code, r.err);
            assert_seed004(db);
            result_clear(&r);
        }
        for (int r = 0; r < 4; r++)
            g_free(files[r]);
    }
    /* The run as stored: kind, states, groups, and the queued entries are not arrivals. */
    g_autofree char *run = db_text(db, "SELECT kind, status, exit_code, ranks FROM runs WHERE id = "
                                       "(SELECT max(id) FROM runs)");
    cr_assert_str_eq(run, "import|failed|3|4");
    g_autofree char *states = db_text(db, "SELECT group_concat(state) FROM ranks WHERE run_id = "
                                          "(SELECT max(id) FROM runs)");
    cr_assert_str_eq(states, "blocked,blocked,blocked,blocked");
    g_autofree char *groups = db_text(db, "SELECT name, ranks FROM groups WHERE run_id = "
                                          "(SELECT max(id) FROM runs) ORDER BY name");
    cr_assert_str_eq(groups, "0|[0,1,2,3]\n1|[0,1,2,3]\n2|[0,1,2,3]");
    g_autofree char *per_rank = db_text(db, "SELECT rank, count(*) FROM collectives WHERE run_id = "
                                            "(SELECT max(id) FROM runs) GROUP BY rank");
    cr_assert_str_eq(per_rank, "0|6\n1|6\n2|6\n3|6");
    g_autofree char *open =
        db_text(db, "SELECT group_name, seq, rank, count FROM collectives WHERE "
                    "done_us IS NULL AND run_id = (SELECT max(id) FROM runs) "
                    "ORDER BY rank");
    cr_assert_str_eq(open, "1|4|0|9792\n1|4|1|10240\n1|4|2|10240\n1|4|3|10240");
}

Test(import, directory_is_read_like_its_files)
{
    g_autofree char *db = tmp_db();
    const char *paths[] = {FR("seed004-p4"), NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    assert_seed004(db);
    result_clear(&r);
}

Test(import, one_all_reduce_fewer_blames_the_idle_rank)
{
    g_autofree char *db = tmp_db();
    const char *paths[] = {FR("tp-one-fewer"), NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_autofree char *d = db_text(db, "SELECT rank, group_name, seq, json_extract(detail, "
                                     "'$.culprits') FROM diagnostics WHERE kind = 'deadlock'");
    cr_assert_str_eq(d, "2|1|6|[{\"rank\":2,\"reason\":\"idle\"}]");
    g_autofree char *mm = db_text(db, "SELECT count(*) FROM diagnostics WHERE kind = 'mismatch'");
    cr_assert_str_eq(mm, "0");
    g_autofree char *states = db_text(db, "SELECT group_concat(state) FROM ranks");
    cr_assert_str_eq(states, "blocked,blocked,done,blocked");
}

Test(import, cycle_over_pairwise_groups_and_healthy_ranks)
{
    g_autofree char *db = tmp_db();
    const char *paths[] = {FR("cycle4"), NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_autofree char *d = db_text(db, "SELECT json_extract(detail, '$.cycles'), "
                                     "json_extract(detail, '$.culprits') FROM diagnostics WHERE "
                                     "kind = 'deadlock'");
    cr_assert_str_eq(d, "[[0,1,2,3]]|[]");
    g_autofree char *states = db_text(db, "SELECT group_concat(state) FROM ranks");
    cr_assert_str_eq(states, "blocked,blocked,blocked,blocked,done,done,done,done");
}

Test(import, missing_dump_is_undecided_never_blamed)
{
    g_autofree char *db = tmp_db();
    const char *paths[] = {FR("missing-rank"), NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_autofree char *m = db_text(db, "SELECT json_extract(detail, '$.culprits'), "
                                     "json_extract(detail, '$.unknown') FROM diagnostics WHERE "
                                     "kind = 'mismatch'");
    cr_assert_str_eq(m, "[]|[3]");
    g_autofree char *st = db_text(db, "SELECT state FROM ranks WHERE rank = 3");
    cr_assert_str_eq(st, "unknown");
    g_autofree char *note =
        db_text(db, "SELECT note FROM not_simulated WHERE note LIKE 'no record%'");
    cr_assert_not_null(strstr(note, "rank 3"), "%s", note);
}

Test(import, bad_input_is_exit_2_one_line_nothing_stored)
{
    static const struct {
        const char *path;
        const char *says;
    } cases[] = {
        {FR("bad/truncated"), "nccl_trace_rank_0: pickle byte"},
        {FR("bad/forbidden"), "refused"},
        {FR("bad/other-schema"), "not a Flight Recorder dump"},
        {FR("bad/rank-twice"), "present twice"},
        {FR("bad/empty-dir"), "empty directory"},
        {RANKSIM_SOURCE_DIR "/tests/data/import/fr/no-such-dir", "no such file"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *db = tmp_db();
        const char *paths[] = {cases[i].path, NULL};
        Result r = import(db, paths);
        cr_assert_eq(r.code, 2, "%s: exit %d: %s", cases[i].path, r.code, r.err);
        cr_assert_not_null(strstr(r.err, cases[i].says), "%s: %s", cases[i].path, r.err);
        const char *nl = strchr(r.err, '\n');
        cr_assert(nl && nl[1] == '\0', "%s: not one line: %s", cases[i].path, r.err);
        cr_assert_not(g_file_test(db, G_FILE_TEST_EXISTS), "%s: a database was written",
                      cases[i].path);
        result_clear(&r);
    }
}

Test(import, report_explain_trace_diff_work_on_an_import)
{
    g_autofree char *db = tmp_db();
    const char *paths[] = {FR("seed004-json"), NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3);
    result_clear(&r);
    const char *rep[] = {"report", "latest", "--db", db, NULL};
    r = ranksim(rep);
    cr_assert_not_null(strstr(r.out, "Culprit (minority): rank 0"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "recorded span"), "%s", r.out);
    result_clear(&r);
    g_autofree char *dir = g_path_get_dirname(db);
    g_autofree char *dot = g_build_filename(dir, "w.dot", NULL);
    const char *ex[] = {"explain", "latest", "--db", db, "--dot", dot, NULL};
    r = ranksim(ex);
    cr_assert_neq(r.code, 1, "%s", r.err);
    cr_assert_neq(r.code, 2, "%s", r.err);
    cr_assert(g_file_test(dot, G_FILE_TEST_IS_REGULAR));
    result_clear(&r);
    g_autofree char *tr = g_build_filename(dir, "t.json", NULL);
    const char *trace[] = {"trace", "latest", "--db", db, "-o", tr, NULL};
    r = ranksim(trace);
    cr_assert_eq(r.code, 0, "%s", r.err);
    result_clear(&r);
    const char *p4[] = {FR("seed004-p4"), NULL};
    r = import(db, p4);
    result_clear(&r);
    const char *diff[] = {"diff", "1", "2", "--db", db, NULL};
    r = ranksim(diff);
    cr_assert_neq(r.code, 1, "%s", r.err);
    cr_assert_neq(r.code, 2, "%s", r.err);
    result_clear(&r);
}

Test(import, match_reproduces_flashinfer_and_finds_flashmla_divergence, .timeout = 120)
{
    g_autofree char *db = tmp_db();
    const char *paths[] = {FR("seed004-json"), NULL};
    Result r = import(db, paths);
    result_clear(&r);
    const char *m1[] = {"match", "1", SCN("glm52-b200-tp1-pcp4-dcp4-flashinfer.yaml"),
                        "--db",  db,  NULL};
    r = ranksim(m1);
    cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_assert_not_null(strstr(r.out, "REPRODUCED"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "dump seq 4 = simulated seq 1"), "%s", r.out);
    result_clear(&r);
    const char *m2[] = {"match", "1", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"),
                        "--db",  db,  NULL};
    r = ranksim(m2);
    cr_assert_eq(r.code, 3, "%s%s", r.out, r.err);
    cr_assert_not_null(strstr(r.out, "NOT REPRODUCED"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "first divergence"), "%s", r.out);
    result_clear(&r);
    const char *bad[] = {"match", "2", SCN("glm52-b200-tp1-pcp4-dcp4-flashmla.yaml"),
                         "--db",  db,  NULL};
    r = ranksim(bad); /* run 2 is the simulation, not an import */
    cr_assert_eq(r.code, 2, "%s", r.err);
    result_clear(&r);
}

/* seed-004 as NCCL_DEBUG=INFO COLL logs (tests/data/import/nccl/): the same mismatch and
 * culprit, from one file per rank or one interleaved log, in any file order. */
static void assert_nccl_seed004(const char *db)
{
    g_autofree char *m = db_text(db, "SELECT rank, seq, json_extract(detail, '$.culprits') FROM "
                                     "diagnostics WHERE kind = 'mismatch' AND run_id = (SELECT "
                                     "max(id) FROM runs)");
    cr_assert_str_eq(m, "0|4|[0]");
    g_autofree char *msg = db_text(db, "SELECT message FROM diagnostics WHERE kind = 'mismatch' "
                                       "AND run_id = (SELECT max(id) FROM runs)");
    cr_assert_not_null(strstr(msg, "9792"), "%s", msg);
    cr_assert_not_null(strstr(msg, "10240"), "%s", msg);
    cr_assert_not_null(strstr(msg, "comm 0x"), "%s", msg);
}

Test(import, seed004_as_nccl_logs)
{
    g_autofree char *db = tmp_db();
    const char *dir[] = {NCCL("seed004"), NULL};
    Result r = import(db, dir);
    cr_assert_eq(r.code, 3, "exit %d: %s", r.code, r.err);
    result_clear(&r);
    assert_nccl_seed004(db);
    const char *rev[] = {NCCL("seed004/nccl-rank3.log"), NCCL("seed004/nccl-rank2.log"),
                         NCCL("seed004/nccl-rank1.log"), NCCL("seed004/nccl-rank0.log"), NULL};
    r = import(db, rev);
    cr_assert_eq(r.code, 3, "exit %d: %s", r.code, r.err);
    result_clear(&r);
    assert_nccl_seed004(db);
    const char *one[] = {NCCL("seed004-interleaved.log"), NULL};
    r = import(db, one);
    cr_assert_eq(r.code, 3, "exit %d: %s", r.code, r.err);
    result_clear(&r);
    assert_nccl_seed004(db);
    g_autofree char *note = db_text(db, "SELECT note FROM not_simulated WHERE run_id = (SELECT "
                                        "max(id) FROM runs) AND note LIKE '%no times%'");
    cr_assert_neq(strlen(note), 0);
}

/* Found by fuzz-fr: a pickle whose top level is an empty tuple made the tree builder add zero
 * children to an arena that did not exist yet (NULL + 0). Now a clean refusal. */
Test(import, pickle_of_an_empty_tuple_is_refused_cleanly)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "nccl_trace_rank_0", NULL);
    static const char bytes[] = "\x80\x04\x80\x04)\x80\x04.";
    cr_assert(g_file_set_contents(path, bytes, sizeof bytes - 1, NULL));
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    const char *paths[] = {path, NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "not a Flight Recorder dump"), "%s", r.err);
    result_clear(&r);
}

/* torch_npu's HCCL flight recorder writes the pre-2.5 schema (version 2.4, hccl_comm_state,
 * hccl: op names): read by the same reader, labelled as what it is, diagnosed the same way. */
Test(import, hccl_dump_is_read_and_labelled)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    static const char *const dumps[2] = {
        "{\"entries\":[{\"collective_seq_id\":1,\"input_dtypes\":[\"BFloat16\"],"
        "\"input_sizes\":[[8,7168]],\"output_sizes\":[[8,7168]],\"p2p_seq_id\":0,\"pg_id\":0,"
        "\"process_group\":[\"0\",\"default_pg\"],\"profiling_name\":\"hccl:all_reduce\","
        "\"record_id\":0,\"state\":\"completed\",\"time_created_ns\":1000,"
        "\"time_discovered_completed_ns\":2000,\"timeout_ms\":3600000},"
        "{\"collective_seq_id\":2,\"input_dtypes\":[\"BFloat16\"],\"input_sizes\":[[8,7168]],"
        "\"output_sizes\":[[8,7168]],\"p2p_seq_id\":0,\"pg_id\":0,"
        "\"process_group\":[\"0\",\"default_pg\"],\"profiling_name\":\"hccl:all_reduce\","
        "\"record_id\":1,\"state\":\"scheduled\",\"time_created_ns\":3000,"
        "\"time_discovered_completed_ns\":0,\"timeout_ms\":3600000}],"
        "\"hccl_comm_state\":{},\"pg_config\":{\"0\":{\"desc\":\"default_pg\",\"name\":\"0\","
        "\"ranks\":\"[0, 1]\"}},\"pg_status\":{\"0\":{\"last_completed_collective\":\"1\","
        "\"last_enqueued_collective\":\"2\",\"last_started_collective\":\"-1\"}},"
        "\"version\":\"2.4\"}",
        "{\"entries\":[{\"collective_seq_id\":1,\"input_dtypes\":[\"BFloat16\"],"
        "\"input_sizes\":[[8,7168]],\"output_sizes\":[[8,7168]],\"p2p_seq_id\":0,\"pg_id\":0,"
        "\"process_group\":[\"0\",\"default_pg\"],\"profiling_name\":\"hccl:all_reduce\","
        "\"record_id\":0,\"state\":\"completed\",\"time_created_ns\":1100,"
        "\"time_discovered_completed_ns\":2000,\"timeout_ms\":3600000}],"
        "\"hccl_comm_state\":{},\"pg_config\":{\"0\":{\"desc\":\"default_pg\",\"name\":\"0\","
        "\"ranks\":\"[0, 1]\"}},\"pg_status\":{\"0\":{\"last_completed_collective\":\"1\","
        "\"last_enqueued_collective\":\"1\",\"last_started_collective\":\"-1\"}},"
        "\"version\":\"2.4\"}"};
    for (int r = 0; r < 2; r++) {
        g_autofree char *name = g_strdup_printf("hccl_trace_rank_%d", r);
        g_autofree char *path = g_build_filename(dir, name, NULL);
        cr_assert(g_file_set_contents(path, dumps[r], -1, NULL));
    }
    g_autofree char *db = g_build_filename(dir, "r.db", NULL);
    const char *paths[] = {dir, NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_autofree char *src = db_text(db, "SELECT hardware FROM runs");
    cr_assert_not_null(strstr(src, "torch_npu HCCL"), "%s", src);
    g_autofree char *d = db_text(db, "SELECT rank, json_extract(detail, '$.culprits') FROM "
                                     "diagnostics WHERE kind = 'deadlock'");
    cr_assert_str_eq(d, "1|[{\"rank\":1,\"reason\":\"idle\"}]");
}

/* One dump entry as torch's JSON writes it (keys sorted). */
static void entry_json(GString *s, int record, int seq, const char *state, int64_t t)
{
    g_string_append_printf(s,
                           "%s{\"collective_seq_id\":%d,\"input_dtypes\":[\"Float\"],"
                           "\"input_sizes\":[[1024]],\"output_sizes\":[[1024]],\"p2p_seq_id\":0,"
                           "\"pg_id\":1,\"process_group\":[\"1\",\"undefined\"],"
                           "\"profiling_name\":\"nccl:all_reduce\",\"record_id\":%d,"
                           "\"state\":\"%s\",\"time_created_ns\":%" G_GINT64_FORMAT ","
                           "\"time_discovered_completed_ns\":0,\"timeout_ms\":600000}",
                           s->len && s->str[s->len - 1] != '[' ? "," : "", seq, record, state, t);
}

static void write_dump(const char *dir, int rank, const char *entries, int last_completed)
{
    g_autofree char *text = g_strdup_printf(
        "{%s\"pg_config\":{\"1\":{\"desc\":\"undefined\",\"name\":\"1\",\"ranks\":\"[0, 1]\"}},"
        "\"pg_status\":{\"1\":{\"last_completed_collective\":\"%d\","
        "\"last_enqueued_collective\":\"45\",\"last_started_collective\":\"-1\"}},"
        "\"version\":\"2.10\"}",
        entries, last_completed);
    g_autofree char *name = g_strdup_printf("nccl_trace_rank_%d.json", rank);
    g_autofree char *path = g_build_filename(dir, name, NULL);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
}

/* A ring buffer that wrapped past the rank's blocking point (the review's case): rank 0 kept
 * only seq 41-45, all queued, while rank 1 waits at 40. Rank 0 could never have passed 40, so
 * its kept entries are not where it is: it is unknown, and no cycle is invented. An empty ring
 * buffer (the Flight Recorder off) is unknown too, not idle. */
Test(import, wrapped_or_empty_ring_buffer_is_unknown)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    GString *e0 = g_string_new("\"entries\":[");
    for (int i = 0; i < 5; i++)
        entry_json(e0, 100 + i, 41 + i, "scheduled", 2000 + i);
    g_string_append(e0, "],");
    GString *e1 = g_string_new("\"entries\":[");
    for (int i = 0; i < 4; i++)
        entry_json(e1, i, 36 + i, "completed", 1000 + i);
    entry_json(e1, 4, 40, "scheduled", 1500);
    g_string_append(e1, "],");
    write_dump(dir, 0, e0->str, 39);
    write_dump(dir, 1, e1->str, 39);
    g_string_free(e0, TRUE);
    g_string_free(e1, TRUE);
    g_autofree char *db = tmp_db();
    const char *paths[] = {dir, NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    /* Its pg_status (last completed 39, last enqueued 45) places it in call 40, the entry the
     * buffer lost: blocked there beside rank 1 (issue 24: a status line places a rank), still
     * no cycle and nobody blamed. */
    g_autofree char *st = db_text(db, "SELECT group_concat(state) FROM ranks WHERE run_id = 1");
    cr_assert_str_eq(st, "blocked,blocked");
    g_autofree char *d = db_text(db, "SELECT json_extract(detail, '$.cycles'), "
                                     "json_extract(detail, '$.culprits'), "
                                     "json_extract(detail, '$.unknown') FROM diagnostics WHERE "
                                     "kind = 'deadlock' AND run_id = 1");
    cr_assert_str_eq(d, "[]|[]|[]");
    g_autofree char *note = db_text(db, "SELECT note FROM not_simulated WHERE run_id = 1 AND "
                                        "note LIKE '%wrapped%'");
    cr_assert_not_null(strstr(note, "rank 0"), "%s", note);

    /* The Flight Recorder off: rank 0's dump has no entries at all. */
    write_dump(dir, 0, "", -1);
    r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_autofree char *st2 = db_text(db, "SELECT group_concat(state) FROM ranks WHERE run_id = 2");
    cr_assert_str_eq(st2, "unknown,blocked");
    g_autofree char *note2 = db_text(db, "SELECT note FROM not_simulated WHERE run_id = 2 AND "
                                         "note LIKE '%empty ring buffer%'");
    cr_assert_not_null(strstr(note2, "rank 0"), "%s", note2);
}

/* Deterministic: the same files give the same rows (wall-clock columns aside), whatever order
 * the pool finished them in. */
Test(import, same_files_same_rows)
{
    g_autofree char *db = tmp_db();
    const char *paths[] = {FR("cycle4"), NULL};
    for (int i = 0; i < 3; i++) {
        Result r = import(db, paths);
        cr_assert_eq(r.code, 3, "%s", r.err);
        result_clear(&r);
    }
    static const char *const tables[] = {
        "SELECT rank, idx, layer, name_id, kind, group_id, seq, count, dtype, start_ns, end_ns "
        "FROM rank_ops WHERE run_id = %d ORDER BY rank, idx",
        "SELECT kind, severity, rank, group_name, seq, message, detail, time_us FROM diagnostics "
        "WHERE run_id = %d ORDER BY id",
        "SELECT rank, state, end_us, wait_us, ops FROM ranks WHERE run_id = %d ORDER BY rank",
        "SELECT id, name, ranks FROM groups WHERE run_id = %d ORDER BY id",
        "SELECT idx, note FROM not_simulated WHERE run_id = %d ORDER BY idx",
    };
    for (size_t t = 0; t < G_N_ELEMENTS(tables); t++) {
        g_autofree char *q1 = g_strdup_printf(tables[t], 1);
        g_autofree char *a = db_text(db, q1);
        for (int run = 2; run <= 3; run++) {
            g_autofree char *q = g_strdup_printf(tables[t], run);
            g_autofree char *b = db_text(db, q);
            cr_assert_str_eq(a, b, "table %zu differs between run 1 and run %d", t, run);
        }
        cr_assert_neq(strlen(a), 0, "table %zu is empty", t);
    }
}

/* Names read from files live with the set, not in GLib's intern table: that table grows for the
 * process's life and leaks its old arrays as it grows (the fuzz-fr exit-time leak report,
 * doc/fuzzing.md). 6,000 distinct dtype names in one dump: with g_intern_string the sanitized
 * binary's LeakSanitizer fails the exit; now it exits with the diagnosis. */
Test(import, many_distinct_names_are_owned_by_the_import)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    for (int rank = 0; rank < 2; rank++) {
        GString *e = g_string_new("\"entries\":[");
        for (int i = 0; i < 6000; i++)
            g_string_append_printf(
                e,
                "%s{\"collective_seq_id\":%d,\"input_dtypes\":[\"Dtype%d\"],"
                "\"input_sizes\":[[8]],\"output_sizes\":[[8]],\"p2p_seq_id\":0,\"pg_id\":1,"
                "\"process_group\":[\"1\",\"undefined\"],\"profiling_name\":\"nccl:all_reduce\","
                "\"record_id\":%d,\"state\":\"%s\",\"time_created_ns\":%d,"
                "\"time_discovered_completed_ns\":0,\"timeout_ms\":600000}",
                i ? "," : "", i + 1, i, i, rank == 0 && i == 5999 ? "scheduled" : "completed",
                1000 + i);
        g_string_append(e, "],");
        g_autofree char *text = g_strdup_printf(
            "{%s\"pg_config\":{\"1\":{\"desc\":\"undefined\",\"name\":\"1\",\"ranks\":\"[0, "
            "1]\"}},\"pg_status\":{},\"version\":\"2.10\"}",
            e->str);
        g_string_free(e, TRUE);
        g_autofree char *name = g_strdup_printf("nccl_trace_rank_%d.json", rank);
        g_autofree char *path = g_build_filename(dir, name, NULL);
        cr_assert(g_file_set_contents(path, text, -1, NULL));
    }
    g_autofree char *db = g_build_filename(dir, "names.db", NULL);
    const char *paths[] = {dir, NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "exit %d: %s", r.code, r.err);
    result_clear(&r);
    g_autofree char *n = db_text(db, "SELECT count(*) FROM rank_ops WHERE run_id = 1");
    cr_assert_str_eq(n, "12000");
}

/* The import stores each rank's calls while later dumps parse, with times relative to the
 * earliest enqueue read from each dump's first entry. A dump whose first entry is not its
 * oldest (hand-edited, or clocks stepped back) makes that guess wrong: the streamed rows are
 * rolled back and the set is stored the ordinary way, with times from the true earliest. */
Test(import, a_wrong_earliest_guess_is_stored_the_ordinary_way)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    for (int rank = 0; rank < 2; rank++) {
        GString *e = g_string_new("\"entries\":[");
        /* rank 1's second entry is older than its first */
        int64_t t[3] = {5000, rank ? 1000 : 6000, 7000};
        for (int i = 0; i < 3; i++)
            entry_json(e, i, i + 1, rank == 0 && i == 2 ? "scheduled" : "completed", t[i] + rank);
        g_string_append(e, "],");
        write_dump(dir, rank, e->str, 2);
        g_string_free(e, TRUE);
    }
    g_autofree char *db = tmp_db();
    const char *paths[] = {dir, NULL};
    Result r = import(db, paths);
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_autofree char *n =
        db_text(db, "SELECT count(*), min(start_ns) FROM rank_ops WHERE run_id = 1");
    cr_assert_str_eq(n, "6|0");
    g_autofree char *runs = db_text(db, "SELECT count(*) FROM runs");
    cr_assert_str_eq(runs, "1");
    g_autofree char *st = db_text(db, "SELECT group_concat(state) FROM ranks WHERE run_id = 1");
    cr_assert_str_eq(st, "blocked,done");
}

/* pg_status's last completed call at 2^63 - 1 (a hostile dump, issue 27): the head check
 * compares without computing last + 1 (signed overflow, which UBSan reported in the strict
 * build); the import ends as usual, no sanitizer line. */
Test(import, last_completed_at_int64_max_is_no_overflow)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    for (int rank = 0; rank < 2; rank++) {
        GString *e = g_string_new("\"entries\":[");
        entry_json(e, 0, 1, rank ? "completed" : "scheduled", 1000 + rank);
        g_string_append(e, "],");
        g_autofree char *text = g_strdup_printf(
            "{%s\"pg_config\":{\"1\":{\"desc\":\"undefined\",\"name\":\"1\",\"ranks\":\"[0, 1]\"}},"
            "\"pg_status\":{\"1\":{\"last_completed_collective\":\"9223372036854775807\","
            "\"last_enqueued_collective\":\"9223372036854775807\","
            "\"last_started_collective\":\"-1\"}},\"version\":\"2.10\"}",
            e->str);
        g_string_free(e, TRUE);
        g_autofree char *name = g_strdup_printf("nccl_trace_rank_%d.json", rank);
        g_autofree char *path = g_build_filename(dir, name, NULL);
        cr_assert(g_file_set_contents(path, text, -1, NULL));
    }
    g_autofree char *db = tmp_db();
    const char *paths[] = {dir, NULL};
    Result r = import(db, paths);
    cr_assert(r.code == 3 || r.code == 4, "exit %d: %s", r.code, r.err);
    cr_assert_null(strstr(r.err, "runtime error"), "%s", r.err);
    result_clear(&r);
}

/* N process groups in one dump (issue 27: each PG's lookup scanned every group so far, 120,000
 * PGs took 122 s): the set finds groups through its hash tables, about one key comparison per
 * lookup, so the work is linear whatever N (counted, not timed). */
Test(import, many_process_groups_cost_a_lookup_each)
{
    enum { N = 5000 };
    g_autofree char *dir = g_dir_make_tmp("ranksim-import-XXXXXX", NULL);
    GString *t = g_string_new("{\"entries\":[");
    for (int i = 0; i < N; i++)
        g_string_append_printf(
            t,
            "%s{\"collective_seq_id\":1,\"input_dtypes\":[\"Float\"],\"input_sizes\":[[8]],"
            "\"output_sizes\":[[8]],\"p2p_seq_id\":0,\"pg_id\":%d,\"process_group\":[\"%d\","
            "\"undefined\"],\"profiling_name\":\"nccl:all_reduce\",\"record_id\":%d,"
            "\"state\":\"completed\",\"time_created_ns\":%d,\"time_discovered_completed_ns\":0,"
            "\"timeout_ms\":600000}",
            i ? "," : "", i, i, i, 1000 + i);
    g_string_append(t, "],\"pg_config\":{");
    for (int i = 0; i < N; i++)
        g_string_append_printf(t, "%s\"%d\":{\"desc\":\"undefined\",\"name\":\"%d\",\"ranks\":"
                                  "\"[0]\"}",
                               i ? "," : "", i, i);
    g_string_append(t, "},\"pg_status\":{},\"version\":\"2.10\"}");
    g_autofree char *path = g_build_filename(dir, "nccl_trace_rank_0.json", NULL);
    cr_assert(g_file_set_contents(path, t->str, (gssize)t->len, NULL));
    g_string_free(t, TRUE);
    const char *paths[] = {path, NULL};
    GError *err = NULL;
    ImportSet *s = import_read(paths, 1, IMPORT_FORMAT_AUTO, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_eq(s->groups->len, N);
    cr_assert_eq(g_hash_table_size(s->group_index), N);
    /* two lookups per PG (its name, then the group), each about one comparison: a scan of
     * every group so far would make N^2 / 2 = 12.5 million */
    cr_assert_leq(s->group_probes, 4 * N, "%" G_GUINT64_FORMAT " comparisons", s->group_probes);
    import_set_free(s);
}
