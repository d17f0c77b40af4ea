/* src/cli/cmd-import.c — `ranksim import PATH...`: Flight Recorder dumps or NCCL logs of a real
 * hang, diagnosed by the engine's analysis and stored as a run of kind `import`.
 *
 * Nothing is stored unless every file was read: a bad file is exit 2 with its name and what is
 * wrong, before the database is opened for writing.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "cmd-common.h"
#include "help.h"

#include <glib/gstdio.h>
#include "../import/import.h"
#include "../output/report.h"
#include "../store/store.h"

static bool parse_format(const char *s, ImportFormat *f)
{
    static const struct {
        const char *name;
        ImportFormat f;
    } t[] = {{"auto", IMPORT_FORMAT_AUTO},
             {"fr", IMPORT_FORMAT_FR},
             {"nccl", IMPORT_FORMAT_NCCL},
             {"hccl", IMPORT_FORMAT_HCCL},
             {"watchdog", IMPORT_FORMAT_WATCHDOG},
             {"cann", IMPORT_FORMAT_CANN},
             {"vllm", IMPORT_FORMAT_VLLM},
             {"logs", IMPORT_FORMAT_LOGS},
             {"inspector", IMPORT_FORMAT_INSPECTOR}};
    for (size_t i = 0; i < G_N_ELEMENTS(t); i++)
        if (strcmp(s, t[i].name) == 0) {
            *f = t[i].f;
            return true;
        }
    return false;
}

/* The run's name: --name, else the single directory's (or first file's) basename. */
static char *default_name(char **paths, int n)
{
    g_autofree char *trimmed = g_strdup(paths[0]);
    size_t len = strlen(trimmed);
    while (len > 1 && trimmed[len - 1] == '/')
        trimmed[--len] = '\0';
    g_autofree char *base = g_path_get_basename(trimmed);
    if (n == 1 && g_file_test(paths[0], G_FILE_TEST_IS_DIR))
        return g_strdup_printf("import %s", base);
    g_autofree char *dir = g_path_get_dirname(trimmed);
    g_autofree char *dbase = g_path_get_basename(dir);
    return g_strdup_printf("import %s", strcmp(dbase, ".") == 0 ? base : dbase);
}

/* "reading 512/1024 files" on stderr when it is a terminal and the reading takes over 1 s. */
typedef struct {
    gint64 start_us;
    bool shown;
} ReadProgress;

static void read_progress(void *data, guint done, guint total)
{
    ReadProgress *p = data;
    if (g_get_monotonic_time() - p->start_us < 1000000 || (done == total && !p->shown))
        return;
    fprintf(stderr, "\r  reading: %u/%u files   ", done, total);
    fflush(stderr);
    p->shown = true;
}

/* Storing a Flight Recorder set while it is read (import_read_stream's callbacks). */
typedef struct {
    const char *db_path;
    Store *store;    /* opened when the stream begins (after the PATHS were listed) */
    bool db_existed; /* the database file was there before */
    StoreStream *stream;
    ImportRunBuilder *builder;
    int64_t t0;
    GArray *recs;  /* one rank's records, reused */
    GError *error; /* the first store error */
    void (*progress)(void *data, guint done, guint total);
    ReadProgress *prog;
} Streaming;

static bool stream_begin(void *user, const ImportSet *s, int64_t t0, GError **error)
{
    Streaming *sm = user;
    sm->t0 = t0;
    sm->db_existed = g_file_test(sm->db_path, G_FILE_TEST_EXISTS);
    sm->store = cli_store_open_write(sm->db_path, &sm->error);
    if (!sm->store) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_IO, "%s", sm->error->message);
        return false;
    }
    sm->stream = store_stream_begin(sm->store, &sm->error);
    if (!sm->stream)
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_IO, "%s", sm->error->message);
    if (!sm->stream)
        return false;
    sm->builder = import_run_builder_new(s, t0, false);
    return true;
}

static void stream_rank(void *user, const ImportSet *s, int32_t rank, GError **error)
{
    (void)s;
    Streaming *sm = user;
    g_array_set_size(sm->recs, 0);
    import_run_builder_rank(sm->builder, (uint32_t)rank, sm->recs);
    if (!store_stream_ops(sm->stream, (const SchedRecord *)(void *)sm->recs->data, sm->recs->len,
                          &sm->error)) {
        /* ends the read; the caller reports sm->error */
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_IO, "%s", sm->error->message);
    }
}

