/* src/cli/cli.c — `ranksim` subcommands. Each subcommand parses its own options with a
 * GOptionContext (so `ranksim run --help` works) and maps failures to the exit codes in cli.h.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd-common.h"
#include "../util/outfile.h"
#include "../output/report.h"
#include "../run/runner.h"
#include "../input/scenario.h"
#include "../store/store.h"
#include "revision.h"
#include "../util/textwrap.h"
#include "../input/vllm-args.h"
#include "../output/trace.h"

static void print_error(const char *msg)
{
    cli_error("%s", msg);
}

static int usage(void)
{
    fprintf(stderr,
            "Usage: ranksim COMMAND [OPTIONS]\n"
            "\n"
            "Simulates every rank of an LLM-inference cluster and reports hangs, collective\n"
            "mismatches, timeouts and the time line.\n"
            "\n"
            "Commands:\n"
            "  run SCENARIO            simulate one scenario file and store the result\n"
            "  sweep SCENARIO --vary KEY=V1,V2,...\n"
            "                          run every combination of the values on a thread pool\n"
            "  runs                    list the stored runs\n"
            "  report [RUN|latest]     print the report of a stored run\n"
            "  explain RUN             tell why a run failed: first divergence, wait-for graph\n"
            "                          (--dot FILE for Graphviz), cycles, culprits, watchdog\n"
            "  trace RUN -o FILE.json  write the Chrome/Perfetto trace of a stored run\n"
            "  plot RUN -o FILE.png    draw its time line (.png, .svg, .pdf): lanes per rank,\n"
            "                          the culprit marked\n"
            "  diff RUN_A RUN_B        compare two stored runs\n"
            "  prune RUN...|--sweep N|--older-than AGE\n"
            "                          delete stored runs from every table at once\n"
            "  import PATH...          diagnose a real hang from Flight Recorder dumps or NCCL\n"
            "                          logs and store it as a run\n"
            "  match RUN SCENARIO      replay a hypothesis: does the scenario reproduce the\n"
            "                          imported hang (same group, instance, sizes, culprit)?\n"
            "  list models|hardware|backends\n"
            "                          what this binary knows: presets, checkpoints, devices\n"
            "  help [COMMAND]          show help\n"
            "\n"
            "Options:\n"
            "  --version        print the version\n"
            "\n"
            "Run 'ranksim COMMAND --help' for the options of a command.\n");
    return CLI_EXIT_INVALID;
}

/* ---- run ---- */

typedef struct {
    char *db;
    char *trace;
    gboolean json;
    char *timeline;
    char **sets;
    gboolean quiet;
    char *hardware;
    char **prefill;
    char **decode;
    gboolean memory_detail;
    char *max_rank_ops;
    char *model_config;
    char *requests;
    gboolean exact;
} RunOptions;

static void run_options_clear(RunOptions *o)
{
    g_free(o->db);
    g_free(o->trace);
    g_free(o->timeline);
    g_strfreev(o->sets);
    g_free(o->hardware);
    g_strfreev(o->prefill);
    g_strfreev(o->decode);
    g_free(o->max_rank_ops);
    g_free(o->model_config);
    g_free(o->requests);
}

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
    for (guint i = 0; o->prefill && o->prefill[i]; i++)
        g_string_append_printf(s, "%s--prefill %s", s->len ? ", " : "", o->prefill[i]);
    for (guint i = 0; o->decode && o->decode[i]; i++)
        g_string_append_printf(s, "%s--decode %s", s->len ? ", " : "", o->decode[i]);
    if (o->requests)
        g_string_append_printf(s, "%s--requests %s", s->len ? ", " : "", o->requests);
    return g_string_free(s, s->len == 0);
}

static double elapsed_ms(gint64 start_us)
{
    return (double)(g_get_monotonic_time() - start_us) / 1000.0;
}

/* Progress on stderr for runs that take more than a second, when stderr is a terminal. */
typedef struct {
    gint64 start_us;
    bool shown;
} Progress;

