/* tests/net/test-nccl.c — NCCL's algorithm and protocol choice (net/nccl.h), vLLM's custom and
 * symmetric-memory all-reduce, and net_collective_estimate: golden figures measured on 8 x H100
 * (AIConfigurator's nccl 2.29.2 and vLLM 0.24.0 tables), the protocol ramp, NVLS where NCCL
 * takes it, vLLM's conditions and size limits, and the estimate agreeing with the fabric. */
#include <criterion/criterion.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "../../net/fabric.h"

/* The h100 preset's figures (net/presets/h100.yaml). */
static const NetHardware h100 = {
    .name = "h100",
    .devices_per_node = 8,
    .platform = NET_PLATFORM_CUDA,
    .arch = NET_ARCH_SM90,
    .hbm_bw_bytes_per_s = 3.35e12,
    .launch_latency_ns = 6600,
    .n_tiers = 2,
    .tiers = {{.name = "nvlink", .span_devices = 8, .bw_bytes_per_s = 450e9, .latency_ns = 600},
              {.name = "ib", .span_devices = 0, .bw_bytes_per_s = 50e9, .latency_ns = 2700,
               .shared_bw_bytes_per_s = 400e9}},
};

static NetCollEstimate est(NetCollKind kind, uint32_t ranks, uint32_t nodes, double bytes,
                           NetCommImpl impl)
{
    NetCollEstimate e;
    char why[160];
    cr_assert(net_collective_estimate(&h100, kind, ranks, nodes, bytes, impl, &e, why,
                                      sizeof why),
              "%s", why);
    return e;
}

static void near(double got, double want, double tol, const char *what)
{
    cr_assert(fabs(got - want) / want <= tol, "%s: %.2f us, measured %.2f us (%+.0f%%)", what,
              got, want, 100 * (got - want) / want);
}

/* Measured on 8 x H100 SXM (nccl-tests 2.29.2 via AIConfigurator's collector, bf16; and vLLM
 * 0.24.0's tensor_model_parallel_all_reduce in a CUDA graph): the model within 20 %. */
Test(nccl, golden_h100_measurements)
{
    near(est(NET_ALL_REDUCE, 8, 1, 1024, NET_IMPL_NCCL).time_us, 15.60, 0.2, "AR 8 x 1 KiB");
    near(est(NET_ALL_REDUCE, 8, 1, 512.0 * (1 << 20), NET_IMPL_NCCL).time_us, 2111.06, 0.2,
         "AR 8 x 512 MiB");
    near(est(NET_ALL_GATHER, 8, 1, 1024, NET_IMPL_NCCL).time_us, 10.40, 0.2, "AG 8 x 1 KiB");
    near(est(NET_ALL_GATHER, 4, 1, 128.0 * (1 << 20), NET_IMPL_NCCL).time_us, 350.31, 0.2,
         "AG 4 x 128 MiB");
    near(est(NET_REDUCE_SCATTER, 8, 1, 256.0 * (1 << 20), NET_IMPL_NCCL).time_us, 721.72, 0.2,
         "RS 8 x 256 MiB");
    near(est(NET_ALL_TO_ALL, 8, 1, 64.0 * (1 << 20), NET_IMPL_NCCL).time_us, 221.29, 0.2,
         "A2A 8 x 64 MiB");
    near(est(NET_ALL_REDUCE, 8, 1, 64 * 1024, NET_IMPL_CUSTOM).time_us, 6.41, 0.2,
         "custom AR 8 x 64 KiB");
    near(est(NET_ALL_REDUCE, 4, 1, 4.0 * (1 << 20), NET_IMPL_CUSTOM).time_us, 30.25, 0.25,
         "custom AR 4 x 4 MiB");
    near(est(NET_ALL_REDUCE, 8, 1, 16.0 * (1 << 20), NET_IMPL_CUSTOM).time_us, 92.38, 0.2,
         "symm-mem AR 8 x 16 MiB");
}

