/* src/output/diff-inputs.c — the inputs of two runs compared; see diff-inputs.h. */
#include "diff-inputs.h"

#include "../store/query.h"

#include <string.h>

/* Lines of the scenario diff shown at most. */
#define MAX_LINES 12

typedef struct {
    char *input; /* "layout", "scenario line 12" */
    char *a, *b; /* NULL: absent on that side */
} InputDiff;

static void input_diff_free(gpointer p)
{
    InputDiff *d = p;
    g_free(d->input);
    g_free(d->a);
    g_free(d->b);
    g_free(d);
}

static void add(GPtrArray *out, char *input, const char *a, const char *b)
{
    InputDiff *d = g_new0(InputDiff, 1);
    d->input = input;
    d->a = g_strdup(a);
    d->b = g_strdup(b);
    g_ptr_array_add(out, d);
}

/* A scenario file's content lines: comments and blank lines left out (they do not change what
 * runs; a sweep variant's trailing comment names its variant, already listed as overrides),
 * each with its line number. A YAML comment starts at a '#' at the line's start or after a
 * space, outside quotes. */
typedef struct {
    GPtrArray *text; /* char* */
    GArray *line;    /* guint, 1-based */
} Lines;

static Lines content_lines(const char *t)
{
    Lines l = {g_ptr_array_new_with_free_func(g_free), g_array_new(FALSE, FALSE, sizeof(guint))};
    g_auto(GStrv) all = g_strsplit(t ? t : "", "\n", -1);
    for (guint i = 0; all[i]; i++) {
        char *x = all[i];
        char quote = 0;
        for (char *p = x; *p; p++) {
            if (quote) {
                quote = *p == quote ? 0 : quote;
            } else if (*p == '"' || *p == '\'') {
                quote = *p;
            } else if (*p == '#' && (p == x || p[-1] == ' ' || p[-1] == '\t')) {
                *p = '\0';
                break;
            }
        }
        g_strchomp(x);
        bool blank = true;
        for (const char *p = x; *p && blank; p++)
            blank = *p == ' ' || *p == '\t' || *p == '\r';
        if (blank)
            continue;
        g_ptr_array_add(l.text, g_strdup(x));
        guint n = i + 1;
        g_array_append_val(l.line, n);
    }
    return l;
}

static void lines_clear(Lines *l)
{
    g_ptr_array_unref(l->text);
    g_array_unref(l->line);
}

/* The content lines only one side has, by a longest common subsequence of the two files'
 * (scenario files are small: the table is lines(A) x lines(B), capped). */
static void scenario_lines(GPtrArray *out, const char *ta, const char *tb)
{
    Lines A = content_lines(ta), B = content_lines(tb);
    guint na = A.text->len, nb = B.text->len;
    if ((guint64)(na + 1) * (nb + 1) > 4000000) { /* not a hand-written scenario */
        add(out, g_strdup("scenario"), "(a large file)", "(another large file)");
        lines_clear(&A);
        lines_clear(&B);
        return;
    }
    char **la = (char **)A.text->pdata, **lb = (char **)B.text->pdata;
    guint w = nb + 1;
    g_autofree guint *len = g_new0(guint, (gsize)(na + 1) * w);
    for (guint i = na; i-- > 0;)
        for (guint j = nb; j-- > 0;)
            len[i * w + j] = strcmp(la[i], lb[j]) == 0
                                 ? len[(i + 1) * w + j + 1] + 1
                                 : MAX(len[(i + 1) * w + j], len[i * w + j + 1]);
    guint i = 0, j = 0, shown = 0, more = 0;
    while (i < na || j < nb) {
        if (i < na && j < nb && strcmp(la[i], lb[j]) == 0) {
            i++, j++;
            continue;
        }
        /* where both sides change here, A's and B's versions side by side */
        bool take_a = i < na && (j >= nb || len[(i + 1) * w + j] >= len[i * w + j + 1]);
        bool take_b = j < nb && (i >= na || len[i * w + j + 1] >= len[(i + 1) * w + j]);
        guint lna = i < na ? g_array_index(A.line, guint, i) : 0;
        guint lnb = j < nb ? g_array_index(B.line, guint, j) : 0;
        if (shown++ >= MAX_LINES)
            more++;
        else if (take_a && take_b)
            add(out,
                lna == lnb ? g_strdup_printf("scenario line %u", lna)
                           : g_strdup_printf("scenario line %u / %u", lna, lnb),
                la[i], lb[j]);
        else if (take_a)
            add(out, g_strdup_printf("scenario line %u of A", lna), la[i], NULL);
        else
            add(out, g_strdup_printf("scenario line %u of B", lnb), NULL, lb[j]);
        if (take_a && take_b)
            i++, j++;
        else if (take_a)
            i++;
        else
            j++;
    }
    if (more)
        add(out, g_strdup_printf("scenario (%u more lines)", more), NULL, NULL);
    lines_clear(&A);
    lines_clear(&B);
}

