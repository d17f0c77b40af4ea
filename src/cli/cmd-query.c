/* src/cli/cmd-query.c — the subcommands that read the results database: report, runs, explain,
 * trace and diff. None of them simulates; all of them take --db (default results/ranksim.db)
 * and refuse to create a database that does not exist. A RUN is an id or `latest`.
 *
 * Exit codes: 0 when the command did its job (whatever the stored run's outcome: that is in
 * the output), 2 for bad arguments, an unknown run or a missing database, 1 when the database
 * or an output file cannot be read or written.
 */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "../output/diff-inputs.h"
#include "../output/explain.h"
#include "../util/outfile.h"
#include "../store/query.h"
#include "../output/report.h"
#include "../output/plot.h"
#include "../util/textwrap.h"
#include "../output/trace.h"

/* Parses the options of a read-only command: --db (into *db), then the command's own
 * `entries` (NULL: none). Returns false after printing the error (exit 2). */
static bool parse_command(const char *params, const char *summary, char **db,
                          const GOptionEntry *entries, int *argc, char ***argv)
{
    const GOptionEntry db_entry[] = {
        {"db", 0, 0, G_OPTION_ARG_FILENAME, db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(params);
    g_option_context_set_summary(ctx, summary);
    g_option_context_set_description(
        ctx, "Exit status: 0 done, 2 bad arguments, an unknown run or no database,\n"
             "1 the database or an output file cannot be read or written.\n"
             "RUN is a run id (see 'ranksim runs'), 'latest' or 'latest~N' (the Nth before "
             "it).\nDetails: doc/cli.md.\n");
    g_option_context_add_main_entries(ctx, db_entry, NULL);
    if (entries)
        g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, argc, argv, &err)) {
        cli_error("%s", err->message);
        return false;
    }
    return true;
}

/* Loads run `arg` from `db`; prints the error and sets *code on failure. */
static QueryRun *load_run(Store *st, const char *arg, int *code)
{
    int64_t id = cli_run_resolve(st, arg, code);
    if (id < 0)
        return NULL;
    g_autoptr(GError) err = NULL;
    QueryRun *r = query_run_load(st, id, &err);
    if (!r) {
        cli_error("%s", err->message);
        *code = g_error_matches(err, QUERY_ERROR, QUERY_ERROR_NOT_FOUND) ? CLI_EXIT_INVALID
                                                                         : CLI_EXIT_INTERNAL;
    }
    return r;
}

/* What a command opened: the database and the runs it loaded from it. */
typedef struct {
    const char *db_path;
    Store *st;
    QueryRun *run[2];
} Opened;

static void opened_clear(Opened *o)
{
    g_clear_pointer(&o->run[1], query_run_free);
    g_clear_pointer(&o->run[0], query_run_free);
    g_clear_pointer(&o->st, store_close);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Opened, opened_clear)

/* Opens the database `db` names (CLI_DEFAULT_DB when NULL), which must exist, then loads
 * runs `run_a` and `run_b` (each NULL: not wanted). Returns false after printing the error,
 * *code set; true with *code CLI_EXIT_OK. */
static bool open_runs(Opened *o, const char *db, const char *run_a, const char *run_b, int *code)
{
    *code = CLI_EXIT_OK;
    o->db_path = db ? db : CLI_DEFAULT_DB;
    o->st = cli_store_open_existing(o->db_path, code);
    if (!o->st)
        return false;
    const char *names[] = {run_a, run_b};
    for (int i = 0; i < 2 && names[i]; i++)
        if (!(o->run[i] = load_run(o->st, names[i], code)))
            return false;
    return true;
}

static char *run_title(const QueryRun *r)
{
    return g_strdup_printf("run %" G_GINT64_FORMAT " (%s)", r->info.id, r->info.name ? r->info.name : "?");
}

static bool is_invalid(const QueryRun *r)
{
    return g_strcmp0(r->info.status, "invalid") == 0;
}

/* The config error of an invalid run. */
static const char *invalid_message(const QueryRun *r)
{
    const SchedDiag *d = query_first_diag(r->outcome);
    return d ? d->message : "(no message stored)";
}

/* ---- report ---- */

