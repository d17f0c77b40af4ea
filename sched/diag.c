/* sched/diag.c — diagnostics, outcomes and the rank-list and time formatters; see diag.h. */
#include "diag.h"

SchedOutcome *sched_outcome_new(uint32_t n_ranks)
{
    SchedOutcome *o = g_new0(SchedOutcome, 1);
    o->n_ranks = n_ranks;
    o->ranks = g_new0(SchedRankStats, n_ranks);
    o->diags = g_ptr_array_new();
    o->groups = g_ptr_array_new_with_free_func(g_free);
    o->group_members = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    return o;
}

void sched_outcome_add_group(SchedOutcome *o, const char *name, const int32_t *ranks, uint32_t n)
{
    g_ptr_array_add(o->groups, g_strdup(name));
    GArray *m = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), n);
    g_array_append_vals(m, ranks, n);
    g_ptr_array_add(o->group_members, m);
}

const char *sched_rank_state_name(SchedRankState s)
{
    static const char *const names[] = {"done",    "blocked", "crashed",
                                        "stopped", "unknown", "not run"};
    g_return_val_if_fail((unsigned)s < G_N_ELEMENTS(names), "?");
    return names[s];
}

const char *sched_severity_name(SchedSeverity s)
{
    return s == SCHED_SEV_ERROR ? "error" : "warning";
}

void sched_diag_free(SchedDiag *d)
{
    if (!d)
        return;
    g_free(d->op_name);
    g_free(d->message);
    g_free(d->detail);
    g_free(d);
}

static void diag_free(gpointer data)
{
    sched_diag_free(data);
}

SchedDiag *sched_diag_new(const char *kind, SchedSeverity sev, int32_t rank, int32_t group,
                          uint64_t seq, int32_t layer, const char *op_name, const char *message,
                          const char *detail)
{
    SchedDiag *d = g_new0(SchedDiag, 1);
    d->kind = kind;
    d->severity = sev;
    d->rank = rank;
    d->group = group;
    d->seq = seq;
    d->layer = layer;
    d->op_name = g_strdup(op_name);
    d->message = g_strdup(message);
    d->detail = g_strdup(detail);
    return d;
}

void sched_outcome_add_diag(SchedOutcome *o, SchedDiag *d)
{
    g_ptr_array_add(o->diags, d);
    if (d->severity == SCHED_SEV_ERROR)
        o->failed = true;
}

void sched_outcome_free(SchedOutcome *o)
{
    if (!o)
        return;
    g_ptr_array_set_free_func(o->diags, diag_free);
    g_ptr_array_free(o->diags, TRUE);
    g_ptr_array_free(o->groups, TRUE);
    g_ptr_array_free(o->group_members, TRUE);
    g_free(o->ranks);
    g_free(o);
}

char *sched_format_ns(int64_t ns)
{
    if (ns < 0)
        return g_strdup("-");
    if (ns >= 1000000000LL)
        return g_strdup_printf("%.3f s", (double)ns / 1e9);
    if (ns >= 1000000LL)
        return g_strdup_printf("%.3f ms", (double)ns / 1e6);
    return g_strdup_printf("%.3f us", (double)ns / 1e3);
}

char *sched_format_ranks_brief(const int32_t *ranks, uint32_t n, size_t max_chars)
{
    GString *s = g_string_new(NULL);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        int64_t step = i + 1 < n ? (int64_t)ranks[i + 1] - ranks[i] : 0;
        uint32_t k = i;
        while (j == i && step >= 2 && k + 1 < n && (int64_t)ranks[k + 1] - ranks[k] == step)
            k++;
        gsize before = s->len;
        if (s->len)
            g_string_append_c(s, ',');
        if (j > i) {
            g_string_append_printf(s, "%d-%d", ranks[i], ranks[j]);
        } else if (k >= i + 3) {
            g_string_append_printf(s, "%d,%d,...,%d", ranks[i], ranks[i + 1], ranks[k]);
            j = k;
        } else {
            g_string_append_printf(s, "%d", ranks[i]);
        }
        if (max_chars && s->len > max_chars && before > 0) {
            g_string_truncate(s, before);
            g_string_append_printf(s, ",... (%u ranks)", n);
            break;
        }
        i = j + 1;
    }
    return g_string_free(s, FALSE);
}

char *sched_format_ranks(const int32_t *ranks, uint32_t n)
{
    GString *s = g_string_new(NULL);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        if (s->len)
            g_string_append_c(s, ',');
        if (j == i)
            g_string_append_printf(s, "%d", ranks[i]);
        else
            g_string_append_printf(s, "%d-%d", ranks[i], ranks[j]);
        i = j + 1;
    }
    return g_string_free(s, FALSE);
}
