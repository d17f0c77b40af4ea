/* tests/src/cli/test-hostile.c — issue 27's hostile inputs, through the built binary: deeply
 * nested JSON wherever JSON is read, pickles that share one list thousands of times, FIFOs and
 * devices among import paths, terminal escape sequences in imported names, an interrupted
 * `trace -o`, the one-line messages of a few malformed values, and the rows a large start-up
 * stores. Each ends with exit 2 (or the reader carries on) and one line; none asserts a time. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../run-binary.h"
#include "../../../src/store/store.h"
#include "../../../src/util/outfile.h"
#include "../../../src/util/textwrap.h"

static char *tmpdir(void)
{
    return g_dir_make_tmp("ranksim-hostile-XXXXXX", NULL);
}

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* `levels` copies of `open`, then `leaf`, then `levels` copies of `close`. */
static char *nested(int levels, const char *open, const char *leaf, const char *close)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < levels; i++)
        g_string_append(s, open);
    g_string_append(s, leaf);
    for (int i = 0; i < levels; i++)
        g_string_append(s, close);
    return g_string_free(s, FALSE);
}

/* Runs ranksim; asserts exit `code`, one line on stderr holding `want`. */
static void expect_exit(int code, const char *const *args, const char *want)
{
    Result r = ranksim(args);
    cr_assert_eq(r.code, code, "%s %s: exit %d: %s", args[0], args[1], r.code, r.err);
    cr_assert(strstr(r.err, want), "%s %s: %s", args[0], args[1], r.err);
    cr_assert_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "one line: %s", r.err);
    result_clear(&r);
}

static void sql_exec(const char *db_path, const char *sql, const char *text)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    if (text)
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* ---- deeply nested JSON: exit 2, one line (it was SIGSEGV in json-glib's parser) ---- */

Test(json, a_deep_config_json_is_refused)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *deep = nested(100000, "{\"a\":", "1", "}");
    g_autofree char *cfg = write_file(dir, "config.json", deep);
    expect_exit(2, (const char *[]){"run", "--db", db, "--", "vllm", "serve", dir, NULL},
                "config.json:1:321: Parse error: nested deeper than 64 levels");
}

Test(json, a_deep_requests_line_is_refused)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *deep = nested(100000, "[", "", "]");
    g_autofree char *line = g_strdup_printf("{\"prompt\": %s}\n", deep);
    g_autofree char *trace = write_file(dir, "deep.jsonl", line);
    expect_exit(2,
                (const char *[]){"run", SCN("llama8b-requests-chunked-prefill.yaml"), "--requests",
                                 trace, "--db", db, NULL},
                "deep.jsonl:1: key 'arrival_s': not valid JSON (<data>:1:75: Parse error: "
                "nested deeper than 64 levels)");
}

Test(json, a_deep_compilation_config_is_refused)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *deep = nested(100000, "[", "", "]");
    g_autofree char *text = g_strdup_printf("model_name: meta-llama/Llama-3.1-8B\n"
                                            "server_args: --compilation-config '%s'\n",
                                            deep);
    g_autofree char *eval = write_file(dir, "eval.yaml", text);
    expect_exit(2, (const char *[]){"run", eval, "--hardware", "h100", "--db", db, NULL},
                "--compilation-config: not valid JSON (<data>:1:65: Parse error: nested deeper "
                "than 64 levels)");
}

/* A stored diagnosis whose detail nests 100,000 levels: every reader carries on without it. */
Test(json, a_deep_stored_detail_is_read_without_it)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    Result r =
        ranksim((const char *[]){"run", SCN("three-way-cycle.yaml"), "--db", db, "-q", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    g_autofree char *deep = nested(100000, "{\"a\":", "1", "}");
    sql_exec(db, "UPDATE diagnostics SET detail = ?1", deep);
    const char *const cmds[][4] = {{"report", NULL}, {"report", "--json", NULL},
                                   {"explain", NULL}, {"explain", "--dot", "-", NULL}};
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
        const char *args[8] = {cmds[i][0]};
        size_t n = 1;
        for (size_t k = 1; k < 4 && cmds[i][k]; k++)
            args[n++] = cmds[i][k];
        args[n++] = "latest";
        args[n++] = "--db";
        args[n++] = db;
        r = ranksim(args);
        cr_assert_eq(r.code, 0, "%s: exit %d: %s", cmds[i][0], r.code, r.err);
        cr_assert_str_empty(r.err, "%s: %s", cmds[i][0], r.err);
        result_clear(&r);
    }
}

/* ---- bounded work: a start-up's stored rows ---- */