Test(nccl, protocol_ramp_and_nvls_as_nccl_chooses)
{
    /* small: LL, latency bound; large: Simple, bandwidth bound */
    NetCollEstimate s = est(NET_ALL_GATHER, 8, 1, 4096, NET_IMPL_NCCL);
    cr_assert_eq(s.proto, NET_PROTO_LL);
    cr_assert_lt(s.busbw_gb_s, 5);
    NetCollEstimate l = est(NET_ALL_GATHER, 8, 1, 1 << 30, NET_IMPL_NCCL);
    cr_assert_eq(l.proto, NET_PROTO_SIMPLE);
    cr_assert_eq(l.algo, NET_ALGO_RING);
    /* ring bus bandwidth: NCCL's 20.6 GB/s per NVLink x 18 = 370.8 GB/s x 0.85, below 450 */
    cr_assert(l.busbw_gb_s > 300 && l.busbw_gb_s < 330, "busbw %.1f", l.busbw_gb_s);
    /* 8 GPUs on an NVSwitch: NVLS for large all-reduces (busbw above the ring's); 4 GPUs: NVLS's
     * 4 heads x 60 GB/s channels lose to the ring */
    NetCollEstimate a8 = est(NET_ALL_REDUCE, 8, 1, 1 << 30, NET_IMPL_NCCL);
    cr_assert_eq(a8.algo, NET_ALGO_NVLS);
    cr_assert_gt(a8.busbw_gb_s, l.busbw_gb_s);
    cr_assert_eq(est(NET_ALL_REDUCE, 4, 1, 1 << 30, NET_IMPL_NCCL).algo, NET_ALGO_RING);
    /* NVLS never for a small message: its 25 us latency */
    cr_assert_neq(est(NET_ALL_REDUCE, 8, 1, 1024, NET_IMPL_NCCL).algo, NET_ALGO_NVLS);
    /* time grows with size, busbw too */
    double t = 0, bb = 0;
    for (double b = 1024; b <= (1 << 30); b *= 2) {
        NetCollEstimate e = est(NET_ALL_REDUCE, 8, 1, b, NET_IMPL_NCCL);
        cr_assert_geq(e.time_us, t);
        cr_assert_geq(e.busbw_gb_s, bb * 0.98, "size %.0f", b);
        t = e.time_us;
        bb = e.busbw_gb_s;
    }
}

Test(nccl, custom_all_reduce_where_vllm_uses_it)
{
    /* one-shot below 256 KiB at 8 ranks, ~4.3 us floor: well under NCCL's ~15 us */
    NetCollEstimate c = est(NET_ALL_REDUCE, 8, 1, 16 * 1024, NET_IMPL_CUSTOM);
    NetCollEstimate n = est(NET_ALL_REDUCE, 8, 1, 16 * 1024, NET_IMPL_NCCL);
    cr_assert_str_eq(c.path, "custom_ar_1stage");
    cr_assert_eq(c.algo, NET_ALGO_CUSTOM);
    cr_assert_lt(c.time_us, 6.0);
    cr_assert_gt(n.time_us, 2 * c.time_us);
    cr_assert_str_eq(n.path, "nccl");
    /* sm90, 8 ranks: custom AR up to 256 KiB, symmetric memory (multimem) to 64 MiB, then NCCL */
    cr_assert_str_eq(est(NET_ALL_REDUCE, 8, 1, 1 << 20, NET_IMPL_CUSTOM).path,
                     "symm_mem_multimem");
    cr_assert_str_eq(est(NET_ALL_REDUCE, 8, 1, 128.0 * (1 << 20), NET_IMPL_CUSTOM).path, "nccl");
    /* 4 ranks: one-shot below 512 KiB, two-shot to 8 MiB (the 8 MiB default cap) */
    cr_assert_str_eq(est(NET_ALL_REDUCE, 4, 1, 256 * 1024, NET_IMPL_CUSTOM).path,
                     "custom_ar_1stage");
    cr_assert_str_eq(est(NET_ALL_REDUCE, 4, 1, 1 << 20, NET_IMPL_CUSTOM).path,
                     "custom_ar_2stage");
    cr_assert_str_eq(est(NET_ALL_REDUCE, 4, 1, 16.0 * (1 << 20), NET_IMPL_CUSTOM).path,
                     "symm_mem_multimem");
    /* 2 ranks: always one-shot; two-shot symmetric memory above 8 MiB */
    cr_assert_str_eq(est(NET_ALL_REDUCE, 2, 1, 4.0 * (1 << 20), NET_IMPL_CUSTOM).path,
                     "custom_ar_1stage");
    cr_assert_str_eq(est(NET_ALL_REDUCE, 2, 1, 16.0 * (1 << 20), NET_IMPL_CUSTOM).path,
                     "symm_mem_two_shot");
    /* not where vLLM does not: 3 ranks, a group over two nodes, an all_gather, a size that is
     * not a multiple of 16 (custom AR) nor of 4 (symmetric memory) */
    cr_assert_str_eq(est(NET_ALL_REDUCE, 3, 1, 4096, NET_IMPL_CUSTOM).path, "nccl");
    cr_assert_str_eq(est(NET_ALL_REDUCE, 8, 2, 4096, NET_IMPL_CUSTOM).path, "nccl");
    cr_assert_str_eq(est(NET_ALL_GATHER, 8, 1, 4096, NET_IMPL_CUSTOM).path, "nccl");
    cr_assert_str_eq(est(NET_ALL_REDUCE, 8, 1, 4100, NET_IMPL_CUSTOM).path, "symm_mem_multimem");
    cr_assert_str_eq(est(NET_ALL_REDUCE, 8, 1, 4098, NET_IMPL_CUSTOM).path, "nccl");
}

