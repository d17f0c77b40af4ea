/* net/fabric.c — algorithm planning, flows and max-min bandwidth sharing; see fabric.h. */
#include "fabric.h"

#include <glib.h>
#include <math.h>
#include <string.h>

#include "fabric-rates.h"

/* ---- names and the default fabric ---- */

static const char *const algo_names[NET_ALGO_COUNT] = {"auto",         "ring", "tree",  "direct",
                                                       "hierarchical", "nvls", "custom"};

const char *net_algo_name(NetAlgo a)
{
    return a < NET_ALGO_COUNT ? algo_names[a] : "?";
}

bool net_algo_parse(const char *s, NetAlgo *out)
{
    for (int i = 0; i < NET_ALGO_COUNT; i++)
        if (strcmp(s, algo_names[i]) == 0) {
            *out = (NetAlgo)i;
            return true;
        }
    return false;
}

bool net_algo_supports(NetAlgo a, NetCollKind kind)
{
    switch (a) {
    case NET_ALGO_AUTO:
        return true;
    case NET_ALGO_RING:
        return kind != NET_P2P;
    case NET_ALGO_TREE:
        return kind == NET_ALL_REDUCE || kind == NET_BARRIER;
    case NET_ALGO_DIRECT:
        return kind == NET_ALL_TO_ALL || kind == NET_P2P;
    case NET_ALGO_HIERARCHICAL:
    case NET_ALGO_NVLS:
        return kind == NET_ALL_REDUCE || kind == NET_ALL_GATHER || kind == NET_REDUCE_SCATTER;
    case NET_ALGO_CUSTOM: /* chosen from the group's impl, never by configuration */
    default:
        return false;
    }
}

static const NetHardware flat_hw = {
    .name = "flat",
    .devices_per_node = 1u << 30,
    .peak_flops = {989e12, 989e12, 1979e12, 1979e12, 0},
    .hbm_bytes = 80000000000ull,
    .hbm_bw_bytes_per_s = 3.35e12,
    .launch_latency_ns = 6600,
    .n_tiers = 1,
    .tiers = {{.name = "link", .span_devices = 0, .bw_bytes_per_s = 450e9, .latency_ns = 600}},
};

const NetHardware *net_hardware_flat(void)
{
    return &flat_hw;
}

/* ---- fabric state ---- */

/* A group's use of a shared resource (global shared-resource index; weight = members of the
 * group behind that resource). */
typedef NetRateUse Use;

typedef struct {
    uint32_t n;
    uint32_t m;           /* distinct nodes */
    uint32_t k;           /* members per node when uniform, else 0 */
    int tier;             /* lowest tier spanning all members */
    int intra_tier;       /* lowest tier spanning each node's members (hierarchical) */
    double cap[2];        /* device bandwidth on tier / intra_tier after link faults, B/s */
    double unit[2];       /* the rate a flow of the group gets alone there: cap, or less when a
                             shared part it weighs on is smaller (with sharing on), B/s */
    GArray *uses[2];      /* Use on the shared part of tier / intra_tier (NULL: none) */
    NetCommImpl impl;     /* who runs its collectives (net_fabric_set_group_impl) */
    /* The last plans net_fabric_start chose for this group: a choice depends only on the
     * fixed fabric, the group, the kind and the size, and a layer repeats the same few calls,
     * so choosing again (every algorithm's phases and times) is skipped. */
    struct PlanMemo *memo; /* [PLAN_MEMO] or NULL until the first start */
    uint32_t memo_next;    /* slot the next new plan replaces (round robin) */
} Group;

typedef struct {
    int which;        /* 0 = the spanning tier, 1 = the intra-node tier */
    int64_t latency_ns;
    double bytes;     /* bytes to move at the group's rate alone on the tier (Group.unit): the
                         protocol's transfer time x that rate, so shares of a contended tier
                         scale it */
} Phase;

/* What build_phases chose besides the phases. */
typedef struct {
    NetProto proto;
    const char *path;
} Pick;

#define MAX_PHASES 3

typedef enum { SEG_LATENCY = 0, SEG_TRANSFER, SEG_ALL } Seg;

#define PLAN_MEMO 4 /* plans remembered per group: a layer's distinct collectives on it */

struct PlanMemo {
    bool valid;
    NetCollKind kind;
    uint64_t per_rank_bytes;
    uint32_t n_phases;
    Phase phases[MAX_PHASES];
};

typedef struct {
    bool live;
    uint32_t gen;
    uint64_t tag;
    uint32_t group;
    uint32_t n_phases, phase;
    Phase phases[MAX_PHASES];
    Seg seg;
    int64_t t_end;    /* the flow's next event time */
    /* transfer under contention */
    bool contended;
    double rem_bytes; /* bytes left at t_last */
    double rate;      /* B/s since t_last */
    int64_t t_last;
    uint32_t seen;    /* stamp of the last component search that reached it */
    bool in_changed;
    uint32_t next_free;
} Flow;