static int64_t db_count(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* Regression (issue 27): `-- vllm serve M --data-parallel-size 4096 --tensor-parallel-size 16`
 * stored every rank's ~45 memory items, 2.8 million identical rows (5 CPU s). Identical ranks
 * now share one list: the items stored do not grow with DP, only one row per rank does. */
Test(work, a_start_up_stores_each_memory_list_once)
{
    g_autofree char *dir = tmpdir();
    int64_t items[2], ranks[2], view[2];
    const char *dp[2] = {"1", "32"};
    for (int k = 0; k < 2; k++) {
        g_autofree char *db = g_strdup_printf("%s/dp%s.db", dir, dp[k]);
        Result r = ranksim((const char *[]){"run", "-q", "--db", db, "--hardware", "h100", "--",
                                            "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                                            "--data-parallel-size", dp[k],
                                            "--tensor-parallel-size", "2", NULL});
        cr_assert_eq(r.code, 0, "dp %s: exit %d: %s", dp[k], r.code, r.err);
        result_clear(&r);
        items[k] = db_count(db, "SELECT count(*) FROM memory_plans");
        ranks[k] = db_count(db, "SELECT count(*) FROM rank_memory_plans");
        view[k] = db_count(db, "SELECT count(*) FROM memory_items");
    }
    cr_assert_gt(items[0], 10);
    cr_assert_eq(items[1], items[0], "items stored grow with DP: %ld -> %ld", (long)items[0],
                 (long)items[1]);
    cr_assert_eq(ranks[0], 2);
    cr_assert_eq(ranks[1], 64);
    /* the view still shows every rank's list */
    cr_assert_eq(view[1], 64 * items[0]);
}

/* ---- pickles: bounded memory ---- */

/* Regression (issue 27): an 18 KB Flight Recorder pickle sharing one 4,096-int list 4,094 times
 * took 1.7 GB; the fuzz corpus holds it (tests/fuzz/regress/fr/shared-list-4094). */
Test(pickle, a_shared_list_bomb_is_refused)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *dump = g_build_filename(dir, "nccl_trace_rank_0", NULL);
    g_autofree char *src = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(RANKSIM_SOURCE_DIR "/tests/fuzz/regress/fr/shared-list-4094",
                                  &src, &len, NULL));
    cr_assert(g_file_set_contents(dump, src, (gssize)len, NULL));
    expect_exit(2, (const char *[]){"import", dump, "--db", db, NULL},
                "expands to more than 328560 values once each shared reference (memo GET) is "
                "copied: a memo bomb? (the ceiling: 16 values per pickle byte");
}

/* Regression (issue 27): a protocol-0 pickle given --format fr was read as JSON ("a malformed
 * number"); it is a pickle like any other. */
Test(pickle, a_protocol_0_dump_is_read)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *dump = g_build_filename(dir, "nccl_trace_rank_0", NULL);
    g_autofree char *src = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(RANKSIM_SOURCE_DIR "/tests/fuzz/regress/fr/protocol-0-dump",
                                  &src, &len, NULL));
    cr_assert(g_file_set_contents(dump, src, (gssize)len, NULL));
    Result r = ranksim((const char *[]){"import", dump, "--format", "fr", "--db", db, NULL});
    cr_assert_eq(r.code, 4, "exit %d: %s", r.code, r.err);
    cr_assert(strstr(r.out, "source: PyTorch Flight Recorder pickle, version 2.4"), "%s", r.out);
    result_clear(&r);
}

/* ---- FIFOs and devices among input paths ---- */

/* Regression (issue 27): `import DUMP FIFO` blocked forever (the streaming prescan opened every
 * path blocking). Every path is checked before any is opened for reading. */
Test(paths, import_refuses_fifos_and_devices_first)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *fifo = g_build_filename(dir, "nccl_trace_rank_1", NULL);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    const char *dump = RANKSIM_SOURCE_DIR "/tests/fuzz/regress/fr/protocol-0-dump";
    expect_exit(2, (const char *[]){"import", dump, fifo, "--db", db, NULL},
                "nccl_trace_rank_1: a FIFO (named pipe), not a regular file");
    expect_exit(2, (const char *[]){"import", fifo, "--format", "fr", "--db", db, NULL},
                "a FIFO (named pipe)");
    expect_exit(2, (const char *[]){"import", dump, "/dev/zero", "--db", db, NULL},
                "/dev/zero: a character device, not a regular file");
    cr_assert_not(g_file_test(db, G_FILE_TEST_EXISTS), "a refused import creates no database");
}

