/* src/cli/cmd-match.c — `ranksim match IMPORTED_RUN SCENARIO`: confront a hypothesis with the
 * evidence. The use case (simulate, store, align, judge) is src/run/match.h's; this file reads
 * the command line, prints the verdict (text or --json) and gives the exit code: 0 reproduced,
 * 3 not reproduced, 2 invalid input, 1 internal error.
 */
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "help.h"
#include "../run/match.h"
#include "../store/store.h"

static void json_add_str_or_null(JsonBuilder *b, const char *name, const char *v)
{
    json_builder_set_member_name(b, name);
    if (v)
        json_builder_add_string_value(b, v);
    else
        json_builder_add_null_value(b);
}

static void json_add_bool(JsonBuilder *b, const char *name, bool v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_boolean_value(b, v);
}

/* The verdict as one JSON object on one line. */
static void print_json(const MatchVerdict *v)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "imported_run");
    json_builder_add_int_value(b, v->imported_run);
    json_builder_set_member_name(b, "simulated_run");
    json_builder_add_int_value(b, v->simulated_run);
    json_add_bool(b, "reproduced", v->reproduced);
    json_add_bool(b, "same_group", v->same_group);
    json_add_bool(b, "same_instance", v->same_instance);
    json_add_bool(b, "same_sizes", v->same_sizes);
    json_add_bool(b, "same_culprits", v->same_culprits);
    json_builder_set_member_name(b, "reason");
    json_builder_add_string_value(b, v->reason);
    json_builder_set_member_name(b, "pairs");
    json_builder_begin_array(b);
    for (guint i = 0; i < v->pairs->len; i++) {
        const MatchPair *p = g_ptr_array_index(v->pairs, i);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "dump_group");
        json_builder_add_string_value(b, p->dump_group);
        json_add_str_or_null(b, "simulated_group", p->sim_group);
        json_builder_set_member_name(b, "offset");
        json_builder_add_int_value(b, (gint64)p->offset);
        json_builder_set_member_name(b, "agreeing");
        json_builder_add_int_value(b, (gint64)p->agreeing);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "first_divergence");
    if (v->diverges) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "group");
        json_builder_add_string_value(b, v->dump_hang_group);
        json_builder_set_member_name(b, "seq");
        json_builder_add_int_value(b, (gint64)v->divergence_seq);
        json_builder_set_member_name(b, "rank");
        json_builder_add_int_value(b, v->divergence_rank);
        json_builder_set_member_name(b, "dump");
        json_builder_add_string_value(b, v->divergence_dump);
        json_builder_set_member_name(b, "simulation");
        json_builder_add_string_value(b, v->divergence_sim);
        json_builder_end_object(b);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *txt = json_to_string(root, FALSE);
    printf("%s\n", txt);
}

