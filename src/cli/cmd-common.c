/* src/cli/cmd-common.c — helpers shared by the subcommands; see cmd-common.h. */
#include "cmd-common.h"

#include <stdio.h>
#include <string.h>

#include "exit-codes.h"
#include "../util/inputfile.h"
#include "../store/query.h"
#include "../run/runner.h"

static const char *const timeline_names[] = {"none", "collectives", "full"};

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* One line, whatever the message echoes (a value with a newline, a control character). */
    g_autofree char *line = input_escape(msg, 0);
    fflush(stdout);
    fprintf(stderr, "ranksim: error: %s\n", line);
}

static void store_wait_notice(const char *message, void *data)
{
    (void)data;
    g_autofree char *line = input_escape(message, 0);
    fflush(stdout);
    fprintf(stderr, "ranksim: note: %s\n", line);
}

Store *cli_store_open_write(const char *path, GError **error)
{
    Store *s = store_open(path, error);
    if (s)
        store_set_wait_notice(s, store_wait_notice, NULL);
    return s;
}

bool cli_timeline_parse(const char *s, SchedTimeline *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, timeline_names[i]) == 0) {
            *out = (SchedTimeline)i;
            return true;
        }
    return false;
}

const char *cli_timeline_name(SchedTimeline t)
{
    g_assert((int)t >= 0 && (int)t < 3);
    return timeline_names[t];
}

/* "N" or "N@C" of --prefill into *len and *ctx (0 without "@C"). */
static bool prefill_flag(const char *flag, uint32_t *len, uint32_t *ctx)
{
    g_auto(GStrv) parts = g_strsplit(flag, "@", 2);
    guint64 n, c = 0;
    if (!g_ascii_string_to_unsigned(parts[0], 10, 1, 10000000, &n, NULL) ||
        (parts[1] && !g_ascii_string_to_unsigned(parts[1], 10, 0, 10000000, &c, NULL)))
        return false;
    *len = (uint32_t)n;
    *ctx = (uint32_t)c;
    return true;
}

bool cli_workload_parse(char **prefill_flags, char **decode_flags, GArray **prefill,
                        GArray **prefill_ctx, GArray **decode, GError **error)
{
    for (char **p = prefill_flags; p && *p; p++) {
        uint32_t len, ctx;
        if (!prefill_flag(*p, &len, &ctx)) {
            g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                        "--prefill '%s': expected a prompt length in tokens, 1..10000000, or "
                        "N@C: N new tokens after C cached ones (0..10000000), e.g. 2048@8192",
                        *p);
            return false;
        }
        if (ctx && !prefill_ctx) {
            g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                        "--prefill '%s': this command takes no cached context (N@C); valid: a "
                        "prompt length, or write {tokens: N, cached: C} in the scenario's "
                        "workload steps",
                        *p);
            return false;
        }
        if (!*prefill)
            *prefill = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        g_array_append_val(*prefill, len);
        if (prefill_ctx) {
            if (!*prefill_ctx)
                *prefill_ctx = g_array_new(FALSE, FALSE, sizeof(uint32_t));
            g_array_append_val(*prefill_ctx, ctx);
        }
    }
    for (char **d = decode_flags; d && *d; d++) {
        g_auto(GStrv) parts = g_strsplit(*d, ":", 2);
        guint64 b, ctx;
        if (g_strv_length(parts) != 2 ||
            !g_ascii_string_to_unsigned(parts[0], 10, 1, 65536, &b, NULL) ||
            !g_ascii_string_to_unsigned(parts[1], 10, 1, 10000000, &ctx, NULL)) {
            g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                        "--decode '%s': expected BATCH:CONTEXT, e.g. 8:4096 (8 sequences at a "
                        "4096-token context)",
                        *d);
            return false;
        }
        if (!*decode)
            *decode = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        for (guint64 i = 0; i < b; i++) {
            uint32_t c = (uint32_t)ctx;
            g_array_append_val(*decode, c);
        }
    }
    return true;
}

bool cli_input_paths_check(const char *scenario, const char *hardware, GError **error)
{
    if (scenario) {
        g_autoptr(GError) e = NULL;
        if (!input_file_check(scenario, 0, &e) && e->code != INPUT_ERROR_OPEN) {
            /* a missing or unreadable file: the loader says so in its words */
            g_propagate_error(error, g_steal_pointer(&e));
            return false;
        }
    }
    if (hardware && (strchr(hardware, '/') || g_str_has_suffix(hardware, ".yaml") ||
                     g_str_has_suffix(hardware, ".yml"))) {
        g_autoptr(GError) e = NULL;
        if (!input_file_check(hardware, 0, &e) && e->code != INPUT_ERROR_OPEN) {
            /* a missing file is the loader's to explain (it lists the presets) */
            g_set_error(error, INPUT_ERROR, e->code, "--hardware %s", e->message);
            return false;
        }
    }
    return true;
}

bool cli_max_rank_ops_parse(const char *value, uint64_t *out, GError **error)
{
    *out = RUNNER_DEFAULT_MAX_RANK_OPS;
    if (!value)
        return true;
    guint64 v;
    if (!g_ascii_string_to_unsigned(value, 10, 0, G_MAXUINT64, &v, NULL)) {
        g_autofree char *shown = input_escape(value, 40);
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "--max-rank-ops '%s': expected a count of rank-ops, 0 (no limit) .. "
                    "18446744073709551615",
                    shown);
        return false;
    }
    *out = v;
    return true;
}

Store *cli_store_open_existing(const char *path, int *exit_code)
{
    g_autoptr(GError) err = NULL;
    Store *st = store_open_readonly(path, &err);
    if (!st && g_error_matches(err, STORE_ERROR, STORE_ERROR_MISSING)) {
        cli_error("no results database at %s (run 'ranksim run SCENARIO' first, or pass --db "
                  "FILE)",
                  path);
        *exit_code = CLI_EXIT_INVALID;
    } else if (!st) {
        cli_error("%s", err->message);
        *exit_code = store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    return st;
}

int64_t cli_run_resolve(Store *st, const char *arg, int *exit_code)
{
    g_autoptr(GError) err = NULL;
    int64_t id = query_run_resolve(st, arg, &err);
    if (id < 0) {
        cli_error("%s", err->message);
        *exit_code = g_error_matches(err, QUERY_ERROR, QUERY_ERROR_SQL) ? CLI_EXIT_INTERNAL
                                                                        : CLI_EXIT_INVALID;
    }
    return id;
}

char *cli_overrides_text(const char *const *assignments)
{
    if (!assignments || !assignments[0])
        return NULL;
    GString *s = g_string_new(NULL);
    for (guint i = 0; assignments[i]; i++) {
        const char *a = assignments[i], *eq = strchr(a, '=');
        g_autofree char *key = eq ? g_strndup(a, (gsize)(eq - a)) : g_strdup(a);
        const char *dot = strrchr(key, '.');
        const char *val = eq ? eq + 1 : "";
        const char *slash = strrchr(val, '/');
        g_string_append_printf(s, "%s%s=%s", i ? ", " : "", dot ? dot + 1 : key,
                               slash && slash[1] ? slash + 1 : val);
    }
    return g_string_free(s, FALSE);
}

char *cli_run_name(const char *base, const char *const *assignments)
{
    g_autofree char *what = cli_overrides_text(assignments);
    return what ? g_strdup_printf("%s[%s]", base, what) : g_strdup(base);
}
