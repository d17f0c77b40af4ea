/* net/cost.h — what a collective costs in time. PLACEHOLDER MODEL (engine-foundation issue).
 *
 * One flat link per group: time = base latency + steps x per-step latency
 *                                  + algorithm bytes x bus factor / link bandwidth.
 * Steps and bus factors are NCCL's ring shapes as nccl-tests reports them (all_reduce 2(n-1)
 * steps and bus factor 2(n-1)/n; all_gather, reduce_scatter, all_to_all n-1 and (n-1)/n;
 * broadcast n-1 and 1). Topology tiers, algorithm choice and link sharing are not modelled
 * yet; the interconnect issue replaces this module behind the same function.
 *
 * net/ depends on nothing else in ranksim, so it has its own collective-kind enum.
 */
#ifndef NET_COST_H
#define NET_COST_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    NET_ALL_REDUCE = 0,
    NET_REDUCE_SCATTER,
    NET_ALL_GATHER,
    NET_ALL_TO_ALL,
    NET_BROADCAST,
    NET_BARRIER,
    NET_P2P,
} NetCollKind;

typedef struct {
    char name[32];           /* preset name or "custom" */
    double bw_bytes_per_s;   /* per-direction link bandwidth, decimal bytes/s, > 0 */
    int64_t base_latency_ns; /* fixed launch cost per collective, >= 0 */
    int64_t step_latency_ns; /* per ring step / hop, >= 0 */
} NetModel;

/* The default model: NVLink4-class scale-up link (450 GB/s per direction, H100 SXM datasheet)
 * with NCCL's LL-protocol latencies (base 6.6 us, 0.6 us per NVLink hop; NCCL tuner defaults,
 * shared/reference/hardware.md). */
NetModel net_model_default(void);

/* Looks up a built-in preset by name ("h100", "h200", "b200", "ascend-910b", "ascend-910c";
 * scale-up tier only for now). Returns false for an unknown name. `out` is untouched then. */
bool net_model_preset(const char *name, NetModel *out);
/* Comma-separated list of the preset names, for error messages. Static storage. */
const char *net_model_preset_names(void);

/* Time in ns for one collective of `kind` over `n` ranks (>= 1) where each rank passes
 * `per_rank_bytes` bytes as its input buffer (count x dtype size, the number NCCL is called
 * with times the element size). A group of one rank costs only the base latency.
 * This function can't fail; results saturate at INT64_MAX / 4. */
int64_t net_collective_cost_ns(const NetModel *m, NetCollKind kind, uint32_t n,
                               uint64_t per_rank_bytes);

#endif
