/* tests/net/test-fabric-rates.c — the max-min solver (net/fabric-rates.h) against a
 * brute-force water-filling reference on random flow sets, against the max-min
 * characterisation (feasible, every flow at its cap or bottlenecked on a saturated resource
 * where no flow gets more), and classes of n flows against n separate flows, bit for bit. */
#include <criterion/criterion.h>
#include <glib.h>
#include <math.h>

#include "../../net/fabric-rates.h"

#define MAX_RES 16
#define MAX_FLOWS 64
#define MAX_USES 4

typedef struct {
    uint32_t n_res, n;
    double res_cap[MAX_RES];
    NetRateUse uses[MAX_FLOWS][MAX_USES];
    NetRateClass cls[MAX_FLOWS];
} Set;

/* A random set: integer weights (member counts), caps from far below to far above what the
 * resources allow, some flows alone on a resource, some classes of several flows. */
static void random_set(GRand *rng, Set *s, bool with_counts)
{
    s->n_res = (uint32_t)g_rand_int_range(rng, 1, MAX_RES + 1);
    s->n = (uint32_t)g_rand_int_range(rng, 1, MAX_FLOWS / 4 + 1);
    for (uint32_t r = 0; r < s->n_res; r++)
        s->res_cap[r] = g_rand_double_range(rng, 10e9, 400e9);
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t k = (uint32_t)g_rand_int_range(rng, 1, MAX_USES + 1);
        if (k > s->n_res)
            k = s->n_res;
        uint32_t n_uses = 0;
        while (n_uses < k) { /* distinct resources */
            uint32_t r = (uint32_t)g_rand_int_range(rng, 0, (gint32)s->n_res);
            bool dup = false;
            for (uint32_t u = 0; u < n_uses; u++)
                dup = dup || s->uses[i][u].res == r;
            if (!dup)
                s->uses[i][n_uses++] = (NetRateUse){r, (double)g_rand_int_range(rng, 1, 9)};
        }
        double cap = g_rand_boolean(rng) ? g_rand_double_range(rng, 1e9, 60e9) : 1e15;
        s->cls[i] =
            (NetRateClass){.uses = s->uses[i],
                           .n_uses = n_uses,
                           .cap = cap,
                           .count = with_counts ? (uint32_t)g_rand_int_range(rng, 1, 4) : 1};
    }
}

/* Water-filling from scratch each round: the level every unfrozen flow is at is the least of
 * their caps and, per resource, (capacity - what frozen flows take) / unfrozen weight; flows
 * at their cap or on a resource at that level freeze. Classes are expanded to single flows. */
static void reference(const Set *s, double *rate)
{
    uint32_t n = 0, owner[MAX_FLOWS * 4];
    for (uint32_t i = 0; i < s->n; i++)
        for (uint32_t c = 0; c < s->cls[i].count; c++)
            owner[n++] = i;
    double r[MAX_FLOWS * 4] = {0};
    bool frozen[MAX_FLOWS * 4] = {0};
    for (uint32_t left = n; left;) {
        double used[MAX_RES] = {0}, w[MAX_RES] = {0};
        for (uint32_t j = 0; j < n; j++) {
            const NetRateClass *c = &s->cls[owner[j]];
            for (uint32_t u = 0; u < c->n_uses; u++) {
                if (frozen[j])
                    used[c->uses[u].res] += c->uses[u].weight * r[j];
                else
                    w[c->uses[u].res] += c->uses[u].weight;
            }
        }
        double level = INFINITY, res_level[MAX_RES];
        for (uint32_t k = 0; k < s->n_res; k++) {
            res_level[k] = w[k] > 0 ? (s->res_cap[k] - used[k]) / w[k] : INFINITY;
            level = fmin(level, res_level[k]);
        }
        for (uint32_t j = 0; j < n; j++)
            if (!frozen[j])
                level = fmin(level, s->cls[owner[j]].cap);
        for (uint32_t j = 0; j < n; j++) {
            if (frozen[j])
                continue;
            const NetRateClass *c = &s->cls[owner[j]];
            r[j] = level;
            bool stop = c->cap <= level * (1 + 1e-9);
            for (uint32_t u = 0; u < c->n_uses; u++)
                stop = stop || res_level[c->uses[u].res] <= level * (1 + 1e-9);
            if (stop) {
                frozen[j] = true;
                left--;
            }
        }
    }
    for (uint32_t j = 0; j < n; j++)
        rate[owner[j]] = r[j]; /* a class's flows all reach the same level */
}