struct NetFabric {
    NetFabricConfig cfg;
    const NetHardware *hw;
    uint32_t nodes;
    uint32_t res_base[NET_MAX_TIERS + 1];
    double *res_cap;   /* capacity of each shared resource, B/s */
    double *factor;    /* [tier * nodes + node] bandwidth multiplier from link faults */
    GArray *groups;    /* Group */
    GArray *flows;     /* Flow */
    uint32_t free_head; /* UINT32_MAX = empty */
    GArray *changed;   /* uint32 flow ids */
    guint changed_head; /* read cursor into `changed` */
    /* Contended flows, indexed by the shared resources they use: rates are re-evaluated only
     * over the connected component (flows linked through shared resources) a start or end
     * touches; max-min rates of one component do not depend on any other. */
    uint32_t n_res;
    uint32_t n_active;  /* flows in contended transfer */
    GArray **res_flows; /* [n_res] uint32 flow ids using the resource (NULL: none yet) */
    uint32_t *res_seen; /* [n_res] stamp of the last component search that reached it */
    uint32_t stamp;     /* last stamp handed out (one per component search) */
    GArray *class_seen; /* uint32 per (group, which): stamp of the component holding a class */
    GArray *class_of;   /* uint32 per (group, which): its class index in that component */
    /* scratch for one component, grows to the largest, never shrinks */
    GArray *comp_flows; /* uint32 flow ids */
    GArray *comp_queue; /* uint32 resources to visit */
    GArray *classes;    /* NetRateClass */
    GArray *rates;      /* double per class */
    NetRateSolver *solver;
};

#define NONE UINT32_MAX

static bool tier_crosses_nodes(const NetFabric *f, int t)
{
    uint32_t s = f->hw->tiers[t].span_devices;
    return s == 0 || s > f->hw->devices_per_node;
}

/* The shared resource a device uses on tier t. */
static uint32_t res_of(const NetFabric *f, int t, uint32_t device)
{
    uint32_t dpn = f->hw->devices_per_node;
    if (tier_crosses_nodes(f, t))
        return f->res_base[t] + device / dpn;
    return f->res_base[t] + device / f->hw->tiers[t].span_devices;
}

NetFabric *net_fabric_new(const NetFabricConfig *cfg)
{
    NetFabric *f = g_new0(NetFabric, 1);
    f->cfg = *cfg;
    f->hw = cfg->hw ? cfg->hw : &flat_hw;
    uint32_t dpn = f->hw->devices_per_node;
    uint32_t need = cfg->n_ranks ? (uint32_t)((cfg->n_ranks + (uint64_t)dpn - 1) / dpn) : 1;
    f->nodes = cfg->nodes ? cfg->nodes : need;
    g_assert(f->nodes >= need);
    uint64_t devices = (uint64_t)f->nodes * dpn;
    f->factor = g_new(double, (size_t)f->hw->n_tiers * f->nodes);
    for (size_t i = 0; i < (size_t)f->hw->n_tiers * f->nodes; i++)
        f->factor[i] = 1.0;
    for (uint32_t i = 0; i < cfg->n_faults; i++) {
        const NetLinkFault *lf = &cfg->faults[i];
        g_assert(lf->tier >= 0 && (uint32_t)lf->tier < f->hw->n_tiers && lf->node < f->nodes);
        f->factor[(size_t)lf->tier * f->nodes + lf->node] *= lf->factor;
    }
    /* Shared resources: one per node for tiers spanning nodes, one per domain otherwise. */
    uint32_t total = 0;
    for (uint32_t t = 0; t < f->hw->n_tiers; t++) {
        f->res_base[t] = total;
        if (f->hw->tiers[t].shared_bw_bytes_per_s > 0) {
            uint64_t cnt = tier_crosses_nodes(f, (int)t)
                               ? f->nodes
                               : (devices + f->hw->tiers[t].span_devices - 1) /
                                     f->hw->tiers[t].span_devices;
            total += (uint32_t)cnt;
        }
    }
    f->res_base[f->hw->n_tiers] = total;
    f->n_res = total;
    f->res_cap = g_new0(double, total ? total : 1);
    f->res_flows = g_new0(GArray *, total ? total : 1);
    f->res_seen = g_new0(uint32_t, total ? total : 1);
    for (uint32_t t = 0; t < f->hw->n_tiers; t++) {
        const NetTier *tier = &f->hw->tiers[t];
        if (!(tier->shared_bw_bytes_per_s > 0))
            continue;
        for (uint32_t r = f->res_base[t]; r < f->res_base[t + 1]; r++) {
            uint32_t idx = r - f->res_base[t];
            uint32_t node = tier_crosses_nodes(f, (int)t)
                                ? idx
                                : (uint32_t)((uint64_t)idx * tier->span_devices / dpn);
            if (node >= f->nodes)
                node = f->nodes - 1;
            f->res_cap[r] = tier->shared_bw_bytes_per_s * f->factor[(size_t)t * f->nodes + node];
        }
    }
    f->groups = g_array_new(FALSE, TRUE, sizeof(Group));
    f->flows = g_array_new(FALSE, TRUE, sizeof(Flow));
    f->free_head = NONE;
    f->changed = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    f->class_seen = g_array_new(FALSE, TRUE, sizeof(uint32_t));
    f->class_of = g_array_new(FALSE, TRUE, sizeof(uint32_t));
    f->comp_flows = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    f->comp_queue = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    f->classes = g_array_new(FALSE, FALSE, sizeof(NetRateClass));
    f->rates = g_array_new(FALSE, TRUE, sizeof(double));
    f->solver = net_rates_new(total, f->res_cap);
    return f;
}

