/* src/cli/cmd-trace.c — `ranksim trace RUN`: a stored run as a Chrome/Perfetto trace, optionally
 * filtered by ranks, layers and a time window. Exit codes: cmd-stored.h. */
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "cmd-stored.h"
#include "../output/trace.h"

int cli_trace(int argc, char **argv)
{
    g_autofree char *db = NULL, *out = NULL, *ranks = NULL, *layers = NULL, *window = NULL;
    gboolean json = FALSE, full_wait = FALSE;
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
        {"full-wait", 0, 0, G_OPTION_ARG_NONE, &full_wait,
         "Draw a hang's wait to its true end (by default it is cut at twice the work's end, so "
         "the first view shows the work)",
         NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json,
         "Say what was written as one JSON object (not with -o -)", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!cli_stored_parse(
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
    g_auto(CliOpened) o = {0};
    int code;
    if (!cli_stored_open(&o, db, argv[1], NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    if (cli_run_is_invalid(r)) {
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
    bool written = trace_write_filtered(o.st, r->info.id, out, &filter, full_wait, &err);
    trace_filter_clear(&filter);
    if (!written) {
        cli_error("%s", err->message);
        return CLI_EXIT_INTERNAL;
    }
    if (json) {
        g_autoptr(JsonBuilder) jb = cli_written_json(r->info.id, "trace", out);
        json_builder_set_member_name(jb, "gzip");
        json_builder_add_boolean_value(jb, g_str_has_suffix(out, ".gz"));
        json_builder_set_member_name(jb, "timeline");
        json_builder_add_string_value(jb, r->info.timeline ? r->info.timeline : "?");
        cli_print_json_object(jb);
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
        printf("trace of run %" G_GINT64_FORMAT ": %s (open in https://ui.perfetto.dev)\n",
               r->info.id, out);
    return CLI_EXIT_OK;
}