static GPtrArray *compare(Store *st, const StoreRunInfo *a, const StoreRunInfo *b)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(input_diff_free);
    struct {
        const char *name;
        const char *a, *b;
    } fields[] = {
        {"kind", a->kind, b->kind},
        {"model", a->model, b->model},
        {"weights", a->weights, b->weights},
        {"layout", a->layout, b->layout},
        {"vLLM", a->vllm, b->vllm},
        {"hardware", a->hardware, b->hardware},
        {"overrides", a->overrides, b->overrides},
        {"time line", a->timeline, b->timeline},
    };
    for (size_t k = 0; k < G_N_ELEMENTS(fields); k++)
        if (g_strcmp0(fields[k].a, fields[k].b) != 0)
            add(out, g_strdup(fields[k].name), fields[k].a, fields[k].b);
    g_autofree char *ta = query_run_scenario(st, a->id);
    g_autofree char *tb = query_run_scenario(st, b->id);
    if (g_strcmp0(ta, tb) != 0)
        scenario_lines(out, ta, tb);
    return out;
}

void diff_inputs_text(FILE *out, Store *st, const StoreRunInfo *a, const StoreRunInfo *b)
{
    g_autoptr(GPtrArray) d = compare(st, a, b);
    if (!d->len) {
        fprintf(out, "inputs: the same scenario, settings and hardware\n");
        return;
    }
    fprintf(out, "inputs that differ (A / B):\n");
    for (guint i = 0; i < d->len; i++) {
        const InputDiff *x = g_ptr_array_index(d, i);
        if (!x->a && !x->b)
            fprintf(out, "  %s\n", x->input);
        else if (g_str_has_prefix(x->input, "scenario")) {
            g_autofree char *sa = x->a ? g_strdup_printf("\"%s\"", g_strstrip(x->a)) : NULL;
            g_autofree char *sb = x->b ? g_strdup_printf("\"%s\"", g_strstrip(x->b)) : NULL;
            fprintf(out, "  %s: %s / %s\n", x->input, sa ? sa : "-", sb ? sb : "-");
        } else
            fprintf(out, "  %s: %s / %s\n", x->input, x->a ? x->a : "-", x->b ? x->b : "-");
    }
}

void diff_inputs_json(JsonBuilder *jb, Store *st, const StoreRunInfo *a, const StoreRunInfo *b)
{
    g_autoptr(GPtrArray) d = compare(st, a, b);
    json_builder_set_member_name(jb, "inputs");
    json_builder_begin_array(jb);
    for (guint i = 0; i < d->len; i++) {
        const InputDiff *x = g_ptr_array_index(d, i);
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "input");
        json_builder_add_string_value(jb, x->input);
        json_builder_set_member_name(jb, "a");
        if (x->a)
            json_builder_add_string_value(jb, x->a);
        else
            json_builder_add_null_value(jb);
        json_builder_set_member_name(jb, "b");
        if (x->b)
            json_builder_add_string_value(jb, x->b);
        else
            json_builder_add_null_value(jb);
        json_builder_end_object(jb);
    }
    json_builder_end_array(jb);
}
