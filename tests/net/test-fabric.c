/* tests/net/test-fabric.c — the interconnect model: golden bus bandwidths against the
 * nccl-tests formulas at NCCL's protocol rates, NCCL's latencies, the protocol ramp (LL small,
 * Simple large, busbw below the link), the hierarchical/flat crossover, the
 * spanning tier, max-min sharing (two flows on one shared part take twice as long, disjoint
 * ones do not slow each other, a late starter, weights), link faults, hardware checks. */
#include <criterion/criterion.h>
#include <glib.h>
#include <inttypes.h>
#include <math.h>

#include "../../net/fabric.h"

/* One tier, 1 GB/s, no latencies: time in ns == bus bytes. */
static const NetHardware one_gbps = {
    .name = "golden", .devices_per_node = 1u << 20, .launch_latency_ns = 0, .n_tiers = 1,
    .tiers = {{.name = "link", .span_devices = 0, .bw_bytes_per_s = 1e9, .latency_ns = 0}},
};

/* Two tiers like an H100 cluster, but with ONE shared 50 GB/s NIC per node of 8 devices. */
static const NetHardware two_tier = {
    .name = "twotier", .devices_per_node = 8, .launch_latency_ns = 6600, .n_tiers = 2,
    .tiers = {{.name = "nvlink", .span_devices = 8, .bw_bytes_per_s = 450e9, .latency_ns = 600},
              {.name = "ib", .span_devices = 0, .bw_bytes_per_s = 50e9, .latency_ns = 2700,
               .shared_bw_bytes_per_s = 50e9}},
};

static NetFabric *fabric(const NetHardware *hw, uint32_t ranks)
{
    NetFabricConfig c = {0};
    c.hw = hw;
    c.n_ranks = ranks;
    c.contention = true;
    return net_fabric_new(&c);
}

static uint32_t group_range(NetFabric *f, int32_t first, uint32_t n, int32_t stride)
{
    int32_t r[1024];
    for (uint32_t i = 0; i < n; i++)
        r[i] = first + (int32_t)i * stride;
    return net_fabric_add_group(f, r, n);
}

/* Runs flows to completion: returns each flow's completion time (indexed by tag). */
static void run_flows(NetFabric *f, int64_t *done, uint32_t n_flows)
{
    int64_t when[64];
    uint32_t gens[64];
    for (uint32_t i = 0; i < 64; i++)
        when[i] = -1;
    uint32_t left = n_flows;
    while (left) {
        uint32_t fl, gen;
        int64_t t;
        while (net_fabric_pop_changed(f, &fl, &t, &gen)) {
            when[fl] = t;
            gens[fl] = gen;
        }
        /* next event: the earliest pending flow time */
        int best = -1;
        for (uint32_t i = 0; i < 64; i++)
            if (when[i] >= 0 && (best < 0 || when[i] < when[best]))
                best = (int)i;
        cr_assert_geq(best, 0, "no pending flow");
        cr_assert_eq(net_fabric_flow_gen(f, (uint32_t)best), gens[best]);
        int64_t at = when[best];
        uint64_t tag = net_fabric_flow_tag(f, (uint32_t)best);
        when[best] = -1;
        if (net_fabric_step(f, (uint32_t)best, at)) {
            done[tag] = at;
            left--;
        }
    }
}

/* NCCL's Simple protocol on a network link: NCCL's 48 GB/s channel speed for a 50 GB/s NIC
 * (search.cc) times the achieved/tuner factor fitted on AIConfigurator's H100 tables (0.85,
 * net/nccl.c). On an NVLink tier of an unknown GPU: NCCL's 20.0/25 GB/s per link instead. */
#define SIMPLE_NET (0.96 * 0.85)
#define SIMPLE_NVL (0.80 * 0.85)