void net_fabric_free(NetFabric *f)
{
    if (!f)
        return;
    for (guint i = 0; i < f->groups->len; i++) {
        Group *g = &g_array_index(f->groups, Group, i);
        for (int w = 0; w < 2; w++)
            if (g->uses[w])
                g_array_unref(g->uses[w]);
        g_free(g->memo);
    }
    g_array_unref(f->groups);
    g_array_unref(f->flows);
    g_array_unref(f->changed);
    for (uint32_t r = 0; r < f->n_res; r++)
        if (f->res_flows[r])
            g_array_unref(f->res_flows[r]);
    g_free(f->res_flows);
    g_free(f->res_seen);
    g_array_unref(f->class_seen);
    g_array_unref(f->class_of);
    g_array_unref(f->comp_flows);
    g_array_unref(f->comp_queue);
    g_array_unref(f->classes);
    g_array_unref(f->rates);
    net_rates_free(f->solver);
    g_free(f->res_cap);
    g_free(f->factor);
    g_free(f);
}

void net_fabric_set_group_impl(NetFabric *f, uint32_t group, NetCommImpl impl)
{
    g_return_if_fail(group < f->groups->len && impl < NET_IMPL_COUNT);
    Group *g = &g_array_index(f->groups, Group, group);
    g->impl = impl;
    g_clear_pointer(&g->memo, g_free); /* the choice depends on it */
}

uint32_t net_fabric_nodes(const NetFabric *f)
{
    return f->nodes;
}

uint32_t net_fabric_contended(const NetFabric *f)
{
    return f->n_active;
}

/* ---- groups ---- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Lowest tier whose domain holds all of sorted devices d[0..n). */
static int spanning_tier(const NetFabric *f, const uint32_t *d, uint32_t n)
{
    for (uint32_t t = 0; t < f->hw->n_tiers; t++) {
        uint32_t s = f->hw->tiers[t].span_devices;
        if (s == 0 || d[0] / s == d[n - 1] / s)
            return (int)t;
    }
    return (int)f->hw->n_tiers - 1;
}

static double tier_cap(const NetFabric *f, int t, const uint32_t *nodes, uint32_t m)
{
    double factor = 1.0;
    for (uint32_t i = 0; i < m; i++) {
        double x = f->factor[(size_t)t * f->nodes + nodes[i]];
        if (x < factor)
            factor = x;
    }
    return f->hw->tiers[t].bw_bytes_per_s * factor;
}

static GArray *tier_uses(const NetFabric *f, int t, const uint32_t *d, uint32_t n)
{
    if (!(f->hw->tiers[t].shared_bw_bytes_per_s > 0))
        return NULL;
    GArray *uses = g_array_new(FALSE, FALSE, sizeof(Use));
    for (uint32_t i = 0; i < n;) { /* d is sorted, so a resource's devices are adjacent */
        uint32_t r = res_of(f, t, d[i]), j = i;
        while (j < n && res_of(f, t, d[j]) == r)
            j++;
        Use u = {r, (double)(j - i)};
        g_array_append_val(uses, u);
        i = j;
    }
    return uses;
}

uint32_t net_fabric_add_group(NetFabric *f, const int32_t *ranks, uint32_t n)
{
    g_assert(n >= 1);
    uint32_t dpn = f->hw->devices_per_node;
    g_autofree uint32_t *d = g_new(uint32_t, n);
    for (uint32_t i = 0; i < n; i++) {
        g_assert(ranks[i] >= 0 && (uint64_t)ranks[i] < (uint64_t)f->nodes * dpn);
        d[i] = (uint32_t)ranks[i];
    }
    qsort(d, n, sizeof *d, cmp_u32);
    Group g = {0};
    g.n = n;
    g.tier = spanning_tier(f, d, n);
    /* nodes and members per node */
    g_autofree uint32_t *nodes = g_new(uint32_t, n);
    uint32_t k = 0, m = 0;
    bool uniform = true;
    int intra = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t node = d[i] / dpn, j = i;
        while (j < n && d[j] / dpn == node)
            j++;
        if (m == 0)
            k = j - i;
        else if (j - i != k)
            uniform = false;
        int t = spanning_tier(f, d + i, j - i);
        if (t > intra)
            intra = t;
        nodes[m++] = node;
        i = j;
    }
    g.m = m;
    g.k = uniform ? k : 0;
    g.intra_tier = intra;
    g.cap[0] = tier_cap(f, g.tier, nodes, m);
    g.cap[1] = tier_cap(f, g.intra_tier, nodes, m);
    g.uses[0] = tier_uses(f, g.tier, d, n);
    g.uses[1] = g.intra_tier != g.tier ? tier_uses(f, g.intra_tier, d, n) : NULL;
    for (int w = 0; w < 2; w++) {
        g.unit[w] = g.cap[w];
        GArray *u = w == 1 && g.intra_tier == g.tier ? g.uses[0] : g.uses[w];
        for (guint i = 0; f->cfg.contention && u && i < u->len; i++) {
            const Use *use = &g_array_index(u, Use, i);
            if (f->res_cap[use->res] / use->weight < g.unit[w])
                g.unit[w] = f->res_cap[use->res] / use->weight;
        }
    }
    g_array_append_val(f->groups, g);
    g_array_set_size(f->class_seen, 2 * f->groups->len);
    g_array_set_size(f->class_of, 2 * f->groups->len);
    return f->groups->len - 1;
}

/* ---- planning ---- */

