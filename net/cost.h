/* net/cost.h — the shapes of collective algorithms as nccl-tests and NCCL's tuner describe
 * them: algorithm sizes, bus factors and step counts. Pure functions, no state.
 *
 * nccl-tests reports bus bandwidth busbw = algbw x factor with algbw = size / time, so a
 * collective that runs at bus bandwidth B takes size x factor / B. Factors: all_reduce
 * 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast 1. The "size" is what
 * nccl-tests prints: for all_gather the gathered output (n x the per-rank input), for the
 * others the per-rank input buffer.
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
    NET_COLL_KIND_COUNT
} NetCollKind;

const char *net_coll_kind_name(NetCollKind k);
bool net_coll_kind_parse(const char *s, NetCollKind *out);

/* nccl-tests bus factor for n ranks (0 for a barrier; 1 for p2p). n >= 1. */
double net_bus_factor(NetCollKind kind, uint32_t n);
/* nccl-tests size in bytes for a call whose per-rank input is `per_rank_bytes`. */
double net_algo_size(NetCollKind kind, uint32_t n, uint64_t per_rank_bytes);
/* Ring steps: all_reduce 2(n-1), all_gather/reduce_scatter/all_to_all/broadcast n-1,
 * barrier 2(n-1), p2p 1. */
uint32_t net_ring_steps(NetCollKind kind, uint32_t n);
/* Double-binary-tree steps: 2 x ceil(log2 n) (up and down the tree). */
uint32_t net_tree_steps(uint32_t n);

#endif
