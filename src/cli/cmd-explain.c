/* src/cli/cmd-explain.c — `ranksim explain RUN`: the story of a stored run's hang (culprit, who
 * waits on whom), and its wait-for graph as DOT. Exit codes: cmd-stored.h. */
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "../../sched/json-bounded.h"
#include "cmd-common.h"
#include "cmd-stored.h"
#include "../output/explain.h"
#include "../output/report.h"
#include "../util/outfile.h"

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

/* An import's story (evidence, findings, verdict) or a simulated run's. */
static void explain_run(FILE *out, const char *title, const QueryRun *r)
{
    if (g_strcmp0(r->info.kind, "import") == 0)
        explain_text_import(out, title, r->outcome, r->info.status, r->info.not_simulated);
    else
        explain_text(out, title, r->outcome);
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
    if (!cli_stored_parse(
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
    g_auto(CliOpened) o = {0};
    int code;
    if (!cli_stored_open(&o, db, argv[1], NULL, &code))
        return code;
    const QueryRun *r = o.run[0];
    g_autofree char *title = cli_run_title(r);
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
            if (cli_run_is_invalid(r))
                fprintf(m, "%s: INVALID — %s\n", title, cli_run_invalid_message(r));
            else
                explain_run(m, title, r);
            fclose(m);
        }
        StoreRunInfo rr = r->info;
        rr.db_path = o.db_path;
        g_autofree char *rep = report_json(&rr, r->outcome);
        g_autoptr(JsonNode) root = sched_json_from_string(rep, NULL);
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
    if (cli_run_is_invalid(r))
        printf("%s: INVALID — the scenario was rejected, nothing was simulated:\n  %s\n", title,
               cli_run_invalid_message(r));
    else
        explain_run(stdout, title, r);
    if (dot)
        printf("\nwait-for graph: %s (render with 'dot -Tsvg %s -o graph.svg')\n", dot, dot);
    return CLI_EXIT_OK;
}
