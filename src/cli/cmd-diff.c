/* src/cli/cmd-diff.c — `ranksim diff RUN_A RUN_B`: two stored runs side by side — times per rank,
 * communication, outcome, memory and the inputs that differ.
 * Exit codes: cmd-stored.h. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd-common.h"
#include "cmd-stored.h"
#include "../output/diff-inputs.h"
#include "../output/report.h"

static char *fmt_pct(double a, double b)
{
    if (a == b)
        return g_strdup("0%");
    if (a == 0)
        return g_strdup("new");
    return g_strdup_printf("%+.1f%%", (b - a) / fabs(a) * 100.0);
}

/* Signed duration: "+1.234 ms" / "-12.000 us". */
static char *fmt_delta_ns(int64_t d)
{
    g_autofree char *abs = sched_format_ns(d < 0 ? -d : d);
    return g_strdup_printf("%s%s", d < 0 ? "-" : d > 0 ? "+" : "", abs);
}

static void diff_time_row(const char *label, const char *metric, int64_t a, int64_t b, bool has_a,
                          bool has_b)
{
    g_autofree char *sa = has_a ? sched_format_ns(a) : g_strdup("-");
    g_autofree char *sb = has_b ? sched_format_ns(b) : g_strdup("-");
    g_autofree char *d = has_a && has_b ? fmt_delta_ns(b - a) : g_strdup("-");
    g_autofree char *p = has_a && has_b ? fmt_pct((double)a, (double)b) : g_strdup("-");
    printf("  %-12s %-8s %14s %14s %15s %9s\n", label, metric, sa, sb, d, p);
}

static bool same_stats(const SchedRankStats *x, const SchedRankStats *y)
{
    return x->state == y->state && x->end_ns == y->end_ns && x->compute_ns == y->compute_ns &&
           x->comm_ns == y->comm_ns && x->wait_ns == y->wait_ns;
}

/* Rank r's pair (A, B) equals rank q's pair (absent ranks compare equal to absent ones). */
static bool same_pair(const SchedOutcome *a, const SchedOutcome *b, uint32_t r, uint32_t q)
{
    bool ra = r < a->n_ranks, qa = q < a->n_ranks, rb = r < b->n_ranks, qb = q < b->n_ranks;
    if (ra != qa || rb != qb)
        return false;
    return (!ra || same_stats(&a->ranks[r], &a->ranks[q])) &&
           (!rb || same_stats(&b->ranks[r], &b->ranks[q]));
}

static void diff_ranks(const SchedOutcome *a, const SchedOutcome *b)
{
    uint32_t n = MAX(a->n_ranks, b->n_ranks);
    printf("\nper rank (identical rows folded; delta = B - A):\n");
    printf("  %-12s %-8s %14s %14s %15s %9s\n", "rank", "", "A", "B", "delta", "%");
    for (uint32_t r = 0; r < n;) {
        uint32_t j = r;
        while (j + 1 < n && same_pair(a, b, r, j + 1))
            j++;
        g_autofree char *label = j == r ? g_strdup_printf("%u", r) : g_strdup_printf("%u-%u", r, j);
        bool ha = r < a->n_ranks, hb = r < b->n_ranks;
        const SchedRankStats zero = {0};
        const SchedRankStats *x = ha ? &a->ranks[r] : &zero, *y = hb ? &b->ranks[r] : &zero;
        if (ha && hb && x->state != y->state)
            printf("  %-12s %-8s %14s %14s\n", label, "state", sched_rank_state_name(x->state),
                   sched_rank_state_name(y->state));
        diff_time_row(ha && hb && x->state != y->state ? "" : label, "end", x->end_ns, y->end_ns,
                      ha, hb);
        diff_time_row("", "compute", x->compute_ns, y->compute_ns, ha, hb);
        diff_time_row("", "comm", x->comm_ns, y->comm_ns, ha, hb);
        diff_time_row("", "wait", x->wait_ns, y->wait_ns, ha, hb);
        r = j + 1;
    }
}