int cli_report(int argc, char **argv)
{
    g_autofree char *db = NULL;
    gboolean json = FALSE, memory_detail = FALSE;
    GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the report as one JSON object", NULL},
        {"memory-detail", 0, 0, G_OPTION_ARG_NONE, &memory_detail,
         "List every tensor of the memory plan (model scenarios)", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_command(
            "[RUN|latest] - the report of a stored run",
            "Prints the report of a run from the database, as 'ranksim run' printed it:\n"
            "outcome, diagnostics, per-rank times and the memory plan. RUN defaults to\n"
            "the latest run.",
            &db, entries, &argc, &argv))
        return CLI_EXIT_INVALID;
    if (argc > 2) {
        cli_error("report: at most one RUN expected (try 'ranksim report --help')");
        return CLI_EXIT_INVALID;
    }
    g_auto(Opened) o = {0};
    int code;
    if (!open_runs(&o, db, argc == 2 ? argv[1] : "latest", NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    g_autoptr(GError) err = NULL;
    g_autoptr(ModelMemPlan) mem = query_memory_load(o.st, r->info.id, memory_detail, &err);
    if (err) {
        cli_error("%s", err->message);
        return CLI_EXIT_INTERNAL;
    }
    g_autoptr(ModelServe) serve = query_serve_load(o.st, r->info.id);
    StoreRunInfo rr = r->info;
    rr.db_path = o.db_path;
    rr.serve = serve;
    if (json) {
        g_autofree char *js = report_json_with_memory(&rr, r->outcome, mem, memory_detail);
        printf("%s\n", js);
        return CLI_EXIT_OK;
    }
    if (is_invalid(r)) {
        printf("%s: INVALID — the scenario was rejected; nothing was simulated\n  %s\n",
               r->info.name ? r->info.name : "?", invalid_message(r));
        printf("\nstored as run %" G_GINT64_FORMAT " in %s\n", r->info.id, o.db_path);
    } else {
        report_text(stdout, &rr, r->outcome);
        report_serve_text(stdout, serve);
        report_memory_text(stdout, mem, memory_detail);
        report_footer(stdout, &rr);
    }
    printf("recorded %s by ranksim %s, timeline %s%s%s\n", r->info.created_at ? r->info.created_at : "?",
           r->info.version ? r->info.version : "?", r->info.timeline ? r->info.timeline : "?",
           r->info.path ? "; scenario " : "", r->info.path ? r->info.path : "");
    return CLI_EXIT_OK;
}

/* ---- runs ---- */

/* The hardware column: the device name ("b200"), not the whole fabric line. */
static char *hardware_short(const char *line)
{
    if (!line)
        return g_strdup("-");
    const char *sp = strpbrk(line, " ,");
    return sp ? g_strndup(line, (gsize)(sp - line)) : g_strdup(line);
}

static void json_add_str_or_null(JsonBuilder *jb, const char *name, const char *v)
{
    json_builder_set_member_name(jb, name);
    if (v)
        json_builder_add_string_value(jb, v);
    else
        json_builder_add_null_value(jb);
}

/* One run of `runs --json`: the runs columns, then its first finding. */
static void runs_json_row(JsonBuilder *jb, const QueryListedRun *r)
{
    const StoreRunInfo *h = &r->info;
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "id");
    json_builder_add_int_value(jb, h->id);
    json_add_str_or_null(jb, "name", h->name);
    json_add_str_or_null(jb, "kind", h->kind);
    json_add_str_or_null(jb, "status", h->status);
    json_builder_set_member_name(jb, "exit_code");
    json_builder_add_int_value(jb, h->exit_code);
    json_builder_set_member_name(jb, "ranks");
    if (r->ranks >= 0)
        json_builder_add_int_value(jb, r->ranks);
    else
        json_builder_add_null_value(jb);
    json_builder_set_member_name(jb, "sim_end_us");
    if (r->has_end)
        json_builder_add_double_value(jb, r->sim_end_us);
    else
        json_builder_add_null_value(jb);
    json_add_str_or_null(jb, "created_at", h->created_at);
    json_add_str_or_null(jb, "model", h->model);
    json_add_str_or_null(jb, "layout", h->layout);
    json_add_str_or_null(jb, "hardware", h->hardware);
    json_add_str_or_null(jb, "vllm", h->vllm);
    json_add_str_or_null(jb, "overrides", h->overrides);
    json_builder_set_member_name(jb, "sweep_id");
    if (h->sweep_id > 0)
        json_builder_add_int_value(jb, h->sweep_id);
    else
        json_builder_add_null_value(jb);
    json_builder_set_member_name(jb, "first_diagnostic");
    if (!r->diag_kind) {
        json_builder_add_null_value(jb);
    } else {
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "kind");
        json_builder_add_string_value(jb, r->diag_kind);
        json_builder_set_member_name(jb, "message");
        json_builder_add_string_value(jb, r->diag_message);
        json_builder_end_object(jb);
    }
    json_builder_end_object(jb);
}

/* `runs --json`: the database, the count, the runs listed. */
static void runs_print_json(const char *db_path, int64_t total, const GPtrArray *runs)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "db");
    json_builder_add_string_value(jb, db_path);
    json_builder_set_member_name(jb, "total");
    json_builder_add_int_value(jb, total);
    json_builder_set_member_name(jb, "runs");
    json_builder_begin_array(jb);
    for (guint i = 0; i < runs->len; i++)
        runs_json_row(jb, g_ptr_array_index(runs, i));
    json_builder_end_array(jb);
    json_builder_end_object(jb);
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    g_autofree char *text = json_to_string(root, TRUE);
    printf("%s\n", text);
}

/* The cells of the table, one row per run. */
enum { C_ID, C_NAME, C_OUT, C_MODEL, C_LAYOUT, C_HW, C_END, C_WHEN, C_DIAG, C_N };

/* A listed run's cells (a NULL-terminated strv of C_N strings). */
static char **runs_cells(const QueryListedRun *r)
{
    const StoreRunInfo *h = &r->info;
    char **row = g_new0(char *, C_N + 1);
    row[C_ID] = g_strdup_printf("%" G_GINT64_FORMAT, h->id);
    row[C_NAME] = g_strdup(h->name ? h->name : "?");
    const char *status = h->status;
    row[C_OUT] = g_strdup(!status                         ? "?"
                          : strcmp(status, "ok") == 0     ? "ok"
                          : strcmp(status, "failed") == 0 ? "FAILED"
                                                          : status);
    if (!h->model)
        row[C_MODEL] = g_strdup(g_strcmp0(h->kind, "import") == 0 ? "(import)" : "-");
    else if (g_str_has_prefix(h->model, "preset ")) /* "preset glm-5.2" -> "glm-5.2" */
        row[C_MODEL] = g_strdup(h->model + 7);
    else
        row[C_MODEL] = g_strdup(h->model);
    if (h->layout)
        row[C_LAYOUT] = g_strdup(h->layout);
    else
        row[C_LAYOUT] = r->ranks < 0 ? g_strdup("-")
                                     : g_strdup_printf("%" G_GINT64_FORMAT " ranks", r->ranks);
    row[C_HW] = hardware_short(h->hardware);
    row[C_END] = !r->has_end ? g_strdup("-")
                             : sched_format_ns((int64_t)llround(r->sim_end_us * 1e3));
    row[C_WHEN] = g_strndup(h->created_at ? h->created_at : "-", 19);
    for (char *p = row[C_WHEN]; *p; p++)
        if (*p == 'T')
            *p = ' ';
    row[C_DIAG] = query_diag_summary(r->diag_kind, r->diag_message, 200);
    if (!*row[C_DIAG]) {
        g_free(row[C_DIAG]);
        row[C_DIAG] = g_strdup("-");
    }
    return row;
}

