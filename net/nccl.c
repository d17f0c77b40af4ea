/* net/nccl.c — NCCL's tuner model and vLLM's own all-reduce kernels; see nccl.h.
 *
 * Sources (cited per constant below):
 *  [T] NVIDIA/nccl src/graph/tuning.cc (master 5067397, 2026-06): ncclTunerConstantsDefaults
 *      (base latencies, hardware latencies, LL/LL128/tree caps), ncclTopoTuneModel (how they
 *      combine), ncclTopoGetAlgoTime (time = latency + bytes / bandwidth, tree correction).
 *  [S] NVIDIA/nccl src/graph/search.cc (sm90/sm100 per-channel speed arrays) and topo.h
 *      (SM90_NVLINK_BW 20.6 GB/s per NVLink, SM100 40.1, SM80 20.0, PCI_BW 12.0).
 *  [E] NVIDIA/nccl src/enqueue.cc (NCCL_P2P_LL_THRESHOLD 16384: send/recv use LL up to 16 KiB).
 *  [V] vllm-project/vllm vllm/distributed/device_communicators/custom_all_reduce.py
 *      (_SUPPORTED_WORLD_SIZES, max_size 8 MiB, should_custom_ar), all_reduce_utils.py
 *      (CUSTOM_ALL_REDUCE_MAX_SIZES, SYMM_MEM_ALL_REDUCE_MAX_SIZES), symm_mem.py
 *      (_WORLD_SIZES_MULTIMEM), cuda_communicator.py (custom AR, then symmetric memory, then
 *      PyNccl), csrc/custom_all_reduce.cuh (one-shot when world size 2, or <= 4 ranks and
 *      < 512 KiB, or <= 8 ranks and < 256 KiB; else two-shot).
 *  [A] fitted on AIConfigurator's measured tables (ai-dynamo/aiconfigurator, systems/data):
 *      h100_sxm/comm/nccl/2.29.2 (nccl-tests, bf16 and int8, 2/4/8 GPUs, 1 KiB..512 MiB) and
 *      h100_sxm/comm/vllm/0.24.0 custom_allreduce (CUDA-graph mode); checked on h200_sxm
 *      (same versions, held out). See doc/interconnect.md for the fit and its errors.
 */
#include "nccl.h"

#include <glib.h>
#include <math.h>
#include <string.h>

/* ---- names ---- */

static const char *const algo_names[NET_NCCL_ALGO_COUNT] = {"ring", "tree", "nvls", "nvls_tree",
                                                            "p2p", "vllm"};
static const char *const proto_names[NET_PROTO_COUNT] = {"LL", "LL128", "Simple"};
static const char *const impl_names[NET_IMPL_COUNT] = {"nccl", "custom"};

const char *net_nccl_algo_name(NetNcclAlgo a)
{
    return a < NET_NCCL_ALGO_COUNT ? algo_names[a] : "?";
}

const char *net_proto_name(NetProto p)
{
    return p < NET_PROTO_COUNT ? proto_names[p] : "?";
}

const char *net_comm_impl_name(NetCommImpl i)
{
    return i < NET_IMPL_COUNT ? impl_names[i] : "?";
}

bool net_comm_impl_parse(const char *s, NetCommImpl *out)
{
    for (int i = 0; i < NET_IMPL_COUNT; i++)
        if (strcmp(s, impl_names[i]) == 0) {
            *out = (NetCommImpl)i;
            return true;
        }
    return false;
}

/* ---- NCCL's constants [T] ---- */

/* baseLatencies, us, in NetNcclAlgo order (NCCL lists Tree first): Ring, Tree, NVLS, NVLS
 * Tree; P2P takes Ring's; vLLM's kernels have none here. */
static const double base_us[NET_NCCL_ALGO_COUNT][NET_PROTO_COUNT] = {
    {6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}};
/* hwLatencies, us, [link][algo][proto] in NetNcclAlgo order (Ring, Tree, NVLS, NVLS Tree);
 * P2P takes Ring's. */
