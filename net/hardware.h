/* net/hardware.h — a device and its interconnect as data: compute peaks, HBM, and the link
 * tiers of the fabric, plus where each rank sits.
 *
 * Units are in the field names. Bandwidths are decimal (1 GB/s = 1e9 B/s) per direction per
 * device, as datasheets and nccl-tests quote them; HBM capacity is bytes. Presets live as YAML
 * files in net/presets/ (loaded by src/hardware.c; this header only holds the values).
 *
 * Tiers are ordered narrowest first. A tier's domain is a block of `span_devices` consecutive
 * device ids (0 = the whole cluster): die-to-die pairs, a node's NVLink/HCCS/UB switch, a
 * supernode, the scale-out network. The lowest tier whose domain holds every member of a group
 * carries that group's traffic. A tier may have a shared part (`shared_bw_bytes_per_s`): for a
 * tier that spans beyond one node, the node's uplinks into it (its NICs), shared by every flow
 * that leaves the node; for a tier inside a node, its switch, shared by the flows in that
 * domain. Flows sharing it get max-min fair shares (net/fabric.h).
 */
#ifndef NET_HARDWARE_H
#define NET_HARDWARE_H

#include <stdbool.h>
#include <stdint.h>

#define NET_MAX_TIERS 6
#define NET_NAME_MAX 48

typedef enum {
    NET_PEAK_BF16 = 0,
    NET_PEAK_FP16,
    NET_PEAK_FP8,
    NET_PEAK_INT8,
    NET_PEAK_FP4,
    NET_PEAK_COUNT
} NetPeakDtype;

typedef struct {
    char name[NET_NAME_MAX];
    uint32_t span_devices;        /* devices per domain, consecutive ids; 0 = whole cluster */
    double bw_bytes_per_s;        /* per device, per direction, > 0 */
    int64_t latency_ns;           /* per hop / ring step, >= 0 */
    double shared_bw_bytes_per_s; /* capacity of the shared part seen from one node (tiers
                                     spanning nodes) or one domain (tiers inside a node); 0 = the
                                     tier is non-blocking */
} NetTier;

typedef struct {
    char name[NET_NAME_MAX];
    uint32_t devices_per_node;                 /* >= 1 */
    double peak_flops[NET_PEAK_COUNT];         /* dense FLOP/s (or OP/s for int8); 0 = none */
    uint64_t hbm_bytes;                        /* device memory, bytes */
    double hbm_bw_bytes_per_s;                 /* decimal B/s */
    int64_t launch_latency_ns;                 /* fixed cost of one collective call */
    uint32_t n_tiers;                          /* >= 1 */
    NetTier tiers[NET_MAX_TIERS];              /* narrowest first; the last spans the cluster */
} NetHardware;

const char *net_peak_dtype_name(NetPeakDtype d);

/* Checks what a hardware description must satisfy: at least one tier, bandwidths > 0,
 * latencies >= 0, tier spans strictly widening and the last one 0 (cluster), spans that are
 * multiples of each other and of/by devices_per_node, distinct tier names. On failure returns
 * false and writes a message naming the tier and field into `why` (size `n`). */
bool net_hardware_check(const NetHardware *hw, char *why, unsigned n);

/* Index of the tier named `name`, or -1. */
int net_hardware_tier(const NetHardware *hw, const char *name);

#endif
