/* src/cli/cmd-run.c — `ranksim run SCENARIO | -- vllm serve MODEL [FLAGS...]`: load one scenario,
 * simulate it, store the run and print its report. In steps: the options (run_parse), the
 * scenario with the command line's extras (run_load: a rejected one is still stored as an
 * `invalid` run), simulating into the store (run_simulate), the report (run_print).
 */
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "cmd-common.h"
#include "help.h"
#include "../input/request-formats.h"
#include "../input/scenario.h"
#include "../input/vllm-args.h"
#include "../output/report.h"
#include "../output/trace.h"
#include "../run/runner.h"
#include "../store/store.h"

typedef struct {
    /* the options as given */
    char *db;
    char *trace;
    gboolean json;
    char *timeline;
    char **sets;
    gboolean quiet;
    char *hardware;
    char **perf_db; /* --perf-db, repeatable */
    char **prefill;
    char **decode;
    gboolean memory_detail;
    char *max_rank_ops;
    char *model_config;
    char *requests;
    char *requests_format;
    char *requests_rate;
    char *requests_limit;
    char *max_concurrency; /* --max-concurrency N, as given */
    gboolean exact;

    /* what run_parse made of them */
    char *vtext;      /* `-- vllm serve ...` as an eval config's text, or NULL */
    const char *path; /* the scenario's path, or "vllm-serve" */
    const char *db_path;
    guint64 max_conc; /* --max-concurrency parsed; 0: not given */
    SchedTimeline timeline_level;
    uint64_t max_ops;
    double rate;    /* --requests-rate, 0: none */
    uint32_t limit; /* --requests-limit, 0: none */
    gint64 t0; /* when loading began (monotonic, us) */
} RunOptions;

static void run_options_clear(RunOptions *o)
{
    g_free(o->db);
    g_free(o->trace);
    g_free(o->timeline);
    g_strfreev(o->sets);
    g_free(o->hardware);
    g_strfreev(o->perf_db);
    g_strfreev(o->prefill);
    g_strfreev(o->decode);
    g_free(o->max_rank_ops);
    g_free(o->model_config);
    g_free(o->requests);
    g_free(o->requests_format);
    g_free(o->requests_rate);
    g_free(o->requests_limit);
    g_free(o->max_concurrency);
    g_free(o->vtext);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RunOptions, run_options_clear)

/* What the command line changed, in words: the --set assignments as the run's name shows them,
 * then the workload and hardware flags. NULL when nothing. Caller frees. */
static char *run_overrides(const RunOptions *o)
{
    GString *s = g_string_new(NULL);
    g_autofree char *sets = cli_overrides_text((const char *const *)o->sets);
    if (sets)
        g_string_append(s, sets);
    if (o->hardware)
        g_string_append_printf(s, "%s--hardware %s", s->len ? ", " : "", o->hardware);
    for (guint i = 0; o->perf_db && o->perf_db[i]; i++)
        g_string_append_printf(s, "%s--perf-db %s", s->len ? ", " : "", o->perf_db[i]);
    for (guint i = 0; o->prefill && o->prefill[i]; i++)
        g_string_append_printf(s, "%s--prefill %s", s->len ? ", " : "", o->prefill[i]);
    for (guint i = 0; o->decode && o->decode[i]; i++)
        g_string_append_printf(s, "%s--decode %s", s->len ? ", " : "", o->decode[i]);
    if (o->requests)
        g_string_append_printf(s, "%s--requests %s", s->len ? ", " : "", o->requests);
    if (o->requests_format)
        g_string_append_printf(s, ", --requests-format %s", o->requests_format);
    if (o->requests_rate)
        g_string_append_printf(s, ", --requests-rate %s", o->requests_rate);
    if (o->requests_limit)
        g_string_append_printf(s, ", --requests-limit %s", o->requests_limit);
    if (o->max_concurrency)
        g_string_append_printf(s, "%s--max-concurrency %s", s->len ? ", " : "", o->max_concurrency);
    return g_string_free(s, s->len == 0);
}

static double elapsed_ms(gint64 start_us)
{
    return (double)(g_get_monotonic_time() - start_us) / 1000.0;
}

/* Progress on stderr while simulating, at every size, when stderr is a terminal (not with -q
 * or --json): the engine calls it every SCHED_PROGRESS_EVENTS events. */