/* ---- saturating time arithmetic ----
 * Every duration and end time the fabric computes goes through these two, so a tiny bandwidth
 * (1e-15 GB/s), a tiny link-fault factor (1e-300) or a huge size cannot overflow the integer
 * conversion (undefined behaviour, in practice a negative time): they saturate at
 * NET_TIME_MAX_NS, which the engine reports as a `time` error. NaN saturates too. */
static int64_t ns_from_double(double ns)
{
    if (!(ns < (double)NET_TIME_MAX_NS)) /* also NaN and +inf */
        return NET_TIME_MAX_NS;
    if (!(ns > 0))
        return 0;
    return (int64_t)ns;
}

static int64_t add_ns(int64_t a, int64_t b)
{
    g_assert(a >= 0 && b >= 0);
    return a >= NET_TIME_MAX_NS - b ? NET_TIME_MAX_NS : a + b;
}

static int64_t phase_time(const NetFabric *f, const Group *g, const Phase *p)
{
    double bw = g->unit[p->which];
    return add_ns(p->latency_ns, ns_from_double(ceil(p->bytes / bw * 1e9)));
}

/* NCCL's model of one (sub-)collective of `ranks` ranks over `nodes` nodes on tier
 * `which` of group g (net/nccl.h), restricted to the NCCL algorithms in `mask`. Over a
 * scale-up fabric that spans nodes (NVL72) NCCL sees one node (its MNNVL clique). */
static bool nccl_pick(const NetFabric *f, const Group *g, int which, NetCollKind kind,
                      uint32_t ranks, uint32_t nodes, double size, uint32_t mask,
                      NetNcclChoice *out)
{
    int t = which ? g->intra_tier : g->tier;
    if (net_tier_link(f->hw, t) != NET_LINK_NET)
        nodes = 1;
    int ti = nodes > 1 ? g->intra_tier : t;
    const NetHardware *hw = f->hw;
    /* Across nodes NCCL runs one ring per NIC rail: the ppn members of a node leave it through
     * their own NICs, so the channels see ppn x a device's network bandwidth, and NCCL's model
     * takes the least of that and the intra-node links. The node's uplinks (a shared part)
     * limit it through the sharing model, where the flow weighs ppn on them. */
    double bw = g->unit[which];
    uint32_t ppn = ranks / nodes;
    if (nodes > 1 && (kind == NET_ALL_TO_ALL || kind == NET_P2P))
        bw *= (double)(ranks - 1) / (double)(ranks - ppn); /* each rank's own NIC carries its
                                                               cross-node share; the rest
                                                               rides the node's links */
    else if (nodes > 1)
        bw *= (double)ppn;
    NetNcclQuery q = {
        .kind = kind,
        .ranks = ranks,
        .nodes = nodes,
        .bytes = size,
        .bw = bw,
        .hop_ns = hw->tiers[t].latency_ns,
        .link = net_tier_link(hw, t),
        .intra_bw = nodes > 1 ? g->unit[1] : g->unit[which],
        .intra_hop_ns = hw->tiers[ti].latency_ns,
        .intra_link = net_tier_link(hw, ti),
        .launch_ns = hw->launch_latency_ns,
        .arch = hw->arch,
        .nvswitch = net_tier_nvls(hw, ti),
    };
    return net_nccl_choose(&q, mask, out);
}

/* A phase from a choice: its latency, and its transfer as bytes at the tier's bandwidth. */
static Phase phase_of(const Group *g, int which, const NetNcclChoice *c, Pick *pick)
{
    pick->proto = c->proto;
    double xfer_s = (c->time_ns - c->latency_ns) / 1e9;
    return (Phase){.which = which, .latency_ns = ns_from_double(round(c->latency_ns)),
                   .bytes = xfer_s * g->unit[which]};
}

/* vLLM's own all-reduce for a group marked NET_IMPL_CUSTOM: one node, NVLink-class links
 * (two PCIe GPUs are allowed: custom_all_reduce.py's "world_size == 2 or fully_connected"). */
static uint32_t custom_phases(const NetFabric *f, const Group *g, NetCollKind kind, double size,
                              Phase *ph, Pick *pick)
{
    if (g->impl != NET_IMPL_CUSTOM || kind != NET_ALL_REDUCE || g->m != 1)
        return 0;
    if (net_tier_link(f->hw, g->tier) != NET_LINK_NVLINK && g->n != 2)
        return 0;
    NetNcclChoice nccl, c;
    const char *path = NULL;
    if (!nccl_pick(f, g, 0, kind, g->n, 1, size, 0, &nccl) ||
        !net_custom_ar(f->hw, g->n, size, g->unit[0], &nccl, &c, &path) ||
        strcmp(path, "nccl") == 0)
        return 0;
    ph[0] = phase_of(g, 0, &c, pick);
    pick->path = path;
    return 1;
}

/* Hierarchical: NCCL's model for each sub-collective on its tier. Groups over several nodes
 * with k >= 2 members on every node only. */
