/* net/nccl.h — how long one collective takes as NCCL and vLLM's own all-reduce kernels run it:
 * NCCL's algorithm x protocol choice (its tuner, src/graph/tuning.cc) and the kernels vLLM
 * calls instead of NCCL for a tensor-parallel all-reduce (custom all-reduce, torch symmetric
 * memory).
 *
 * NCCL's tuner predicts, for every (algorithm, protocol), time = latency + bytes / bandwidth,
 * with a base latency per (algorithm, protocol), a per-hop latency per link type (NVLink, PCI,
 * network) and a bus bandwidth scaled by each protocol's efficiency (LL: half the link at most
 * and a per-arch cap; LL128: 120/128 of it; Simple: all of it), and runs the cheapest. This
 * module evaluates the same formulas on the hardware description's tier (net/hardware.h): the
 * tier's latency is NCCL's LL per-hop latency for its link type and the hardware's launch
 * latency NCCL's LL base latency; the other protocols' latencies keep NCCL's ratios to those.
 * Two factors fitted on measurements (AIConfigurator's nccl 2.29.2 tables on H100 SXM) turn
 * the tuner's prediction into the time a run measures; they are in nccl.c with their fit.
 *
 * Pure functions of their arguments, no state, O(algorithms x protocols) per call.
 */
#ifndef NET_NCCL_H
#define NET_NCCL_H

#include <stdbool.h>
#include <stdint.h>

#include "cost.h"
#include "hardware.h"

/* NCCL's algorithms (NCCL_ALGO_*) that the model covers, plus the grouped send/recv NCCL runs
 * for all_to_all and p2p. */
typedef enum {
    NET_NCCL_RING = 0,
    NET_NCCL_TREE,
    NET_NCCL_NVLS,      /* NVLink SHARP: the NVSwitch reduces (sm90+, NVSwitch systems) */
    NET_NCCL_NVLS_TREE, /* NVLS inside nodes, a tree between them */
    NET_NCCL_P2P,       /* grouped send/recv (all_to_all, send/recv) */
    NET_NCCL_VLLM,      /* not NCCL: vLLM's custom all-reduce or symmetric-memory kernel */
    NET_NCCL_ALGO_COUNT
} NetNcclAlgo;

/* NCCL's protocols (NCCL_PROTO_*). */
typedef enum { NET_PROTO_LL = 0, NET_PROTO_LL128, NET_PROTO_SIMPLE, NET_PROTO_COUNT } NetProto;

/* The link type NCCL's tuner keys its hardware latencies on (NCCL_HW_*). */
typedef enum { NET_LINK_NVLINK = 0, NET_LINK_PCI, NET_LINK_NET, NET_LINK_COUNT } NetLinkType;

/* Who runs a process group's collectives (set on a group by the layer that knows the
 * software: vLLM's TP group asks for its custom all-reduce). */
typedef enum {
    NET_IMPL_NCCL = 0, /* NCCL (PyNccl / torch.distributed) */
    NET_IMPL_CUSTOM,   /* vLLM's custom all-reduce where it applies, then symmetric memory, then
                          NCCL (vllm/distributed/device_communicators/cuda_communicator.py) */
    NET_IMPL_COUNT
} NetCommImpl;

const char *net_nccl_algo_name(NetNcclAlgo a);
const char *net_proto_name(NetProto p);
const char *net_comm_impl_name(NetCommImpl i);
bool net_comm_impl_parse(const char *s, NetCommImpl *out);

/* One collective as NCCL sees it. Bandwidths are per device per direction, B/s; latencies ns. */
typedef struct {
    NetCollKind kind;
    uint32_t ranks;       /* >= 1 */
    uint32_t nodes;       /* >= 1; ranks spread evenly over them */
    double bytes;         /* nccl-tests size (all_gather: the gathered output) */
    double bw;            /* the spanning tier's bandwidth; nodes > 1: what the group's rails
                             carry out of a node (members per node x a device's network
                             bandwidth) */
    int64_t hop_ns;       /* the spanning tier's per-hop latency (NCCL LL figure) */
    NetLinkType link;     /* the spanning tier's link type */
    double intra_bw;      /* nodes > 1: the tier inside a node; else = bw */
    int64_t intra_hop_ns; /* nodes > 1: its per-hop latency; else = hop_ns */
    NetLinkType intra_link;
    int64_t launch_ns;    /* NCCL's LL base latency on this hardware (NetHardware) */
    NetArch arch;         /* for NCCL's per-arch constants (LL cap, NVLink figure, NVLS) */
    bool nvswitch;        /* the intra-node tier is a switch with multicast (NVLS possible) */
} NetNcclQuery;

typedef struct {
    double time_ns;    /* latency_ns + transfer */
    double latency_ns; /* the fixed part */
    double bus_bw;     /* bus bandwidth the transfer runs at, B/s (nccl-tests' busbw at size) */
    NetNcclAlgo algo;
    NetProto proto;
} NetNcclChoice;

/* The link type of tier `t` of `hw`: NET when its domain is wider than a node and it has a
 * shared part (the nodes' NICs), PCI when its name starts with "pci", NVLINK otherwise (NVLink,
 * xGMI, HCCS, UB, and scale-up fabrics across nodes such as NVL72: GPU links, no NIC). */
NetLinkType net_tier_link(const NetHardware *hw, int t);
/* Whether tier `t` carries NVLink SHARP (NVLS): an NVLink switch inside a node on sm90 or
 * newer NVIDIA parts (NCCL: NVS node present and compute capability >= 9.0). */
bool net_tier_nvls(const NetHardware *hw, int t);

/* NCCL's choice for `q`: the (algorithm, protocol) with the least predicted time. Returns
 * false (and leaves *out alone) when nothing applies (ranks < 2 or a barrier). `algo_mask`
 * restricts the algorithms (bit 1 << NetNcclAlgo; 0 = all). */
bool net_nccl_choose(const NetNcclQuery *q, uint32_t algo_mask, NetNcclChoice *out);

/* The time of vLLM's all-reduce with impl NET_IMPL_CUSTOM on a single-node group of `ranks`
 * over tier bandwidth `bw` (B/s) on `hw`: the custom all-reduce kernel below its size limit
 * (one-shot or two-shot), torch symmetric memory up to its limit, else NCCL (`nccl`, the
 * caller's NCCL choice for the same call). `bytes` is the tensor's size. Fills *out (algo
 * NET_NCCL_VLLM for vLLM's kernels) and *path ("custom_ar_1stage", "custom_ar_2stage",
 * "symm_mem_multimem", "symm_mem_two_shot", "nccl"; static); returns false when vLLM would not use its own
 * kernels for this group at all (then the caller uses NCCL). */
bool net_custom_ar(const NetHardware *hw, uint32_t ranks, double bytes, double bw,
                   const NetNcclChoice *nccl, NetNcclChoice *out, const char **path);

#endif