/* From 130 columns: one line per run (id, name, outcome, step time, model, layout, hardware,
 * when recorded), the first finding under it. `wmax`: each column's widest cell. */
static void runs_print_wide(const GPtrArray *rows, const int *wmax, int width)
{
    int indent = wmax[C_ID] + 2;
    int fixed = wmax[C_ID] + 2 + 2 + wmax[C_OUT] + 2 + wmax[C_END] + 2 + wmax[C_MODEL] + 2 +
                wmax[C_LAYOUT] + 2 + wmax[C_HW] + 2 + wmax[C_WHEN];
    int nam = MAX(12, MIN(wmax[C_NAME], width - fixed));
    printf("%*s  %-*s  %-*s  %*s  %-*s  %-*s  %-*s  %s\n", wmax[C_ID], "id", nam, "name",
           wmax[C_OUT], "outcome", wmax[C_END], "step time", wmax[C_MODEL], "model",
           wmax[C_LAYOUT], "layout", wmax[C_HW], "hw", "created");
    for (guint i = 0; i < rows->len; i++) {
        char **row = g_ptr_array_index(rows, i);
        g_autofree char *nm = query_short_name(row[C_NAME], (guint)nam);
        printf("%*s  %-*s  %-*s  %*s  %-*s  %-*s  %-*s  %s\n", wmax[C_ID], row[C_ID], nam, nm,
               wmax[C_OUT], row[C_OUT], wmax[C_END], row[C_END], wmax[C_MODEL], row[C_MODEL],
               wmax[C_LAYOUT], row[C_LAYOUT], wmax[C_HW], row[C_HW], row[C_WHEN]);
        if (strcmp(row[C_DIAG], "-") != 0) {
            g_autofree char *dg = query_short_message(row[C_DIAG], (guint)MAX(8, width - indent));
            printf("%*s%s\n", indent, "", dg);
        }
    }
}

/* Prints `name` from column `name_col` on, its pieces (cut after ", ": a variant's overrides)
 * wrapped at `nam` columns. */
static void runs_print_wrapped_name(const char *name, int name_col, int nam)
{
    const char *p = name;
    int col = 0;
    while (*p) {
        const char *cut = strstr(p, ", ");
        size_t piece = cut ? (size_t)(cut - p) + 2 : strlen(p);
        int pw = (int)g_utf8_strlen(p, (gssize)piece);
        if (col && col + pw > nam) {
            printf("\n%*s", name_col, "");
            col = 0;
        }
        g_autofree char *text = g_strndup(p, piece);
        g_autofree char *fit =
            col == 0 && pw > nam ? query_short_message(text, (guint)nam) : g_strdup(text);
        fputs(fit, stdout);
        col += pw;
        p += piece;
    }
    printf("\n");
}

/* Narrower than 130 columns: the name last on the first line, wrapped; what it ran on the
 * second: "glm-5.2, PCP4 x TP1, DCP4, EP4, b200 — mismatch: ...". */
static void runs_print_narrow(const GPtrArray *rows, const int *wmax, int width)
{
    int name_col = wmax[C_ID] + 2 + wmax[C_OUT] + 2 + wmax[C_END] + 2;
    int nam = MAX(16, width - name_col);
    printf("%*s  %-*s  %*s  %s\n", wmax[C_ID], "id", wmax[C_OUT], "outcome", wmax[C_END],
           "step time", "name; model, layout, hardware — first finding");
    for (guint i = 0; i < rows->len; i++) {
        char **row = g_ptr_array_index(rows, i);
        printf("%*s  %-*s  %*s  ", wmax[C_ID], row[C_ID], wmax[C_OUT], row[C_OUT], wmax[C_END],
               row[C_END]);
        runs_print_wrapped_name(row[C_NAME], name_col, nam);
        g_autoptr(GString) second = g_string_new(NULL);
        g_string_append_printf(second, "%s, %s, %s", row[C_MODEL], row[C_LAYOUT], row[C_HW]);
        if (strcmp(row[C_DIAG], "-") != 0)
            g_string_append_printf(second, " — %s", row[C_DIAG]);
        g_autofree char *line = query_short_message(second->str, (guint)MAX(8, width - name_col));
        printf("%*s%s\n", name_col, "", line);
    }
}

/* The table laid out to the terminal's width. */
static void runs_print_table(const GPtrArray *runs)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    for (guint i = 0; i < runs->len; i++)
        g_ptr_array_add(rows, runs_cells(g_ptr_array_index(runs, i)));
    static const char *const head[C_N] = {"id", "name",      "outcome", "model",  "layout",
                                          "hw", "step time", "created", "finding"};
    int wmax[C_N] = {0};
    for (int c = 0; c < C_N; c++)
        wmax[c] = (int)strlen(head[c]);
    for (guint i = 0; i < rows->len; i++) {
        char **row = g_ptr_array_index(rows, i);
        for (int c = 0; c < C_N; c++)
            wmax[c] = MAX(wmax[c], (int)g_utf8_strlen(row[c], -1));
    }
    int width = text_width();
    if (width >= 130)
        runs_print_wide(rows, wmax, width);
    else
        runs_print_narrow(rows, wmax, width);
}

/* The line under the table: no runs, or how many were left out. */
static void runs_print_tail(const char *db_path, int64_t sweep, int64_t total, int64_t shown)
{
    if (total == 0 && sweep)
        printf("(no runs of sweep %" G_GINT64_FORMAT " in %s)\n", sweep, db_path);
    else if (total == 0)
        printf("(no runs in %s yet)\n", db_path);
    else if (shown < total)
        printf("(%" G_GINT64_FORMAT " older run%s not shown; --limit 0 lists all)\n", total - shown,
               total - shown == 1 ? "" : "s");
}