Test(fabric, bus_bandwidth_is_one_figure_below_the_link)
{
    /* One tier over the whole cluster without NICs (a scale-up fabric: NVLink-class to NCCL).
     * No latencies: every kind runs Simple, and nccl-tests' busbw (algbw x bus factor) is the
     * same figure for every kind, size and rank count: the bus factors are right; it is below
     * the link's figure: the protocol's efficiency. */
    NetFabric *f = fabric(&one_gbps, 64);
    const NetCollKind kinds[] = {NET_ALL_REDUCE, NET_ALL_GATHER, NET_REDUCE_SCATTER,
                                 NET_ALL_TO_ALL, NET_BROADCAST};
    for (uint32_t n = 2; n <= 64; n *= 2) {
        uint32_t g = group_range(f, 0, n, 1);
        for (uint64_t size = 1024; size <= (1ull << 30); size *= 4) {
            for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
                if (kinds[k] == NET_ALL_TO_ALL && size / n <= 16384)
                    continue; /* LL up to 16 KiB per peer (below) */
                uint64_t per_rank = kinds[k] == NET_ALL_GATHER ? size / n : size;
                NetPlan p = net_fabric_plan(f, g, kinds[k], per_rank);
                double algbw = (double)(per_rank * (kinds[k] == NET_ALL_GATHER ? n : 1)) /
                               ((double)p.time_ns / 1e9);
                double busbw = algbw * net_bus_factor(kinds[k], n);
                cr_assert(fabs(busbw - SIMPLE_NVL * 1e9) / 1e9 < 2e-3,
                          "%s n=%u size=%lu: busbw %.6g != %.6g (time %ld ns)",
                          net_coll_kind_name(kinds[k]), n, (unsigned long)size, busbw,
                          SIMPLE_NVL * 1e9, (long)p.time_ns);
                cr_assert_eq(p.proto, NET_PROTO_SIMPLE);
            }
        }
    }
    net_fabric_free(f);
}

Test(fabric, time_is_nccl_latency_plus_bytes_at_the_protocol_rate)
{
    /* Hand-computed from NCCL's constants (tuning.cc) on a network link with a 5 us LL base
     * and a 100 ns LL hop: all_reduce of 8000 B on a ring of 8, 14 steps.
     *  LL:     0.9 x 5000 + 14 x 100 + 14000 B / (min(1e9 x 141/450, 0.5 x 0.96e9) x 0.85)
     *        = 4500 + 1400 + 52564 = 58464 ns
     *  Simple: 0.9 x 5000 x 8.4/6.6 + 14 x 100 x 14.0/2.7 + 14000 B / (0.96e9 x 0.85)
     *        = 5727.3 + 7259.3 + 17156.9 = 30143.4 ns  <- NCCL's choice
     *  LL128:  not over a PCI or network-only path. */
    NetHardware hw = one_gbps;
    hw.launch_latency_ns = 5000;
    hw.tiers[0].latency_ns = 100;
    hw.tiers[0].shared_bw_bytes_per_s = 1e15; /* behind NICs: a network to NCCL */
    NetFabric *f = fabric(&hw, 8);
    uint32_t g = group_range(f, 0, 8, 1);
    NetPlan p;
    cr_assert(net_fabric_plan_algo(f, g, NET_ALL_REDUCE, 8000, NET_ALGO_RING, &p));
    cr_assert(llabs(p.time_ns - 30143) <= 1, "%ld", (long)p.time_ns);
    cr_assert_eq(p.proto, NET_PROTO_SIMPLE);
    /* a 64 B all_gather is latency bound: LL, 0.9 x 5000 + 7 x 100 + 56 B / 0.2663 GB/s */
    cr_assert(net_fabric_plan_algo(f, g, NET_ALL_GATHER, 8, NET_ALGO_RING, &p));
    cr_assert_eq(p.proto, NET_PROTO_LL);
    cr_assert(llabs(p.time_ns - (4500 + 700 + 210)) <= 1, "%ld", (long)p.time_ns);
    /* a tree only all-reduces; NVLS needs an NVLink switch */
    cr_assert_not(net_fabric_plan_algo(f, g, NET_ALL_GATHER, 1000, NET_ALGO_TREE, &p));
    cr_assert_not(net_fabric_plan_algo(f, g, NET_ALL_REDUCE, 1000, NET_ALGO_NVLS, &p));
    net_fabric_free(f);
}

