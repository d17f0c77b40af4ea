/* net/cost.c — placeholder collective cost; see cost.h for the formula and its sources. */
#include "cost.h"

#include <math.h>
#include <string.h>

typedef struct {
    const char *name;
    double bw_gb_s;   /* scale-up, per direction, decimal GB/s */
    double base_us;
    double step_us;
} Preset;

/* Scale-up tiers from shared/reference/hardware.md: NVLink4 450 GB/s (H100/H200 SXM), NVLink5
 * 900 GB/s (B200), HCCS 196 GB/s at 0.5 us (Ascend 910B), UB 196 GB/s at 0.5 us (910C).
 * NVIDIA latencies: NCCL LL base 6.6 us + 0.6 us per NVLink hop. */
static const Preset presets[] = {
    {"h100", 450.0, 6.6, 0.6},        {"h200", 450.0, 6.6, 0.6},
    {"b200", 900.0, 6.6, 0.6},        {"ascend-910b", 196.0, 6.6, 0.5},
    {"ascend-910c", 196.0, 6.6, 0.5},
};

NetModel net_model_default(void)
{
    NetModel m;
    net_model_preset("h100", &m);
    return m;
}

bool net_model_preset(const char *name, NetModel *out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) == 0) {
            memset(out, 0, sizeof *out);
            strncpy(out->name, presets[i].name, sizeof out->name - 1);
            out->bw_bytes_per_s = presets[i].bw_gb_s * 1e9;
            out->base_latency_ns = (int64_t)llround(presets[i].base_us * 1000.0);
            out->step_latency_ns = (int64_t)llround(presets[i].step_us * 1000.0);
            return true;
        }
    }
    return false;
}

const char *net_model_preset_names(void)
{
    return "h100, h200, b200, ascend-910b, ascend-910c";
}

int64_t net_collective_cost_ns(const NetModel *m, NetCollKind kind, uint32_t n,
                               uint64_t per_rank_bytes)
{
    const double cap = (double)(INT64_MAX / 4);
    if (n <= 1 && kind != NET_P2P)
        return m->base_latency_ns;
    double steps, bus, bytes = (double)per_rank_bytes;
    double dn = (double)n;
    switch (kind) {
    case NET_ALL_REDUCE:
        steps = 2.0 * (dn - 1);
        bus = 2.0 * (dn - 1) / dn;
        break;
    case NET_ALL_GATHER: /* the algorithm size is the gathered output: n inputs */
        steps = dn - 1;
        bus = (dn - 1) / dn;
        bytes *= dn;
        break;
    case NET_REDUCE_SCATTER:
    case NET_ALL_TO_ALL:
        steps = dn - 1;
        bus = (dn - 1) / dn;
        break;
    case NET_BROADCAST:
        steps = dn - 1;
        bus = 1.0;
        break;
    case NET_BARRIER:
        steps = 2.0 * (dn - 1);
        bus = 0.0;
        break;
    case NET_P2P:
    default:
        steps = 1.0;
        bus = 1.0;
        break;
    }
    double t = (double)m->base_latency_ns + steps * (double)m->step_latency_ns +
               bytes * bus / m->bw_bytes_per_s * 1e9;
    if (!(t < cap))
        return INT64_MAX / 4;
    return (int64_t)llround(t);
}
