/* net/fabric.h — collectives on a hardware fabric: algorithm choice, cost, and bandwidth
 * sharing between concurrent collectives.
 *
 * Ranks sit on devices in order (rank r on device r; device d on node d / devices_per_node).
 * A group's traffic uses the lowest tier whose domain holds all its members. For each
 * (group, kind, size) the fabric predicts the time of every eligible algorithm — ring
 * (all_gather, reduce_scatter, all_reduce, broadcast), double binary tree (all_reduce,
 * barrier), NVLS (NVLink SHARP, one node on sm90+ switches), direct (all_to_all, send/recv),
 * hierarchical (groups spanning nodes with the same member count on each: intra-node
 * reduce_scatter, inter-node all_reduce, intra-node all_gather) — and, like NCCL's tuner, takes
 * the fastest unless the scenario fixes one. Each phase's time is NCCL's model for it
 * (net/nccl.h): the protocol (LL, LL128, Simple) with the least predicted time gives the
 * phase's latency and its effective bus bandwidth. A group marked NET_IMPL_CUSTOM runs its
 * all_reduce on vLLM's own kernels where vLLM would (net_custom_ar), on one node.
 *
 * A started collective is a flow of one or more phases. A phase whose tier has a shared part
 * (net/hardware.h) competes for it with the other flows using the same part: rates are
 * max-min fair (progressive filling, net/fabric-rates.h; a flow's weight on a node's uplink is
 * its member count in that node) and re-evaluated whenever a transfer starts or ends, so
 * completion times move. Only the connected component of the flow that started or ended (the
 * flows linked to it through shared parts) is re-evaluated: max-min rates of one component do
 * not depend on another, so data-parallel replicas on their own nodes never touch each other.
 * A flow's remaining bytes are brought up to date, and its end time recomputed, only when its
 * rate changes. Flows on non-blocking tiers never enter that bookkeeping: their time is fixed
 * at start.
 *
 * Costs: planning is O(members) once per group and O(algorithms) per call; a contended
 * start/end is O(C x R) per filling round for the C classes (flows of one group on one tier) in
 * its component and the R shared parts they touch, plus the component's search. Flow records
 * come from a free list. Time is integer ns; rates are doubles and do not depend on the order
 * flows are found in (integer weights make every sum exact), so results are deterministic.
 * Times saturate at NET_TIME_MAX_NS.
 */
#ifndef NET_FABRIC_H
#define NET_FABRIC_H

#include <stdbool.h>
#include <stdint.h>

#include "cost.h"
#include "hardware.h"
#include "nccl.h"

/* The latest time the fabric computes (INT64_MAX / 4 ns, about 73 years; the engine's
 * SCHED_TIME_MAX). Every duration and end time saturates here instead of overflowing, whatever
 * the bandwidths, link-fault factors and sizes: a flow whose end is NET_TIME_MAX_NS would end
 * beyond what integer nanoseconds represent. */
#define NET_TIME_MAX_NS (INT64_MAX / 4)

typedef enum {
    NET_ALGO_AUTO = 0,
    NET_ALGO_RING,
    NET_ALGO_TREE,
    NET_ALGO_DIRECT,
    NET_ALGO_HIERARCHICAL,
    NET_ALGO_NVLS,   /* NVLink SHARP (one node, NVSwitch with multicast) */
    NET_ALGO_CUSTOM, /* vLLM's custom / symmetric-memory all-reduce (a group's impl, never
                        configured: net_algo_supports is false for it) */
    NET_ALGO_COUNT
} NetAlgo;

typedef struct {
    int tier;      /* index into NetHardware.tiers */
    uint32_t node; /* the node whose links degrade */
    double factor; /* bandwidth multiplier, > 0 (0.5 = half bandwidth) */
} NetLinkFault;

typedef struct {
    const NetHardware *hw;            /* borrowed; NULL = net_hardware_flat() */
    uint32_t n_ranks;
    uint32_t nodes;                   /* 0 = the fewest that hold n_ranks */
    NetAlgo algo[NET_COLL_KIND_COUNT]; /* per kind; NET_ALGO_AUTO = fastest eligible */
    bool contention;                  /* share shared tiers between flows (default true) */
    const NetLinkFault *faults;       /* borrowed */
    uint32_t n_faults;
} NetFabricConfig;

typedef struct {
    NetAlgo algo;
    int tier;         /* the tier that spans the group */
    uint32_t phases;
    int64_t time_ns;  /* alone on the fabric */
    NetProto proto;   /* the protocol of the (last) phase */
    const char *path; /* what runs it: "nccl" or one of net_custom_ar's paths; static */
} NetPlan;