Test(fabric, protocol_ramp_ll_small_simple_large)
{
    NetFabric *f = fabric(&two_tier, 16);
    uint32_t g = group_range(f, 0, 8, 1); /* one node: nvlink */
    NetPlan p = net_fabric_plan(f, g, NET_ALL_REDUCE, 1024);
    cr_assert_eq(p.tier, 0);
    cr_assert_eq(p.proto, NET_PROTO_LL);
    int64_t latency_only = 5940 + 14 * 600; /* 0.9 x 6.6 us base + 14 NVLink hops */
    cr_assert_geq(p.time_ns, latency_only);
    cr_assert_lt(p.time_ns - latency_only, latency_only / 20, "bandwidth term < 5%%");
    /* middle sizes: LL128, then Simple; the protocol never goes back */
    NetProto last = NET_PROTO_LL;
    for (uint64_t s = 1024; s <= (1ull << 30); s *= 2) {
        NetPlan q = net_fabric_plan(f, g, NET_ALL_REDUCE, s);
        cr_assert_geq(q.proto, last, "size %lu: %s after %s", (unsigned long)s,
                      net_proto_name(q.proto), net_proto_name(last));
        last = q.proto;
    }
    cr_assert_eq(last, NET_PROTO_SIMPLE);
    /* a large message is bandwidth bound at NCCL's NVLink figure, below the link's 450 GB/s */
    NetPlan big = net_fabric_plan(f, g, NET_ALL_REDUCE, 1ull << 30);
    double busbw = (double)(1ull << 30) * 2 * 7 / 8 / ((double)big.time_ns / 1e9);
    cr_assert_lt(busbw, 450e9);
    cr_assert(fabs(busbw - 450e9 * SIMPLE_NVL) / (450e9 * SIMPLE_NVL) < 0.01, "busbw %.4g",
              busbw);
    net_fabric_free(f);
}

Test(fabric, lowest_spanning_tier_decides)
{
    NetFabric *f = fabric(&two_tier, 32);
    cr_assert_eq(net_fabric_plan(f, group_range(f, 0, 8, 1), NET_ALL_GATHER, 1 << 20).tier, 0);
    cr_assert_eq(net_fabric_plan(f, group_range(f, 4, 8, 1), NET_ALL_GATHER, 1 << 20).tier, 1);
    cr_assert_eq(net_fabric_plan(f, group_range(f, 0, 4, 8), NET_ALL_GATHER, 1 << 20).tier, 1);
    net_fabric_free(f);
}

Test(fabric, hierarchical_and_flat_cross_over)
{
    NetFabric *f = fabric(&two_tier, 16);
    uint32_t g = group_range(f, 0, 16, 1); /* 2 nodes x 8 */
    int64_t prev_diff = 0;
    bool flat_wins_small = false, hier_wins_large = false; /* flat: NCCL's tree or ring */
    uint64_t crossover = 0;
    for (uint64_t s = 1024; s <= (1ull << 30); s *= 2) {
        NetPlan ring, hier, tree;
        cr_assert(net_fabric_plan_algo(f, g, NET_ALL_REDUCE, s, NET_ALGO_RING, &ring));
        cr_assert(net_fabric_plan_algo(f, g, NET_ALL_REDUCE, s, NET_ALGO_TREE, &tree));
        if (tree.time_ns < ring.time_ns)
            ring = tree;
        cr_assert(net_fabric_plan_algo(f, g, NET_ALL_REDUCE, s, NET_ALGO_HIERARCHICAL, &hier));
        cr_assert_eq(hier.phases, 3);
        int64_t diff = hier.time_ns - ring.time_ns;
        if (s == 1024)
            flat_wins_small = diff > 0;
        if (s == (1ull << 30))
            hier_wins_large = diff < 0;
        if (prev_diff > 0 && diff <= 0 && !crossover)
            crossover = s;
        prev_diff = diff;
        NetPlan a = net_fabric_plan(f, g, NET_ALL_REDUCE, s);
        cr_assert_leq(a.time_ns, ring.time_ns);
        cr_assert_leq(a.time_ns, hier.time_ns);
    }
    cr_assert(flat_wins_small, "one flat call wins on tiny messages (one launch, not three)");
    cr_assert(hier_wins_large, "hierarchical wins on large messages (1/8 of the bytes on IB)");
    cr_assert_gt(crossover, 1024);
    cr_assert_lt(crossover, 1ull << 30);
    /* Not eligible: one member per node, or uneven nodes */
    NetPlan p;
    cr_assert_not(net_fabric_plan_algo(f, group_range(f, 0, 2, 8), NET_ALL_REDUCE, 1 << 20,
                                       NET_ALGO_HIERARCHICAL, &p));
    cr_assert_not(net_fabric_plan_algo(f, group_range(f, 5, 9, 1), NET_ALL_REDUCE, 1 << 20,
                                       NET_ALGO_HIERARCHICAL, &p));
    net_fabric_free(f);
}