/* Regression (issue 27): `engine.op_profile: /dev/zero` said "no such file". */
Test(paths, an_op_profile_device_is_named)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *scn = write_file(dir, "prof.yaml",
                                      "name: x\nmodel: llama-3.1-8b\nhardware: h100\nengine:\n"
                                      "  op_profile: /dev/zero\nworkload:\n  prefill: 100\n");
    expect_exit(2, (const char *[]){"run", scn, "--db", db, NULL},
                "prof.yaml:5: key 'op_profile': cannot read op profile '/dev/zero': a character "
                "device, not a regular file");
}

/* ---- terminal escape sequences from input ---- */

Test(escapes, controls_are_shown_not_obeyed)
{
    g_autoptr(GString) g = g_string_new(NULL);
    text_escape_append(g, "a\x1b]52;c;SGk=\x07" "b\x1b[2J\r\x7f\tc\xc2\x9b" "31m\xc3\xa9\xff\n", -1,
                       false);
    cr_assert_str_eq(g->str, "a\\x1b]52;c;SGk=\\x07b\\x1b[2J\\x0d\\x7f\tc\\u009b31m\xc3\xa9"
                             "\\xff\\x0a");
    g_string_truncate(g, 0);
    text_escape_append(g, "one\ntwo", -1, true);
    cr_assert_str_eq(g->str, "one\ntwo");
}

/* Regression (issue 27): a Flight Recorder dump whose names carry a clear-screen sequence
 * (tests/fuzz/regress/fr/escape-sequences) had it printed raw by import and explain. */
Test(escapes, imported_names_reach_no_terminal_raw)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *dump = g_build_filename(dir, "nccl_trace_rank_0", NULL);
    g_autofree char *src = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(RANKSIM_SOURCE_DIR "/tests/fuzz/regress/fr/escape-sequences",
                                  &src, &len, NULL));
    cr_assert(g_file_set_contents(dump, src, (gssize)len, NULL));
    const char *const cmds[][4] = {{"import", dump, NULL},
                                   {"explain", "latest", NULL},
                                   {"explain", "--dot", "-", "latest"},
                                   {"report", "latest", NULL}};
    for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
        const char *args[8] = {0};
        size_t n = 0;
        for (size_t k = 0; k < 4 && cmds[i][k]; k++)
            args[n++] = cmds[i][k];
        args[n++] = "--db";
        args[n++] = db;
        Result r = ranksim(args);
        cr_assert(r.code == 0 || r.code == 3, "%s: exit %d: %s", cmds[i][0], r.code, r.err);
        cr_assert_null(strchr(r.out, '\x1b'), "%s printed ESC raw: %s", cmds[i][0], r.out);
        cr_assert_null(strchr(r.err, '\x1b'), "%s: %s", cmds[i][0], r.err);
        if (i < 3)
            cr_assert(strstr(r.out, "\\x1b[2J"), "%s: %s", cmds[i][0], r.out);
        result_clear(&r);
    }
}

/* ---- leaks ---- */

/* Regression (issue 27): `explain --dot` freed the per-rank signatures of a mismatch with
 * g_strfreev, which stops at the first rank without one: the rest leaked. Seen by valgrind
 * (skipped without it), or, in a build with AddressSanitizer (where valgrind cannot run), by
 * LeakSanitizer in the binary itself. */
#if defined(__SANITIZE_ADDRESS__)
#define HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTILE_ASAN 1
#endif
#endif
Test(leaks, explain_dot_frees_signatures_with_holes)
{
#ifdef HOSTILE_ASAN
    g_autofree char *valgrind = NULL;
#else
    g_autofree char *valgrind = g_find_program_in_path("valgrind");
    if (!valgrind)
        cr_skip_test("valgrind is not installed");
#endif
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    Result r = ranksim((const char *[]){"run", SCN("mismatch-abort.yaml"), "--db", db, "-q", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    result_clear(&r);
    /* rank 0 brings no signature: a hole before ranks 1-3's */
    sql_exec(db, "UPDATE diagnostics SET detail = replace(detail, '[0,1,2]', '[1,2]')", NULL);
    const char *vg_argv[] = {valgrind, "-q", "--leak-check=full",
                             "--errors-for-leak-kinds=definite", "--error-exitcode=9",
                             RANKSIM_BINARY, "explain", "--dot", "-", "latest", "--db", db, NULL};
    const char *lsan_argv[] = {RANKSIM_BINARY, "explain", "--dot", "-", "latest", "--db", db, NULL};
    g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "ASAN_OPTIONS",
                                         "detect_leaks=1:exitcode=9", TRUE);
    g_autofree char *out = NULL, *err = NULL;
    int status = 0;
    cr_assert(g_spawn_sync(NULL, (char **)(valgrind ? vg_argv : lsan_argv), env, G_SPAWN_DEFAULT,
                           NULL, NULL, &out, &err, &status, NULL));
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "valgrind: %s", err);
    cr_assert(strstr(out, "sizes disagree") || strstr(out, "digraph"), "%s", out);
}

