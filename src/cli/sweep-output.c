/* src/cli/sweep-output.c — what `ranksim sweep` prints when it is done: the table of variants (laid
 * out to the terminal's width), the summary with the configurations that are safe, and the
 * same as JSON or CSV for scripts (doc/cli.md). */
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "sweep-output.h"

#include "../store/query.h"
#include "../output/report.h"
#include "../util/textwrap.h"

const char *const cli_sweep_outcome_names[] = {"not run", "ok", "failed", "invalid", "error"};

/* ---- summary ---- */

/* `sweep --json`: the variants and the summary as one JSON object on stdout. */
void sweep_print_json(const CliSweep *sw, double wall_s)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "scenario");
    json_builder_add_string_value(b, sw->in.path);
    json_builder_set_member_name(b, "db");
    json_builder_add_string_value(b, sw->db_path);
    static const char *const counts[] = {"variants", "ok", "failed", "invalid", "not_stored"};
    guint vals[] = {sw->n, sw->ok, sw->failed, sw->invalid, sw->errors};
    for (size_t k = 0; k < G_N_ELEMENTS(counts); k++) {
        json_builder_set_member_name(b, counts[k]);
        json_builder_add_int_value(b, vals[k]);
    }
    json_builder_set_member_name(b, "shard");
    if (sw->shard.source) {
        json_builder_begin_object(b);
        static const char *const names[] = {"index", "count", "first_variant", "total_variants"};
        guint v[] = {sw->shard.index + 1, sw->shard.count, sw->first + 1, sw->total};
        for (size_t k = 0; k < G_N_ELEMENTS(names); k++) {
            json_builder_set_member_name(b, names[k]);
            json_builder_add_int_value(b, v[k]);
        }
        json_builder_set_member_name(b, "from");
        json_builder_add_string_value(b, sw->shard.source);
        json_builder_end_object(b);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_set_member_name(b, "interrupted");
    json_builder_add_boolean_value(b, sw->interrupted);
    json_builder_set_member_name(b, "wall_s");
    json_builder_add_double_value(b, wall_s);
    json_builder_set_member_name(b, "sweep_id");
    if (sw->sweep_id > 0)
        json_builder_add_int_value(b, sw->sweep_id);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "runs");
    json_builder_begin_array(b);
    guint nv = sw->in.varies->len;
    for (guint i = 0; i < sw->n; i++) {
        const CliSweepVariant *v = &sw->variants[i];
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "variant");
        json_builder_begin_object(b);
        g_autofree guint *choice = g_new0(guint, nv);
        sweep_variant_choice(sw->in.varies, sw->variants[i].index, choice);
        for (guint k = 0; k < nv; k++) {
            const SweepVary *vy = g_ptr_array_index(sw->in.varies, k);
            json_builder_set_member_name(b, vy->key);
            json_builder_add_string_value(b, g_ptr_array_index(vy->values, choice[k]));
        }
        json_builder_end_object(b);
        json_builder_set_member_name(b, "run_id");
        if (v->run_id >= 0)
            json_builder_add_int_value(b, v->run_id);
        else
            json_builder_add_null_value(b);
        json_builder_set_member_name(b, "outcome");
        json_builder_add_string_value(b, cli_sweep_outcome_names[v->outcome]);
        json_builder_set_member_name(b, "step_time_us");
        if (v->end_ns >= 0)
            json_builder_add_double_value(b, (double)v->end_ns / 1e3);
        else
            json_builder_add_null_value(b);
        json_builder_set_member_name(b, "kv_budget_bytes");
        if (v->has_kv)
            json_builder_add_int_value(b, v->kv_min_bytes);
        else
            json_builder_add_null_value(b);
        json_builder_set_member_name(b, "first_diagnostic");
        if (v->first_diag)
            json_builder_add_string_value(b, v->first_diag);
        else
            json_builder_add_null_value(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *text = json_to_string(root, TRUE);
    printf("%s\n", text);
}