static int64_t alone(const NetHardware *hw, uint32_t ranks, int32_t first, uint32_t n,
                     int32_t stride, uint64_t bytes)
{
    NetFabric *f = fabric(hw, ranks);
    uint32_t g = group_range(f, first, n, stride);
    net_fabric_start(f, 0, g, NET_ALL_GATHER, bytes, 0);
    int64_t done[1];
    run_flows(f, done, 1);
    net_fabric_free(f);
    return done[0];
}

Test(fabric, two_flows_on_one_shared_part_take_twice_as_long)
{
    const uint64_t B = 256ull << 20;
    int64_t t1 = alone(&two_tier, 32, 0, 2, 8, B); /* ranks 0 and 8: nodes 0, 1 */
    NetFabric *f = fabric(&two_tier, 32);
    uint32_t a = group_range(f, 0, 2, 8), b = group_range(f, 1, 2, 8); /* both on nodes 0, 1 */
    net_fabric_start(f, 0, a, NET_ALL_GATHER, B, 0);
    net_fabric_start(f, 0, b, NET_ALL_GATHER, B, 1);
    int64_t done[2];
    run_flows(f, done, 2);
    double r0 = (double)done[0] / (double)t1, r1 = (double)done[1] / (double)t1;
    cr_assert(r0 > 1.95 && r0 < 2.0 && r1 > 1.95 && r1 < 2.0, "ratios %.4f %.4f", r0, r1);
    cr_assert_eq(net_fabric_contended(f), 0);
    net_fabric_free(f);
}

Test(fabric, disjoint_flows_do_not_slow_each_other)
{
    const uint64_t B = 256ull << 20;
    int64_t t1 = alone(&two_tier, 32, 0, 2, 8, B);
    NetFabric *f = fabric(&two_tier, 32);
    uint32_t a = group_range(f, 0, 2, 8), b = group_range(f, 16, 2, 8); /* nodes 0,1 vs 2,3 */
    net_fabric_start(f, 0, a, NET_ALL_GATHER, B, 0);
    net_fabric_start(f, 0, b, NET_ALL_GATHER, B, 1);
    int64_t done[2];
    run_flows(f, done, 2);
    cr_assert_eq(done[0], t1);
    cr_assert_eq(done[1], t1);
    net_fabric_free(f);
}

Test(fabric, contention_off_ignores_sharing)
{
    const uint64_t B = 256ull << 20;
    int64_t t1 = alone(&two_tier, 32, 0, 2, 8, B);
    NetFabricConfig c = {0};
    c.hw = &two_tier;
    c.n_ranks = 32;
    c.contention = false;
    NetFabric *f = net_fabric_new(&c);
    uint32_t a = group_range(f, 0, 2, 8), b = group_range(f, 1, 2, 8);
    net_fabric_start(f, 0, a, NET_ALL_GATHER, B, 0);
    net_fabric_start(f, 0, b, NET_ALL_GATHER, B, 1);
    int64_t done[2];
    run_flows(f, done, 2);
    cr_assert_eq(done[0], t1);
    cr_assert_eq(done[1], t1);
    net_fabric_free(f);
}

/* A second flow starting halfway: rates are re-evaluated at its start and at the first end.
 * With no latency: A alone takes T. B joins at T/2: both at half rate until A's remaining
 * half is done at 3T/2; B then has half left at full rate: done at 2T. */