/* ---- interrupted writes ---- */

/* Regression (issue 27): SIGINT or SIGTERM during `trace -o FILE` left FILE.tmp-XXXXXX. A child
 * opens an output through src/util/outfile.h, writes, and is killed by the signal: the folder
 * is empty afterwards, and the child still died of the signal. */
Test(interrupted, a_signal_removes_the_temporary_file)
{
    const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < G_N_ELEMENTS(sigs); i++) {
        g_autofree char *dir = tmpdir();
        g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            signal(sigs[i], SIG_DFL);
            OutFile *o = out_file_open(path, NULL);
            if (!o)
                _exit(10);
            fputs("{\"traceEvents\": [", out_file_stream(o));
            fflush(out_file_stream(o));
            raise(sigs[i]);
            _exit(11); /* not reached */
        }
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == sigs[i], "status %d", status);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        cr_assert_not_null(d);
        const char *left = g_dir_read_name(d);
        cr_assert_null(left, "left behind: %s", left);
    }
}

/* ---- one clear line ---- */

/* Regression (issue 27): "prompt": 99999999999999999999999 said "'-1' is not an integer"
 * (json-glib turned it into -1). */
Test(one_line, a_huge_integer_in_a_trace_is_named)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    g_autofree char *trace = write_file(dir, "big.jsonl",
                                        "{\"arrival_s\": 0, \"prompt\": 99999999999999999999999, "
                                        "\"output\": 4}\n");
    expect_exit(2,
                (const char *[]){"run", SCN("llama8b-requests-chunked-prefill.yaml"), "--requests",
                                 trace, "--db", db, NULL},
                "big.jsonl:1: key 'arrival_s': not valid JSON (<data>:1:28: Parse error: the "
                "integer 99999999999999999999999 is beyond 64 bits");
}

/* Regression (issue 27): a --set key that is not UTF-8 said only "Invalid byte sequence in
 * conversion input". */
Test(one_line, a_non_utf8_option_value_is_named)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *db = g_build_filename(dir, "h.db", NULL);
    expect_exit(2,
                (const char *[]){"run", SCN("healthy-tp-layers.yaml"), "--set", "\xff\xfe=3",
                                 "--db", db, NULL},
                "argument '\\xff\\xfe=3': not valid UTF-8 (byte 0xff at offset 0)");
}

static void stdout_to_dev_full(gpointer data)
{
    (void)data;
    int fd = open("/dev/full", O_WRONLY);
    if (fd >= 0)
        dup2(fd, STDOUT_FILENO);
}

/* Regression (issue 27): `help run > /dev/full` exited 0. */
Test(one_line, help_onto_a_full_disk_is_exit_1)
{
    const char *const forms[][4] = {{"help", "run", NULL}, {"run", "--help", NULL}, {"help", NULL}};
    for (size_t i = 0; i < G_N_ELEMENTS(forms); i++) {
        const char *argv[5] = {RANKSIM_BINARY};
        for (size_t k = 0; k < 3 && forms[i][k]; k++)
            argv[k + 1] = forms[i][k];
        g_autofree char *err = NULL;
        int status = 0;
        cr_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL,
                               stdout_to_dev_full, NULL, NULL, &err, &status, NULL));
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s %s: status %d: %s",
                  forms[i][0], forms[i][1] ? forms[i][1] : "", status, err);
        cr_assert(strstr(err, "ranksim: error: writing to stdout: No space left on device"), "%s",
                  err);
    }
}

/* Regression (issue 27): doc/reliability.md said the schema version was 2 where the code
 * writes 9. */
Test(docs, reliability_states_the_schema_version)
{
    g_autofree char *doc = NULL;
    cr_assert(g_file_get_contents(RANKSIM_SOURCE_DIR "/doc/reliability.md", &doc, NULL, NULL));
    /* every "`STORE_SCHEMA_VERSION` (N" in the page, line breaks aside, gives the code's N */
    guint seen = 0;
    for (const char *p = doc; (p = strstr(p, "`STORE_SCHEMA_VERSION`")); seen++) {
        p += strlen("`STORE_SCHEMA_VERSION`");
        while (*p == ' ' || *p == '\n')
            p++;
        cr_assert_eq(*p, '(', "doc/reliability.md names STORE_SCHEMA_VERSION without its value");
        cr_assert_eq(atoi(p + 1), STORE_SCHEMA_VERSION, "doc/reliability.md says %d, the code %d",
                     atoi(p + 1), STORE_SCHEMA_VERSION);
    }
    cr_assert_gt(seen, 0);
}