typedef struct {
    gint64 start_us;
    bool shown;
} Progress;

static void progress_cb(void *ud, int64_t now_ns, uint64_t rank_ops, uint64_t events)
{
    Progress *p = ud;
    double wall = (double)(g_get_monotonic_time() - p->start_us) / 1e6;
    g_autofree char *t = sched_format_ns(now_ns);
    fprintf(stderr,
            "\r  simulating: t = %s, %" G_GUINT64_FORMAT " rank-ops, %" G_GUINT64_FORMAT
            " events, %.0f s wall   ",
            t, rank_ops, events, wall);
    fflush(stderr);
    p->shown = true;
}

/* Serving progress while a requests workload is scheduled (the loader calls it every step). */
static void serve_progress_cb(void *ud, uint64_t steps, uint32_t finished, uint32_t total)
{
    bool *shown = ud;
    if (steps % 256 != 0)
        return;
    fprintf(stderr, "\rserving: %" G_GUINT64_FORMAT " steps, %u of %u requests finished", steps,
            finished, total);
    *shown = true;
}

/* Parses argv into `o` and checks it: one SCENARIO, or the vLLM command line after "--"
 * (GLib parses only what comes before it); the timeline level; --max-rank-ops. Returns
 * CLI_EXIT_OK, or CLI_EXIT_INVALID after printing the error. */
/* --requests-format, --requests-rate and --requests-limit: with --requests only. */
static int run_parse_trace_flags(RunOptions *o)
{
    const char *flag = o->requests_format ? "--requests-format"
                       : o->requests_rate ? "--requests-rate"
                       : o->requests_limit ? "--requests-limit"
                                           : NULL;
    if (flag && !o->requests) {
        cli_error("%s: only with --requests FILE (a trace to serve)", flag);
        return CLI_EXIT_INVALID;
    }
    char *end = NULL;
    if (o->requests_rate) {
        o->rate = g_ascii_strtod(o->requests_rate, &end);
        if (!o->requests_rate[0] || *end || !(o->rate > 0 && o->rate <= 1e9)) {
            cli_error("--requests-rate '%s': not a rate; valid: requests per second > 0, e.g. 4",
                      o->requests_rate);
            return CLI_EXIT_INVALID;
        }
    }
    if (o->requests_limit) {
        guint64 n = 0;
        if (!g_ascii_string_to_unsigned(o->requests_limit, 10, 1, 10000000, &n, NULL)) {
            cli_error("--requests-limit '%s': not a count; valid: 1..10000000",
                      o->requests_limit);
            return CLI_EXIT_INVALID;
        }
        o->limit = (uint32_t)n;
    }
    return CLI_EXIT_OK;
}