Test(fabric, a_late_starter_reshapes_both)
{
    NetHardware hw = two_tier;
    hw.launch_latency_ns = 0;
    hw.tiers[0].latency_ns = hw.tiers[1].latency_ns = 0;
    const uint64_t B = 100000000; /* gathered 2 x 1e8 B, half moves: 1e8 B at 50 GB/s x Simple */
    int64_t T = alone(&hw, 32, 0, 2, 8, B);
    cr_assert(llabs(T - (int64_t)ceil(1e8 / (50e9 * SIMPLE_NET) * 1e9)) <= 1, "%ld", (long)T);
    NetFabric *f = fabric(&hw, 32);
    uint32_t a = group_range(f, 0, 2, 8), b = group_range(f, 1, 2, 8);
    net_fabric_start(f, 0, a, NET_ALL_GATHER, B, 0);
    uint32_t fl, gen;
    int64_t t;
    /* A: latency segment (0 ns), then its transfer */
    cr_assert(net_fabric_pop_changed(f, &fl, &t, &gen));
    cr_assert_not(net_fabric_step(f, fl, t));
    cr_assert(net_fabric_pop_changed(f, &fl, &t, &gen));
    cr_assert_eq(t, T);
    /* B at T/2 */
    uint32_t fb = net_fabric_start(f, T / 2, b, NET_ALL_GATHER, B, 1);
    cr_assert(net_fabric_pop_changed(f, &fl, &t, &gen));
    cr_assert_eq(fl, fb);
    cr_assert_not(net_fabric_step(f, fb, T / 2));
    int64_t end_a = -1, end_b = -1;
    while (net_fabric_pop_changed(f, &fl, &t, &gen)) {
        if (fl == fb)
            end_b = t;
        else
            end_a = t;
    }
    cr_assert(llabs(end_a - 3 * T / 2) <= 2, "%ld", (long)end_a);
    cr_assert(llabs(end_b - 5 * T / 2) <= 2, "both at half rate: B would end at T/2 + 2T");
    cr_assert(net_fabric_step(f, 0, end_a)); /* A done, B speeds up */
    cr_assert(net_fabric_pop_changed(f, &fl, &t, &gen));
    cr_assert_eq(fl, fb);
    cr_assert(llabs(t - 2 * T) <= 1, "B ends at %ld, want %ld", (long)t, (long)(2 * T));
    cr_assert(net_fabric_step(f, fb, t));
    net_fabric_free(f);
}

Test(fabric, weights_follow_members_per_node)
{
    /* Flow A has 2 members on each of nodes 0,1 (weight 2), B one member (weight 1). With
     * capacity C per node and a device cap above C, max-min gives both the same rate r with
     * 2r + r = C: r = C/3. Alone, A would get C/2 (2r = C) and B C. */
    NetHardware hw = two_tier;
    hw.launch_latency_ns = 0;
    hw.tiers[0].latency_ns = hw.tiers[1].latency_ns = 0;
    hw.tiers[1].bw_bytes_per_s = 100e9;
    NetFabricConfig c = {0};
    c.hw = &hw;
    c.n_ranks = 32;
    c.contention = true;
    c.algo[NET_ALL_REDUCE] = NET_ALGO_RING; /* flat, so all 4 of A's members cross IB */
    NetFabric *f = net_fabric_new(&c);
    int32_t ra[] = {0, 1, 8, 9}, rb[] = {2, 10};
    uint32_t a = net_fabric_add_group(f, ra, 4), b = net_fabric_add_group(f, rb, 2);
    const uint64_t B = 60000000;
    net_fabric_start(f, 0, a, NET_ALL_REDUCE, B, 0);
    net_fabric_start(f, 0, b, NET_ALL_REDUCE, B, 1);
    int64_t done[2];
    run_flows(f, done, 2);
    /* Shares are of the tier's bandwidth; each flow's bytes count at its rate alone times its
     * protocol's transfer time. A's two members per node are two rails to NCCL (twice a
     * device's network bandwidth, 2 x 25 GB/s alone on the uplink) and it moves 6e7 x 2 x 3/4 =
     * 9e7 bus bytes; B 6e7 at 50 GB/s alone. In tier units: A 9e7 / (2 x SIMPLE_NET), B 6e7 /
     * SIMPLE_NET. A's ring crosses nodes with two GPUs on each: NCCL charges its 4 intra-node
     * steps the network post overhead (3 x 1 us for Simple) and the multi-node ring plateau
     * (x 1.4): A starts moving at 16.8 us; B runs alone until then, at the NIC's 50 GB/s. */
    double ea = 9e7 / (2 * SIMPLE_NET), eb = 6e7 / SIMPLE_NET;
    const double la = 4 * 3000 * 1.4;
    double r = 50e9 / 3;
    int64_t a_end = (int64_t)ceil(la + ea / r * 1e9);
    cr_assert(llabs(done[0] - a_end) <= 3, "A %ld want %ld", (long)done[0], (long)a_end);
    /* then B alone at min(cap 100e9, C = 50e9) */
    double b_left = eb - 50e9 * la / 1e9 - r * ((double)a_end - la) / 1e9;
    int64_t b_end = a_end + (int64_t)ceil(b_left / 50e9 * 1e9);
    cr_assert(llabs(done[1] - b_end) <= 3, "B %ld want %ld", (long)done[1], (long)b_end);
    net_fabric_free(f);
}

