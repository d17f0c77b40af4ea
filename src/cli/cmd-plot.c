/* src/cli/cmd-plot.c — `ranksim plot RUN -o FILE`: a picture of a stored run's time line (PNG, SVG,
 * PDF). Exit codes: cmd-stored.h. */
#include <json-glib/json-glib.h>
#include <stdio.h>

#include "commands.h"
#include "cmd-common.h"
#include "cmd-stored.h"
#include "../output/plot.h"

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
    if (!cli_stored_parse(
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
    g_auto(CliOpened) o = {0};
    int code;
    if (!cli_stored_open(&o, db, argv[1], NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    if (cli_run_is_invalid(r)) {
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
        g_autoptr(JsonBuilder) jb = cli_written_json(r->info.id, "picture", out);
        json_builder_set_member_name(jb, "width");
        json_builder_add_int_value(jb, width);
        cli_print_json_object(jb);
        return CLI_EXIT_OK;
    }
    printf("picture of run %" G_GINT64_FORMAT ": %s\n", r->info.id, out);
    return CLI_EXIT_OK;
}