static int run_parse(int argc, char **argv, RunOptions *o)
{
    GOptionEntry entries[] = {
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &o->db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &o->trace,
         "Also write a Chrome/Perfetto trace of the run", "FILE.json"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &o->json, "Print the report as one JSON object", NULL},
        {"timeline", 0, 0, G_OPTION_ARG_STRING, &o->timeline,
         "Ops to store: full (default), collectives, none", "LEVEL"},
        {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->sets,
         "Override a scenario key, e.g. --set watchdog.collective_timeout_s=300", "KEY=VALUE"},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o->quiet, "Print nothing but errors", NULL},
        {"memory-detail", 0, 0, G_OPTION_ARG_NONE, &o->memory_detail,
         "List every tensor of the memory plan (model scenarios)", NULL},
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &o->hardware,
         "Hardware preset or file, for scenarios that name none (vLLM eval configs)", "NAME|FILE"},
        {"perf-db", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->perf_db,
         "A measured table of kernel times (ranksim's CSV, AIConfigurator's tables, nccl-tests "
         "output, an op profile) that overrides the cost model where it covers a shape "
         "(repeatable)",
         "PATH"},
        {"model-config", 0, 0, G_OPTION_ARG_FILENAME, &o->model_config,
         "A Hugging Face config.json for the model, instead of the scenario's model: or the "
         "eval config's model_name (same as --set model=FILE)",
         "FILE"},
        {"prefill", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->prefill,
         "A prefill step of N tokens, for scenarios without a workload (repeatable); N@C: N new "
         "tokens continuing a prompt whose first C tokens are cached (a later chunk)",
         "N[@C]"},
        {"decode", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->decode,
         "A decode step of B sequences at context CTX, for scenarios without a workload", "B:CTX"},
        {"requests", 0, 0, G_OPTION_ARG_FILENAME, &o->requests,
         "Serve the requests of a trace with vLLM's scheduler, as the workload: ranksim's JSON "
         "lines or CSV (arrival_s, prompt, output), or a Mooncake, Azure, BurstGPT, ShareGPT or "
         "Vidur trace (detected)",
         "FILE"},
        {"requests-format", 0, 0, G_OPTION_ARG_STRING, &o->requests_format,
         "The trace's format instead of detecting it: " REQUEST_FORMAT_NAMES, "NAME"},
        {"requests-rate", 0, 0, G_OPTION_ARG_STRING, &o->requests_rate,
         "Replay the trace at R requests/s on average (its arrivals scaled; Poisson arrivals "
         "for a trace without times)",
         "R"},
        {"requests-limit", 0, 0, G_OPTION_ARG_STRING, &o->requests_limit,
         "Serve only the trace's first N requests", "N"},
        {"max-concurrency", 0, 0, G_OPTION_ARG_STRING, &o->max_concurrency,
         "Serving: at most N requests in flight, a request that finds none free sent when one "
         "frees (vllm bench serve --max-concurrency; replaces workload.max_concurrency)",
         "N"},
        {"exact", 0, 0, G_OPTION_ARG_NONE, &o->exact,
         "Serving: simulate every scheduled step, even one identical to a step simulated before",
         NULL},
        {"max-rank-ops", 0, 0, G_OPTION_ARG_STRING, &o->max_rank_ops,
         "Refuse a run of more rank-ops (repeats expanded) than N (default 1000000000; 0: no "
         "limit)",
         "N"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    char **vcmd = NULL;
    int vn = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            vcmd = argv + i + 1;
            vn = argc - i - 1;
            argc = i;
            break;
        }
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("SCENARIO | -- vllm serve MODEL [FLAGS...] - simulate one scenario");
    g_option_context_set_summary(
        ctx, "Runs every rank of the scenario as an actor in simulated time, stores the result in\n"
             "the results database and prints the report: outcome, diagnostics, per-rank times.");
    g_option_context_set_description(
        ctx, "Exit status: 0 healthy, 2 invalid input, 3 the simulated cluster fails,\n"
             "1 internal error. Formats: doc/scenario-format.md, doc/database.md.\n");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (vcmd ? argc != 1 : argc != 2) {
        cli_error("%s", vcmd ? "run: give a SCENARIO or -- vllm serve MODEL [FLAGS...], not both"
                        : argc < 2 ? "run: missing SCENARIO (try 'ranksim run --help')"
                                   : "run: exactly one SCENARIO expected");
        return CLI_EXIT_INVALID;
    }
    if (vcmd && !(o->vtext = vllm_args_command_to_eval(vn, vcmd, &err))) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    o->path = vcmd ? "vllm-serve" : argv[1];
    o->timeline_level = SCHED_TIMELINE_FULL;
    if (o->timeline && !cli_timeline_parse(o->timeline, &o->timeline_level)) {
        cli_error("--timeline '%s': unknown level; valid: full, collectives, none", o->timeline);
        return CLI_EXIT_INVALID;
    }
    o->db_path = o->db ? o->db : CLI_DEFAULT_DB;
    o->t0 = g_get_monotonic_time();
    if (!cli_max_rank_ops_parse(o->max_rank_ops, &o->max_ops, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (o->max_concurrency &&
        !g_ascii_string_to_unsigned(o->max_concurrency, 10, 1, 10000000, &o->max_conc, NULL)) {
        cli_error("--max-concurrency '%s': not an integer in 1..10000000 (requests in flight)",
                  o->max_concurrency);
        return CLI_EXIT_INVALID;
    }
    return run_parse_trace_flags(o);
}

/* A run whose full time line grows the database by more than this is told so: the default
 * (`--timeline full`) is right for a run one opens in a viewer, not for a 65,536-rank run that
 * adds a gigabyte no one reads. */
#define RUN_BIG_TIMELINE_BYTES (UINT64_C(256) << 20)

/* The database's size with its write-ahead log (0 for a file that does not exist yet). */
static uint64_t db_bytes(const char *path)
{
    uint64_t n = 0;
    GStatBuf st;
    if (g_stat(path, &st) == 0)
        n += (uint64_t)st.st_size;
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    if (g_stat(wal, &st) == 0)
        n += (uint64_t)st.st_size;
    return n;
}

/* --model-config FILE is --set model=FILE with the path from the working directory. */
static void run_add_model_config(RunOptions *o)
{
    g_autofree char *abs = g_canonicalize_filename(o->model_config, NULL);
    guint n = o->sets ? g_strv_length(o->sets) : 0;
    o->sets = g_renew(char *, o->sets, n + 2);
    o->sets[n] = g_strdup_printf("model=%s", abs);
    o->sets[n + 1] = NULL;
}

/* An error about a pasted `vllm serve` line in the user's terms: the eval config it was read
 * into ("vllm-serve:3: key 'server_args': ...") is no file the user wrote, so its place is
 * named as the part of the command line it came from. */
static char *command_error(const char *msg)
{
    static const struct {
        const char *key, *as;
    } parts[] = {{"key 'server_args': ", "the vllm serve flags: "},
                 {"key 'model_name': ", "vllm serve MODEL: "},
                 {"key 'env': ", "the environment prefix: "}};
    if (!g_str_has_prefix(msg, "vllm-serve:"))
        return g_strdup(msg);
    const char *p = msg + strlen("vllm-serve:");
    while (g_ascii_isdigit(*p))
        p++;
    if (*p == ':')
        p++;
    while (*p == ' ')
        p++;
    for (size_t i = 0; i < G_N_ELEMENTS(parts); i++)
        if (g_str_has_prefix(p, parts[i].key))
            return g_strconcat(parts[i].as, p + strlen(parts[i].key), NULL);
    if (g_str_has_prefix(p, "key '") && g_ascii_isupper(p[5])) /* an environment variable */
        return g_strconcat("the environment prefix: ", p, NULL);
    static const char eval_hw[] = "an eval config names no hardware; ";
    if (g_str_has_prefix(p, eval_hw)) /* vLLM runs on the machine it is on: say which */
        return g_strconcat("vllm serve runs on the GPUs it finds, so name them: ",
                           p + strlen(eval_hw), NULL);
    return g_strconcat("the vllm serve command line: ", p, NULL);
}

/* Loads the scenario with the command line's extras, names the run by its overrides and checks
 * its size. Returns NULL after printing the error and storing the rejected run (best effort). */
static Scenario *run_load(RunOptions *o)
{
    if (o->model_config)
        run_add_model_config(o);
    bool serve_shown = false;
    ScenarioServeProgress serve_progress = {serve_progress_cb, &serve_shown};
    ScenarioExtras extras = {
        .overrides = (const char *const *)o->sets,
        .hardware = o->hardware,
        .perf_db = (const char *const *)o->perf_db,
        .max_rank_ops = o->max_ops,
        .requests = o->requests,
        .requests_format = o->requests_format,
        .requests_rate = o->rate,
        .requests_limit = o->limit,
        .max_concurrency = (uint32_t)o->max_conc,
        .exact = o->exact,
        .progress = isatty(STDERR_FILENO) && !o->quiet && !o->json ? &serve_progress : NULL,
    };
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = NULL;
    /* Loading (and lowering a model) can take seconds at a million ranks: say so first. */
    bool status = isatty(STDERR_FILENO) && !o->quiet && !o->json;
    if (status) {
        fputs(o->vtext ? "  loading: lowering the vLLM command line ..."
                       : "  loading: reading and lowering the scenario ...",
              stderr);
        fflush(stderr);
    }
    if (cli_workload_parse(o->prefill, o->decode, &extras.prefill, &extras.prefill_ctx,
                           &extras.decode, &err) &&
        cli_input_paths_check(o->vtext ? NULL : o->path, o->hardware, &err))
        sc = o->vtext ? runner_load_string(o->vtext, o->path, &extras, &err)
                      : runner_load(o->path, &extras, &err);
    if (serve_shown || status)
        fputs("\r\033[K", stderr);
    if (sc && o->sets) { /* the run is named by its overrides: name[key=value, ...] */
        char *named = cli_run_name(sc->name, (const char *const *)o->sets);
        g_free(sc->name);
        sc->name = named;
    }
    if (sc && !runner_check_work(sc, o->max_ops, &err))
        g_clear_pointer(&sc, scenario_free); /* too big: refused below */
    if (extras.prefill)
        g_array_unref(extras.prefill);
    if (extras.prefill_ctx)
        g_array_unref(extras.prefill_ctx);
    if (extras.decode)
        g_array_unref(extras.decode);
    /* Input that never reached a simulation is not a run: nothing is stored, and `latest`
     * stays the last run that did (doc/decisions.md). A sweep stores the variants vLLM's rules
     * refuse, since they are part of its answer. */
    if (!sc) {
        g_autofree char *msg = o->vtext ? command_error(err->message) : g_strdup(err->message);
        cli_error("%s", msg);
    }
    return g_steal_pointer(&sc);
}

/* What a stored run is, for the report: the run's row as run_simulate wrote it. */
typedef struct {
    int64_t run_id;
    char *hw;        /* runner_hardware_line */
    char *overrides; /* run_overrides, may be NULL */
    RunnerLabels lb;
    StoreRunInfo info; /* the run's row as stored (borrows from the scenario and the above) */
    RunnerResult *res;
} RunDone;

static void run_done_clear(RunDone *d)
{
    g_free(d->hw);
    g_free(d->overrides);
    runner_labels_clear(&d->lb);
    g_clear_pointer(&d->res, runner_result_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RunDone, run_done_clear)

/* What a row of a time line adds to the database, for the size stated before it is written:
 * measured, the 200-request serving scenario's 1,577,600 timeline_ops rows (with the run's
 * other rows) made a 68.2 MB file (43 B a row). */
#define RUN_BYTES_PER_ROW 43.0

/* Before the run is written (on a terminal): the size of the time line about to be stored, as
 * the store counted it — records made, distinct time lines (ranks that ran the same ops at the
 * same times share one), the rows and about how many bytes they make — so a long store is
 * expected; store_progress_cb then counts the rows as they are written. */
static void run_storing_status(const RunOptions *o, bool tty, StoreRun *sr)
{
    if (!tty)
        return;
    if (o->timeline_level == SCHED_TIMELINE_NONE) {
        fputs("\r\033[K  storing: the run's summary (--timeline none) ...", stderr);
    } else {
        StoreTimelinesSize z = store_run_size(sr);
        g_autofree char *lines =
            z.timelines ? g_strdup_printf("%" G_GUINT64_FORMAT " distinct time line%s of ",
                                          z.timelines, z.timelines == 1 ? "" : "s")
                        : g_strdup("");
        g_autofree char *bytes = g_format_size((guint64)((double)z.rows * RUN_BYTES_PER_ROW));
        /* a line stored as segments keeps each distinct step once: fewer rows, known only as
         * they are written, so its size is an upper bound */
        fprintf(stderr,
                "\r\033[K  storing: the %s time line, %" G_GUINT64_FORMAT " op records: %s%"
                G_GUINT64_FORMAT " records (%s %s%s) ...",
                cli_timeline_name(o->timeline_level), z.records, lines, z.rows,
                z.segmented ? "at most" : "about", bytes,
                z.segmented ? "; each distinct step stored once" : "");
    }
    fflush(stderr);
}

static void store_progress_cb(void *data, uint64_t done, uint64_t total)
{
    (void)data;
    fprintf(stderr,
            "\r\033[K  storing: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
            " records (%.0f %%) ...",
            done, total, total ? 100.0 * (double)done / (double)total : 100.0);
    fflush(stderr);
}

/* Simulates `sc` into a new run of `store` (progress on a terminal), then writes --trace.
 * Returns CLI_EXIT_OK with `d` filled, or an exit code after printing the error. */
static int run_simulate(const RunOptions *o, const Scenario *sc, Store *store, RunDone *d)
{
    g_autoptr(GError) err = NULL;
    d->hw = runner_hardware_line(sc);
    d->overrides = run_overrides(o);
    runner_labels(sc, &d->lb);
    d->info = (StoreRunInfo){
        .name = sc->name,
        .kind = sc->kind,
        .path = sc->path,
        .scenario = sc->text,
        .timeline = cli_timeline_name(o->timeline_level),
        .hardware = d->hw,
        .not_simulated = sc->ignored_flags,
        .serve = sc->serve,
        .model = d->lb.model,
        .layout = d->lb.layout,
        .vllm = d->lb.vllm,
        .overrides = d->overrides,
    };
    StoreRun *sr = store_run_begin(store, &d->info, sc->program, &err);
    if (!sr) {
        cli_error("%s", err->message);
        return CLI_EXIT_INTERNAL;
    }
    Progress prog = {o->t0, false};
    bool tty = isatty(STDERR_FILENO) && !o->quiet && !o->json;
    if (tty && sc->program) {
        fprintf(stderr,
                "\r\033[K  simulating: %u ranks, %" G_GUINT64_FORMAT " rank-ops to run ...",
                sc->program->n_ranks, sched_program_total_op_count(sc->program));
        fflush(stderr);
        prog.shown = true;
    }
    d->res = runner_simulate(sc, o->timeline_level, store_run_record, sr, tty ? progress_cb : NULL,
                             tty ? &prog : NULL);
    if (prog.shown)
        fputs("\r\033[K", stderr);
    if (d->res->memory)
        store_run_set_memory(sr, d->res->memory);
    if (d->res->steps) {
        store_run_set_serve(sr, d->res->steps);
        if (!d->info.serve)
            d->info.serve = d->res->steps;
    }
    double wall = elapsed_ms(o->t0);
    run_storing_status(o, tty, sr);
    if (tty)
        store_run_set_progress(sr, store_progress_cb, NULL);
    d->run_id =
        store_run_finish(sr, d->res->outcome, d->res->status, d->res->exit_code, wall, &err);
    if (tty)
        fputs("\r\033[K", stderr);
    if (d->run_id < 0) {
        cli_error("%s", err->message);
        return CLI_EXIT_INTERNAL;
    }
    if (o->trace && !trace_write(store, d->run_id, o->trace, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INTERNAL;
    }
    return CLI_EXIT_OK;
}

/* The report on stdout: one JSON object (--json), nothing (--quiet) or the text report. */
static void run_print(const RunOptions *o, const Scenario *sc, const RunDone *d)
{
    const RunnerResult *res = d->res;
    StoreRunInfo rr = d->info; /* and what the run became */
    rr.id = d->run_id;
    rr.db_path = o->db_path;
    rr.trace_path = o->trace;
    rr.status = res->status;
    rr.exit_code = res->exit_code;
    rr.wall_ms = elapsed_ms(o->t0);
    rr.weights = res->memory ? res->memory->weights_format : NULL;
    if (o->json) {
        g_autofree char *js =
            report_json_with_memory(&rr, res->outcome, res->memory, o->memory_detail);
        printf("%s\n", js);
    } else if (!o->quiet) {
        report_text(stdout, &rr, res->outcome);
        report_serve_text(stdout, rr.serve);
        report_memory_text(stdout, res->memory, o->memory_detail);
        report_footer(stdout, &rr);
    }
}

int cli_run(int argc, char **argv)
{
    g_auto(RunOptions) o = {0};
    int code = run_parse(argc, argv, &o);
    if (code != CLI_EXIT_OK)
        return code;
    g_autoptr(Scenario) sc = run_load(&o);
    if (!sc)
        return CLI_EXIT_INVALID;
    if (!o.json && !o.quiet) {
        for (guint i = 0; i < sc->override_notes->len; i++)
            fprintf(stderr, "ranksim: note: %s\n", (char *)g_ptr_array_index(sc->override_notes, i));
        for (guint i = 0; i < sc->ignored_flags->len; i++)
            fprintf(stderr, "ranksim: note: %s\n", (char *)g_ptr_array_index(sc->ignored_flags, i));
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) store = cli_store_open_write(o.db_path, &err);
    if (!store) {
        cli_error("%s", err->message);
        return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    g_auto(RunDone) d = {0};
    uint64_t before = db_bytes(o.db_path);
    code = run_simulate(&o, sc, store, &d);
    if (code != CLI_EXIT_OK)
        return code;
    run_print(&o, sc, &d);
    uint64_t after = db_bytes(o.db_path);
    if (!o.json && !o.quiet && o.timeline_level == SCHED_TIMELINE_FULL &&
        after > before + RUN_BIG_TIMELINE_BYTES)
        fprintf(stderr,
                "ranksim: note: this run's full time line added %.0f MB to %s "
                "(--timeline collectives or none store less; ranksim prune removes runs)\n",
                (double)(after - before) / 1e6, o.db_path);
    return d.res->exit_code;
}
