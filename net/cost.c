/* net/cost.c — collective shapes (sizes, bus factors, steps); see cost.h for the sources. */
#include "cost.h"

#include <string.h>

static const char *const kind_names[NET_COLL_KIND_COUNT] = {
    "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "barrier", "p2p",
};

const char *net_coll_kind_name(NetCollKind k)
{
    return k < NET_COLL_KIND_COUNT ? kind_names[k] : "?";
}

bool net_coll_kind_parse(const char *s, NetCollKind *out)
{
    for (int i = 0; i < NET_COLL_KIND_COUNT; i++)
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (NetCollKind)i;
            return true;
        }
    return false;
}

double net_bus_factor(NetCollKind kind, uint32_t n)
{
    double dn = n ? (double)n : 1.0;
    switch (kind) {
    case NET_ALL_REDUCE:
        return 2.0 * (dn - 1) / dn;
    case NET_REDUCE_SCATTER:
    case NET_ALL_GATHER:
    case NET_ALL_TO_ALL:
        return (dn - 1) / dn;
    case NET_BROADCAST:
    case NET_P2P:
        return n > 1 ? 1.0 : 0.0;
    case NET_BARRIER:
    default:
        return 0.0;
    }
}

double net_algo_size(NetCollKind kind, uint32_t n, uint64_t per_rank_bytes)
{
    double b = (double)per_rank_bytes;
    return kind == NET_ALL_GATHER ? b * (double)n : b;
}

uint32_t net_ring_steps(NetCollKind kind, uint32_t n)
{
    if (n <= 1)
        return 0;
    switch (kind) {
    case NET_ALL_REDUCE:
    case NET_BARRIER:
        return 2 * (n - 1);
    case NET_P2P:
        return 1;
    default:
        return n - 1;
    }
}

uint32_t net_tree_steps(uint32_t n)
{
    uint32_t depth = 0;
    while ((1u << depth) < n && depth < 31)
        depth++;
    return 2 * depth;
}
