/* src/cli/cmd-report.c — `ranksim report RUN`: the report of a stored run as `ranksim run` printed
 * it (text or
 * --json), with its memory plan and serving figures.
 * Exit codes: cmd-stored.h. */
#include <json-glib/json-glib.h>
#include <stdio.h>

#include "commands.h"
#include "cmd-common.h"
#include "cmd-stored.h"
#include "../output/report.h"

int cli_report(int argc, char **argv)
{
    g_autofree char *db = NULL;
    gboolean json = FALSE, memory_detail = FALSE, all_ranks = FALSE;
    GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the report as one JSON object", NULL},
        {"all-ranks", 0, 0, G_OPTION_ARG_NONE, &all_ranks,
         "One row per rank (or range of identical ranks) even when the table is long", NULL},
        {"memory-detail", 0, 0, G_OPTION_ARG_NONE, &memory_detail,
         "List every tensor of the memory plan (model scenarios)", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!cli_stored_parse(
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
    g_auto(CliOpened) o = {0};
    int code;
    if (!cli_stored_open(&o, db, argc == 2 ? argv[1] : "latest", NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    g_autoptr(GError) err = NULL;
    /* the items always: vLLM's DEBUG split of the start-up lines reads the non_torch.* ones
     * (model_mem_vllm_split); --memory-detail decides what is printed */
    g_autoptr(ModelMemPlan) mem = query_memory_load(o.st, r->info.id, true, &err);
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
    if (cli_run_is_invalid(r)) {
        printf("%s: INVALID — the scenario was rejected; nothing was simulated\n  %s\n",
               r->info.name ? r->info.name : "?", cli_run_invalid_message(r));
        printf("\nstored as run %" G_GINT64_FORMAT " in %s\n", r->info.id, o.db_path);
    } else {
        report_text_ranks(stdout, &rr, r->outcome, all_ranks);
        report_serve_text(stdout, serve);
        report_memory_text(stdout, mem, memory_detail);
        report_footer(stdout, &rr);
    }
    printf("recorded %s by ranksim %s, timeline %s%s%s\n",
           r->info.created_at ? r->info.created_at : "?", r->info.version ? r->info.version : "?",
           r->info.timeline ? r->info.timeline : "?", r->info.path ? "; scenario " : "",
           r->info.path ? r->info.path : "");
    return CLI_EXIT_OK;
}