Test(fabric, link_fault_degrades_the_nodes_links)
{
    const uint64_t B = 256ull << 20;
    int64_t t1 = alone(&two_tier, 32, 0, 2, 8, B);
    NetLinkFault lf = {1, 1, 0.5}; /* ib on node 1 at half bandwidth */
    NetFabricConfig c = {0};
    c.hw = &two_tier;
    c.n_ranks = 32;
    c.contention = true;
    c.faults = &lf;
    c.n_faults = 1;
    NetFabric *f = net_fabric_new(&c);
    uint32_t a = group_range(f, 0, 2, 8);  /* touches node 1 */
    uint32_t b = group_range(f, 16, 2, 8); /* nodes 2, 3: unaffected */
    NetPlan pa = net_fabric_plan(f, a, NET_ALL_GATHER, B);
    NetPlan pb = net_fabric_plan(f, b, NET_ALL_GATHER, B);
    cr_assert_eq(pb.time_ns, t1);
    /* half the bandwidth doubles the transfer, not the latency: pa = L + 2 (t1 - L) with L
     * NCCL's Simple latency for one network step, 0.9 x 6600 x 8.4/6.6 + 2700 x 14/2.7
     * (one GPU per node: the tree's network latency) = 7560 + 14000 */
    cr_assert(llabs((2 * t1 - pa.time_ns) - 21560) <= 2, "%ld %ld", (long)t1, (long)pa.time_ns);
    net_fabric_free(f);
}

Test(fabric, hardware_checks)
{
    char why[200];
    cr_assert(net_hardware_check(&two_tier, why, sizeof why), "%s", why);
    NetHardware hw = two_tier;
    hw.tiers[1].bw_bytes_per_s = -1;
    cr_assert_not(net_hardware_check(&hw, why, sizeof why));
    cr_assert(strstr(why, "'ib'"));
    hw = two_tier;
    hw.tiers[1].span_devices = 16;
    cr_assert_not(net_hardware_check(&hw, why, sizeof why));
    hw = two_tier;
    hw.tiers[0].span_devices = 0;
    cr_assert_not(net_hardware_check(&hw, why, sizeof why));
    hw = two_tier;
    hw.tiers[0].span_devices = 3;
    cr_assert_not(net_hardware_check(&hw, why, sizeof why));
    cr_assert_eq(net_hardware_tier(&two_tier, "ib"), 1);
    cr_assert_eq(net_hardware_tier(&two_tier, "eth"), -1);
    cr_assert(net_hardware_check(net_hardware_flat(), why, sizeof why), "%s", why);
}

Test(fabric, algo_names)
{
    NetAlgo a;
    cr_assert(net_algo_parse("hierarchical", &a));
    cr_assert_eq(a, NET_ALGO_HIERARCHICAL);
    cr_assert_not(net_algo_parse("butterfly", &a));
    cr_assert(net_algo_supports(NET_ALGO_DIRECT, NET_ALL_TO_ALL));
    cr_assert_not(net_algo_supports(NET_ALGO_TREE, NET_ALL_GATHER));
}

