/* src/cli/cmd-runs.c — `ranksim runs`: the stored runs, newest first, as a table fitted to the
 * terminal or as JSON. Exit codes: cmd-stored.h. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "cmd-stored.h"
#include "../util/textwrap.h"

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
                          : strcmp(status, "inconclusive") == 0 ? "INCONCLUSIVE"
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
        row[C_LAYOUT] =
            r->ranks < 0 ? g_strdup("-") : g_strdup_printf("%" G_GINT64_FORMAT " ranks", r->ranks);
    row[C_HW] = hardware_short(h->hardware);
    row[C_END] =
        !r->has_end ? g_strdup("-") : sched_format_ns((int64_t)llround(r->sim_end_us * 1e3));
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
           wmax[C_OUT], "outcome", wmax[C_END], "step time", wmax[C_MODEL], "model", wmax[C_LAYOUT],
           "layout", wmax[C_HW], "hw", "created");
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
    if (!cli_stored_parse(
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
    g_auto(CliOpened) o = {0};
    int code;
    if (!cli_stored_open(&o, db, NULL, NULL, &code))
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
