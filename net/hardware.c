/* net/hardware.c — checks on a hardware description; see hardware.h. */
#include "hardware.h"

#include <stdio.h>
#include <string.h>

const char *net_peak_dtype_name(NetPeakDtype d)
{
    static const char *const names[NET_PEAK_COUNT] = {"bf16", "fp16", "fp8", "int8", "fp4"};
    return d < NET_PEAK_COUNT ? names[d] : "?";
}

int net_hardware_tier(const NetHardware *hw, const char *name)
{
    for (uint32_t i = 0; i < hw->n_tiers; i++)
        if (strcmp(hw->tiers[i].name, name) == 0)
            return (int)i;
    return -1;
}

bool net_hardware_check(const NetHardware *hw, char *why, unsigned n)
{
    if (hw->devices_per_node < 1) {
        snprintf(why, n, "devices_per_node must be at least 1");
        return false;
    }
    if (hw->n_tiers < 1 || hw->n_tiers > NET_MAX_TIERS) {
        snprintf(why, n, "tiers: between 1 and %d tiers expected, got %u", NET_MAX_TIERS,
                 hw->n_tiers);
        return false;
    }
    if (hw->launch_latency_ns < 0) {
        snprintf(why, n, "launch latency must be >= 0");
        return false;
    }
    for (uint32_t i = 0; i < hw->n_tiers; i++) {
        const NetTier *t = &hw->tiers[i];
        if (!t->name[0]) {
            snprintf(why, n, "tier %u has no name", i);
            return false;
        }
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(hw->tiers[j].name, t->name) == 0) {
                snprintf(why, n, "tier '%s' is named twice", t->name);
                return false;
            }
        if (!(t->bw_bytes_per_s > 0)) {
            snprintf(why, n, "tier '%s': bandwidth must be > 0", t->name);
            return false;
        }
        if (t->latency_ns < 0) {
            snprintf(why, n, "tier '%s': latency must be >= 0", t->name);
            return false;
        }
        if (t->shared_bw_bytes_per_s < 0) {
            snprintf(why, n, "tier '%s': shared bandwidth must be >= 0 (0 = non-blocking)",
                     t->name);
            return false;
        }
        bool last = i + 1 == hw->n_tiers;
        if (last && t->span_devices != 0) {
            snprintf(why, n, "tier '%s': the last tier must span the cluster (span: cluster)",
                     t->name);
            return false;
        }
        if (!last && t->span_devices == 0) {
            snprintf(why, n, "tier '%s': only the last tier may span the cluster", t->name);
            return false;
        }
        if (i > 0 && !last) {
            uint32_t prev = hw->tiers[i - 1].span_devices;
            if (t->span_devices <= prev || t->span_devices % prev != 0) {
                snprintf(why, n,
                         "tier '%s': span %u must be a larger multiple of the previous tier's "
                         "span %u",
                         t->name, t->span_devices, prev);
                return false;
            }
        }
        if (!last) {
            uint32_t s = t->span_devices, d = hw->devices_per_node;
            if (!(s % d == 0 || d % s == 0)) {
                snprintf(why, n,
                         "tier '%s': span %u must divide or be a multiple of devices_per_node %u",
                         t->name, s, d);
                return false;
            }
        }
    }
    return true;
}