static gint cmp_str_ptr(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void diff_comm(Store *st, const QueryRun *a, const QueryRun *b)
{
    printf("\ncommunication by collective (sum over ranks of done - arrive, completed calls):\n");
    g_autoptr(GHashTable) ha = query_comm_totals(st, a->info.id);
    g_autoptr(GHashTable) hb = query_comm_totals(st, b->info.id);
    if (!ha || !hb) {
        printf("  (cannot read the collectives view)\n");
        return;
    }
    for (int k = 0; k < 2; k++) {
        const QueryRun *r = k ? b : a;
        if (g_strcmp0(r->info.timeline, "none") == 0)
            printf("  note: run %" G_GINT64_FORMAT " (%s) was stored with --timeline none: it "
                   "has no rows of completed collectives\n",
                   r->info.id, k ? "B" : "A");
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, ha);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_ptr_array_add(names, key);
    g_hash_table_iter_init(&it, hb);
    while (g_hash_table_iter_next(&it, &key, NULL))
        if (!g_hash_table_contains(ha, key))
            g_ptr_array_add(names, key);
    g_ptr_array_sort(names, cmp_str_ptr);
    if (!names->len) {
        printf("  (no completed collectives in either run)\n");
        return;
    }
    printf("  %-22s %18s %18s %12s %4s\n", "collective", "A (calls)", "B (calls)", "delta", "%");
    QueryCommTotal ta = {0, 0}, tb = {0, 0};
    for (guint i = 0; i < names->len; i++) {
        const char *name = g_ptr_array_index(names, i);
        const QueryCommTotal *x = g_hash_table_lookup(ha, name), *y = g_hash_table_lookup(hb, name);
        QueryCommTotal zx = {0, 0}, zy = {0, 0};
        if (!x)
            x = &zx;
        if (!y)
            y = &zy;
        ta.ns += x->ns, ta.calls += x->calls, tb.ns += y->ns, tb.calls += y->calls;
        g_autofree char *fa = sched_format_ns(x->ns), *fb = sched_format_ns(y->ns);
        g_autofree char *ca = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fa, x->calls);
        g_autofree char *cb = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fb, y->calls);
        g_autofree char *d = fmt_delta_ns(y->ns - x->ns);
        g_autofree char *p = fmt_pct((double)x->ns, (double)y->ns);
        printf("  %-22.22s %18s %18s %12s %4s\n", name, ca, cb, d, p);
    }
    g_autofree char *fa = sched_format_ns(ta.ns), *fb = sched_format_ns(tb.ns);
    g_autofree char *ca = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fa, ta.calls);
    g_autofree char *cb = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", fb, tb.calls);
    g_autofree char *d = fmt_delta_ns(tb.ns - ta.ns);
    g_autofree char *p = fmt_pct((double)ta.ns, (double)tb.ns);
    printf("  %-22s %18s %18s %12s %4s\n", "total", ca, cb, d, p);
}

/* "error mismatch" -> count, in first-seen order. */
static void diag_counts(const SchedOutcome *o, GPtrArray *keys, GHashTable *counts)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        char *k = g_strdup_printf("%-8s %s", sched_severity_name(d->severity), d->kind);
        gpointer old = g_hash_table_lookup(counts, k);
        if (!old)
            g_ptr_array_add(keys, g_strdup(k));
        g_hash_table_insert(counts, k, GINT_TO_POINTER(GPOINTER_TO_INT(old) + 1));
    }
}

static void diff_outcome(const QueryRun *a, const QueryRun *b)
{
    printf("\ndiagnostics (count by kind):\n");
    g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) ca = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) cb = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    diag_counts(a->outcome, keys, ca);
    g_autoptr(GPtrArray) kb = g_ptr_array_new_with_free_func(g_free);
    diag_counts(b->outcome, kb, cb);
    for (guint i = 0; i < kb->len; i++)
        if (!g_hash_table_contains(ca, g_ptr_array_index(kb, i)))
            g_ptr_array_add(keys, g_strdup(g_ptr_array_index(kb, i)));
    if (!keys->len) {
        printf("  none in either run\n");
    } else {
        printf("  %-24s %6s %6s\n", "", "A", "B");
        for (guint i = 0; i < keys->len; i++) {
            const char *k = g_ptr_array_index(keys, i);
            int x = GPOINTER_TO_INT(g_hash_table_lookup(ca, k));
            int y = GPOINTER_TO_INT(g_hash_table_lookup(cb, k));
            printf("  %-24s %6d %6d%s\n", k, x, y, x != y ? "   <- differs" : "");
        }
    }
    for (int k = 0; k < 2; k++) {
        const QueryRun *r = k ? b : a;
        const SchedDiag *d = query_first_diag(r->outcome);
        if (!d || d->severity != SCHED_SEV_ERROR)
            continue;
        g_autofree char *m = query_short_message(d->message, 160);
        printf("  first error in %s: %s\n", k ? "B" : "A", m);
    }
}