typedef struct NetFabric NetFabric;

const char *net_algo_name(NetAlgo a);
bool net_algo_parse(const char *s, NetAlgo *out);
/* Whether `a` can run `kind` at all (ignoring the group's shape). */
bool net_algo_supports(NetAlgo a, NetCollKind kind);

/* A flat one-tier fabric (NVLink4-class, 450 GB/s, 0.6 us per hop, 6.6 us launch) for callers
 * that give no hardware. Static storage. */
const NetHardware *net_hardware_flat(void);

/* Creates the fabric. The config is copied (pointers in it stay borrowed). Never fails; the
 * caller has checked cfg->hw with net_hardware_check and that ranks fit on the nodes. */
NetFabric *net_fabric_new(const NetFabricConfig *cfg);
void net_fabric_free(NetFabric *f);
/* The nodes the fabric was built with (resolved from cfg->nodes). */
uint32_t net_fabric_nodes(const NetFabric *f);

/* Registers a group (global ranks, in any order) and returns its id (0, 1, ...). Its
 * collectives run on NCCL until net_fabric_set_group_impl says otherwise. */
uint32_t net_fabric_add_group(NetFabric *f, const int32_t *ranks, uint32_t n);
/* Who runs group `group`'s collectives. NET_IMPL_CUSTOM applies to all_reduce on a group of 2,
 * 4, 6 or 8 ranks inside one node on CUDA/ROCm with NVLink-class links (vLLM's conditions);
 * elsewhere the group keeps NCCL. */
void net_fabric_set_group_impl(NetFabric *f, uint32_t group, NetCommImpl impl);

/* The plan for one call alone on the fabric (no contention), honouring the configured
 * algorithm for `kind` when it is eligible for this group, else the fastest eligible. */
NetPlan net_fabric_plan(const NetFabric *f, uint32_t group, NetCollKind kind,
                        uint64_t per_rank_bytes);
/* The same with an explicit algorithm; returns false when it is not eligible. */
bool net_fabric_plan_algo(const NetFabric *f, uint32_t group, NetCollKind kind,
                          uint64_t per_rank_bytes, NetAlgo algo, NetPlan *out);

/* Starts a collective at now_ns. Returns the flow id. The flow's next event time is queued
 * in the changed list (and so may other flows' be, if it shares bandwidth with them). */
uint32_t net_fabric_start(NetFabric *f, int64_t now_ns, uint32_t group, NetCollKind kind,
                          uint64_t per_rank_bytes, uint64_t tag);
/* The flow's event time has come: advances it. Returns true when the collective is complete
 * (the flow is released); false when it moved to its next phase. Queues changed flows. */
bool net_fabric_step(NetFabric *f, uint32_t flow, int64_t now_ns);
/* Pops one flow whose next event time changed since it was last popped. Returns false when
 * none is left. `gen` identifies this version of the flow's event time. */
bool net_fabric_pop_changed(NetFabric *f, uint32_t *flow, int64_t *time_ns, uint32_t *gen);
/* The version of a live flow's event time; an event carrying another gen is stale. */
uint32_t net_fabric_flow_gen(const NetFabric *f, uint32_t flow);
uint64_t net_fabric_flow_tag(const NetFabric *f, uint32_t flow);
/* Flows currently competing for shared bandwidth (for tests and stats). */
uint32_t net_fabric_contended(const NetFabric *f);

/* One collective alone on the hardware, as `ranksim cost collective` and `ranksim nccl-tests`
 * print it: the same planning as the fabric's for a group of `ranks` consecutive devices, or,
 * with nodes > 1, ranks / nodes consecutive devices on each of `nodes` nodes. `bytes` is the
 * nccl-tests size (all_gather: the gathered output). */
typedef struct {
    double time_us;
    double algbw_gb_s; /* bytes / time (nccl-tests' algbw), GB/s */
    double busbw_gb_s; /* algbw x bus factor (nccl-tests' busbw), GB/s */
    NetAlgo algo;
    NetProto proto;
    const char *path;  /* "nccl" or vLLM's kernel (net_custom_ar); static */
} NetCollEstimate;

/* Fills *out. Returns false, with a reason in `why` (size n), when the layout does not fit
 * the hardware (ranks < 1, nodes not dividing ranks, more ranks per node than devices) or
 * `bytes` is negative or not finite. `hw` NULL = net_hardware_flat(). */
bool net_collective_estimate(const NetHardware *hw, NetCollKind kind, uint32_t ranks,
                             uint32_t nodes, double bytes, NetCommImpl impl, NetCollEstimate *out,
                             char *why, unsigned n);

#endif