static void check_max_min(const Set *s, const double *rate)
{
    double load[MAX_RES] = {0};
    for (uint32_t i = 0; i < s->n; i++)
        for (uint32_t u = 0; u < s->cls[i].n_uses; u++)
            load[s->cls[i].uses[u].res] += s->cls[i].count * s->cls[i].uses[u].weight * rate[i];
    for (uint32_t k = 0; k < s->n_res; k++)
        cr_assert(load[k] <= s->res_cap[k] * (1 + 1e-9), "resource %u over capacity", k);
    for (uint32_t i = 0; i < s->n; i++) {
        cr_assert(rate[i] <= s->cls[i].cap * (1 + 1e-9));
        if (rate[i] >= s->cls[i].cap * (1 - 1e-9))
            continue;
        bool bottleneck = false; /* saturated, and no flow on it gets more */
        for (uint32_t u = 0; u < s->cls[i].n_uses && !bottleneck; u++) {
            uint32_t k = s->cls[i].uses[u].res;
            bool top = load[k] >= s->res_cap[k] * (1 - 1e-9);
            for (uint32_t j = 0; j < s->n && top; j++)
                for (uint32_t v = 0; v < s->cls[j].n_uses; v++)
                    if (s->cls[j].uses[v].res == k && rate[j] > rate[i] * (1 + 1e-9))
                        top = false;
            bottleneck = top;
        }
        cr_assert(bottleneck, "flow %u below its cap without a bottleneck", i);
    }
}

Test(rates, equal_brute_force_water_filling_on_random_sets)
{
    GRand *rng = g_rand_new_with_seed(27);
    for (int trial = 0; trial < 2000; trial++) {
        Set s;
        random_set(rng, &s, trial % 2 == 1);
        NetRateSolver *solver = net_rates_new(s.n_res, s.res_cap);
        double got[MAX_FLOWS], want[MAX_FLOWS];
        net_rates_solve(solver, s.cls, s.n, got);
        reference(&s, want);
        for (uint32_t i = 0; i < s.n; i++)
            cr_assert(fabs(got[i] - want[i]) <= 1e-9 * want[i],
                      "trial %d flow %u: %.17g, reference %.17g", trial, i, got[i], want[i]);
        check_max_min(&s, got);
        /* the scratch is clean for the next call: the same set again gives the same rates */
        double again[MAX_FLOWS];
        net_rates_solve(solver, s.cls, s.n, again);
        for (uint32_t i = 0; i < s.n; i++)
            cr_assert_eq(again[i], got[i]);
        net_rates_free(solver);
    }
    g_rand_free(rng);
}

/* A class of n flows is n flows: the same rates bit for bit, in any order of the classes. */
Test(rates, a_class_is_its_flows_bit_for_bit)
{
    GRand *rng = g_rand_new_with_seed(29);
    for (int trial = 0; trial < 500; trial++) {
        Set s;
        random_set(rng, &s, true);
        NetRateClass flat[MAX_FLOWS * 4], reversed[MAX_FLOWS];
        uint32_t n = 0, first[MAX_FLOWS];
        for (uint32_t i = 0; i < s.n; i++) {
            first[i] = n;
            for (uint32_t c = 0; c < s.cls[i].count; c++) {
                flat[n] = s.cls[i];
                flat[n++].count = 1;
            }
            reversed[s.n - 1 - i] = s.cls[i];
        }
        NetRateSolver *solver = net_rates_new(s.n_res, s.res_cap);
        double by_class[MAX_FLOWS], by_flow[MAX_FLOWS * 4], by_rev[MAX_FLOWS];
        net_rates_solve(solver, s.cls, s.n, by_class);
        net_rates_solve(solver, flat, n, by_flow);
        net_rates_solve(solver, reversed, s.n, by_rev);
        for (uint32_t i = 0; i < s.n; i++) {
            for (uint32_t c = 0; c < s.cls[i].count; c++)
                cr_assert_eq(by_flow[first[i] + c], by_class[i], "trial %d class %u", trial, i);
            cr_assert_eq(by_rev[s.n - 1 - i], by_class[i], "trial %d class %u", trial, i);
        }
        net_rates_free(solver);
    }
    g_rand_free(rng);
}

/* Textbook case (Bertsekas and Gallager, 6.5.2): links of capacity 1; flow 0 on both,
 * flows 1 and 2 on the first, flow 3 on the second: 1/3, 1/3, 1/3, 2/3. */
Test(rates, textbook_two_links)
{
    double cap[2] = {1, 1};
    NetRateUse both[2] = {{0, 1}, {1, 1}}, first[1] = {{0, 1}}, second[1] = {{1, 1}};
    NetRateClass cls[3] = {
        {both, 2, INFINITY, 1}, {first, 1, INFINITY, 2}, {second, 1, INFINITY, 1}};
    NetRateSolver *s = net_rates_new(2, cap);
    double rate[3];
    net_rates_solve(s, cls, 3, rate);
    cr_assert_float_eq(rate[0], 1.0 / 3, 1e-15);
    cr_assert_float_eq(rate[1], 1.0 / 3, 1e-15);
    cr_assert_float_eq(rate[2], 2.0 / 3, 1e-15);
    net_rates_free(s);
}