char *cli_sweep_finding(const char *first_diag, guint max_chars)
{
    if (!first_diag)
        return g_strdup("");
    const char *p = first_diag;
    if (!g_str_has_prefix(p, "config: "))
        return query_short_message(p, max_chars);
    p += strlen("config: ");
    if (g_str_has_prefix(p, "line ")) { /* "line 10: " */
        const char *q = p + strlen("line ");
        while (g_ascii_isdigit(*q))
            q++;
        if (q[0] == ':' && q[1] == ' ')
            p = q + 2;
    }
    if (g_str_has_prefix(p, "key '")) { /* "key 'parallel': " */
        const char *q = strstr(p, "': ");
        if (q)
            p = q + 3;
    }
    const char *sp = strchr(p, ' '); /* "parallel.decode_context_parallel_size: " */
    g_autofree char *key = NULL;
    if (sp && sp > p + 1 && sp[-1] == ':' && memchr(p, '.', (size_t)(sp - p))) {
        key = g_strndup(p, (gsize)(sp - 1 - p));
        p = sp + 1;
    }
    g_autofree char *first = query_short_message(p, G_MAXUINT); /* its first line */
    g_autofree char *text = key ? g_strdup_printf("config: %s (%s)", first, key)
                                : g_strconcat("config: ", first, NULL);
    return query_short_message(text, max_chars);
}