/* Regression (issue 9): a vanishing bandwidth (1e-15 GB/s) or link-fault factor (1e-300) made
 * the ns conversion overflow into a negative time; every time now saturates at
 * NET_TIME_MAX_NS, contended or not. */
Test(regress, vanishing_bandwidth_saturates_instead_of_overflowing)
{
    NetHardware hw = two_tier;
    hw.tiers[1].bw_bytes_per_s = 1e-6; /* 1e-15 GB/s */
    hw.tiers[1].shared_bw_bytes_per_s = 1e-6;
    NetFabric *f = fabric(&hw, 16);
    uint32_t g = group_range(f, 0, 16, 1);
    NetPlan p = net_fabric_plan(f, g, NET_ALL_GATHER, 1u << 20);
    cr_assert_eq(p.time_ns, NET_TIME_MAX_NS);
    for (int a = NET_ALGO_RING; a < NET_ALGO_COUNT; a++) {
        NetPlan q;
        if (net_fabric_plan_algo(f, g, NET_ALL_REDUCE, 1u << 20, (NetAlgo)a, &q))
            cr_assert(q.time_ns > 0 && q.time_ns <= NET_TIME_MAX_NS, "%s: %" PRId64,
                      net_algo_name((NetAlgo)a), q.time_ns);
    }
    int64_t done[2];
    net_fabric_start(f, 5000, g, NET_ALL_GATHER, 1u << 20, 0);
    net_fabric_start(f, 5000, g, NET_ALL_REDUCE, 1u << 20, 1);
    run_flows(f, done, 2);
    cr_assert_eq(done[0], NET_TIME_MAX_NS);
    cr_assert_eq(done[1], NET_TIME_MAX_NS);
    net_fabric_free(f);

    NetLinkFault lf = {1, 1, 1e-300};
    NetFabricConfig c = {0};
    c.hw = &two_tier;
    c.n_ranks = 16;
    c.contention = false;
    c.faults = &lf;
    c.n_faults = 1;
    f = net_fabric_new(&c);
    g = group_range(f, 0, 16, 1);
    cr_assert_eq(net_fabric_plan(f, g, NET_ALL_GATHER, 1u << 20).time_ns, NET_TIME_MAX_NS);
    net_fabric_start(f, 0, g, NET_ALL_GATHER, 1u << 20, 0);
    run_flows(f, done, 1);
    cr_assert_eq(done[0], NET_TIME_MAX_NS);
    net_fabric_free(f);
}

/* ---- components: rates are re-evaluated only where a start or end can change them ---- */

typedef struct {
    int64_t at;
    uint32_t group;
    NetCollKind kind;
    uint64_t bytes;
} Start;

#define MANY 1024

/* Starts each flow at its time (tag = its index) and runs all to completion, like the engine:
 * at equal times starts go first. done[tag] = completion time. */
static void run_starts(NetFabric *f, const Start *st, uint32_t n, int64_t *done)
{
    static int64_t when[MANY];
    static uint32_t gens[MANY];
    for (uint32_t i = 0; i < MANY; i++)
        when[i] = -1;
    uint32_t next = 0, left = n;
    while (left) {
        uint32_t fl, gen;
        int64_t t;
        while (net_fabric_pop_changed(f, &fl, &t, &gen)) {
            cr_assert_lt(fl, MANY);
            when[fl] = t;
            gens[fl] = gen;
        }
        int best = -1;
        for (uint32_t i = 0; i < MANY; i++)
            if (when[i] >= 0 && (best < 0 || when[i] < when[best]))
                best = (int)i;
        if (next < n && (best < 0 || st[next].at <= when[best])) {
            net_fabric_start(f, st[next].at, st[next].group, st[next].kind, st[next].bytes, next);
            next++;
            continue;
        }
        cr_assert_geq(best, 0, "no pending flow");
        cr_assert_eq(net_fabric_flow_gen(f, (uint32_t)best), gens[best]);
        int64_t at = when[best];
        uint64_t tag = net_fabric_flow_tag(f, (uint32_t)best);
        when[best] = -1;
        if (net_fabric_step(f, (uint32_t)best, at)) {
            done[tag] = at;
            left--;
        }
    }
}

