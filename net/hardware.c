/* net/hardware.c — checks on a hardware description and the static tables of platforms and
 * architectures; see hardware.h. */
#include "hardware.h"

#include <stdio.h>
#include <string.h>

const char *net_peak_dtype_name(NetPeakDtype d)
{
    static const char *const names[NET_PEAK_COUNT] = {"bf16", "fp16", "fp8", "int8", "fp4"};
    return d < NET_PEAK_COUNT ? names[d] : "?";
}

static const char *const platform_names[NET_PLATFORM_COUNT + 1] = {"cuda", "rocm", "npu",
                                                                   "hpu",  "xpu",  NULL};

/* Names in enum order, as hardware files spell them (net_arch_names lists them). */
static const char *const arch_names[NET_ARCH_COUNT + 1] = {
    [NET_ARCH_UNKNOWN] = "unknown",
    [NET_ARCH_SM80] = "sm80",
    [NET_ARCH_SM86] = "sm86",
    [NET_ARCH_SM89] = "sm89",
    [NET_ARCH_SM90] = "sm90",
    [NET_ARCH_SM100] = "sm100",
    [NET_ARCH_SM103] = "sm103",
    [NET_ARCH_SM120] = "sm120",
    [NET_ARCH_GFX90A] = "gfx90a",
    [NET_ARCH_GFX942] = "gfx942",
    [NET_ARCH_GFX950] = "gfx950",
    [NET_ARCH_ASCEND910B] = "ascend910b",
    [NET_ARCH_ASCEND910_93] = "ascend910_93",
    [NET_ARCH_GAUDI2] = "gaudi2",
    [NET_ARCH_GAUDI3] = "gaudi3",
    [NET_ARCH_PVC] = "pvc",
    [NET_ARCH_BMG] = "bmg",
    [NET_ARCH_COUNT] = NULL,
};

#define B(d) NET_DTYPE_BIT(NET_PEAK_##d)
#define BASE (B(BF16) | B(FP16) | B(INT8))
#define WITH_FP8 (BASE | B(FP8))
#define WITH_FP4 (WITH_FP8 | B(FP4))
/* Platform and native dtypes per NetArch. Native sets: NVIDIA's tensor-core dtypes per compute
 * capability (FP8 from 8.9, FP4 from 10.0), AMD's CDNA3/CDNA4 ISA guides (FP8 from gfx942, FP4
 * from gfx950), Huawei's 910B/910C cube unit (BF16, FP16, INT8; no FP8), Intel Gaudi 2/3's MME
 * (BF16, FP16, FP8) and Xe's XMX (BF16, FP16, INT8). */
static const struct {
    NetPlatform platform;
    uint32_t native;
} arch_table[NET_ARCH_COUNT] = {
    [NET_ARCH_UNKNOWN] = {NET_PLATFORM_COUNT, 0},
    [NET_ARCH_SM80] = {NET_PLATFORM_CUDA, BASE},
    [NET_ARCH_SM86] = {NET_PLATFORM_CUDA, BASE},
    [NET_ARCH_SM89] = {NET_PLATFORM_CUDA, WITH_FP8},
    [NET_ARCH_SM90] = {NET_PLATFORM_CUDA, WITH_FP8},
    [NET_ARCH_SM100] = {NET_PLATFORM_CUDA, WITH_FP4},
    [NET_ARCH_SM103] = {NET_PLATFORM_CUDA, WITH_FP4},
    [NET_ARCH_SM120] = {NET_PLATFORM_CUDA, WITH_FP4},
    [NET_ARCH_GFX90A] = {NET_PLATFORM_ROCM, BASE},
    [NET_ARCH_GFX942] = {NET_PLATFORM_ROCM, WITH_FP8},
    [NET_ARCH_GFX950] = {NET_PLATFORM_ROCM, WITH_FP4},
    [NET_ARCH_ASCEND910B] = {NET_PLATFORM_NPU, BASE},
    [NET_ARCH_ASCEND910_93] = {NET_PLATFORM_NPU, BASE},
    [NET_ARCH_GAUDI2] = {NET_PLATFORM_HPU, B(BF16) | B(FP16) | B(FP8)},
    [NET_ARCH_GAUDI3] = {NET_PLATFORM_HPU, B(BF16) | B(FP16) | B(FP8)},
    [NET_ARCH_PVC] = {NET_PLATFORM_XPU, BASE},
    [NET_ARCH_BMG] = {NET_PLATFORM_XPU, BASE},
};
#undef WITH_FP4
#undef WITH_FP8
#undef BASE
#undef B

const char *net_platform_name(NetPlatform p)
{
    return (unsigned)p < NET_PLATFORM_COUNT ? platform_names[p] : "?";
}

const char *const *net_platform_names(void)
{
    return platform_names;
}

const char *net_arch_name(NetArch a)
{
    return (unsigned)a < NET_ARCH_COUNT ? arch_names[a] : "?";
}

const char *const *net_arch_names(void)
{
    return arch_names;
}

NetPlatform net_arch_platform(NetArch a)
{
    return (unsigned)a < NET_ARCH_COUNT ? arch_table[a].platform : NET_PLATFORM_COUNT;
}

uint32_t net_arch_native_dtypes(NetArch a)
{
    return (unsigned)a < NET_ARCH_COUNT ? arch_table[a].native : 0;
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
    if ((unsigned)hw->platform >= NET_PLATFORM_COUNT || (unsigned)hw->arch >= NET_ARCH_COUNT) {
        snprintf(why, n, "platform or arch out of range");
        return false;
    }
    if (hw->arch != NET_ARCH_UNKNOWN && net_arch_platform(hw->arch) != hw->platform) {
        snprintf(why, n, "arch %s is a %s arch, but the platform is %s", net_arch_name(hw->arch),
                 net_platform_name(net_arch_platform(hw->arch)), net_platform_name(hw->platform));
        return false;
    }
    if (hw->native_dtypes & ~NET_DTYPE_ALL) {
        snprintf(why, n, "native_dtypes has bits beyond the %d dtypes", NET_PEAK_COUNT);
        return false;
    }
    for (int d = 0; hw->native_dtypes && d < NET_PEAK_COUNT; d++)
        if (hw->peak_flops[d] > 0 && !(hw->native_dtypes & NET_DTYPE_BIT(d))) {
            snprintf(why, n, "compute_tflops gives %s a peak, but %s is not a native dtype",
                     net_peak_dtype_name((NetPeakDtype)d), net_peak_dtype_name((NetPeakDtype)d));
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
