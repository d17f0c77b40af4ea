/* tests/net/test-cost.c — the placeholder collective cost: the nccl-tests bus factors and
 * ring step counts it claims, and its presets. */
#include <criterion/criterion.h>
#include <math.h>

#include "../../net/cost.h"

static NetModel flat(double bw, int64_t base, int64_t step)
{
    NetModel m = {"t", bw, base, step};
    return m;
}

Test(cost, bandwidth_term_uses_nccl_tests_bus_factors)
{
    /* 1 GB/s, no latency: time in ns = algorithm bytes x bus factor. */
    NetModel m = flat(1e9, 0, 0);
    const uint64_t B = 8000000; /* per-rank input bytes */
    for (uint32_t n = 2; n <= 64; n *= 2) {
        double dn = n;
        cr_assert_eq(net_collective_cost_ns(&m, NET_ALL_REDUCE, n, B),
                     llround(B * 2.0 * (dn - 1) / dn));
        cr_assert_eq(net_collective_cost_ns(&m, NET_REDUCE_SCATTER, n, B),
                     llround(B * (dn - 1) / dn));
        cr_assert_eq(net_collective_cost_ns(&m, NET_ALL_TO_ALL, n, B), llround(B * (dn - 1) / dn));
        /* all_gather's algorithm size is the gathered output, n x input. */
        cr_assert_eq(net_collective_cost_ns(&m, NET_ALL_GATHER, n, B),
                     llround(B * dn * (dn - 1) / dn));
        cr_assert_eq(net_collective_cost_ns(&m, NET_BROADCAST, n, B), (int64_t)B);
    }
}

Test(cost, latency_term_counts_ring_steps)
{
    NetModel m = flat(1e18, 1000, 10);
    cr_assert_eq(net_collective_cost_ns(&m, NET_ALL_REDUCE, 8, 0), 1000 + 14 * 10);
    cr_assert_eq(net_collective_cost_ns(&m, NET_ALL_GATHER, 8, 0), 1000 + 7 * 10);
    cr_assert_eq(net_collective_cost_ns(&m, NET_BARRIER, 4, 0), 1000 + 6 * 10);
    cr_assert_eq(net_collective_cost_ns(&m, NET_P2P, 2, 0), 1000 + 10);
    cr_assert_eq(net_collective_cost_ns(&m, NET_ALL_REDUCE, 1, 1 << 20), 1000);
}

Test(cost, presets_load_and_unknown_fails)
{
    NetModel m;
    cr_assert(net_model_preset("b200", &m));
    cr_assert_float_eq(m.bw_bytes_per_s, 900e9, 1.0);
    cr_assert(net_model_preset("ascend-910c", &m));
    cr_assert_float_eq(m.bw_bytes_per_s, 196e9, 1.0);
    cr_assert_not(net_model_preset("tpu", &m));
    NetModel d = net_model_default();
    cr_assert_float_eq(d.bw_bytes_per_s, 450e9, 1.0);
}

Test(cost, huge_sizes_saturate_instead_of_overflowing)
{
    NetModel m = flat(1.0, 0, 0);
    int64_t t = net_collective_cost_ns(&m, NET_ALL_GATHER, 1 << 20, UINT64_MAX / 2);
    cr_assert(t > 0);
    cr_assert_eq(t, INT64_MAX / 4);
}