static uint32_t hier_phases(const NetFabric *f, const Group *g, NetCollKind kind, double c,
                            Phase *ph, Pick *pick)
{
    if (g->m < 2 || g->k < 2 || g->intra_tier >= g->tier)
        return 0;
    const uint32_t k = g->k, m = g->m;
    NetNcclChoice a, b, d;
    switch (kind) {
    case NET_ALL_REDUCE: /* RS in node, AR across nodes on 1/k, AG in node */
        if (!nccl_pick(f, g, 1, NET_REDUCE_SCATTER, k, 1, c, 0, &a) ||
            !nccl_pick(f, g, 0, NET_ALL_REDUCE, m, m, c / k, 0, &b) ||
            !nccl_pick(f, g, 1, NET_ALL_GATHER, k, 1, c, 0, &d))
            return 0;
        ph[0] = phase_of(g, 1, &a, pick);
        ph[1] = phase_of(g, 0, &b, pick);
        ph[2] = phase_of(g, 1, &d, pick);
        return 3;
    case NET_ALL_GATHER: /* AG across nodes (k rails) of c / k each, then AG in node */
        if (!nccl_pick(f, g, 0, NET_ALL_GATHER, m, m, c / k, 0, &a) ||
            !nccl_pick(f, g, 1, NET_ALL_GATHER, k, 1, c, 0, &b))
            return 0;
        ph[0] = phase_of(g, 0, &a, pick);
        ph[1] = phase_of(g, 1, &b, pick);
        return 2;
    case NET_REDUCE_SCATTER: /* RS in node, RS across nodes on 1/k */
        if (!nccl_pick(f, g, 1, NET_REDUCE_SCATTER, k, 1, c, 0, &a) ||
            !nccl_pick(f, g, 0, NET_REDUCE_SCATTER, m, m, c / k, 0, &b))
            return 0;
        ph[0] = phase_of(g, 1, &a, pick);
        ph[1] = phase_of(g, 0, &b, pick);
        return 2;
    default:
        return 0;
    }
}

/* Fills phases for `algo`; returns the phase count, 0 if not eligible. `size` is nccl-tests'
 * size of the whole call. */
static uint32_t build_phases(const NetFabric *f, const Group *g, NetCollKind kind,
                             uint64_t per_rank_bytes, NetAlgo algo, Phase *ph, Pick *pick)
{
    const double size = net_algo_size(kind, g->n, per_rank_bytes);
    pick->path = "nccl";
    pick->proto = NET_PROTO_SIMPLE;
    if (algo == NET_ALGO_CUSTOM)
        return custom_phases(f, g, kind, size, ph, pick);
    if (!net_algo_supports(algo, kind))
        return 0;
    if (g->n <= 1) { /* nothing to move: NCCL returns after its launch */
        ph[0] = (Phase){.which = 0, .latency_ns = f->hw->launch_latency_ns, .bytes = 0};
        return algo == NET_ALGO_RING || algo == NET_ALGO_DIRECT ? 1 : 0;
    }
    uint32_t mask;
    switch (algo) {
    case NET_ALGO_RING:
        mask = 1u << NET_NCCL_RING;
        break;
    case NET_ALGO_TREE:
        mask = 1u << NET_NCCL_TREE;
        break;
    case NET_ALGO_NVLS:
        mask = 1u << NET_NCCL_NVLS;
        break;
    case NET_ALGO_DIRECT:
        mask = 1u << NET_NCCL_P2P;
        break;
    case NET_ALGO_HIERARCHICAL:
        return hier_phases(f, g, kind, (double)per_rank_bytes * (kind == NET_ALL_GATHER ? g->n : 1),
                           ph, pick);
    default:
        return 0;
    }
    NetNcclChoice c;
    if (!nccl_pick(f, g, 0, kind, g->n, g->m, size, mask, &c))
        return 0;
    ph[0] = phase_of(g, 0, &c, pick);
    return 1;
}

static int64_t phases_time(const NetFabric *f, const Group *g, const Phase *ph, uint32_t np)
{
    int64_t t = 0;
    for (uint32_t i = 0; i < np; i++)
        t = add_ns(t, phase_time(f, g, &ph[i]));
    return t;
}

bool net_fabric_plan_algo(const NetFabric *f, uint32_t group, NetCollKind kind,
                          uint64_t per_rank_bytes, NetAlgo algo, NetPlan *out)
{
    const Group *g = &g_array_index(f->groups, Group, group);
    Phase ph[MAX_PHASES];
    Pick pick;
    uint32_t np = build_phases(f, g, kind, per_rank_bytes, algo, ph, &pick);
    if (!np)
        return false;
    *out = (NetPlan){.algo = algo, .tier = g->tier, .phases = np,
                     .time_ns = phases_time(f, g, ph, np), .proto = pick.proto,
                     .path = pick.path};
    return true;
}

/* Chooses the algorithm: vLLM's own all-reduce when the group's impl asks for it and it
 * applies; else the configured one if eligible; else the fastest eligible (ties go to the
 * earlier in ring, tree, direct, hierarchical, nvls order). Fills ph and pick. */