/* A --vary key as a column head: its last component ("attention_backend"). */
static const char *short_key(const char *key)
{
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

static char *kv_text(const CliSweepVariant *v)
{
    return v->has_kv
               ? g_strdup_printf("%.2f GiB", (double)v->kv_min_bytes / (1024.0 * 1024.0 * 1024.0))
               : g_strdup("-");
}

/* A variant's figures, after its values: "  run  outcome  step time  KV budget". */
static void print_cells(const CliSweepVariant *v)
{
    g_autofree char *id =
        v->run_id >= 0 ? g_strdup_printf("%" G_GINT64_FORMAT, v->run_id) : g_strdup("-");
    g_autofree char *end = v->end_ns >= 0 ? sched_format_ns(v->end_ns) : g_strdup("-");
    g_autofree char *kv = kv_text(v);
    printf("  %6s  %-7s  %11s  %10s", id, cli_sweep_outcome_names[v->outcome], end, kv);
}

/* The table for a terminal too narrow for one column per key (sweep_print_table). */
static void print_compact(const CliSweep *sw, int wid, int width)
{
    guint nv = sw->in.varies->len;
    int cell = wid + 2 + 6 + 2 + 7 + 2 + 11 + 2 + 10 + 2;
    int room = MAX(16, width - cell);
    printf("%*s  %6s  %-7s  %11s  %10s  %s\n", wid, "#", "run", "outcome", "step time", "KV budget",
           "variant");
    g_autofree guint *choice = g_new0(guint, MAX(nv, 1));
    for (guint i = 0; i < sw->n; i++) {
        const CliSweepVariant *v = &sw->variants[i];
        printf("%*u", wid, sw->variants[i].index + 1);
        print_cells(v);
        printf("  ");
        sweep_variant_choice(sw->in.varies, sw->variants[i].index, choice);
        int col = 0;
        for (guint k = 0; k < nv; k++) {
            const SweepVary *vy = g_ptr_array_index(sw->in.varies, k);
            g_autofree char *piece = g_strdup_printf(
                "%s=%s%s", short_key(vy->key),
                (const char *)g_ptr_array_index(vy->values, choice[k]), k + 1 < nv ? "," : "");
            int pw = (int)g_utf8_strlen(piece, -1);
            if (col && col + 1 + pw > room) {
                printf("\n%*s", cell, "");
                col = 0;
            } else if (col) {
                putchar(' ');
                col++;
            }
            fputs(piece, stdout);
            col += pw;
        }
        printf("\n");
        if (v->first_diag && *v->first_diag) {
            g_autofree char *d = cli_sweep_finding(v->first_diag, (guint)MAX(8, width - wid - 4));
            printf("%*s  %s\n", wid, "", d);
        }
    }
}

void sweep_print_table(const CliSweep *sw)
{
    guint nv = sw->in.varies->len;
    g_autofree int *w = g_new0(int, nv);
    for (guint k = 0; k < nv; k++) {
        const SweepVary *vy = g_ptr_array_index(sw->in.varies, k);
        w[k] = (int)strlen(short_key(vy->key));
        for (guint i = 0; i < vy->values->len; i++)
            w[k] = MAX(w[k], (int)strlen(g_ptr_array_index(vy->values, i)));
    }
    g_autofree char *maxn = g_strdup_printf("%u", sw->first + sw->n);
    int wid = MAX(1, (int)strlen(maxn));
    int used = wid;
    for (guint k = 0; k < nv; k++)
        used += 2 + w[k];
    used += 2 + 6 + 2 + 7 + 2 + 11 + 2 + 10 + 2;
    /* the first diagnostic takes what the line has left; with less than 24 columns left it
     * goes on a line of its own under the variant */
    int width = text_width();
    /* when even the values and the figures do not fit, the variant goes last as one cell,
     * "key=value, ..." wrapped at its commas, and the finding under it */
    if (used - 2 > width) {
        print_compact(sw, wid, width);
        return;
    }
    bool below = width - used < 24;
    int diag_w = below ? width - wid - 4 : width - used;
    printf("%*s", wid, "#");
    for (guint k = 0; k < nv; k++)
        printf("  %-*s", w[k],
               short_key(((const SweepVary *)g_ptr_array_index(sw->in.varies, k))->key));
    printf("  %6s  %-7s  %11s  %10s", "run", "outcome", "step time", "KV budget");
    printf("%s\n", below ? "" : width >= 120 ? "  first diagnostic" : "  finding");
    g_autofree guint *choice = g_new0(guint, MAX(nv, 1));
    for (guint i = 0; i < sw->n; i++) {
        const CliSweepVariant *v = &sw->variants[i];
        printf("%*u", wid, sw->variants[i].index + 1);
        sweep_variant_choice(sw->in.varies, sw->variants[i].index, choice);
        for (guint k = 0; k < nv; k++) {
            const SweepVary *vy = g_ptr_array_index(sw->in.varies, k);
            printf("  %-*s", w[k], (const char *)g_ptr_array_index(vy->values, choice[k]));
        }
        g_autofree char *diag = cli_sweep_finding(v->first_diag, (guint)MAX(8, diag_w));
        print_cells(v);
        if (!below)
            printf("  %s\n", *diag ? diag : "-");
        else if (*diag)
            printf("\n%*s  %s\n", wid, "", diag);
        else
            printf("\n");
    }
}

/* Per --vary value: how many of its variants ran ok, failed, were rejected. */
typedef struct {
    guint ok, bad, total;
} ValueTally;

/* "Which configurations are safe": each value that was ok in every variant that had it, each
 * that never was, and the mixed ones with their counts. Values of a sweep of one key are its
 * configurations; with several keys a value is safe only when it was ok whatever the others. */
static void print_safety(const CliSweep *sw)
{
    guint nv = sw->in.varies->len;
    GString *safe = g_string_new(NULL), *unsafe = g_string_new(NULL), *mixed = g_string_new(NULL);
    g_autofree guint *choice = g_new0(guint, MAX(nv, 1));
    for (guint k = 0; k < nv; k++) {
        const SweepVary *vy = g_ptr_array_index(sw->in.varies, k);
        g_autofree ValueTally *t = g_new0(ValueTally, vy->values->len);
        for (guint i = 0; i < sw->n; i++) {
            const CliSweepVariant *v = &sw->variants[i];
            if (v->outcome == CLI_SWEEP_NOT_RUN || v->outcome == CLI_SWEEP_ERROR)
                continue;
            sweep_variant_choice(sw->in.varies, sw->variants[i].index, choice);
            t[choice[k]].total++;
            if (v->outcome == CLI_SWEEP_OK)
                t[choice[k]].ok++;
            else
                t[choice[k]].bad++;
        }
        for (guint j = 0; j < vy->values->len; j++) {
            if (!t[j].total)
                continue;
            const char *val = g_ptr_array_index(vy->values, j);
            GString *into = t[j].ok == t[j].total ? safe : t[j].ok == 0 ? unsafe : mixed;
            g_string_append_printf(into, "%s%s=%s", into->len ? ", " : "", short_key(vy->key), val);
            if (into == mixed)
                g_string_append_printf(into, " (%u of %u ok)", t[j].ok, t[j].total);
        }
    }
    if (safe->len)
        printf("safe (ok in every variant): %s\n", safe->str);
    if (unsafe->len)
        printf("not safe (failed or rejected in every variant): %s\n", unsafe->str);
    if (mixed->len)
        printf("depends on the other keys: %s\n", mixed->str);
    g_string_free(safe, TRUE);
    g_string_free(unsafe, TRUE);
    g_string_free(mixed, TRUE);
}

char *cli_sweep_shard_words(const CliSweep *sw)
{
    if (!sw->shard.source)
        return g_strdup("");
    g_autofree char *from = strcmp(sw->shard.source, "--shard") == 0
                                ? g_strdup("")
                                : g_strdup_printf(" (%s)", sw->shard.source);
    if (!sw->n)
        return g_strdup_printf("shard %u/%u%s: none of the %u variants (more shards than "
                               "variants), ",
                               sw->shard.index + 1, sw->shard.count, from, sw->total);
    return g_strdup_printf("shard %u/%u%s: variants %u-%u of %u, ", sw->shard.index + 1,
                           sw->shard.count, from, sw->first + 1, sw->first + sw->n, sw->total);
}

void sweep_print_summary(const CliSweep *sw, double wall_s)
{
    g_autofree char *shard = cli_sweep_shard_words(sw);
    printf("\nsweep of %s: %s%u variant%s, %u ok, %u failed, %u invalid", sw->in.path, shard,
           sw->n, sw->n == 1 ? "" : "s", sw->ok, sw->failed, sw->invalid);
    if (sw->errors)
        printf(", %u not stored", sw->errors);
    if (sw->done < sw->n)
        printf(", %u not run (interrupted)", sw->n - sw->done);
    printf("; %.2f s wall with -j %u\n", wall_s, sw->jobs);
    print_safety(sw);
    if (sw->sweep_id > 0)
        printf("stored as sweep %" G_GINT64_FORMAT " in %s: 'ranksim runs --sweep %" G_GINT64_FORMAT
               "', 'ranksim report RUN', 'ranksim explain RUN'\n",
               sw->sweep_id, sw->db_path, sw->sweep_id);
    if (sw->done && sw->invalid == sw->done)
        printf("note: every variant was rejected; check the --vary keys and values against the "
               "first diagnostic\n");
}

/* One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
static void csv_field(GString *out, const char *s, bool last)
{
    if (!s)
        s = "";
    if (strpbrk(s, ",\"\r\n")) {
        g_string_append_c(out, '"');
        for (const char *p = s; *p; p++) {
            if (*p == '"')
                g_string_append_c(out, '"');
            g_string_append_c(out, *p);
        }
        g_string_append_c(out, '"');
    } else {
        g_string_append(out, s);
    }
    g_string_append(out, last ? "\r\n" : ",");
}

void sweep_print_csv(const CliSweep *sw)
{
    guint nv = sw->in.varies->len;
    GString *out = g_string_new(NULL);
    csv_field(out, "variant", false);
    for (guint k = 0; k < nv; k++)
        csv_field(out, ((const SweepVary *)g_ptr_array_index(sw->in.varies, k))->key, false);
    static const char *const cols[] = {"run_id",       "sweep_id",        "outcome",
                                       "step_time_us", "kv_budget_bytes", "first_diagnostic"};
    for (size_t c = 0; c < G_N_ELEMENTS(cols); c++)
        csv_field(out, cols[c], c + 1 == G_N_ELEMENTS(cols));
    g_autofree guint *choice = g_new0(guint, MAX(nv, 1));
    for (guint i = 0; i < sw->n; i++) {
        const CliSweepVariant *v = &sw->variants[i];
        g_autofree char *num = g_strdup_printf("%u", sw->variants[i].index + 1);
        csv_field(out, num, false);
        sweep_variant_choice(sw->in.varies, sw->variants[i].index, choice);
        for (guint k = 0; k < nv; k++)
            csv_field(
                out,
                g_ptr_array_index(((const SweepVary *)g_ptr_array_index(sw->in.varies, k))->values,
                                  choice[k]),
                false);
        g_autofree char *id =
            v->run_id >= 0 ? g_strdup_printf("%" G_GINT64_FORMAT, v->run_id) : g_strdup("");
        g_autofree char *sid = sw->sweep_id > 0 && v->run_id >= 0
                                   ? g_strdup_printf("%" G_GINT64_FORMAT, sw->sweep_id)
                                   : g_strdup("");
        char end[G_ASCII_DTOSTR_BUF_SIZE] = "";
        if (v->end_ns >= 0)
            g_ascii_formatd(end, sizeof end, "%.3f", (double)v->end_ns / 1e3);
        g_autofree char *kv =
            v->has_kv ? g_strdup_printf("%" G_GINT64_FORMAT, v->kv_min_bytes) : g_strdup("");
        csv_field(out, id, false);
        csv_field(out, sid, false);
        csv_field(out, cli_sweep_outcome_names[v->outcome], false);
        csv_field(out, end, false);
        csv_field(out, kv, false);
        csv_field(out, v->first_diag, true);
    }
    fwrite(out->str, 1, out->len, stdout);
    g_string_free(out, TRUE);
}