Test(nccl, custom_all_reduce_on_rocm_and_pcie)
{
    NetHardware hw = h100;
    hw.platform = NET_PLATFORM_ROCM;
    hw.arch = NET_ARCH_GFX942;
    NetCollEstimate e;
    char why[160];
    /* ROCm: the custom kernel up to 8 MiB, no symmetric memory, then RCCL */
    cr_assert(net_collective_estimate(&hw, NET_ALL_REDUCE, 8, 1, 4.0 * (1 << 20),
                                      NET_IMPL_CUSTOM, &e, why, sizeof why));
    cr_assert_str_eq(e.path, "custom_ar_2stage");
    cr_assert(net_collective_estimate(&hw, NET_ALL_REDUCE, 8, 1, 16.0 * (1 << 20),
                                      NET_IMPL_CUSTOM, &e, why, sizeof why));
    cr_assert_str_eq(e.path, "nccl");
    /* PCIe: two GPUs only (custom_all_reduce.py: "world_size == 2 or fully_connected") */
    hw = h100;
    g_strlcpy(hw.tiers[0].name, "pcie", sizeof hw.tiers[0].name);
    hw.tiers[0].bw_bytes_per_s = 32e9;
    cr_assert(net_collective_estimate(&hw, NET_ALL_REDUCE, 2, 1, 4096, NET_IMPL_CUSTOM, &e, why,
                                      sizeof why));
    cr_assert_str_eq(e.path, "custom_ar_1stage");
    cr_assert(net_collective_estimate(&hw, NET_ALL_REDUCE, 4, 1, 4096, NET_IMPL_CUSTOM, &e, why,
                                      sizeof why));
    cr_assert_str_eq(e.path, "nccl");
    /* and PCIe has no LL128 and no NVLS */
    cr_assert_neq(e.proto, NET_PROTO_LL128);
    cr_assert(net_collective_estimate(&hw, NET_ALL_REDUCE, 8, 1, 1 << 30, NET_IMPL_NCCL, &e, why,
                                      sizeof why));
    cr_assert_neq(e.algo, NET_ALGO_NVLS);
}

/* The estimate is the fabric's plan: the same group built by hand on a fabric gives the same
 * time, for every kind, size, layout and impl. */
Test(nccl, estimate_agrees_with_the_fabric)
{
    const NetCollKind kinds[] = {NET_ALL_REDUCE, NET_ALL_GATHER, NET_REDUCE_SCATTER,
                                 NET_ALL_TO_ALL, NET_BROADCAST};
    const uint32_t layouts[][2] = {{2, 1}, {4, 1}, {8, 1}, {8, 2}, {16, 2}, {32, 4}};
    for (size_t l = 0; l < G_N_ELEMENTS(layouts); l++) {
        uint32_t ranks = layouts[l][0], nodes = layouts[l][1], per = ranks / nodes;
        NetFabricConfig c = {.hw = &h100, .n_ranks = nodes * 8, .nodes = nodes,
                             .contention = true};
        NetFabric *f = net_fabric_new(&c);
        int32_t m[64];
        for (uint32_t i = 0; i < ranks; i++)
            m[i] = (int32_t)((i / per) * 8 + i % per);
        uint32_t g = net_fabric_add_group(f, m, ranks);
        for (int impl = 0; impl < NET_IMPL_COUNT; impl++) {
            net_fabric_set_group_impl(f, g, (NetCommImpl)impl);
            for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++)
                for (uint64_t b = 1024; b <= (1ull << 30); b *= 8) {
                    uint64_t bytes = b / ranks * ranks;
                    NetCollEstimate e = est(kinds[k], ranks, nodes, (double)bytes, impl);
                    uint64_t per_rank = kinds[k] == NET_ALL_GATHER ? bytes / ranks : bytes;
                    NetPlan p = net_fabric_plan(f, g, kinds[k], per_rank);
                    cr_assert(fabs(e.time_us - (double)p.time_ns / 1e3) < 1e-6,
                              "%s %u/%u %lu: %.3f vs %.3f", net_coll_kind_name(kinds[k]), ranks,
                              nodes, (unsigned long)bytes, e.time_us, (double)p.time_ns / 1e3);
                    cr_assert_eq(e.algo, p.algo);
                }
        }
        net_fabric_free(f);
    }
}