int cli_runs(int argc, char **argv)
{
    g_autofree char *db = NULL;
    int limit = 20;
    gint64 sweep = 0;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"limit", 'n', 0, G_OPTION_ARG_INT, &limit, "Show the last N runs (default 20; 0 = all)",
         "N"},
        {"sweep", 0, 0, G_OPTION_ARG_INT64, &sweep,
         "Only the runs of sweep N (the id 'ranksim sweep' printed)", "N"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the runs as one JSON object", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_command(
            "- list the stored runs",
            "Lists the runs of the database, oldest first: id, name (a variant's carries what it\n"
            "changed), outcome, model, parallel layout, hardware, the simulated step time and the\n"
            "first finding; at 130 columns and more also when it was recorded.",
            &db, entries, &argc, &argv))
        return CLI_EXIT_INVALID;
    if (argc != 1) {
        cli_error("runs: unexpected argument '%s' (try 'ranksim runs --help')", argv[1]);
        return CLI_EXIT_INVALID;
    }
    if (limit < 0) {
        cli_error("--limit %d: expected 0 (all) or a positive count", limit);
        return CLI_EXIT_INVALID;
    }
    if (sweep < 0) {
        cli_error("--sweep %" G_GINT64_FORMAT ": expected a sweep id (1, 2, ...)", sweep);
        return CLI_EXIT_INVALID;
    }
    g_auto(Opened) o = {0};
    int code;
    if (!open_runs(&o, db, NULL, NULL, &code))
        return code;
    int64_t total = 0;
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) runs = query_runs_list(o.st, limit, sweep, &total, &err);
    if (!runs) {
        cli_error("%s", err->message);
        return g_error_matches(err, QUERY_ERROR, QUERY_ERROR_BAD_ARGUMENT) ? CLI_EXIT_INVALID
                                                                           : CLI_EXIT_INTERNAL;
    }
    if (json) {
        runs_print_json(o.db_path, total, runs);
        return CLI_EXIT_OK;
    }
    runs_print_table(runs);
    runs_print_tail(o.db_path, sweep, total, runs->len);
    return CLI_EXIT_OK;
}

/* ---- explain ---- */

static bool write_file(const char *path, const char *text, int *code)
{
    if (strcmp(path, "-") == 0) {
        fputs(text, stdout);
        return true;
    }
    g_autoptr(GError) err = NULL;
    if (!out_file_write_all(path, text, strlen(text), &err)) {
        cli_error("%s", err->message);
        *code = CLI_EXIT_INTERNAL;
        return false;
    }
    return true;
}

int cli_explain(int argc, char **argv)
{
    g_autofree char *db = NULL, *dot = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"dot", 0, 0, G_OPTION_ARG_FILENAME, &dot,
         "Also write the wait-for graph as Graphviz DOT ('-': only the DOT, on stdout)",
         "FILE.dot"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json,
         "One JSON object: the run's report (diagnostics with their details) and the story", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_command(
            "RUN - the hang story of a failed run",
            "Tells why a stored run failed, from its diagnostics: the first divergence (the first\n"
            "mismatched or diverging collective, with each signature and its ranks; or the first\n"
            "collective left waiting and what its missing ranks were doing), the wait-for graph,\n"
            "its cycles, the culprits, and what PyTorch's watchdog would print on hardware and "
            "when.\n"
            "With --dot, the graph for Graphviz: 'dot -Tsvg FILE.dot -o graph.svg'.",
            &db, entries, &argc, &argv))
        return CLI_EXIT_INVALID;
    if (argc != 2) {
        cli_error(argc < 2 ? "explain: missing RUN (try 'ranksim explain --help')"
                           : "explain: exactly one RUN expected");
        return CLI_EXIT_INVALID;
    }
    g_auto(Opened) o = {0};
    int code;
    if (!open_runs(&o, db, argv[1], NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    g_autofree char *title = run_title(r);
    bool dot_only = dot && strcmp(dot, "-") == 0;
    if (dot) {
        g_autofree char *graph = explain_dot(title, r->outcome);
        if (!write_file(dot, graph, &code))
            return code;
    }
    if (dot_only)
        return CLI_EXIT_OK;
    if (json) {
        /* the report's JSON (diagnostics with their detail objects) plus the story as text */
        char *story = NULL;
        size_t story_len = 0;
        FILE *m = open_memstream(&story, &story_len);
        if (m) {
            if (is_invalid(r))
                fprintf(m, "%s: INVALID — %s\n", title, invalid_message(r));
            else
                explain_text_recorded(m, title, r->outcome, g_strcmp0(r->info.kind, "import") == 0);
            fclose(m);
        }
        StoreRunInfo rr = r->info;
        rr.db_path = o.db_path;
        g_autofree char *rep = report_json(&rr, r->outcome);
        g_autoptr(JsonNode) root = json_from_string(rep, NULL);
        if (root && JSON_NODE_HOLDS_OBJECT(root)) {
            JsonObject *obj = json_node_get_object(root);
            json_object_set_string_member(obj, "explanation", story ? story : "");
            if (dot)
                json_object_set_string_member(obj, "dot", dot);
            g_autofree char *text = json_to_string(root, TRUE);
            printf("%s\n", text);
        }
        free(story);
        return CLI_EXIT_OK;
    }
    if (is_invalid(r))
        printf("%s: INVALID — the scenario was rejected, nothing was simulated:\n  %s\n", title,
               invalid_message(r));
    else
        explain_text_recorded(stdout, title, r->outcome, g_strcmp0(r->info.kind, "import") == 0);
    if (dot)
        printf("\nwait-for graph: %s (render with 'dot -Tsvg %s -o graph.svg')\n", dot, dot);
    return CLI_EXIT_OK;
}

/* ---- trace ---- */

/* `--json` of a command that wrote a file: an object opened with the run, the file (under
 * `key`) and its size; the caller adds its own members and prints it (print_json_object). */
static JsonBuilder *written_json(int64_t run_id, const char *key, const char *path)
{
    GStatBuf sb;
    JsonBuilder *jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "run_id");
    json_builder_add_int_value(jb, run_id);
    json_builder_set_member_name(jb, key);
    json_builder_add_string_value(jb, path);
    json_builder_set_member_name(jb, "bytes");
    json_builder_add_int_value(jb, g_stat(path, &sb) == 0 ? (gint64)sb.st_size : -1);
    return jb;
}

