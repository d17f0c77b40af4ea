/* tests/net/test-cost.c — collective shapes: nccl-tests bus factors and sizes, ring and tree
 * step counts. */
#include <criterion/criterion.h>

#include "../../net/cost.h"

Test(cost, bus_factors_are_nccl_tests)
{
    for (uint32_t n = 1; n <= 64; n++) {
        double dn = n;
        cr_assert_float_eq(net_bus_factor(NET_ALL_REDUCE, n), 2 * (dn - 1) / dn, 1e-12);
        cr_assert_float_eq(net_bus_factor(NET_ALL_GATHER, n), (dn - 1) / dn, 1e-12);
        cr_assert_float_eq(net_bus_factor(NET_REDUCE_SCATTER, n), (dn - 1) / dn, 1e-12);
        cr_assert_float_eq(net_bus_factor(NET_ALL_TO_ALL, n), (dn - 1) / dn, 1e-12);
        cr_assert_float_eq(net_bus_factor(NET_BROADCAST, n), n > 1 ? 1.0 : 0.0, 1e-12);
        cr_assert_float_eq(net_bus_factor(NET_BARRIER, n), 0.0, 1e-12);
    }
}

Test(cost, all_gather_size_is_the_gathered_output)
{
    cr_assert_float_eq(net_algo_size(NET_ALL_GATHER, 8, 1000), 8000.0, 1e-9);
    cr_assert_float_eq(net_algo_size(NET_ALL_REDUCE, 8, 1000), 1000.0, 1e-9);
    cr_assert_float_eq(net_algo_size(NET_REDUCE_SCATTER, 8, 1000), 1000.0, 1e-9);
}

Test(cost, steps)
{
    cr_assert_eq(net_ring_steps(NET_ALL_REDUCE, 8), 14);
    cr_assert_eq(net_ring_steps(NET_ALL_GATHER, 8), 7);
    cr_assert_eq(net_ring_steps(NET_BARRIER, 4), 6);
    cr_assert_eq(net_ring_steps(NET_P2P, 2), 1);
    cr_assert_eq(net_ring_steps(NET_ALL_REDUCE, 1), 0);
    cr_assert_eq(net_tree_steps(8), 6);
    cr_assert_eq(net_tree_steps(9), 8);
    cr_assert_eq(net_tree_steps(1), 0);
}

Test(cost, kind_names_round_trip)
{
    for (int k = 0; k < NET_COLL_KIND_COUNT; k++) {
        NetCollKind out;
        cr_assert(net_coll_kind_parse(net_coll_kind_name((NetCollKind)k), &out));
        cr_assert_eq(out, k);
    }
    NetCollKind out;
    cr_assert_not(net_coll_kind_parse("allreduce", &out));
}