static void stream_progress(void *user, guint done, guint total)
{
    Streaming *sm = user;
    if (sm->progress)
        sm->progress(sm->prog, done, total);
}

int cli_import(int argc, char **argv)
{
    g_autofree char *db = NULL, *format = NULL, *name = NULL;
    gboolean json = FALSE, quiet = FALSE;
    GOptionEntry entries[] = {
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {"format", 0, 0, G_OPTION_ARG_STRING, &format,
         "What the files are: fr (PyTorch Flight Recorder, pickle or JSON), nccl (NCCL_DEBUG=INFO "
         "logs), hccl (torch_npu's flight recorder or watchdog lines), watchdog (PyTorch watchdog "
         "and PG-status lines), cann (Ascend CANN errors), vllm (vLLM's hang messages), logs "
         "(text logs holding several of these, read as excerpts of one log), inspector (NCCL "
         "Inspector records or NCCL RAS JSON), auto (by content; "
         "the default)",
         "FORMAT"},
        {"name", 0, 0, G_OPTION_ARG_STRING, &name, "Name of the stored run", "NAME"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the report as one JSON object", NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "Print nothing but errors", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("PATH... - diagnose a real hang from its dumps or logs");
    g_option_context_set_summary(
        ctx,
        "Reads what a hung job left behind: PyTorch Flight Recorder dumps (nccl_trace_rank_N,\n"
        "pickle or JSON), NCCL_DEBUG=INFO logs with INIT and COLL, torch_npu's HCCL dumps;\n"
        "and diagnoses it with the engine's analysis: each rank's blocking point, the\n"
        "majority vote on sizes, the wait-for graph across groups, cycles and culprits.\n"
        "The result is stored as a run (kind 'import'): report, explain, trace and diff\n"
        "work on it, and `ranksim match RUN SCENARIO` replays a hypothesis against it.\n"
        "PATH is a directory (its files) or files.");
    g_option_context_set_description(
        ctx, "Exit status: 0 no hang in the record, 3 a hang or mismatch was diagnosed,\n"
             "4 inconclusive (what is missing and what to collect are said),\n"
             "2 unreadable or invalid input (nothing stored), 1 internal error.\n"
             "Formats and rules: doc/import.md.\n");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (argc < 2) {
        cli_error("import: missing PATH (a directory of dumps or logs, or files; try 'ranksim "
                  "import --help')");
        return CLI_EXIT_INVALID;
    }
    ImportFormat fmt = IMPORT_FORMAT_AUTO;
    if (format && !parse_format(format, &fmt)) {
        cli_error("--format '%s': unknown; valid: auto, fr, nccl, hccl, watchdog, cann, vllm, "
                  "logs, inspector",
                  format);
        return CLI_EXIT_INVALID;
    }
    gint64 t0 = g_get_monotonic_time();
    ReadProgress prog = {t0, false};
    bool tty = isatty(STDERR_FILENO) && !quiet && !json;
    const char *db_path = db ? db : CLI_DEFAULT_DB;
    /* A Flight Recorder set is stored rank by rank while later dumps parse (doc/import.md,
     * "How long it takes"): the store opens when the stream begins. */
    Streaming sm = {.db_path = db_path, .progress = tty ? read_progress : NULL, .prog = &prog};
    sm.recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    ImportStreamFns fns = {stream_begin, stream_rank, stream_progress};
    bool streamed = false;
    g_autoptr(ImportSet) set = import_read_stream(
        (const char *const *)(argv + 1), (guint)(argc - 1), fmt, &fns, &sm, &streamed, &err);
    g_array_unref(sm.recs);
    if (prog.shown)
        fprintf(stderr, "\r%*s\r", 40, "");
    if (!set || sm.error) {
        store_stream_abort(sm.stream);
        import_run_builder_free(sm.builder);
        /* a database this import created and stored nothing in goes again: bad input leaves
         * no file behind */
        if (sm.store && !sm.db_existed && store_run_count(sm.store) == 0) {
            store_close(sm.store);
            sm.store = NULL;
            static const char *const suffix[] = {"", "-wal", "-shm"};
            for (size_t i = 0; i < G_N_ELEMENTS(suffix); i++) {
                g_autofree char *f = g_strconcat(db_path, suffix[i], NULL);
                g_unlink(f);
            }
        }
        GError *e = sm.error ? sm.error : err;
        cli_error("%s", e->message);
        bool internal = sm.error && !store_error_is_user(sm.error);
        g_clear_error(&sm.error);
        if (sm.store)
            store_close(sm.store);
        return internal ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
    }
    g_autoptr(Store) store = sm.store;
    if (!store) {
        store = cli_store_open_write(db_path, &err);
        if (!store) {
            cli_error("%s", err->message);
            return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
        }
    }
    gint64 t_read = g_get_monotonic_time();
    ImportRun *built = NULL;
    if (streamed && import_run_builder_min_created(sm.builder) == sm.t0) {
        built = import_run_builder_finish(sm.builder);
    } else {
        /* not streamed, or a dump's oldest entry was not its first: lay it all out again */
        store_stream_abort(sm.stream);
        sm.stream = NULL;
        import_run_builder_free(sm.builder);
        built = import_run_build(set);
    }
    g_autoptr(ImportRun) run = built;
    const SchedOutcome *o = run->outcome;
    gint64 t_diag = g_get_monotonic_time();

    g_autofree char *run_name = name ? g_strdup(name) : default_name(argv + 1, argc - 1);
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < set->warnings->len; i++)
        g_ptr_array_add(notes, g_strdup(g_ptr_array_index(set->warnings, i)));
    for (guint i = 0; i < run->notes->len; i++)
        g_ptr_array_add(notes, g_strdup(g_ptr_array_index(run->notes, i)));
    /* The scenario column holds what was read, so the run says where it came from. */
    GString *src = g_string_new(NULL);
    g_string_append_printf(src, "# ranksim import (%s)\n",
                           set->format_detail ? set->format_detail : "");
    for (guint i = 0; i < set->paths->len; i++)
        g_string_append_printf(src, "%s\n", (const char *)g_ptr_array_index(set->paths, i));
    g_autofree char *src_text = g_string_free(src, FALSE);
    StoreRunInfo info = {.name = run_name,
                         .kind = "import",
                         .path = argv[1],
                         .scenario = src_text,
                         .timeline = "collectives",
                         .hardware = set->format_detail,
                         .not_simulated = notes};
    const char *status = import_verdict_status(run->verdict);
    int code = run->verdict == IMPORT_VERDICT_HANG           ? CLI_EXIT_FAILED
               : run->verdict == IMPORT_VERDICT_INCONCLUSIVE ? CLI_EXIT_INCONCLUSIVE
                                                             : CLI_EXIT_OK;
    double wall = (double)(g_get_monotonic_time() - t0) / 1000.0;
    bool storing = tty && run->records->len > 500000;
    if (storing) {
        fprintf(stderr, "  storing %u calls...", run->records->len);
        fflush(stderr);
    }
    int64_t id =
        sm.stream ? store_stream_commit(sm.stream, &info, run->program, o, status, code, wall, &err)
                  : store_run_insert(store, &info, run->program,
                                     (const SchedRecord *)(void *)run->records->data,
                                     run->records->len, o, NULL, status, code, wall, &err);
    if (storing)
        fprintf(stderr, "\r%*s\r", 40, "");
    if (id < 0) {
        cli_error("%s", err->message);
        return CLI_EXIT_INTERNAL;
    }
    /* Where the time goes, for `make bench` (RANKSIM_TIMING=1). */
    if (g_getenv("RANKSIM_TIMING"))
        fprintf(stderr,
                "ranksim: timing: read and parse %.0f ms, diagnose %.0f ms, store %.0f ms\n",
                (double)(t_read - t0) / 1e3, (double)(t_diag - t_read) / 1e3,
                (double)(g_get_monotonic_time() - t_diag) / 1e3);
    StoreRunInfo rr = {.id = id,
                       .name = run_name,
                       .kind = "import",
                       .path = argv[1],
                       .db_path = db_path,
                       .status = status,
                       .exit_code = code,
                       .wall_ms = wall,
                       .hardware = set->format_detail,
                       .not_simulated = notes};
    if (json) {
        g_autofree char *js = report_json(&rr, o);
        printf("%s\n", js);
    } else if (!quiet) {
        report_text(stdout, &rr, o);
        report_footer(stdout, &rr);
    }
    return code;
}