/* Closes the object being built and prints it. */
static void print_json_object(JsonBuilder *jb)
{
    json_builder_end_object(jb);
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    g_autofree char *text = json_to_string(root, TRUE);
    printf("%s\n", text);
}

int cli_trace(int argc, char **argv)
{
    g_autofree char *db = NULL, *out = NULL, *ranks = NULL, *layers = NULL, *window = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out,
         "Where to write the trace ('-': stdout; a name ending in .gz is gzip-compressed)",
         "FILE.json"},
        {"ranks", 0, 0, G_OPTION_ARG_STRING, &ranks, "Only these ranks, e.g. 0-3,8", "LIST"},
        {"layers", 0, 0, G_OPTION_ARG_STRING, &layers,
         "Only the ops of these layers, e.g. 0-2 (ops outside layers left out)", "RANGE"},
        {"window", 0, 0, G_OPTION_ARG_STRING, &window,
         "Only the ops overlapping this span of simulated time, e.g. 10ms:25ms or :500us",
         "START:END"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json,
         "Say what was written as one JSON object (not with -o -)", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_command(
            "RUN -o FILE.json - the Chrome/Perfetto trace of a stored run",
            "Writes the trace of a stored run (the same file 'ranksim run --trace' writes): one\n"
            "track per rank, collectives linked across ranks, diagnostics as instant events.\n"
            "Open it in https://ui.perfetto.dev or chrome://tracing.",
            &db, entries, &argc, &argv))
        return CLI_EXIT_INVALID;
    if (argc != 2) {
        cli_error(argc < 2 ? "trace: missing RUN (try 'ranksim trace --help')"
                           : "trace: exactly one RUN expected");
        return CLI_EXIT_INVALID;
    }
    if (!out) {
        cli_error("trace: missing -o FILE.json (or -o - for stdout)");
        return CLI_EXIT_INVALID;
    }
    g_auto(Opened) o = {0};
    int code;
    if (!open_runs(&o, db, argv[1], NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    if (is_invalid(r)) {
        cli_error("run %" G_GINT64_FORMAT " is invalid (the scenario was rejected): there is no "
                  "time line to trace",
                  r->info.id);
        return CLI_EXIT_INVALID;
    }
    bool to_stdout = strcmp(out, "-") == 0;
    if (json && to_stdout) {
        cli_error("trace: --json with -o -: the trace itself is the JSON on stdout");
        return CLI_EXIT_INVALID;
    }
    g_autoptr(GError) err = NULL;
    TraceFilter filter;
    if (!trace_filter_parse(&filter, ranks, layers, window, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    fflush(stdout);
    bool written = trace_write_filtered(o.st, r->info.id, out, &filter, &err);
    trace_filter_clear(&filter);
    if (!written) {
        cli_error("%s", err->message);
        return CLI_EXIT_INTERNAL;
    }
    if (json) {
        g_autoptr(JsonBuilder) jb = written_json(r->info.id, "trace", out);
        json_builder_set_member_name(jb, "gzip");
        json_builder_add_boolean_value(jb, g_str_has_suffix(out, ".gz"));
        json_builder_set_member_name(jb, "timeline");
        json_builder_add_string_value(jb, r->info.timeline ? r->info.timeline : "?");
        print_json_object(jb);
        return CLI_EXIT_OK;
    }
    FILE *msg = to_stdout ? stderr : stdout;
    if (g_strcmp0(r->info.timeline, "full") != 0)
        fprintf(msg,
                "ranksim: note: run %" G_GINT64_FORMAT " was stored with --timeline %s: the "
                "trace holds only %s and the diagnostics\n",
                r->info.id, r->info.timeline ? r->info.timeline : "?",
                g_strcmp0(r->info.timeline, "collectives") == 0
                    ? "the collectives"
                    : "the collectives that never completed");
    if (!to_stdout)
        printf("trace of run %" G_GINT64_FORMAT ": %s (open in https://ui.perfetto.dev)\n", r->info.id,
               out);
    return CLI_EXIT_OK;
}

/* ---- diff ---- */

static char *fmt_pct(double a, double b)
{
    if (a == b)
        return g_strdup("0%");
    if (a == 0)
        return g_strdup("new");
    return g_strdup_printf("%+.1f%%", (b - a) / fabs(a) * 100.0);
}

/* Signed duration: "+1.234 ms" / "-12.000 us". */
static char *fmt_delta_ns(int64_t d)
{
    g_autofree char *abs = sched_format_ns(d < 0 ? -d : d);
    return g_strdup_printf("%s%s", d < 0 ? "-" : d > 0 ? "+" : "", abs);
}

static void diff_time_row(const char *label, const char *metric, int64_t a, int64_t b, bool has_a,
                          bool has_b)
{
    g_autofree char *sa = has_a ? sched_format_ns(a) : g_strdup("-");
    g_autofree char *sb = has_b ? sched_format_ns(b) : g_strdup("-");
    g_autofree char *d = has_a && has_b ? fmt_delta_ns(b - a) : g_strdup("-");
    g_autofree char *p = has_a && has_b ? fmt_pct((double)a, (double)b) : g_strdup("-");
    printf("  %-12s %-8s %14s %14s %15s %9s\n", label, metric, sa, sb, d, p);
}

static bool same_stats(const SchedRankStats *x, const SchedRankStats *y)
{
    return x->state == y->state && x->end_ns == y->end_ns && x->compute_ns == y->compute_ns &&
           x->comm_ns == y->comm_ns && x->wait_ns == y->wait_ns;
}

/* Rank r's pair (A, B) equals rank q's pair (absent ranks compare equal to absent ones). */
static bool same_pair(const SchedOutcome *a, const SchedOutcome *b, uint32_t r, uint32_t q)
{
    bool ra = r < a->n_ranks, qa = q < a->n_ranks, rb = r < b->n_ranks, qb = q < b->n_ranks;
    if (ra != qa || rb != qb)
        return false;
    return (!ra || same_stats(&a->ranks[r], &a->ranks[q])) &&
           (!rb || same_stats(&b->ranks[r], &b->ranks[q]));
}

static void diff_ranks(const SchedOutcome *a, const SchedOutcome *b)
{
    uint32_t n = MAX(a->n_ranks, b->n_ranks);
    printf("\nper rank (identical rows folded; delta = B - A):\n");
    printf("  %-12s %-8s %14s %14s %15s %9s\n", "rank", "", "A", "B", "delta", "%");
    for (uint32_t r = 0; r < n;) {
        uint32_t j = r;
        while (j + 1 < n && same_pair(a, b, r, j + 1))
            j++;
        g_autofree char *label = j == r ? g_strdup_printf("%u", r) : g_strdup_printf("%u-%u", r, j);
        bool ha = r < a->n_ranks, hb = r < b->n_ranks;
        const SchedRankStats zero = {0};
        const SchedRankStats *x = ha ? &a->ranks[r] : &zero, *y = hb ? &b->ranks[r] : &zero;
        if (ha && hb && x->state != y->state)
            printf("  %-12s %-8s %14s %14s\n", label, "state", sched_rank_state_name(x->state),
                   sched_rank_state_name(y->state));
        diff_time_row(ha && hb && x->state != y->state ? "" : label, "end", x->end_ns, y->end_ns,
                      ha, hb);
        diff_time_row("", "compute", x->compute_ns, y->compute_ns, ha, hb);
        diff_time_row("", "comm", x->comm_ns, y->comm_ns, ha, hb);
        diff_time_row("", "wait", x->wait_ns, y->wait_ns, ha, hb);
        r = j + 1;
    }
}

static gint cmp_str_ptr(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void diff_comm(Store *st, const QueryRun *a, const QueryRun *b)
{
    printf("\ncommunication by collective (sum over ranks of done - arrive, completed calls):\n");
    g_autoptr(GHashTable) ha = query_comm_totals(st, a->info.id);
    g_autoptr(GHashTable) hb = query_comm_totals(st, b->info.id);
    if (!ha || !hb) {
        printf("  (cannot read the collectives view)\n");
        return;
    }
    for (int k = 0; k < 2; k++) {
        const QueryRun *r = k ? b : a;
        if (g_strcmp0(r->info.timeline, "none") == 0)
            printf("  note: run %" G_GINT64_FORMAT " (%s) was stored with --timeline none: it "
                   "has no rows of completed collectives\n",
                   r->info.id, k ? "B" : "A");
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, ha);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_ptr_array_add(names, key);
    g_hash_table_iter_init(&it, hb);
    while (g_hash_table_iter_next(&it, &key, NULL))
        if (!g_hash_table_contains(ha, key))
            g_ptr_array_add(names, key);
    g_ptr_array_sort(names, cmp_str_ptr);
    if (!names->len) {
        printf("  (no completed collectives in either run)\n");
        return;
    }
    printf("  %-22s %18s %18s %12s %4s\n", "collective", "A (calls)", "B (calls)", "delta", "%");
    QueryCommTotal ta = {0, 0}, tb = {0, 0};
    for (guint i = 0; i < names->len; i++) {
        const char *name = g_ptr_array_index(names, i);
        const QueryCommTotal *x = g_hash_table_lookup(ha, name), *y = g_hash_table_lookup(hb, name);
        QueryCommTotal zx = {0, 0}, zy = {0, 0};
        if (!x)
            x = &zx;
        if (!y)
            y = &zy;
        ta.ns += x->ns, ta.calls += x->calls, tb.ns += y->ns, tb.calls += y->calls;
        g_autofree char *fa = sched_format_ns(x->ns), *fb = sched_format_ns(y->ns);
        g_autofree char *ca = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fa, x->calls);
        g_autofree char *cb = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fb, y->calls);
        g_autofree char *d = fmt_delta_ns(y->ns - x->ns);
        g_autofree char *p = fmt_pct((double)x->ns, (double)y->ns);
        printf("  %-22.22s %18s %18s %12s %4s\n", name, ca, cb, d, p);
    }
    g_autofree char *fa = sched_format_ns(ta.ns), *fb = sched_format_ns(tb.ns);
    g_autofree char *ca = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fa, ta.calls);
    g_autofree char *cb = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fb, tb.calls);
    g_autofree char *d = fmt_delta_ns(tb.ns - ta.ns);
    g_autofree char *p = fmt_pct((double)ta.ns, (double)tb.ns);
    printf("  %-22s %18s %18s %12s %4s\n", "total", ca, cb, d, p);
}

