/* src/cli/cmd-merge.c — `ranksim merge OUT.db IN.db...`: copies the runs of result databases
 * (the shards of a sweep, `sweep --shard K/N`) into one, in one transaction: run ids remapped,
 * a sweep split over shards kept as one sweep, a run already in OUT not copied twice (so a
 * merge can be re-run safely); the inputs are only read. store-merge.h has the rules,
 * doc/cli.md and doc/scale-out.md the command.
 */
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "help.h"
#include "../store/store-merge.h"
#include "../store/store.h"

/* One line per input: what it added, what was already there. */
static void print_input(const char *path, const StoreMergeStats *s)
{
    g_autofree char *ids =
        s->added == 0        ? g_strdup("")
        : s->added == 1      ? g_strdup_printf(" as run %" G_GINT64_FORMAT, s->first_id)
                             : g_strdup_printf(" as runs %" G_GINT64_FORMAT "-%" G_GINT64_FORMAT,
                                               s->first_id, s->last_id);
    g_autofree char *present =
        s->present ? g_strdup_printf(", %" G_GINT64_FORMAT " already there (skipped)", s->present)
                   : g_strdup("");
    g_autofree char *sweeps =
        s->sweeps ? g_strdup_printf("; %" G_GINT64_FORMAT " sweep%s, %" G_GINT64_FORMAT
                                    " joined to one already there",
                                    s->sweeps, s->sweeps == 1 ? "" : "s", s->sweeps_joined)
                  : g_strdup("");
    printf("%s: %" G_GINT64_FORMAT " run%s: %" G_GINT64_FORMAT " added%s%s%s\n", path, s->runs,
           s->runs == 1 ? "" : "s", s->added, ids, present, sweeps);
}

static void json_input(JsonBuilder *jb, const char *path, const StoreMergeStats *s)
{
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "path");
    json_builder_add_string_value(jb, path);
    const struct {
        const char *name;
        int64_t v;
    } f[] = {{"runs", s->runs},         {"added", s->added},        {"present", s->present},
             {"first_id", s->first_id}, {"last_id", s->last_id},    {"sweeps", s->sweeps},
             {"sweeps_joined", s->sweeps_joined}, {"rows", s->rows}};
    for (size_t i = 0; i < G_N_ELEMENTS(f); i++) {
        json_builder_set_member_name(jb, f[i].name);
        json_builder_add_int_value(jb, f[i].v);
    }
    json_builder_end_object(jb);
}

/* Merges argv[2..] into argv[1]'s store in one transaction; returns the exit status. */
static int merge_all(Store *out, int argc, char **argv, bool json)
{
    g_autoptr(GError) err = NULL;
    StoreMerge *m = store_merge_begin(out, &err);
    if (!m) {
        cli_error("%s; nothing was merged", err->message);
        return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    StoreMergeStats *stats = g_new0(StoreMergeStats, (gsize)MAX(argc, 1));
    int64_t added = 0, present = 0;
    for (int i = 2; i < argc; i++) {
        if (!store_merge_add(m, argv[i], &stats[i], &err)) {
            store_merge_abort(m);
            g_free(stats);
            cli_error("%s; nothing was merged", err->message);
            return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
        }
        added += stats[i].added;
        present += stats[i].present;
    }
    if (!store_merge_commit(m, &err)) {
        g_free(stats);
        cli_error("%s; nothing was merged", err->message);
        return CLI_EXIT_INTERNAL;
    }
    int64_t total = store_run_count(out);
    if (json) {
        g_autoptr(JsonBuilder) jb = json_builder_new();
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "db");
        json_builder_add_string_value(jb, argv[1]);
        json_builder_set_member_name(jb, "inputs");
        json_builder_begin_array(jb);
        for (int i = 2; i < argc; i++)
            json_input(jb, argv[i], &stats[i]);
        json_builder_end_array(jb);
        json_builder_set_member_name(jb, "added");
        json_builder_add_int_value(jb, added);
        json_builder_set_member_name(jb, "present");
        json_builder_add_int_value(jb, present);
        json_builder_set_member_name(jb, "runs");
        json_builder_add_int_value(jb, total);
        json_builder_end_object(jb);
        g_autoptr(JsonNode) root = json_builder_get_root(jb);
        g_autofree char *text = json_to_string(root, TRUE);
        printf("%s\n", text);
    } else {
        for (int i = 2; i < argc; i++)
            print_input(argv[i], &stats[i]);
        printf("merged %d database%s into %s: %" G_GINT64_FORMAT " run%s added, %" G_GINT64_FORMAT
               " already there; %" G_GINT64_FORMAT " run%s in %s\n",
               argc - 2, argc - 2 == 1 ? "" : "s", argv[1], added, added == 1 ? "" : "s", present,
               total, total == 1 ? "" : "s", argv[1]);
    }
    g_free(stats);
    return CLI_EXIT_OK;
}

int cli_merge(int argc, char **argv)
{
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print what was merged as one JSON object",
         NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("OUT.db IN.db... - merge result databases (a sweep's shards)");
    g_option_context_set_summary(
        ctx, "Copies every run of each IN.db into OUT.db (created if absent), in one\n"
             "transaction: each run gets OUT's next id and all its rows follow it; the shards\n"
             "of one sweep ('ranksim sweep --shard K/N') become one sweep again; a run already\n"
             "in OUT is not copied twice, so running the same merge again is safe. The inputs\n"
             "are opened read-only and never changed. With no IN.db, OUT.db is only created\n"
             "or upgraded to this ranksim's schema.");
    g_option_context_set_description(
        ctx, "Example:\n"
             "  ranksim sweep S.yaml --vary KEY=1,2,4 --shard 1/3 --db shard1.db   (and 2/3, 3/3)\n"
             "  ranksim merge sweep.db shard1.db shard2.db shard3.db\n"
             "\n"
             "Exit status: 0 merged (also when every run was already there), 2 bad arguments\n"
             "or an input that is not a ranksim database of this schema version (nothing is\n"
             "merged then), 1 the database cannot be written (nothing merged).\n"
             "Details: doc/cli.md, doc/scale-out.md.\n");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (argc < 2) {
        cli_error("merge: missing OUT.db (try 'ranksim merge --help')");
        return CLI_EXIT_INVALID;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], argv[1]) == 0) {
            cli_error("merge: %s is both the output and an input; name another OUT.db", argv[1]);
            return CLI_EXIT_INVALID;
        }
    /* The inputs are recognised (read-only) before OUT is opened, which would create it. */
    for (int i = 2; i < argc; i++) {
        if (!store_merge_check(argv[i], &err)) {
            cli_error("%s; nothing was merged", err->message);
            return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
        }
    }
    g_autoptr(Store) out = cli_store_open_write(argv[1], &err);
    if (!out) {
        cli_error("%s", err->message);
        return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    if (argc == 2) {
        printf("%s: a ranksim database of schema version %d, %" G_GINT64_FORMAT " runs; nothing "
               "to merge\n",
               argv[1], STORE_SCHEMA_VERSION, store_run_count(out));
        return CLI_EXIT_OK;
    }
    return merge_all(out, argc, argv, json);
}