/* model/memory.h's component order; others sort after them by name. */
static int component_rank(const char *c)
{
    static const char *const order[] = {"weights",   "quant_scales",   "derived_weights",
                                        "kv_cache",  "attn_workspace", "activations",
                                        "cudagraph", "reserved",       "outside_budget"};
    for (size_t i = 0; i < G_N_ELEMENTS(order); i++)
        if (strcmp(c, order[i]) == 0)
            return (int)i;
    return (int)G_N_ELEMENTS(order);
}

static gint cmp_component(gconstpointer a, gconstpointer b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int rx = component_rank(x), ry = component_rank(y);
    return rx != ry ? rx - ry : strcmp(x, y);
}

static void mem_row(const char *label, int64_t a, int64_t b)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    g_autofree char *p = fmt_pct((double)a, (double)b);
    g_autofree char *d = a == b ? g_strdup("0") : g_strdup_printf("%+.3f", (double)(b - a) / gib);
    printf("  %-20s %12.3f %12.3f %13s %9s\n", label, (double)a / gib, (double)b / gib, d, p);
}

static void diff_memory(Store *st, const QueryRun *a, const QueryRun *b)
{
    if (!query_has_table(st, "memory"))
        return;
    g_autoptr(GPtrArray) order = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) ma = query_memory_max(st, a->info.id, order);
    g_autoptr(GHashTable) mb = query_memory_max(st, b->info.id, order);
    if (!ma || !mb) {
        if (ma || mb)
            printf("\nmemory: only run %" G_GINT64_FORMAT " has a memory plan\n",
                   ma ? a->info.id : b->info.id);
        return;
    }
    g_ptr_array_sort(order, cmp_component);
    printf("\nmemory per rank (GiB, the largest rank of each run):\n");
    printf("  %-20s %12s %12s %13s %9s\n", "component", "A", "B", "delta", "%");
    for (guint i = 0; i < order->len; i++) {
        const char *c = g_ptr_array_index(order, i);
        int64_t *x = g_hash_table_lookup(ma, c), *y = g_hash_table_lookup(mb, c);
        mem_row(c, x ? *x : 0, y ? *y : 0);
    }
    mem_row("total (peak rank)", query_memory_peak(st, a->info.id),
            query_memory_peak(st, b->info.id));
    int64_t kv_a = 0, kv_b = 0;
    if (query_kv_budgets(st, a->info.id, b->info.id, &kv_a, &kv_b))
        mem_row("KV budget (min rank)", kv_a, kv_b);
}

/* One run's side of `diff --json`. */
static void diff_json_run(JsonBuilder *b, const char *key, const QueryRun *r)
{
    json_builder_set_member_name(b, key);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "run_id");
    json_builder_add_int_value(b, r->info.id);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, r->info.name ? r->info.name : "");
    json_builder_set_member_name(b, "status");
    json_builder_add_string_value(b, r->info.status ? r->info.status : "");
    json_builder_set_member_name(b, "exit_code");
    json_builder_add_int_value(b, r->info.exit_code);
    json_builder_set_member_name(b, "hardware");
    if (r->info.hardware)
        json_builder_add_string_value(b, r->info.hardware);
    else
        json_builder_add_null_value(b);
    const SchedOutcome *o = r->outcome;
    json_builder_set_member_name(b, "ranks");
    json_builder_add_int_value(b, o ? o->n_ranks : 0);
    json_builder_set_member_name(b, "sim_end_us");
    json_builder_add_double_value(b, o ? (double)o->end_ns / 1e3 : 0);
    json_builder_set_member_name(b, "rank_ops");
    json_builder_add_int_value(b, o ? (int64_t)o->rank_ops : 0);
    json_builder_set_member_name(b, "diagnostics");
    json_builder_begin_object(b);
    g_autoptr(GHashTable) kinds = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; o && i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        g_hash_table_insert(
            kinds, (gpointer)d->kind,
            GINT_TO_POINTER(GPOINTER_TO_INT(g_hash_table_lookup(kinds, d->kind)) + 1));
    }
    g_autoptr(GList) keys = g_list_sort(g_hash_table_get_keys(kinds), (GCompareFunc)strcmp);
    for (GList *l = keys; l; l = l->next) {
        json_builder_set_member_name(b, l->data);
        json_builder_add_int_value(b, GPOINTER_TO_INT(g_hash_table_lookup(kinds, l->data)));
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
}