/* The text verdict: the headline, why (or what agrees), the divergence, the other groups. */
static void print_text(const MatchVerdict *v)
{
    printf("match: imported run %" G_GINT64_FORMAT
           " (%s) vs %s (simulated as run %" G_GINT64_FORMAT "): %s\n",
           v->imported_run, v->imported_name, v->scenario_name, v->simulated_run,
           v->reproduced ? "REPRODUCED" : "NOT REPRODUCED");
    if (v->reproduced) {
        printf("  same group: dump %s = simulated %s (offset %" G_GUINT64_FORMAT
               ": the dump counts %" G_GUINT64_FORMAT " earlier collectives on it)\n",
               v->dump_hang_group, v->paired_group, v->paired_offset, v->paired_offset);
        printf("  same instance: dump seq %" G_GUINT64_FORMAT " = simulated seq %" G_GUINT64_FORMAT
               " (%s)\n",
               v->dump_hang_seq, v->sim_hang_seq, v->dump_hang_kind);
        printf("  same sizes on every rank; culprit%s %s (%s)\n", v->n_dump_culprits > 1 ? "s" : "",
               v->dump_culprits,
               v->culprit_call ? v->culprit_call : "no culprit by rule on either side");
    } else {
        printf("  why: %s\n", v->reason);
        if (v->dump_hang && v->dump_hang_group)
            printf("  dump: %s in group %s seq %" G_GUINT64_FORMAT ", culprits %s\n",
                   v->dump_hang_kind, v->dump_hang_group, v->dump_hang_seq, v->dump_culprits);
        if (v->sim_hang)
            printf("  simulation: %s%s%s, culprits %s\n", v->sim_hang_kind,
                   v->sim_hang_group ? " in group " : "",
                   v->sim_hang_group ? v->sim_hang_group : "", v->sim_culprits);
    }
    if (v->diverges)
        printf("  first divergence in group %s (simulated %s, offset %" G_GUINT64_FORMAT
               "): seq %" G_GUINT64_FORMAT " rank %d — dump: %s; simulation: %s\n",
               v->dump_hang_group, v->paired_group, v->paired_offset, v->divergence_seq,
               v->divergence_rank, v->divergence_dump, v->divergence_sim);
    for (guint i = 0; i < v->pairs->len; i++) {
        const MatchPair *p = g_ptr_array_index(v->pairs, i);
        if (p->hang)
            continue;
        if (p->sim_group)
            printf("  group %s = simulated %s (offset %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                   " agreeing calls)\n",
                   p->dump_group, p->sim_group, p->offset, (guint64)p->agreeing);
        else
            printf("  group %s: no simulated counterpart agrees with it (not judged)\n",
                   p->dump_group);
    }
}

/* The imported side of run `arg` of `db_path`; NULL after printing why (*code set). */
static MatchImport *load_import(const char *db_path, const char *arg, int *code)
{
    g_autoptr(Store) st = cli_store_open_existing(db_path, code);
    if (!st)
        return NULL;
    int64_t id = cli_run_resolve(st, arg, code);
    if (id < 0)
        return NULL;
    g_autoptr(GError) err = NULL;
    MatchImport *imp = match_import_load(st, id, &err);
    if (!imp) {
        cli_error("%s", err->message);
        *code = err->code == MATCH_ERROR_FAILED ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
    }
    return imp;
}

int cli_match(int argc, char **argv)
{
    g_autofree char *db = NULL, *hardware = NULL;
    g_auto(GStrv) sets = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key", "KEY=VALUE"},
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &hardware,
         "Hardware preset or file, for scenarios that name none", "NAME|FILE"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the verdict as one JSON object", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(
        "IMPORTED_RUN SCENARIO - does the scenario reproduce the imported hang?");
    g_option_context_set_summary(
        ctx, "Simulates SCENARIO (stored as a run), aligns its collectives with those of the\n"
             "imported run group by group (the dump's sequence numbers include start-up\n"
             "collectives: the offset is found), and says whether the simulation reproduces the\n"
             "real hang (same group, same instance, same sizes per rank, same culprits) or\n"
             "where the two first diverge.");
    g_option_context_set_description(
        ctx, "Exit status: 0 reproduced, 3 not reproduced, 2 invalid input, 1 internal error.\n"
             "Rules: doc/import.md.\n");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (argc != 3) {
        cli_error("match: expected IMPORTED_RUN SCENARIO (try 'ranksim match --help')");
        return CLI_EXIT_INVALID;
    }
    const char *db_path = db ? db : CLI_DEFAULT_DB;
    int code = 0;
    g_autoptr(MatchImport) imp = load_import(db_path, argv[1], &code);
    if (!imp)
        return code;
    const char *path = argv[2];
    if (!cli_input_paths_check(path, hardware, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    MatchRequest req = {.scenario_path = path,
                        .sets = (const char *const *)sets,
                        .hardware = hardware,
                        .db_path = db_path};
    g_autoptr(MatchVerdict) v = match_simulate(imp, &req, &err);
    if (!v) {
        cli_error("%s", err->message);
        return err->code == MATCH_ERROR_INVALID ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    if (json)
        print_json(v);
    else
        print_text(v);
    return v->reproduced ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