/* "error mismatch" -> count, in first-seen order. */
static void diag_counts(const SchedOutcome *o, GPtrArray *keys, GHashTable *counts)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        char *k = g_strdup_printf("%-8s %s", sched_severity_name(d->severity), d->kind);
        gpointer old = g_hash_table_lookup(counts, k);
        if (!old)
            g_ptr_array_add(keys, g_strdup(k));
        g_hash_table_insert(counts, k, GINT_TO_POINTER(GPOINTER_TO_INT(old) + 1));
    }
}

static void diff_outcome(const QueryRun *a, const QueryRun *b)
{
    printf("\ndiagnostics (count by kind):\n");
    g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) ca = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) cb = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    diag_counts(a->outcome, keys, ca);
    g_autoptr(GPtrArray) kb = g_ptr_array_new_with_free_func(g_free);
    diag_counts(b->outcome, kb, cb);
    for (guint i = 0; i < kb->len; i++)
        if (!g_hash_table_contains(ca, g_ptr_array_index(kb, i)))
            g_ptr_array_add(keys, g_strdup(g_ptr_array_index(kb, i)));
    if (!keys->len) {
        printf("  none in either run\n");
    } else {
        printf("  %-24s %6s %6s\n", "", "A", "B");
        for (guint i = 0; i < keys->len; i++) {
            const char *k = g_ptr_array_index(keys, i);
            int x = GPOINTER_TO_INT(g_hash_table_lookup(ca, k));
            int y = GPOINTER_TO_INT(g_hash_table_lookup(cb, k));
            printf("  %-24s %6d %6d%s\n", k, x, y, x != y ? "   <- differs" : "");
        }
    }
    for (int k = 0; k < 2; k++) {
        const QueryRun *r = k ? b : a;
        const SchedDiag *d = query_first_diag(r->outcome);
        if (!d || d->severity != SCHED_SEV_ERROR)
            continue;
        g_autofree char *m = query_short_message(d->message, 160);
        printf("  first error in %s: %s\n", k ? "B" : "A", m);
    }
}

