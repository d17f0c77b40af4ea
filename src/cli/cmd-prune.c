/* src/cli/cmd-prune.c — `ranksim prune`: deletes stored runs — by id, by sweep, by age — from every
 * table of the results database in one transaction (all of them or none), then optionally
 * gives the space back (--vacuum). doc/cli.md has the command, doc/database.md the tables. */
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "help.h"
#include "../store/store-prune.h"
#include "../store/store.h"

/* "7d", "12h", "30m", "90s" -> seconds; -1 when malformed. */
static int64_t parse_age(const char *s)
{
    char *end = NULL;
    gint64 n = g_ascii_strtoll(s, &end, 10);
    if (end == s || n < 0 || !end || end[0] == '\0' || end[1] != '\0')
        return -1;
    switch (end[0]) {
    case 's':
        return n;
    case 'm':
        return n * 60;
    case 'h':
        return n * 3600;
    case 'd':
        return n * 86400;
    case 'w':
        return n * 7 * 86400;
    default:
        return -1;
    }
}

/* Adds run `arg` ("12", "3-7", "latest", "latest~2") to `ids`; false after printing why. */
static bool add_run_arg(Store *st, const char *arg, GArray *ids, int *code)
{
    const char *dash = strchr(arg, '-');
    if (dash && dash != arg && !strchr(arg, '~')) {
        g_autofree char *lo_s = g_strndup(arg, (gsize)(dash - arg));
        guint64 lo = 0, hi = 0;
        if (!g_ascii_string_to_unsigned(lo_s, 10, 1, G_MAXINT64, &lo, NULL) ||
            !g_ascii_string_to_unsigned(dash + 1, 10, 1, G_MAXINT64, &hi, NULL) || hi < lo) {
            cli_error("'%s' is not a run range; expected FIRST-LAST, e.g. 3-7", arg);
            *code = CLI_EXIT_INVALID;
            return false;
        }
        for (guint64 id = lo; id <= hi; id++) {
            int64_t v = (int64_t)id;
            g_array_append_val(ids, v);
        }
        return true;
    }
    int64_t id = cli_run_resolve(st, arg, code);
    if (id < 0)
        return false;
    g_array_append_val(ids, id);
    return true;
}

/* What was deleted (or would be, --dry-run) and how many runs are left, as text or JSON. */
static void print_pruned(const char *path, const StorePruneSpec *spec, const StorePruned *p,
                         int64_t left, bool json)
{
    bool dry = spec->dry_run;
    int64_t n = p->runs, lo = p->lo, hi = p->hi;
    if (json) {
        g_autoptr(JsonBuilder) jb = json_builder_new();
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "db");
        json_builder_add_string_value(jb, path);
        json_builder_set_member_name(jb, dry ? "would_delete" : "deleted");
        json_builder_add_int_value(jb, n);
        json_builder_set_member_name(jb, "runs_left");
        json_builder_add_int_value(jb, left);
        json_builder_set_member_name(jb, "vacuumed");
        json_builder_add_boolean_value(jb, p->vacuumed);
        json_builder_end_object(jb);
        g_autoptr(JsonNode) root = json_builder_get_root(jb);
        g_autofree char *text = json_to_string(root, TRUE);
        printf("%s\n", text);
        return;
    }
    if (!n) {
        printf("no run matched; %" G_GINT64_FORMAT " run%s in %s%s\n", left, left == 1 ? "" : "s",
               path, p->vacuumed ? ", file vacuumed" : "");
        return;
    }
    g_autofree char *which =
        lo == hi ? g_strdup_printf("run %" G_GINT64_FORMAT, lo)
                 : g_strdup_printf("%" G_GINT64_FORMAT " runs between %" G_GINT64_FORMAT
                                   " and %" G_GINT64_FORMAT,
                                   n, lo, hi);
    printf("%s %s from %s; %" G_GINT64_FORMAT " run%s left%s\n", dry ? "would delete" : "deleted",
           which, path, left, left == 1 ? "" : "s",
           p->vacuumed    ? ", file vacuumed"
           : dry          ? " now (dry run)"
                          : "");
}