int cli_diff(int argc, char **argv)
{
    g_autofree char *db = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json,
         "One JSON object: both runs' outcome, times and diagnostic counts, and the deltas", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!cli_stored_parse(
            "RUN_A RUN_B - compare two stored runs",
            "Compares two runs (e.g. FLASHINFER_MLA_SPARSE vs FLASHMLA_SPARSE, or utilization\n"
            "0.92 vs 0.96): outcome, per-rank end/compute/comm/wait times (A, B, B - A, %),\n"
            "communication time by collective name, diagnostics by kind, and memory per\n"
            "component when both runs have a memory plan.",
            &db, entries, &argc, &argv))
        return CLI_EXIT_INVALID;
    if (argc != 3) {
        cli_error("diff: expected two runs, RUN_A RUN_B (try 'ranksim diff --help')");
        return CLI_EXIT_INVALID;
    }
    g_auto(CliOpened) o = {0};
    int code;
    if (!cli_stored_open(&o, db, argv[1], argv[2], &code))
        return code;
    const QueryRun *a = o.run[0], *b = o.run[1];
    if (json) {
        g_autoptr(JsonBuilder) jb = json_builder_new();
        json_builder_begin_object(jb);
        diff_json_run(jb, "a", a);
        diff_json_run(jb, "b", b);
        diff_inputs_json(jb, o.st, &a->info, &b->info);
        bool both = a->outcome && b->outcome && !cli_run_is_invalid(a) && !cli_run_is_invalid(b);
        json_builder_set_member_name(jb, "sim_end_delta_us");
        if (both)
            json_builder_add_double_value(jb,
                                          (double)(b->outcome->end_ns - a->outcome->end_ns) / 1e3);
        else
            json_builder_add_null_value(jb);
        json_builder_set_member_name(jb, "same_hardware");
        json_builder_add_boolean_value(jb, g_strcmp0(a->info.hardware, b->info.hardware) == 0);
        json_builder_end_object(jb);
        g_autoptr(JsonNode) root = json_builder_get_root(jb);
        g_autofree char *text = json_to_string(root, TRUE);
        printf("%s\n", text);
        return CLI_EXIT_OK;
    }

    g_autofree char *ta = cli_run_title(a), *tb = cli_run_title(b);
    printf("A: %s, %s, exit %d\nB: %s, %s, exit %d\n", ta, a->info.status, a->info.exit_code, tb,
           b->info.status, b->info.exit_code);
    diff_inputs_text(stdout, o.st, &a->info, &b->info);
    if (cli_run_is_invalid(a) || cli_run_is_invalid(b)) {
        for (int k = 0; k < 2; k++) {
            const QueryRun *r = k ? b : a;
            if (cli_run_is_invalid(r))
                printf("%s is invalid (nothing was simulated): %s\n", k ? "B" : "A",
                       cli_run_invalid_message(r));
        }
        return CLI_EXIT_OK;
    }
    const SchedOutcome *oa = a->outcome, *ob = b->outcome;
    printf("\n  %-21s %14s %14s %15s %9s\n", "", "A", "B", "delta", "%");
    printf("  %-21s %14u %14u\n", "ranks", oa->n_ranks, ob->n_ranks);
    diff_time_row("step time", "(end)", oa->end_ns, ob->end_ns, true, true);
    printf("  %-21s %14" G_GUINT64_FORMAT " %14" G_GUINT64_FORMAT "\n", "rank-ops", oa->rank_ops,
           ob->rank_ops);
    diff_ranks(oa, ob);
    diff_comm(o.st, a, b);
    diff_outcome(a, b);
    diff_memory(o.st, a, b);
    return CLI_EXIT_OK;
}