static const double hw_us[NET_LINK_COUNT][NET_NCCL_ALGO_COUNT][NET_PROTO_COUNT] = {
    {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25}, {0, 0, 25}, {0.6, 1.9, 3.4}, {0}},  /* NVLINK */
    {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}, {1.0, 2.5, 5.7}, {0}},     /* PCI */
    {{2.7, 4.0, 14.0}, {5.0, 8.5, 14}, {0, 0, 18}, {0, 0, 20.9}, {2.7, 4.0, 14.0}, {0}}}; /* NET */
/* Trees stray from the model at medium sizes: treeCorrectionFactor[proto][log2(bytes / 64)]. */
static const float tree_fix[NET_PROTO_COUNT][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9,
     .9}};
/* Network post overhead on x86 Intel, us (getNetOverhead); x3 for Simple. */
#define NET_OVERHEAD_US 1.0

/* ---- fitted [A] ---- */

/* The tuner's base latencies overstate what nccl-tests measures on one node: the LL base
 * measured on H100 (all_gather/all_reduce at 1-8 KiB, 2/4/8 GPUs) is about 0.9 x NCCL's.
 * Fitted (grid over 0.6..1.0) on h100_sxm nccl 2.29.2 with the bandwidth factor below. */
#define FIT_BASE_SCALE 0.9
/* Achieved bus bandwidth over the tuner's: nccl-tests on H100 reaches 335-351 GB/s at 512 MiB
 * (ring) and less at 4-64 MiB where the Simple pipeline is not yet full; one factor for every
 * protocol, fitted (grid over 0.85..1.0) on the same table. */
#define FIT_BW_EFF 0.85
/* Send/recv in LL moves each peer's share on one channel: 16 KiB per peer (the LL threshold)
 * takes ~3 us more than 1 KiB at 2, 4 and 8 H100s alike (alltoall in the same table), i.e.
 * ~5.5 GB/s per peer after the factor above; fitted. */
#define P2P_LL_PEER_BW (5.5e9 / FIT_BW_EFF)

/* ---- per-arch hardware figures ---- */

/* NCCL's bandwidth for a link over the datasheet's [S]: NVLink per link per direction is 25
 * GB/s (NVLink3/4) or 50 GB/s (NVLink5); NCCL counts 20.0 (sm80), 20.6 (sm90), 40.1 (sm100);
 * PCIe Gen3 x16 is ~16 GB/s, NCCL counts PCI_BW 12.0; the network: NCCL's fastest sm90
 * inter-node channel speed is 48 GB/s for a 400 Gb/s (50 GB/s) NIC (sm90SpeedArrayInter). */
static double link_eff(NetLinkType link, NetArch arch)
{
    switch (link) {
    case NET_LINK_PCI:
        return 12.0 / 16.0;
    case NET_LINK_NET:
        return 48.0 / 50.0;
    case NET_LINK_NVLINK:
    default:
        if (arch == NET_ARCH_SM90)
            return 20.6 / 25.0;
        if (arch == NET_ARCH_SM100 || arch == NET_ARCH_SM103)
            return 40.1 / 50.0;
        return 20.0 / 25.0; /* sm80's ratio; an assumption for other vendors' links */
    }
}

/* llMaxBws [T], GB/s: one node by GPU generation; several nodes by CPU (Intel assumed:
 * 39.0 for 2 nodes, 20.4 for more). Unknown GPUs: Hopper's share of its link, 141 / 450
 * (an assumption). */
static double ll_max_bw(const NetNcclQuery *q)
{
    if (q->nodes > 1)
        return (q->nodes <= 2 ? 39.0 : 20.4) * 1e9;
    switch (q->arch) {
    case NET_ARCH_SM80:
    case NET_ARCH_SM86:
    case NET_ARCH_SM89:
        return 87.7e9;
    case NET_ARCH_SM90:
        return 141.0e9;
    case NET_ARCH_SM100:
    case NET_ARCH_SM103:
    case NET_ARCH_SM120:
        return 282.0e9;
    default:
        return q->intra_bw * (141.0 / 450.0);
    }
}

/* NVLS: nvlsEfficiency [T] (Hopper 0.85, Blackwell 0.74) and the per-channel speed NCCL's
 * graph search settles on [S]: the fastest speed s with (heads x s) within the link. */