static uint32_t choose(const NetFabric *f, const Group *g, NetCollKind kind,
                       uint64_t per_rank_bytes, Phase *ph, NetAlgo *chosen, Pick *pick)
{
    uint32_t np = build_phases(f, g, kind, per_rank_bytes, NET_ALGO_CUSTOM, ph, pick);
    if (np) {
        *chosen = NET_ALGO_CUSTOM;
        return np;
    }
    NetAlgo want = f->cfg.algo[kind];
    if (want != NET_ALGO_AUTO) {
        np = build_phases(f, g, kind, per_rank_bytes, want, ph, pick);
        if (np) {
            *chosen = want;
            return np;
        }
    }
    uint32_t best_np = 0;
    int64_t best_t = INT64_MAX;
    for (int a = NET_ALGO_RING; a < NET_ALGO_CUSTOM; a++) {
        Phase tmp[MAX_PHASES];
        Pick tp;
        np = build_phases(f, g, kind, per_rank_bytes, (NetAlgo)a, tmp, &tp);
        if (!np)
            continue;
        int64_t t = phases_time(f, g, tmp, np);
        if (t < best_t) {
            best_t = t;
            best_np = np;
            *chosen = (NetAlgo)a;
            *pick = tp;
            memcpy(ph, tmp, sizeof(Phase) * np);
        }
    }
    g_assert(best_np > 0);
    return best_np;
}

NetPlan net_fabric_plan(const NetFabric *f, uint32_t group, NetCollKind kind,
                        uint64_t per_rank_bytes)
{
    const Group *g = &g_array_index(f->groups, Group, group);
    Phase ph[MAX_PHASES];
    Pick pick;
    NetPlan p = {0};
    p.phases = choose(f, g, kind, per_rank_bytes, ph, &p.algo, &pick);
    p.tier = g->tier;
    p.time_ns = phases_time(f, g, ph, p.phases);
    p.proto = pick.proto;
    p.path = pick.path;
    return p;
}

/* ---- flows and sharing ---- */

static Flow *flow_at(NetFabric *f, uint32_t id)
{
    return &g_array_index(f->flows, Flow, id);
}

static void mark_changed(NetFabric *f, uint32_t id)
{
    Flow *fl = flow_at(f, id);
    fl->gen++;
    if (!fl->in_changed) {
        fl->in_changed = true;
        g_array_append_val(f->changed, id);
    }
}

static bool phase_contended(const NetFabric *f, const Flow *fl)
{
    const Group *g = &g_array_index(f->groups, Group, fl->group);
    return f->cfg.contention && g->uses[fl->phases[fl->phase].which] != NULL;
}

/* The shared resources a contended flow's current phase uses. */
static const GArray *flow_uses(const NetFabric *f, const Flow *fl)
{
    const Group *g = &g_array_index(f->groups, Group, fl->group);
    return g->uses[fl->phases[fl->phase].which];
}

/* Enters (add) or leaves the lists of the resources flow id uses. A list's order does not
 * matter: a component's rates do not depend on the order its flows are found in. */
static void res_link(NetFabric *f, uint32_t id, bool add)
{
    const GArray *uses = flow_uses(f, flow_at(f, id));
    for (guint u = 0; u < uses->len; u++) {
        uint32_t r = g_array_index(uses, Use, u).res;
        if (!f->res_flows[r])
            f->res_flows[r] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        GArray *l = f->res_flows[r];
        if (add) {
            g_array_append_val(l, id);
            continue;
        }
        for (guint i = 0; i < l->len; i++)
            if (g_array_index(l, uint32_t, i) == id) {
                g_array_remove_index_fast(l, i);
                break;
            }
    }
    if (add)
        f->n_active++;
    else
        f->n_active--;
}

/* Makes room for `need` more stamps: on wrap-around every stamp starts again from 0. */
static void stamps_reserve(NetFabric *f, uint32_t need)
{
    if (f->stamp <= UINT32_MAX - need - 1)
        return;
    memset(f->res_seen, 0, (size_t)f->n_res * sizeof *f->res_seen);
    for (guint i = 0; i < f->flows->len; i++)
        flow_at(f, i)->seen = 0;
    memset(f->class_seen->data, 0, (size_t)f->class_seen->len * sizeof(uint32_t));
    f->stamp = 0;
}

/* Collects into comp_flows the contended flows connected to resource r0 through shared
 * resources (breadth first), marking what it reaches with stamp s. */
static void gather_component(NetFabric *f, uint32_t r0, uint32_t s)
{
    g_array_set_size(f->comp_flows, 0);
    g_array_set_size(f->comp_queue, 0);
    f->res_seen[r0] = s;
    g_array_append_val(f->comp_queue, r0);
    for (guint q = 0; q < f->comp_queue->len; q++) {
        const GArray *l = f->res_flows[g_array_index(f->comp_queue, uint32_t, q)];
        for (guint i = 0; l && i < l->len; i++) {
            uint32_t id = g_array_index(l, uint32_t, i);
            Flow *fl = flow_at(f, id);
            if (fl->seen == s)
                continue;
            fl->seen = s;
            g_array_append_val(f->comp_flows, id);
            const GArray *uses = flow_uses(f, fl);
            for (guint u = 0; u < uses->len; u++) {
                uint32_t r = g_array_index(uses, Use, u).res;
                if (f->res_seen[r] != s) {
                    f->res_seen[r] = s;
                    g_array_append_val(f->comp_queue, r);
                }
            }
        }
    }
}

/* A flow's new rate at now. Its remaining bytes are brought up to now only when the rate
 * changes; an unchanged rate leaves its end time as it was. */
static void set_rate(NetFabric *f, uint32_t id, double rate, int64_t now)
{
    Flow *fl = flow_at(f, id);
    double r = rate > 0 ? rate : 1.0;
    if (r == fl->rate && fl->t_end >= 0)
        return;
    fl->rem_bytes -= fl->rate * (double)(now - fl->t_last) / 1e9;
    if (fl->rem_bytes < 0)
        fl->rem_bytes = 0;
    fl->t_last = now;
    fl->rate = r;
    int64_t end = add_ns(now, ns_from_double(ceil(fl->rem_bytes / r * 1e9)));
    if (end != fl->t_end) {
        fl->t_end = end;
        mark_changed(f, id);
    }
}