Test(nccl, multi_node_rails_and_hierarchical)
{
    /* 16 ranks on 2 nodes with a NIC per GPU (8 rails): NCCL's flat ring over the rails beats
     * three hierarchical phases at 1 GiB; its bus bandwidth is bounded by 8 NICs x 48 GB/s and
     * NVLink's 370.8 GB/s, below the link figure */
    NetCollEstimate e = est(NET_ALL_REDUCE, 16, 2, 1 << 30, NET_IMPL_NCCL);
    cr_assert_eq(e.algo, NET_ALGO_RING);
    cr_assert(e.busbw_gb_s > 250 && e.busbw_gb_s < 0.85 * 370.8 + 1, "%.1f", e.busbw_gb_s);
    /* one NIC per node (a shared uplink of 50 GB/s): with sharing on, the flat ring's 8 rails
     * share it and hierarchical (1/8 of the bytes on the network per rail) wins */
    NetHardware hw = h100;
    hw.tiers[1].shared_bw_bytes_per_s = 50e9;
    char why[160];
    NetCollEstimate one;
    cr_assert(net_collective_estimate(&hw, NET_ALL_REDUCE, 16, 2, 1 << 30, NET_IMPL_NCCL, &one,
                                      why, sizeof why));
    NetFabricConfig c = {.hw = &hw, .n_ranks = 16, .contention = true};
    NetFabric *f = net_fabric_new(&c);
    int32_t m[16];
    for (int i = 0; i < 16; i++)
        m[i] = i;
    uint32_t g = net_fabric_add_group(f, m, 16);
    NetPlan ring, hier;
    cr_assert(net_fabric_plan_algo(f, g, NET_ALL_REDUCE, 1 << 30, NET_ALGO_RING, &ring));
    cr_assert(net_fabric_plan_algo(f, g, NET_ALL_REDUCE, 1 << 30, NET_ALGO_HIERARCHICAL, &hier));
    cr_assert_gt(ring.time_ns, hier.time_ns, "8 rails on one NIC: ring %ld, hierarchical %ld",
                 (long)ring.time_ns, (long)hier.time_ns);
    cr_assert_eq(net_fabric_plan(f, g, NET_ALL_REDUCE, 1 << 30).algo, NET_ALGO_HIERARCHICAL);
    cr_assert_eq(one.algo, NET_ALGO_HIERARCHICAL, "the estimate is the fabric's plan");
    cr_assert(fabs(one.time_us - (double)hier.time_ns / 1e3) < 1e-6);
    net_fabric_free(f);
    /* all_to_all is not a ring: each rank's NIC moves its own cross-node half (8 of 15 peers
     * away): busbw = 50 GB/s x 15/8 x NCCL's 48/50 x 0.85, far below the rings' 8 rails */
    NetCollEstimate a2a = est(NET_ALL_TO_ALL, 16, 2, 1 << 30, NET_IMPL_NCCL);
    cr_assert(fabs(a2a.busbw_gb_s - 50 * 15.0 / 8 * 0.96 * 0.85) < 1.0, "%.2f", a2a.busbw_gb_s);
    /* small: one flat call (a tree across nodes) */
    NetCollEstimate s = est(NET_ALL_REDUCE, 16, 2, 1024, NET_IMPL_NCCL);
    cr_assert_neq(s.algo, NET_ALGO_HIERARCHICAL);
    cr_assert_gt(s.time_us, est(NET_ALL_REDUCE, 8, 1, 1024, NET_IMPL_NCCL).time_us);
}

Test(nccl, bad_layouts_and_names)
{
    NetCollEstimate e;
    char why[160];
    cr_assert_not(net_collective_estimate(&h100, NET_ALL_REDUCE, 12, 5, 1024, NET_IMPL_NCCL, &e,
                                          why, sizeof why));
    cr_assert(strstr(why, "nodes=5"), "%s", why);
    cr_assert_not(net_collective_estimate(&h100, NET_ALL_REDUCE, 16, 1, 1024, NET_IMPL_NCCL, &e,
                                          why, sizeof why));
    cr_assert(strstr(why, "at most 8"), "%s", why);
    cr_assert_not(net_collective_estimate(&h100, NET_ALL_REDUCE, 8, 1, -1, NET_IMPL_NCCL, &e, why,
                                          sizeof why));
    NetCommImpl i;
    cr_assert(net_comm_impl_parse("custom", &i) && i == NET_IMPL_CUSTOM);
    cr_assert_not(net_comm_impl_parse("mscclpp", &i));
    cr_assert_str_eq(net_proto_name(NET_PROTO_LL128), "LL128");
    cr_assert_str_eq(net_nccl_algo_name(NET_NCCL_NVLS), "nvls");
    /* one rank: nothing to choose */
    NetNcclQuery q = {.kind = NET_ALL_REDUCE, .ranks = 1, .nodes = 1, .bytes = 8, .bw = 1e9};
    NetNcclChoice c;
    cr_assert_not(net_nccl_choose(&q, 0, &c));
}
