/* src/cli/cmd-stored.c — what the commands that read stored runs share; see cmd-stored.h. */
#include "cmd-stored.h"

#include <glib/gstdio.h>
#include <stdio.h>

#include "cmd-common.h"
#include "help.h"
#include "exit-codes.h"

/* Parses the options of a read-only command: --db (into *db), then the command's own
 * `entries` (NULL: none). Returns false after printing the error (exit 2). */
bool cli_stored_parse(const char *params, const char *summary, char **db,
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
    if (!cli_option_parse(ctx, argc, argv, &err)) {
        cli_error("%s", err->message);
        return false;
    }
    return true;
}

/* Loads run `arg` from `db`; prints the error and sets *code on failure. */
static QueryRun *stored_load_run(Store *st, const char *arg, int *code)
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

void cli_opened_clear(CliOpened *o)
{
    g_clear_pointer(&o->run[1], query_run_free);
    g_clear_pointer(&o->run[0], query_run_free);
    g_clear_pointer(&o->st, store_close);
}

/* Opens the database `db` names (CLI_DEFAULT_DB when NULL), which must exist, then loads
 * runs `run_a` and `run_b` (each NULL: not wanted). Returns false after printing the error,
 * *code set; true with *code CLI_EXIT_OK. */
bool cli_stored_open(CliOpened *o, const char *db, const char *run_a, const char *run_b, int *code)
{
    *code = CLI_EXIT_OK;
    o->db_path = db ? db : CLI_DEFAULT_DB;
    o->st = cli_store_open_existing(o->db_path, code);
    if (!o->st)
        return false;
    const char *names[] = {run_a, run_b};
    for (int i = 0; i < 2 && names[i]; i++)
        if (!(o->run[i] = stored_load_run(o->st, names[i], code)))
            return false;
    return true;
}

char *cli_run_title(const QueryRun *r)
{
    return g_strdup_printf("run %" G_GINT64_FORMAT " (%s)", r->info.id,
                           r->info.name ? r->info.name : "?");
}

bool cli_run_is_invalid(const QueryRun *r)
{
    return g_strcmp0(r->info.status, "invalid") == 0;
}

/* The config error of an invalid run. */
const char *cli_run_invalid_message(const QueryRun *r)
{
    const SchedDiag *d = query_first_diag(r->outcome);
    return d ? d->message : "(no message stored)";
}

/* `--json` of a command that wrote a file: an object opened with the run, the file (under
 * `key`) and its size; the caller adds its own members and prints it (cli_print_json_object). */
JsonBuilder *cli_written_json(int64_t run_id, const char *key, const char *path)
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
void cli_print_json_object(JsonBuilder *jb)
{
    json_builder_end_object(jb);
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    g_autofree char *text = json_to_string(root, TRUE);
    printf("%s\n", text);
}