static void progress_cb(void *ud, int64_t now_ns, uint64_t rank_ops, uint64_t events)
{
    Progress *p = ud;
    double wall = (double)(g_get_monotonic_time() - p->start_us) / 1e6;
    if (wall < 1.0)
        return;
    g_autofree char *t = sched_format_ns(now_ns);
    fprintf(stderr,
            "\r  simulating: t = %s, %" G_GUINT64_FORMAT " rank-ops, %" G_GUINT64_FORMAT
            " events, %.0f s wall   ",
            t, rank_ops, events, wall);
    fflush(stderr);
    p->shown = true;
}

static int cmd_run(int argc, char **argv)
{
    RunOptions o = {0};
    GOptionEntry entries[] = {
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &o.db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &o.trace,
         "Also write a Chrome/Perfetto trace of the run", "FILE.json"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &o.json, "Print the report as one JSON object", NULL},
        {"timeline", 0, 0, G_OPTION_ARG_STRING, &o.timeline,
         "Ops to store: full (default), collectives, none", "LEVEL"},
        {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.sets,
         "Override a scenario key, e.g. --set watchdog.collective_timeout_s=300", "KEY=VALUE"},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o.quiet, "Print nothing but errors", NULL},
        {"memory-detail", 0, 0, G_OPTION_ARG_NONE, &o.memory_detail,
         "List every tensor of the memory plan (model scenarios)", NULL},
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &o.hardware,
         "Hardware preset or file, for scenarios that name none (vLLM eval configs)", "NAME|FILE"},
        {"model-config", 0, 0, G_OPTION_ARG_FILENAME, &o.model_config,
         "A Hugging Face config.json for the model, instead of the scenario's model: or the "
         "eval config's model_name (same as --set model=FILE)",
         "FILE"},
        {"prefill", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.prefill,
         "A prefill step of N tokens, for scenarios without a workload (repeatable)", "N"},
        {"decode", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.decode,
         "A decode step of B sequences at context CTX, for scenarios without a workload", "B:CTX"},
        {"requests", 0, 0, G_OPTION_ARG_FILENAME, &o.requests,
         "Serve the requests of a trace (JSON lines or CSV: arrival_s, prompt, output) with "
         "vLLM's scheduler, as the workload",
         "FILE"},
        {"exact", 0, 0, G_OPTION_ARG_NONE, &o.exact,
         "Serving: simulate every scheduled step, even one identical to a step simulated before",
         NULL},
        {"max-rank-ops", 0, 0, G_OPTION_ARG_STRING, &o.max_rank_ops,
         "Refuse a run of more rank-ops (repeats expanded) than N (default 1000000000; 0: no "
         "limit)",
         "N"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    /* `-- vllm serve MODEL FLAGS...`: the vLLM command line after "--" stands for an eval
     * config; GLib parses only what comes before it */
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
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        print_error(err->message);
        run_options_clear(&o);
        return CLI_EXIT_INVALID;
    }
    if (vcmd ? argc != 1 : argc != 2) {
        print_error(vcmd       ? "run: give a SCENARIO or -- vllm serve MODEL [FLAGS...], not both"
                    : argc < 2 ? "run: missing SCENARIO (try 'ranksim run --help')"
                               : "run: exactly one SCENARIO expected");
        run_options_clear(&o);
        return CLI_EXIT_INVALID;
    }
    g_autofree char *vtext = NULL;
    if (vcmd && !(vtext = vllm_args_command_to_eval(vn, vcmd, &err))) {
        print_error(err->message);
        run_options_clear(&o);
        return CLI_EXIT_INVALID;
    }
    const char *path = vcmd ? "vllm-serve" : argv[1];
    SchedTimeline timeline = SCHED_TIMELINE_FULL;
    if (o.timeline && !cli_timeline_parse(o.timeline, &timeline)) {
        g_autofree char *msg = g_strdup_printf(
            "--timeline '%s': unknown level; valid: full, collectives, none", o.timeline);
        print_error(msg);
        run_options_clear(&o);
        return CLI_EXIT_INVALID;
    }
    const char *db_path = o.db ? o.db : CLI_DEFAULT_DB;
    gint64 t0 = g_get_monotonic_time();
    uint64_t max_rank_ops;
    if (!cli_max_rank_ops_parse(o.max_rank_ops, &max_rank_ops, &err)) {
        print_error(err->message);
        run_options_clear(&o);
        return CLI_EXIT_INVALID;
    }

    if (o.model_config) {
        /* --model-config FILE is --set model=FILE with the path from the working directory */
        g_autofree char *abs = g_canonicalize_filename(o.model_config, NULL);
        guint n = o.sets ? g_strv_length(o.sets) : 0;
        o.sets = g_renew(char *, o.sets, n + 2);
        o.sets[n] = g_strdup_printf("model=%s", abs);
        o.sets[n + 1] = NULL;
    }
    ScenarioExtras extras = {(const char *const *)o.sets,
                             o.hardware,
                             max_rank_ops,
                             NULL,
                             NULL,
                             o.requests,
                             o.exact,
                             isatty(STDERR_FILENO) && !o.quiet && !o.json,
                             false};
    g_autoptr(Scenario) sc = NULL;
    if (cli_workload_parse(o.prefill, o.decode, &extras.prefill, &extras.decode, &err) &&
        (vtext ? cli_input_paths_check(NULL, o.hardware, &err)
               : cli_input_paths_check(path, o.hardware, &err)))
        sc = vtext ? scenario_load_string_extras(vtext, path, &extras, &err)
                   : scenario_load_extras(path, &extras, &err);
    if (sc && o.sets) { /* the run is named by its overrides: name[key=value, ...] */
        char *named = cli_run_name(sc->name, (const char *const *)o.sets);
        g_free(sc->name);
        sc->name = named;
    }
    if (sc && !runner_check_work(sc, max_rank_ops, &err))
        g_clear_pointer(&sc, scenario_free); /* too big: stored as an invalid run below */
    if (extras.prefill)
        g_array_unref(extras.prefill);
    if (extras.decode)
        g_array_unref(extras.decode);
    if (!sc) {
        print_error(err->message);
        /* Keep a record of the rejected run, like a sweep does; best effort. */
        g_autoptr(GError) serr = NULL;
        g_autoptr(Store) st = store_open(db_path, &serr);
        if (st)
            runner_store_invalid(st, path, NULL, cli_timeline_name(timeline), err->message, NULL);
        run_options_clear(&o);
        return CLI_EXIT_INVALID;
    }

    if (!o.json && !o.quiet)
        for (guint i = 0; sc->ignored_flags && i < sc->ignored_flags->len; i++)
            fprintf(stderr, "ranksim: note: %s\n", (char *)g_ptr_array_index(sc->ignored_flags, i));
    g_autoptr(Store) store = store_open(db_path, &err);
    if (!store) {
        print_error(err->message);
        run_options_clear(&o);
        return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    g_autofree char *hw = runner_hardware_line(sc);
    g_autofree char *overrides = run_overrides(&o);
    g_auto(RunnerLabels) lb = {0};
    runner_labels(sc, &lb);
    StoreRunInfo info = {.name = sc->name,
                         .kind = sc->kind,
                         .path = sc->path,
                         .scenario = sc->text,
                         .timeline = cli_timeline_name(timeline),
                         .hardware = hw,
                         .not_simulated = sc->ignored_flags,
                         .serve = sc->serve,
                         .model = lb.model,
                         .layout = lb.layout,
                         .vllm = lb.vllm,
                         .overrides = overrides};
    StoreRun *sr = store_run_begin(store, &info, sc->program, &err);
    if (!sr) {
        print_error(err->message);
        run_options_clear(&o);
        return CLI_EXIT_INTERNAL;
    }
    Progress prog = {t0, false};
    bool tty = isatty(STDERR_FILENO);
    g_autoptr(RunnerResult) res = runner_simulate(sc, timeline, store_run_record, sr,
                                                  tty ? progress_cb : NULL, tty ? &prog : NULL);
    if (prog.shown)
        fprintf(stderr, "\r%*s\r", 78, "");
    const SchedOutcome *out = res->outcome;
    if (res->memory)
        store_run_set_memory(sr, res->memory);
    int code = res->exit_code;
    const char *status = res->status;
    double wall = elapsed_ms(t0);
    int64_t run_id = store_run_finish(sr, out, status, code, wall, &err);
    if (run_id < 0) {
        print_error(err->message);
        run_options_clear(&o);
        return CLI_EXIT_INTERNAL;
    }
    if (o.trace && !trace_write(store, run_id, o.trace, &err)) {
        print_error(err->message);
        run_options_clear(&o);
        return CLI_EXIT_INTERNAL;
    }
    StoreRunInfo rr = {.id = run_id,
                       .name = sc->name,
                       .kind = sc->kind,
                       .path = sc->path,
                       .db_path = db_path,
                       .trace_path = o.trace,
                       .status = status,
                       .exit_code = code,
                       .wall_ms = elapsed_ms(t0),
                       .hardware = hw,
                       .not_simulated = sc->ignored_flags,
                       .serve = sc->serve,
                       .model = lb.model,
                       .layout = lb.layout,
                       .vllm = lb.vllm,
                       .overrides = overrides,
                       .weights = res->memory ? res->memory->weights_format : NULL};
    if (o.json) {
        g_autofree char *js = report_json_with_memory(&rr, out, res->memory, o.memory_detail);
        printf("%s\n", js);
    } else if (!o.quiet) {
        report_text(stdout, &rr, out);
        report_serve_text(stdout, sc->serve);
        report_memory_text(stdout, res->memory, o.memory_detail);
        report_footer(stdout, &rr);
    }
    run_options_clear(&o);
    return code;
}