/* Max-min fair rates over comp_flows (one component, stamp s), then their end times. The
 * flows of one group on one tier are identical for the filling: one class, weighted by count. */
static void solve_component(NetFabric *f, uint32_t s, int64_t now)
{
    g_array_set_size(f->classes, 0);
    uint32_t *seen = (uint32_t *)(void *)f->class_seen->data;
    uint32_t *of = (uint32_t *)(void *)f->class_of->data;
    for (guint i = 0; i < f->comp_flows->len; i++) {
        const Flow *fl = flow_at(f, g_array_index(f->comp_flows, uint32_t, i));
        const Group *g = &g_array_index(f->groups, Group, fl->group);
        int which = fl->phases[fl->phase].which;
        uint32_t key = 2 * fl->group + (uint32_t)which;
        if (seen[key] == s) {
            g_array_index(f->classes, NetRateClass, of[key]).count++;
            continue;
        }
        seen[key] = s;
        of[key] = f->classes->len;
        NetRateClass c = {.uses = (const NetRateUse *)(void *)g->uses[which]->data,
                          .n_uses = g->uses[which]->len,
                          .cap = g->cap[which],
                          .count = 1};
        g_array_append_val(f->classes, c);
    }
    g_array_set_size(f->rates, f->classes->len);
    double *rate = (double *)(void *)f->rates->data;
    net_rates_solve(f->solver, (const NetRateClass *)(void *)f->classes->data, f->classes->len,
                    rate);
    for (guint i = 0; i < f->comp_flows->len; i++) {
        uint32_t id = g_array_index(f->comp_flows, uint32_t, i);
        const Flow *fl = flow_at(f, id);
        uint32_t key = 2 * fl->group + (uint32_t)fl->phases[fl->phase].which;
        set_rate(f, id, rate[of[key]], now);
    }
}

/* Re-evaluates the rates of every component holding one of `uses`' resources: after a flow
 * with those uses started or ended its contended transfer. Other components keep theirs. */
static void assign_rates(NetFabric *f, const GArray *uses, int64_t now)
{
    stamps_reserve(f, uses->len);
    uint32_t first = f->stamp + 1; /* stamps from here on are this call's */
    for (guint u = 0; u < uses->len; u++) {
        uint32_t r = g_array_index(uses, Use, u).res;
        if (f->res_seen[r] >= first) /* in a component already solved by this call */
            continue;
        uint32_t s = ++f->stamp;
        gather_component(f, r, s);
        if (f->comp_flows->len)
            solve_component(f, s, now);
    }
}
/* Starts phase fl->phase at now: its latency segment, or everything at once when no phase
 * from here on is contended. */
static void flow_begin_phase(NetFabric *f, uint32_t id, int64_t now)
{
    Flow *fl = flow_at(f, id);
    const Group *g = &g_array_index(f->groups, Group, fl->group);
    bool any = false;
    for (uint32_t p = fl->phase; p < fl->n_phases && !any; p++) {
        uint32_t save = fl->phase;
        fl->phase = p;
        any = phase_contended(f, fl);
        fl->phase = save;
    }
    if (!any) {
        fl->seg = SEG_ALL;
        fl->t_end =
            add_ns(now, phases_time(f, g, fl->phases + fl->phase, fl->n_phases - fl->phase));
    } else {
        fl->seg = SEG_LATENCY;
        fl->t_end = add_ns(now, fl->phases[fl->phase].latency_ns);
    }
    mark_changed(f, id);
}

/* choose()'s phases for a call on g, from the group's memo when it made the same call. */
static uint32_t plan_phases(const NetFabric *f, Group *g, NetCollKind kind,
                            uint64_t per_rank_bytes, Phase *ph)
{
    if (!g->memo)
        g->memo = g_new0(struct PlanMemo, PLAN_MEMO);
    for (uint32_t i = 0; i < PLAN_MEMO; i++) {
        const struct PlanMemo *m = &g->memo[i];
        if (m->valid && m->kind == kind && m->per_rank_bytes == per_rank_bytes) {
            memcpy(ph, m->phases, sizeof(Phase) * m->n_phases);
            return m->n_phases;
        }
    }
    NetAlgo algo;
    Pick pick;
    uint32_t np = choose(f, g, kind, per_rank_bytes, ph, &algo, &pick);
    struct PlanMemo *m = &g->memo[g->memo_next];
    g->memo_next = (g->memo_next + 1) % PLAN_MEMO;
    *m = (struct PlanMemo){.valid = true, .kind = kind, .per_rank_bytes = per_rank_bytes,
                           .n_phases = np};
    memcpy(m->phases, ph, sizeof(Phase) * np);
    return np;
}