/* model/memory.h's component order; others sort after them by name. */
static int component_rank(const char *c)
{
    static const char *const order[] = {"weights",   "quant_scales",   "derived_weights",
                                        "kv_cache",  "attn_workspace", "activations",
                                        "cudagraph", "reserved",       "outside_budget"};
    for (size_t i = 0; i < G_N_ELEMENTS(order); i++)
        if (strcmp(c, order[i]) == 0)
            return (int)i;
    return (int)G_N_ELEMENTS(order);
}

static gint cmp_component(gconstpointer a, gconstpointer b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int rx = component_rank(x), ry = component_rank(y);
    return rx != ry ? rx - ry : strcmp(x, y);
}

static void mem_row(const char *label, int64_t a, int64_t b)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    g_autofree char *p = fmt_pct((double)a, (double)b);
    g_autofree char *d = a == b ? g_strdup("0") : g_strdup_printf("%+.3f", (double)(b - a) / gib);
    printf("  %-20s %12.3f %12.3f %13s %9s\n", label, (double)a / gib, (double)b / gib, d, p);
}

static void diff_memory(Store *st, const QueryRun *a, const QueryRun *b)
{
    if (!query_has_table(st, "memory"))
        return;
    g_autoptr(GPtrArray) order = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) ma = query_memory_max(st, a->info.id, order);
    g_autoptr(GHashTable) mb = query_memory_max(st, b->info.id, order);
    if (!ma || !mb) {
        if (ma || mb)
            printf("\nmemory: only run %" G_GINT64_FORMAT " has a memory plan\n",
                   ma ? a->info.id : b->info.id);
        return;
    }
    g_ptr_array_sort(order, cmp_component);
    printf("\nmemory per rank (GiB, the largest rank of each run):\n");
    printf("  %-20s %12s %12s %13s %9s\n", "component", "A", "B", "delta", "%");
    for (guint i = 0; i < order->len; i++) {
        const char *c = g_ptr_array_index(order, i);
        int64_t *x = g_hash_table_lookup(ma, c), *y = g_hash_table_lookup(mb, c);
        mem_row(c, x ? *x : 0, y ? *y : 0);
    }
    mem_row("total (peak rank)", query_memory_peak(st, a->info.id), query_memory_peak(st, b->info.id));
    int64_t kv_a = 0, kv_b = 0;
    if (query_kv_budgets(st, a->info.id, b->info.id, &kv_a, &kv_b))
        mem_row("KV budget (min rank)", kv_a, kv_b);
}

/* One run's side of `diff --json`. */
static void diff_json_run(JsonBuilder *b, const char *key, const QueryRun *r)
{
    json_builder_set_member_name(b, key);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "run_id");
    json_builder_add_int_value(b, r->info.id);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, r->info.name ? r->info.name : "");
    json_builder_set_member_name(b, "status");
    json_builder_add_string_value(b, r->info.status ? r->info.status : "");
    json_builder_set_member_name(b, "exit_code");
    json_builder_add_int_value(b, r->info.exit_code);
    json_builder_set_member_name(b, "hardware");
    if (r->info.hardware)
        json_builder_add_string_value(b, r->info.hardware);
    else
        json_builder_add_null_value(b);
    const SchedOutcome *o = r->outcome;
    json_builder_set_member_name(b, "ranks");
    json_builder_add_int_value(b, o ? o->n_ranks : 0);
    json_builder_set_member_name(b, "sim_end_us");
    json_builder_add_double_value(b, o ? (double)o->end_ns / 1e3 : 0);
    json_builder_set_member_name(b, "rank_ops");
    json_builder_add_int_value(b, o ? (int64_t)o->rank_ops : 0);
    json_builder_set_member_name(b, "diagnostics");
    json_builder_begin_object(b);
    g_autoptr(GHashTable) kinds = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; o && i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        g_hash_table_insert(
            kinds, (gpointer)d->kind,
            GINT_TO_POINTER(GPOINTER_TO_INT(g_hash_table_lookup(kinds, d->kind)) + 1));
    }
    g_autoptr(GList) keys = g_list_sort(g_hash_table_get_keys(kinds), (GCompareFunc)strcmp);
    for (GList *l = keys; l; l = l->next) {
        json_builder_set_member_name(b, l->data);
        json_builder_add_int_value(b, GPOINTER_TO_INT(g_hash_table_lookup(kinds, l->data)));
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
}