static int dispatch(int argc, char **argv);

/* Whether the command's stdout is text for a person (folded at the terminal's width): not
 * JSON, DOT or a trace written to stdout (`--json`, `-o -`, `--dot -`), nor after `--` (a
 * pasted vLLM command line is read, not printed, but its flags are not ranksim's to judge). */
static bool text_output(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--csv") == 0 ||
            strcmp(argv[i], "-o-") == 0 || strcmp(argv[i], "--dot=-") == 0 ||
            strcmp(argv[i], "--output=-") == 0)
            return false;
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--dot") == 0 ||
             strcmp(argv[i], "--output") == 0) &&
            i + 1 < argc && strcmp(argv[i + 1], "-") == 0)
            return false;
    }
    return true;
}

int cli_main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    bool wrapped = text_output(argc, argv) && text_wrap_stdout();
    int code = dispatch(argc, argv);
    int werr = wrapped ? text_wrap_finish() : 0;
    if (werr) {
        if (code != CLI_EXIT_INTERNAL) {
            g_autofree char *msg = g_strdup_printf("writing to stdout: %s", g_strerror(werr));
            print_error(msg);
        }
        return CLI_EXIT_INTERNAL;
    }
    /* A failed write to stdout (a full disk, a closed pipe) is an environment error, whatever
     * the command did: exit 1 with the reason rather than a silent truncated output. */
    g_autoptr(GError) err = NULL;
    if (!out_file_flush_stdout(&err)) {
        if (code != CLI_EXIT_INTERNAL) /* else the command has said why already */
            print_error(err->message);
        return CLI_EXIT_INTERNAL;
    }
    return code;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("ranksim %s (%s)\n", RANKSIM_VERSION, RANKSIM_REVISION);
        return CLI_EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
    } commands[] = {
        {"sweep", cli_sweep},     {"runs", cli_runs},   {"report", cli_report},
        {"explain", cli_explain}, {"trace", cli_trace}, {"diff", cli_diff},
        {"plot", cli_plot},       {"list", cli_list},   {"import", cli_import},
        {"match", cli_match},     {"prune", cli_prune},
    };
    /* GLib's usage line starts with the program name: "ranksim run [OPTION...] SCENARIO". */
    g_autofree char *prg =
        g_strdup_printf("ranksim %s", argc >= 3 && strcmp(cmd, "help") == 0 ? argv[2] : cmd);
    g_set_prgname(prg);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc < 3) {
            usage();
            return CLI_EXIT_OK;
        }
        char *args[] = {argv[2], "--help", NULL};
        if (strcmp(argv[2], "run") == 0)
            return cmd_run(2, args);
        for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
            if (strcmp(argv[2], commands[i].name) == 0)
                return commands[i].fn(2, args);
        g_autofree char *msg =
            g_strdup_printf("help: unknown command '%s'; valid: run, sweep, runs, report, explain, "
                            "trace, plot, diff, list, import, match",
                            argv[2]);
        print_error(msg);
        return CLI_EXIT_INVALID;
    }
    g_autofree char *msg = g_strdup_printf("unknown command '%s'; valid: run, sweep, runs, report, "
                                           "explain, trace, plot, diff, list, import, match, help",
                                           cmd);
    print_error(msg);
    return CLI_EXIT_INVALID;
}
