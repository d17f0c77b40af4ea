/* net/fabric-rates.c — max-min fair rates by progressive filling; see fabric-rates.h. */
#include "fabric-rates.h"

#include <glib.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

struct NetRateSolver {
    uint32_t n_res;
    const double *res_cap; /* borrowed */
    double *left;          /* [n_res] capacity not yet handed out, this call */
    double *w;             /* [n_res] weight of the unfrozen flows on it, this call */
    GArray *touched;       /* uint32 resources used by this call's classes */
    GArray *frozen;        /* bool per class, grows */
};

NetRateSolver *net_rates_new(uint32_t n_res, const double *res_cap)
{
    NetRateSolver *s = g_new0(NetRateSolver, 1);
    s->n_res = n_res;
    s->res_cap = res_cap;
    s->left = g_new0(double, n_res ? n_res : 1);
    s->w = g_new0(double, n_res ? n_res : 1);
    s->touched = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    s->frozen = g_array_new(FALSE, TRUE, sizeof(bool));
    return s;
}

void net_rates_free(NetRateSolver *s)
{
    if (!s)
        return;
    g_free(s->left);
    g_free(s->w);
    g_array_unref(s->touched);
    g_array_unref(s->frozen);
    g_free(s);
}

/* The largest step every unfrozen class can rise by: its own cap's room, and each used
 * resource's remaining capacity shared by the weight still rising on it. */
static double fill_step(const NetRateSolver *s, const NetRateClass *cls, uint32_t n,
                        const bool *frozen, const double *rate)
{
    double delta = INFINITY;
    for (uint32_t i = 0; i < n; i++)
        if (!frozen[i] && cls[i].cap - rate[i] < delta)
            delta = cls[i].cap - rate[i];
    for (guint k = 0; k < s->touched->len; k++) {
        uint32_t r = g_array_index(s->touched, uint32_t, k);
        if (s->w[r] > 0 && s->left[r] / s->w[r] < delta)
            delta = s->left[r] / s->w[r];
    }
    return delta < 0 ? 0 : delta;
}

/* Raises the unfrozen classes by delta and freezes those at their cap or on a resource with
 * (to rounding) nothing left. Returns how many froze. */
static uint32_t fill_round(NetRateSolver *s, const NetRateClass *cls, uint32_t n, bool *frozen,
                           double *rate, double delta)
{
    for (guint k = 0; k < s->touched->len; k++) {
        uint32_t r = g_array_index(s->touched, uint32_t, k);
        s->left[r] -= delta * s->w[r];
    }
    uint32_t froze = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (frozen[i])
            continue;
        rate[i] += delta;
        bool stop = rate[i] >= cls[i].cap * (1 - 1e-12);
        for (uint32_t u = 0; u < cls[i].n_uses && !stop; u++) {
            uint32_t r = cls[i].uses[u].res;
            stop = s->left[r] <= s->res_cap[r] * 1e-12;
        }
        if (!stop)
            continue;
        frozen[i] = true;
        froze++;
        for (uint32_t u = 0; u < cls[i].n_uses; u++)
            s->w[cls[i].uses[u].res] -= (double)cls[i].count * cls[i].uses[u].weight;
    }
    return froze;
}

void net_rates_solve(NetRateSolver *s, const NetRateClass *cls, uint32_t n, double *rate)
{
    if (!n)
        return;
    g_array_set_size(s->frozen, n);
    bool *frozen = (bool *)(void *)s->frozen->data;
    memset(frozen, 0, n * sizeof *frozen);
    memset(rate, 0, n * sizeof *rate);
    g_array_set_size(s->touched, 0);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t u = 0; u < cls[i].n_uses; u++) {
            uint32_t r = cls[i].uses[u].res;
            g_assert(r < s->n_res);
            if (s->w[r] == 0 && s->left[r] == 0) {
                s->left[r] = s->res_cap[r];
                g_array_append_val(s->touched, r);
            }
            /* count x weight: both small integers, so the product and the sums are exact */
            s->w[r] += (double)cls[i].count * cls[i].uses[u].weight;
        }
    uint32_t unfrozen = n;
    while (unfrozen) {
        double delta = fill_step(s, cls, n, frozen, rate);
        uint32_t froze = fill_round(s, cls, n, frozen, rate, delta);
        if (!froze) /* cannot happen with delta at a binding constraint; guard */
            break;
        unfrozen -= froze;
    }
    for (guint k = 0; k < s->touched->len; k++) {
        uint32_t r = g_array_index(s->touched, uint32_t, k);
        s->left[r] = 0;
        s->w[r] = 0;
    }
}