int cli_diff(int argc, char **argv)
{
    g_autofree char *db = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json,
         "One JSON object: both runs' outcome, times and diagnostic counts, and the deltas", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_command(
            "RUN_A RUN_B - compare two stored runs",
            "Compares two runs (e.g. FLASHINFER_MLA_SPARSE vs FLASHMLA_SPARSE, or utilization\n"
            "0.92 vs 0.96): outcome, per-rank end/compute/comm/wait times (A, B, B - A, %),\n"
            "communication time by collective name, diagnostics by kind, and memory per\n"
            "component when both runs have a memory plan.",
            &db, entries, &argc, &argv))
        return CLI_EXIT_INVALID;
    if (argc != 3) {
        cli_error("diff: expected two runs, RUN_A RUN_B (try 'ranksim diff --help')");
        return CLI_EXIT_INVALID;
    }
    g_auto(Opened) o = {0};
    int code;
    if (!open_runs(&o, db, argv[1], argv[2], &code))
        return code;
    const QueryRun *a = o.run[0], *b = o.run[1];
    if (json) {
        g_autoptr(JsonBuilder) jb = json_builder_new();
        json_builder_begin_object(jb);
        diff_json_run(jb, "a", a);
        diff_json_run(jb, "b", b);
        diff_inputs_json(jb, o.st, &a->info, &b->info);
        bool both = a->outcome && b->outcome && !is_invalid(a) && !is_invalid(b);
        json_builder_set_member_name(jb, "sim_end_delta_us");
        if (both)
            json_builder_add_double_value(jb,
                                          (double)(b->outcome->end_ns - a->outcome->end_ns) / 1e3);
        else
            json_builder_add_null_value(jb);
        json_builder_set_member_name(jb, "same_hardware");
        json_builder_add_boolean_value(jb, g_strcmp0(a->info.hardware, b->info.hardware) == 0);
        json_builder_end_object(jb);
        g_autoptr(JsonNode) root = json_builder_get_root(jb);
        g_autofree char *text = json_to_string(root, TRUE);
        printf("%s\n", text);
        return CLI_EXIT_OK;
    }

    g_autofree char *ta = run_title(a), *tb = run_title(b);
    printf("A: %s, %s, exit %d\nB: %s, %s, exit %d\n", ta, a->info.status, a->info.exit_code, tb, b->info.status,
           b->info.exit_code);
    diff_inputs_text(stdout, o.st, &a->info, &b->info);
    if (is_invalid(a) || is_invalid(b)) {
        for (int k = 0; k < 2; k++) {
            const QueryRun *r = k ? b : a;
            if (is_invalid(r))
                printf("%s is invalid (nothing was simulated): %s\n", k ? "B" : "A",
                       invalid_message(r));
        }
        return CLI_EXIT_OK;
    }
    const SchedOutcome *oa = a->outcome, *ob = b->outcome;
    printf("\n  %-21s %14s %14s %15s %9s\n", "", "A", "B", "delta", "%");
    printf("  %-21s %14u %14u\n", "ranks", oa->n_ranks, ob->n_ranks);
    diff_time_row("step time", "(end)", oa->end_ns, ob->end_ns, true, true);
    printf("  %-21s %14" G_GUINT64_FORMAT " %14" G_GUINT64_FORMAT "\n", "rank-ops", oa->rank_ops,
           ob->rank_ops);
    diff_ranks(oa, ob);
    diff_comm(o.st, a, b);
    diff_outcome(a, b);
    diff_memory(o.st, a, b);
    return CLI_EXIT_OK;
}

/* ---- plot ---- */

int cli_plot(int argc, char **argv)
{
    g_autofree char *db = NULL, *out = NULL;
    int width = 1400;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out,
         "The picture: FILE.png, FILE.svg or FILE.pdf", "FILE"},
        {"width", 0, 0, G_OPTION_ARG_INT, &width, "Width in pixels (PNG) or points (default 1400)",
         "N"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Say what was written as one JSON object", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_command(
            "RUN -o FILE.png|.svg|.pdf - a picture of a stored run's time line",
            "Draws one lane per rank (identical ranks share one, labelled with their range):\n"
            "compute, communication, waiting and blocked in distinct colours, the culprit's lane\n"
            "marked, the instance the hang starts from with each rank's element count, and a\n"
            "time axis. For a bug report: 'ranksim plot latest -o hang.png'.",
            &db, entries, &argc, &argv))
        return CLI_EXIT_INVALID;
    if (argc != 2) {
        cli_error(argc < 2 ? "plot: missing RUN (try 'ranksim plot --help')"
                           : "plot: exactly one RUN expected");
        return CLI_EXIT_INVALID;
    }
    if (!out) {
        cli_error("plot: missing -o FILE.png (or .svg, .pdf)");
        return CLI_EXIT_INVALID;
    }
    if (width < 800 || width > 20000) {
        cli_error("--width %d: valid: 800..20000", width);
        return CLI_EXIT_INVALID;
    }
    g_auto(Opened) o = {0};
    int code;
    if (!open_runs(&o, db, argv[1], NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    if (is_invalid(r)) {
        cli_error("run %" G_GINT64_FORMAT " is invalid (the scenario was rejected): there is no "
                  "time line to draw",
                  r->info.id);
        return CLI_EXIT_INVALID;
    }
    g_autoptr(GError) err = NULL;
    if (!plot_write(o.st, &r->info, r->outcome, out, width, &err)) {
        cli_error("%s", err->message);
        return g_error_matches(err, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT) ? CLI_EXIT_INVALID
                                                                             : CLI_EXIT_INTERNAL;
    }
    if (json) {
        g_autoptr(JsonBuilder) jb = written_json(r->info.id, "picture", out);
        json_builder_set_member_name(jb, "width");
        json_builder_add_int_value(jb, width);
        print_json_object(jb);
        return CLI_EXIT_OK;
    }
    printf("picture of run %" G_GINT64_FORMAT ": %s\n", r->info.id, out);
    return CLI_EXIT_OK;
}