int cli_prune(int argc, char **argv)
{
    g_autofree char *db = NULL, *older = NULL;
    gint64 sweep = 0;
    gboolean dry = FALSE, vacuum = FALSE, json = FALSE;
    GOptionEntry entries[] = {
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {"sweep", 0, 0, G_OPTION_ARG_INT64, &sweep, "The runs of sweep N", "N"},
        {"older-than", 0, 0, G_OPTION_ARG_STRING, &older,
         "The runs recorded more than AGE ago: a count with s, m, h, d or w (e.g. 7d)", "AGE"},
        {"dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry, "Say what would be deleted; delete nothing",
         NULL},
        {"vacuum", 0, 0, G_OPTION_ARG_NONE, &vacuum,
         "Then give the freed space back to the file system (VACUUM: rewrites the file)", NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print what was deleted as one JSON object", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("[RUN...] [--sweep N] [--older-than AGE] - delete stored runs");
    g_option_context_set_summary(
        ctx, "Deletes the selected runs — each RUN (an id, FIRST-LAST, 'latest' or 'latest~N'),\n"
             "the runs of a sweep, the runs older than an age; several selectors add up — with\n"
             "all their rows in every table, in one transaction: all of it or nothing.");
    g_option_context_set_description(
        ctx, "Example:\n"
             "  ranksim prune --older-than 30d --vacuum\n"
             "  ranksim prune --sweep 12\n"
             "  ranksim prune --vacuum          (only give freed space back)\n"
             "\n"
             "Exit status: 0 done (also when nothing matched), 2 bad arguments, an unknown run\n"
             "or no database, 1 the database cannot be written (nothing deleted) or --vacuum\n"
             "failed (the runs are deleted, as printed; only the vacuum is missing).\n"
             "Details: doc/cli.md.\n");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    int64_t age = older ? parse_age(older) : 0;
    if (older && age < 0) {
        cli_error("--older-than '%s': expected a count and a unit, e.g. 90s, 30m, 12h, 7d, 2w",
                  older);
        return CLI_EXIT_INVALID;
    }
    if (sweep < 0) {
        cli_error("--sweep %" G_GINT64_FORMAT ": expected a sweep id (1, 2, ...)", sweep);
        return CLI_EXIT_INVALID;
    }
    if (argc < 2 && !sweep && !older && !vacuum) {
        cli_error("prune: nothing selected; give RUN ids, --sweep N or --older-than AGE (try "
                  "'ranksim prune --help')");
        return CLI_EXIT_INVALID;
    }
    const char *path = db ? db : CLI_DEFAULT_DB;
    int code = CLI_EXIT_OK;
    /* Refuse a missing file before opening it for writing (which would create it); a dry run
     * only reads, so the read-only open is all it needs (a read-only file works). */
    g_autoptr(Store) st = cli_store_open_existing(path, &code);
    if (!st)
        return code;
    if (!dry) {
        g_clear_pointer(&st, store_close);
        st = cli_store_open_write(path, &err);
        if (!st) {
            cli_error("%s", err->message);
            return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
        }
    }
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
    for (int i = 1; i < argc; i++)
        if (!add_run_arg(st, argv[i], ids, &code))
            return code;
    StorePruneSpec spec = {.ids = ids,
                           .sweep_id = sweep,
                           .older_than_s = older ? age : -1,
                           .dry_run = dry,
                           .vacuum = vacuum};
    StorePruned pruned;
    g_autoptr(GError) vacuum_err = NULL;
    if (!store_prune(st, &spec, &pruned, &vacuum_err, &err)) {
        cli_error("%s; nothing was deleted", err->message);
        return CLI_EXIT_INTERNAL;
    }
    print_pruned(path, &spec, &pruned, store_run_count(st), json);
    if (vacuum && !dry && !pruned.vacuumed) {
        /* the delete stands: say so with the vacuum's failure (store-prune.h) */
        g_autofree char *gone =
            !pruned.runs ? g_strdup("")
            : pruned.lo == pruned.hi
                ? g_strdup_printf("run %" G_GINT64_FORMAT " IS deleted, but ", pruned.lo)
                : g_strdup_printf("the %" G_GINT64_FORMAT " runs ARE deleted, but ", pruned.runs);
        cli_error("%sthe vacuum failed: %s; the file was not vacuumed (it keeps its size; later "
                  "runs reuse the freed space) — free some disk space, then 'ranksim prune "
                  "--vacuum --db %s'",
                  gone, vacuum_err ? vacuum_err->message : "?", path);
        return CLI_EXIT_INTERNAL;
    }
    return CLI_EXIT_OK;
}