/* One data-parallel replica on nodes 2i and 2i+1, started at `offset`: two all_gathers on one
 * 2-rank group (one member per node), an all_reduce on 3 ranks per node joining at 1 us, a
 * TP16 all_gather at 5 us. All four share both nodes' uplinks. */
static void replica(NetFabric *f, uint32_t i, int64_t offset, Start *st)
{
    int32_t base = (int32_t)(16 * i);
    int32_t rb[6] = {base + 1, base + 2, base + 3, base + 9, base + 10, base + 11};
    uint32_t a = group_range(f, base, 2, 8), b = net_fabric_add_group(f, rb, 6),
             c = group_range(f, base, 16, 1);
    st[0] = (Start){offset, a, NET_ALL_GATHER, 64u << 20};
    st[1] = (Start){offset, a, NET_ALL_GATHER, 48u << 20};
    st[2] = (Start){offset + 1000, b, NET_ALL_REDUCE, 32u << 20};
    st[3] = (Start){offset + 5000, c, NET_ALL_GATHER, 16u << 20};
}

/* 64 identical replicas on disjoint nodes, each started 777 ns after the last: every replica
 * ends exactly (to the ns) as the same replica alone, shifted by its start, however the
 * replicas' events interleave. */
Test(fabric, data_parallel_replicas_end_as_one_alone)
{
    NetFabric *one = fabric(&two_tier, 16);
    Start st1[4];
    replica(one, 0, 0, st1);
    int64_t alone_done[4];
    run_starts(one, st1, 4, alone_done);
    net_fabric_free(one);
    cr_assert(alone_done[0] > 0 && alone_done[3] > 0);

    enum { R = 64 };
    NetFabric *f = fabric(&two_tier, 16 * R);
    static Start st[4 * R];
    for (uint32_t i = 0; i < R; i++)
        replica(f, i, 777 * (int64_t)i, st + 4 * i);
    static int64_t done[4 * R];
    run_starts(f, st, 4 * R, done);
    for (uint32_t i = 0; i < R; i++)
        for (uint32_t k = 0; k < 4; k++)
            cr_assert_eq(done[4 * i + k], alone_done[k] + 777 * (int64_t)i,
                         "replica %u flow %u: %ld, alone %ld", i, k, (long)done[4 * i + k],
                         (long)alone_done[k]);
    cr_assert_eq(net_fabric_contended(f), 0);
    net_fabric_free(f);
}

/* A flow bridging two components merges them, and an end re-evaluates everything still
 * connected. X (B bytes) on nodes 0,1 and Y (2B) on nodes 2,3 start alone (B alone takes T);
 * Z (B) on nodes 1,2 joins at T/2: each uplink it shares carries two flows, so all three run at
 * half rate. X ends at 3T/2; Z, half done, still shares node 2 with Y: both stay at half rate,
 * Z ends at 5T/2, and Y, with B/2 left, ends alone at 3T. */
Test(fabric, a_bridging_flow_merges_and_splits_components)
{
    NetHardware hw = two_tier;
    hw.launch_latency_ns = 0;
    hw.tiers[0].latency_ns = hw.tiers[1].latency_ns = 0;
    const uint64_t B = 100000000;
    int64_t T = alone(&hw, 32, 0, 2, 8, B);
    NetFabric *f = fabric(&hw, 32);
    uint32_t x = group_range(f, 0, 2, 8), y = group_range(f, 16, 2, 8),
             z = group_range(f, 8, 2, 8);
    Start st[3] = {{0, x, NET_ALL_GATHER, B}, {0, y, NET_ALL_GATHER, 2 * B},
                   {T / 2, z, NET_ALL_GATHER, B}};
    int64_t done[3];
    run_starts(f, st, 3, done);
    cr_assert(llabs(done[0] - 3 * T / 2) <= 2, "X %ld want %ld", (long)done[0], (long)(3 * T / 2));
    cr_assert(llabs(done[2] - 5 * T / 2) <= 3, "Z %ld want %ld", (long)done[2], (long)(5 * T / 2));
    cr_assert(llabs(done[1] - 3 * T) <= 4, "Y %ld want %ld", (long)done[1], (long)(3 * T));
    cr_assert_eq(net_fabric_contended(f), 0);
    net_fabric_free(f);
}