static double nvls_eff(NetArch arch)
{
    return (arch == NET_ARCH_SM100 || arch == NET_ARCH_SM103) ? 0.74 : 0.85;
}

static double nvls_channel_bw(NetArch arch, uint32_t heads, double link_bw)
{
    static const double sm90[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
    static const double sm100[] = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
    bool bw = arch == NET_ARCH_SM100 || arch == NET_ARCH_SM103;
    const double *s = bw ? sm100 : sm90;
    size_t n = bw ? sizeof sm100 / sizeof sm100[0] : sizeof sm90 / sizeof sm90[0];
    for (size_t i = 0; i < n; i++)
        if ((double)heads * s[i] * 1e9 <= link_bw)
            return s[i] * 1e9;
    return s[n - 1] * 1e9;
}

/* ---- the tuner ---- */

typedef struct {
    double lat_ns;
    double bus_bw; /* B/s */
    double alg_ratio; /* algbw = bus_bw x ratio; time = lat + bytes / algbw */
} Cost;

static uint32_t n_steps(NetCollKind kind, uint32_t n)
{
    if (kind == NET_ALL_REDUCE || kind == NET_BARRIER)
        return 2 * (n - 1);
    if (kind == NET_ALL_GATHER || kind == NET_REDUCE_SCATTER)
        return n - 1;
    return n;
}

/* NCCL's base latency for (a, p), scaled to this hardware's LL base and the fit. */
static double base_ns(const NetNcclQuery *q, NetNcclAlgo a, NetProto p)
{
    return (double)q->launch_ns * (base_us[a][p] / base_us[NET_NCCL_RING][NET_PROTO_LL]) *
           FIT_BASE_SCALE;
}

/* NCCL's per-hop latency for (link, a, p), scaled to the tier's LL figure. */
static double hop_ns(NetLinkType link, int64_t tier_hop_ns, NetNcclAlgo a, NetProto p)
{
    return (double)tier_hop_ns * (hw_us[link][a][p] / hw_us[link][NET_NCCL_RING][NET_PROTO_LL]);
}

static int log2i(double x)
{
    int l = -1;
    while (x >= 1.0 && l < 62) {
        x /= 2;
        l++;
    }
    return l;
}

/* Ring: nsteps hops, those between nodes at the network's latency [T]. */
static bool ring_cost(const NetNcclQuery *q, NetProto p, double B, Cost *c)
{
    uint32_t n = q->ranks, steps = n_steps(q->kind, n);
    double intra = hop_ns(q->intra_link, q->intra_hop_ns, NET_NCCL_RING, p);
    double inter = 0;
    uint32_t inter_steps = 0;
    if (q->nodes > 1) {
        double ovh = NET_OVERHEAD_US * 1e3 * (p == NET_PROTO_SIMPLE ? 3 : 1);
        if (intra < ovh)
            intra = ovh;
        bool ppn1 = q->nodes == q->ranks;
        inter = hop_ns(NET_LINK_NET, q->hop_ns, ppn1 ? NET_NCCL_TREE : NET_NCCL_RING, p);
        inter_steps = q->kind == NET_ALL_REDUCE ? 2 * (q->nodes - 1) : q->nodes - 1;
        if (inter_steps > steps)
            inter_steps = steps;
    }
    c->lat_ns = base_ns(q, NET_NCCL_RING, p) + (steps - inter_steps) * intra + inter_steps * inter;
    if (q->nodes > 1 && p == NET_PROTO_SIMPLE && q->kind == NET_ALL_REDUCE)
        c->lat_ns *= 1.4; /* "plateau effect of ring" (ncclTopoGetAlgoTime, sm80+) */
    double bw = B;
    if (p == NET_PROTO_LL)
        bw = fmin(ll_max_bw(q), B * 0.5);
    else if (p == NET_PROTO_LL128)
        bw = B * 0.92; /* 120/128; the per-channel cap (36.7 GB/s x channels) does not bind at
                          NCCL's channel counts on NVLink */
    c->bus_bw = bw;
    c->alg_ratio = (double)n / steps;
    return true;
}

/* Double binary tree (all_reduce) [T]. */
static bool tree_cost(const NetNcclQuery *q, NetProto p, double B, Cost *c)
{
    if (q->kind != NET_ALL_REDUCE)
        return false;
    uint32_t ppn = q->ranks / q->nodes;
    double intra = hop_ns(q->intra_link, q->intra_hop_ns, NET_NCCL_TREE, p);
    double inter = q->nodes > 1 ? hop_ns(NET_LINK_NET, q->hop_ns, NET_NCCL_TREE, p) : 0;
    c->lat_ns = base_ns(q, NET_NCCL_TREE, p) +
                2 * ((ppn - 1) * intra + log2i((double)q->nodes) * inter);
    double bw = B * 0.92;
    if (p == NET_PROTO_LL)
        bw = fmin(bw / 3.8, ll_max_bw(q));
    else if (p == NET_PROTO_LL128)
        bw = bw * (q->nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
    int ls = log2i(q->bytes / 64);
    if (ls >= 0 && ls < 23)
        bw *= tree_fix[p][ls];
    c->bus_bw = bw;
    c->alg_ratio = 0.5;
    return true;
}

/* NVLS on one node (all_reduce, all_gather, reduce_scatter): the switch reduces; one channel
 * per GPU head; latency is the NVLink NVLS figure alone [T]. */
static bool nvls_cost(const NetNcclQuery *q, double B, Cost *c)
{
    if (!q->nvswitch || q->nodes != 1 || q->ranks < 2)
        return false;
    if (q->kind != NET_ALL_REDUCE && q->kind != NET_ALL_GATHER && q->kind != NET_REDUCE_SCATTER)
        return false;
    uint32_t heads = q->ranks < 32 ? q->ranks : 32; /* NCCL_MAX_NVLS_ARITY */
    double s = nvls_channel_bw(q->arch, heads, B);
    double per = s * nvls_eff(q->arch) * (heads - 1) / heads;
    double n = q->ranks;
    per *= q->kind == NET_ALL_REDUCE ? 2.0 : (n - 1) / n;
    c->bus_bw = heads * per;
    c->alg_ratio = q->kind == NET_ALL_REDUCE ? n / n_steps(q->kind, q->ranks) : 1.0;
    c->lat_ns = hop_ns(NET_LINK_NVLINK, q->intra_hop_ns, NET_NCCL_NVLS, NET_PROTO_SIMPLE);
    return true;
}

/* Grouped send/recv (all_to_all, p2p): LL up to 16 KiB per peer [E], else Simple; one base
 * and one hop (every peer at once). */
static bool p2p_cost(const NetNcclQuery *q, NetProto p, double B, Cost *c)
{
    if (q->kind != NET_ALL_TO_ALL && q->kind != NET_P2P)
        return false;
    double per_peer = q->kind == NET_P2P ? q->bytes : q->bytes / q->ranks;
    NetProto want = per_peer <= 16384 ? NET_PROTO_LL : NET_PROTO_SIMPLE;
    if (p != want)
        return false;
    NetLinkType link = q->nodes > 1 ? NET_LINK_NET : q->intra_link;
    int64_t hop = q->nodes > 1 ? q->hop_ns : q->intra_hop_ns;
    c->lat_ns = base_ns(q, NET_NCCL_P2P, p) + hop_ns(link, hop, NET_NCCL_P2P, p);
    c->bus_bw = B;
    if (p == NET_PROTO_LL) { /* each peer's share on its own LL channel */
        double peers = q->kind == NET_P2P ? 1.0 : q->ranks - 1.0;
        c->bus_bw = fmin(fmin(ll_max_bw(q), B * 0.5), P2P_LL_PEER_BW * peers);
    }
    c->alg_ratio = q->kind == NET_P2P ? 1.0 : (double)q->ranks / (q->ranks - 1);
    return true;
}

static bool algo_cost(const NetNcclQuery *q, NetNcclAlgo a, NetProto p, double B, Cost *c)
{
    bool coll = q->kind != NET_ALL_TO_ALL && q->kind != NET_P2P;
    /* LL128 runs on NVLink (and from it onto the network), not over PCIe-only paths [T] */
    if (p == NET_PROTO_LL128 && q->intra_link != NET_LINK_NVLINK)
        return false;
    switch (a) {
    case NET_NCCL_RING:
        return coll && ring_cost(q, p, B, c);
    case NET_NCCL_TREE:
        return coll && tree_cost(q, p, B, c);
    case NET_NCCL_NVLS:
        return coll && p == NET_PROTO_SIMPLE && nvls_cost(q, B, c);
    case NET_NCCL_P2P:
        return p2p_cost(q, p, B, c);
    default:
        return false; /* NVLS tree and CollNet: not modelled (see doc/interconnect.md) */
    }
}

bool net_nccl_choose(const NetNcclQuery *q, uint32_t algo_mask, NetNcclChoice *out)
{
    if (q->ranks < 2 || q->nodes < 1)
        return false;
    NetNcclQuery qq = *q;
    if (qq.kind == NET_BARRIER) { /* a barrier is an all_reduce of one element */
        qq.kind = NET_ALL_REDUCE;
        qq.bytes = 4;
    }
    double B = qq.bw * link_eff(qq.link, qq.arch);
    if (qq.nodes > 1) { /* the rails meet the intra-node links inside each node */
        double Bi = qq.intra_bw * link_eff(qq.intra_link, qq.arch);
        if (Bi < B)
            B = Bi;
    }
    bool found = false;
    for (int a = 0; a < NET_NCCL_ALGO_COUNT; a++) {
        if (algo_mask && !(algo_mask & (1u << a)))
            continue;
        for (int p = 0; p < NET_PROTO_COUNT; p++) {
            Cost c;
            if (!algo_cost(&qq, (NetNcclAlgo)a, (NetProto)p, B, &c) || !(c.bus_bw > 0))
                continue;
            double bw = c.bus_bw * FIT_BW_EFF;
            double t = c.lat_ns + qq.bytes / (bw * c.alg_ratio) * 1e9;
            if (!found || t < out->time_ns) {
                *out = (NetNcclChoice){.time_ns = t, .latency_ns = c.lat_ns, .bus_bw = bw,
                                       .algo = (NetNcclAlgo)a, .proto = (NetProto)p};
                found = true;
            }
        }
    }
    return found;
}

/* ---- links ---- */

NetLinkType net_tier_link(const NetHardware *hw, int t)
{
    const NetTier *tier = &hw->tiers[t];
    bool beyond = tier->span_devices == 0 || tier->span_devices > hw->devices_per_node;
    /* a tier beyond the node with a shared part is a network behind each node's NICs; without
     * one it is a scale-up fabric (NVL72's NVLink, a UB supernode): links, not NICs */
    if (beyond && tier->shared_bw_bytes_per_s > 0)
        return NET_LINK_NET;
    if (g_ascii_strncasecmp(tier->name, "pci", 3) == 0)
        return NET_LINK_PCI;
    return NET_LINK_NVLINK;
}

bool net_tier_nvls(const NetHardware *hw, int t)
{
    bool sm = hw->arch == NET_ARCH_SM90 || hw->arch == NET_ARCH_SM100 ||
              hw->arch == NET_ARCH_SM103;
    return sm && hw->platform == NET_PLATFORM_CUDA && net_tier_link(hw, t) == NET_LINK_NVLINK &&
           hw->tiers[t].span_devices > 2;
}

/* ---- vLLM's all-reduce kernels [V] ---- */

/* Fitted on h100_sxm vllm 0.24.0 custom_allreduce (graph mode), see doc/interconnect.md:
 * the custom kernels move data at 0.58 of the link's figure (260 GB/s on H100: one-shot at
 * 2 GPUs x 4 MiB, two-shot at 4 GPUs x 4 MiB and one-shot at 8 GPUs x 128 KiB agree), and cost
 * a fixed kernel time: 4.3 us one-shot (the table's 2-GPU floor), 6.0 us two-shot (two
 * barriers), 8.0 us for symmetric memory (copy-in kernel, all-reduce kernel, copy-out). */
#define CA_BW_EFF 0.58
#define CA_ONESHOT_NS 4300.0
#define CA_TWOSHOT_NS 6000.0
#define SYMM_NS 8000.0
#define MiB (1024.0 * 1024.0)

static int ws_index(uint32_t ranks)
{
    switch (ranks) {
    case 2:
        return 0;
    case 4:
        return 1;
    case 6:
        return 2;
    case 8:
        return 3;
    default:
        return -1;
    }
}

/* CUSTOM_ALL_REDUCE_MAX_SIZES / SYMM_MEM_ALL_REDUCE_MAX_SIZES by capability (9.0, 10.0, 10.3)
 * and world size (2, 4, 6, 8), bytes. Row -1: no table for the arch. */
static int cc_row(NetArch arch)
{
    return arch == NET_ARCH_SM90 ? 0 : arch == NET_ARCH_SM100 ? 1 : arch == NET_ARCH_SM103 ? 2 : -1;
}

static const double ca_max[3][4] = {{64 * MiB, 32 * MiB, MiB / 2, MiB / 4},
                                    {2 * MiB, 2 * MiB, 1 * MiB, 1 * MiB},
                                    {4 * MiB, 4 * MiB, 8 * MiB, 4 * MiB}};
static const double symm_max[3][4] = {{64 * MiB, 32 * MiB, 64 * MiB, 64 * MiB},
                                      {8 * MiB, 32 * MiB, 128 * MiB, 128 * MiB},
                                      {4 * MiB, 32 * MiB, 32 * MiB, 64 * MiB}};

bool net_custom_ar(const NetHardware *hw, uint32_t ranks, double bytes, double bw,
                   const NetNcclChoice *nccl, NetNcclChoice *out, const char **path)
{
    int w = ws_index(ranks);
    if (w < 0 || (hw->platform != NET_PLATFORM_CUDA && hw->platform != NET_PLATFORM_ROCM))
        return false;
    int row = hw->platform == NET_PLATFORM_CUDA ? cc_row(hw->arch) : -1;
    double lim = 8 * MiB; /* CustomAllreduce(max_size=8192 * 1024) */
    if (row >= 0 && ca_max[row][w] < lim)
        lim = ca_max[row][w]; /* symmetric memory on: the per-capability table */
    double B = bw * CA_BW_EFF, n = ranks;
    const char *p;
    double t, lat;
    if (bytes < lim && ((int64_t)bytes % 16) == 0) {
        bool one = ranks == 2 || (ranks <= 4 && bytes < 512 * 1024) ||
                   (ranks <= 8 && bytes < 256 * 1024);
        lat = one ? CA_ONESHOT_NS : CA_TWOSHOT_NS;
        t = lat + (one ? (n - 1) : 2 * (n - 1) / n) * bytes / B * 1e9;
        p = one ? "custom_ar_1stage" : "custom_ar_2stage";
    } else if (row >= 0 && bytes <= symm_max[row][w] && ((int64_t)bytes % 4) == 0 &&
               hw->hbm_bw_bytes_per_s > 0) {
        /* copy into the symmetric buffer and back out (read + write each), then multimem
         * (NVLS: every rank pulls the reduced slice and multicasts it, ~bytes per link) or
         * two-shot (reduce-scatter + all-gather over peer loads) */
        bool multimem = row == 0 ? ranks >= 4 : ranks >= 6;
        lat = SYMM_NS + 4 * bytes / hw->hbm_bw_bytes_per_s * 1e9;
        t = lat + (multimem ? 1.0 : 2 * (n - 1) / n) * bytes / B * 1e9;
        p = multimem ? "symm_mem_multimem" : "symm_mem_two_shot";
    } else {
        *out = *nccl;
        if (path)
            *path = "nccl";
        return true;
    }
    *out = (NetNcclChoice){.time_ns = t, .latency_ns = lat, .bus_bw = B,
                           .algo = NET_NCCL_VLLM, .proto = NET_PROTO_SIMPLE};
    if (path)
        *path = p;
    return true;
}