uint32_t net_fabric_start(NetFabric *f, int64_t now_ns, uint32_t group, NetCollKind kind,
                          uint64_t per_rank_bytes, uint64_t tag)
{
    g_assert(group < f->groups->len);
    uint32_t id;
    if (f->free_head != NONE) {
        id = f->free_head;
        f->free_head = flow_at(f, id)->next_free;
    } else {
        id = f->flows->len;
        g_array_set_size(f->flows, id + 1);
    }
    Flow *fl = flow_at(f, id);
    uint32_t gen = fl->gen;
    memset(fl, 0, sizeof *fl);
    fl->gen = gen;
    fl->live = true;
    fl->tag = tag;
    fl->group = group;
    fl->n_phases = plan_phases(f, &g_array_index(f->groups, Group, group), kind,
                               per_rank_bytes, fl->phases);
    flow_begin_phase(f, id, now_ns);
    return id;
}

bool net_fabric_step(NetFabric *f, uint32_t id, int64_t now_ns)
{
    Flow *fl = flow_at(f, id);
    g_assert(fl->live && now_ns == fl->t_end);
    const Group *g = &g_array_index(f->groups, Group, fl->group);
    switch (fl->seg) {
    case SEG_LATENCY:
        fl->seg = SEG_TRANSFER;
        if (phase_contended(f, fl)) {
            fl->contended = true;
            fl->rem_bytes = fl->phases[fl->phase].bytes;
            fl->rate = 0;
            fl->t_last = now_ns;
            fl->t_end = -1;
            res_link(f, id, true);
            assign_rates(f, flow_uses(f, fl), now_ns);
        } else {
            fl->t_end = add_ns(now_ns, ns_from_double(ceil(fl->phases[fl->phase].bytes /
                                                           g->unit[fl->phases[fl->phase].which] *
                                                           1e9)));
            mark_changed(f, id);
        }
        return false;
    case SEG_TRANSFER:
        if (fl->contended) {
            res_link(f, id, false);
            fl->contended = false;
            assign_rates(f, flow_uses(f, fl), now_ns);
        }
        if (++fl->phase < fl->n_phases) {
            flow_begin_phase(f, id, now_ns);
            return false;
        }
        break;
    case SEG_ALL:
        break;
    }
    fl->live = false;
    fl->gen++;
    fl->next_free = f->free_head;
    f->free_head = id;
    return true;
}

bool net_fabric_pop_changed(NetFabric *f, uint32_t *flow, int64_t *time_ns, uint32_t *gen)
{
    while (f->changed_head < f->changed->len) {
        uint32_t id = g_array_index(f->changed, uint32_t, f->changed_head++);
        if (f->changed_head == f->changed->len) {
            g_array_set_size(f->changed, 0);
            f->changed_head = 0;
        }
        Flow *fl = flow_at(f, id);
        fl->in_changed = false;
        if (!fl->live)
            continue;
        *flow = id;
        *time_ns = fl->t_end;
        *gen = fl->gen;
        return true;
    }
    return false;
}

uint32_t net_fabric_flow_gen(const NetFabric *f, uint32_t flow)
{
    return g_array_index(f->flows, Flow, flow).gen;
}

uint64_t net_fabric_flow_tag(const NetFabric *f, uint32_t flow)
{
    return g_array_index(f->flows, Flow, flow).tag;
}

/* ---- one collective outside the engine ---- */

bool net_collective_estimate(const NetHardware *hw, NetCollKind kind, uint32_t ranks,
                             uint32_t nodes, double bytes, NetCommImpl impl, NetCollEstimate *out,
                             char *why, unsigned n)
{
    if (!hw)
        hw = &flat_hw;
    if (nodes == 0)
        nodes = 1;
    if (ranks < 1 || ranks % nodes != 0 || ranks / nodes > hw->devices_per_node) {
        g_snprintf(why, n, "ranks=%u nodes=%u: need ranks a multiple of nodes and at most %u "
                   "ranks per node on %s", ranks, nodes, hw->devices_per_node, hw->name);
        return false;
    }
    if (!(bytes >= 0) || !isfinite(bytes) || bytes > 1e18) {
        g_snprintf(why, n, "bytes=%g: need a size from 0 to 1e18", bytes);
        return false;
    }
    uint32_t per = ranks / nodes;
    /* sharing on, as the engine runs by default: a group alone on a shared uplink gets its
     * share of it (Group.unit) */
    NetFabricConfig cfg = {.hw = hw, .n_ranks = nodes * hw->devices_per_node, .nodes = nodes,
                           .contention = true};
    NetFabric *f = net_fabric_new(&cfg);
    g_autofree int32_t *m = g_new(int32_t, ranks);
    for (uint32_t i = 0; i < ranks; i++)
        m[i] = (int32_t)((i / per) * hw->devices_per_node + i % per);
    uint32_t gid = net_fabric_add_group(f, m, ranks);
    net_fabric_set_group_impl(f, gid, impl);
    /* the fabric takes the per-rank input; nccl-tests' size is the gathered output for
     * all_gather */
    double per_rank = kind == NET_ALL_GATHER ? bytes / ranks : bytes;
    NetPlan p = net_fabric_plan(f, gid, kind, (uint64_t)llround(per_rank));
    net_fabric_free(f);
    double t_s = (double)p.time_ns / 1e9;
    double alg = t_s > 0 ? bytes / t_s / 1e9 : 0;
    *out = (NetCollEstimate){.time_us = (double)p.time_ns / 1e3, .algbw_gb_s = alg,
                             .busbw_gb_s = alg * net_bus_factor(kind, ranks), .algo = p.algo,
                             .proto = p.proto, .path = p.path};
    return true;
}
