/* net/hardware.h — a device and its interconnect as data: compute peaks, HBM, and the link
 * tiers of the fabric, plus where each rank sits.
 *
 * Units are in the field names. Bandwidths are decimal (1 GB/s = 1e9 B/s) per direction per
 * device, as datasheets and nccl-tests quote them; HBM capacity is bytes. Presets live as YAML
 * files in net/presets/ (loaded by src/input/hardware.c; this header only holds the values).
 *
 * The device is described as vLLM sees it: the platform it runs on (cuda, rocm, npu, hpu, xpu),
 * its generation (`NetArch`: sm90, gfx942, ascend910b, ...) with the dtypes its matrix units
 * compute natively, and the device memory the software stack reports (torch.cuda.mem_get_info()
 * total, torch_npu's total capacity), which is what gpu_memory_utilization multiplies; the
 * datasheet capacity is kept next to it for information. The tables of architectures are static
 * (net_arch_*), O(1) to query.
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

/* Bit of dtype `d` in NetHardware.native_dtypes. */
#define NET_DTYPE_BIT(d) (1u << (unsigned)(d))
#define NET_DTYPE_ALL ((1u << NET_PEAK_COUNT) - 1u)

/* The software platform vLLM runs the device on (vllm/platforms). */
typedef enum {
    NET_PLATFORM_CUDA = 0, /* NVIDIA, torch.cuda (the default when a file names none) */
    NET_PLATFORM_ROCM,     /* AMD Instinct, torch.cuda on HIP */
    NET_PLATFORM_NPU,      /* Huawei Ascend, torch_npu (vllm-ascend) */
    NET_PLATFORM_HPU,      /* Intel Gaudi, habana_frameworks.torch (vllm-gaudi) */
    NET_PLATFORM_XPU,      /* Intel data-center / Arc GPUs, torch.xpu */
    NET_PLATFORM_COUNT
} NetPlatform;

/* The device generation, as a kernel library selects on it (CUDA compute capability, AMD gfx
 * target, Ascend SoC family, Gaudi generation). Each belongs to one platform and has a native
 * dtype set (net_arch_native_dtypes). */
typedef enum {
    NET_ARCH_UNKNOWN = 0,  /* not given: no arch-specific choice; any platform */
    NET_ARCH_SM80,         /* A100, A800, A30: Ampere */
    NET_ARCH_SM86,         /* A10, A40, RTX 30xx: Ampere */
    NET_ARCH_SM89,         /* L40S, L4, RTX 40xx: Ada (first with FP8) */
    NET_ARCH_SM90,         /* H100, H200, H20, GH200: Hopper */
    NET_ARCH_SM100,        /* B200, GB200: Blackwell (FP4) */
    NET_ARCH_SM103,        /* B300, GB300: Blackwell Ultra */
    NET_ARCH_SM120,        /* RTX PRO 6000, RTX 50xx: Blackwell consumer */
    NET_ARCH_GFX90A,       /* MI210, MI250X: CDNA2 */
    NET_ARCH_GFX942,       /* MI300X, MI325X: CDNA3 (FP8, FNUZ encoding) */
    NET_ARCH_GFX950,       /* MI350X, MI355X: CDNA4 (OCP FP8, MXFP4) */
    NET_ARCH_ASCEND910B,   /* Atlas A2, 910B1..B4 */
    NET_ARCH_ASCEND910_93, /* Atlas A3 / 910C dies (vllm-ascend's "910_93" SoC family) */
    NET_ARCH_GAUDI2,       /* HL-225 */
    NET_ARCH_GAUDI3,       /* HL-325 / HL-325L */
    NET_ARCH_PVC,          /* Data Center GPU Max 1100/1550: Xe-HPC */
    NET_ARCH_BMG,          /* Arc B-series / Arc Pro B60: Xe2 */
    NET_ARCH_COUNT
} NetArch;

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
    uint32_t devices_per_node;         /* >= 1 */
    double peak_flops[NET_PEAK_COUNT]; /* dense FLOP/s (or OP/s for int8); 0 = none */
    NetPlatform platform;              /* software platform; CUDA when not given */
    NetArch arch;                      /* device generation; UNKNOWN when not given */
    uint32_t native_dtypes;            /* NET_DTYPE_BIT(d) for each dtype the matrix
                                          units compute natively; 0 = not recorded
                                          (hand-built descriptions) */
    uint64_t hbm_bytes;                /* device memory the model budgets with, bytes:
                                          hbm_visible_bytes when known, else
                                          hbm_datasheet_bytes (the loader keeps this) */
    uint64_t hbm_visible_bytes;        /* as the software stack reports it
                                          (torch.cuda.mem_get_info() total, torch_npu
                                          total capacity); 0 = not given */
    uint64_t hbm_datasheet_bytes;      /* as the datasheet states it; 0 = unknown;
                                          for information */
    double hbm_bw_bytes_per_s;         /* decimal B/s */
    uint32_t compute_units;            /* streaming multiprocessors (NVIDIA), compute units
                                          (AMD), AI cores (Ascend): what a kernel's thread
                                          blocks are scheduled on, for wave quantization;
                                          0 = unknown (no quantization) */
    double clock_hz;                   /* boost clock of the matrix units; 0 = unknown; for
                                          information */
    uint64_t l2_bytes;                 /* last-level on-chip cache (L2), bytes; 0 = unknown */
    int64_t launch_latency_ns;         /* fixed cost of one collective call */
    uint32_t n_tiers;                  /* >= 1 */
    NetTier tiers[NET_MAX_TIERS];      /* narrowest first; the last spans the cluster */
} NetHardware;

const char *net_peak_dtype_name(NetPeakDtype d);

/* Names as the hardware files spell them ("cuda", "sm90", "ascend910_93"); "?" out of range.
 * The *_names() lists are NULL-terminated, in enum order, static storage. */
const char *net_platform_name(NetPlatform p);
const char *const *net_platform_names(void);
const char *net_arch_name(NetArch a);
const char *const *net_arch_names(void);

/* The platform arch `a` belongs to; NET_PLATFORM_COUNT for NET_ARCH_UNKNOWN (any platform). */
NetPlatform net_arch_platform(NetArch a);

/* The dtypes arch `a` computes natively in its matrix units (NET_DTYPE_BIT mask): FP8 from sm89
 * and gfx942, FP4 from sm100 and gfx950, no FP8 on Ascend 910B/910C. 0 for NET_ARCH_UNKNOWN. */
uint32_t net_arch_native_dtypes(NetArch a);

/* Checks what a hardware description must satisfy: at least one tier, bandwidths > 0,
 * latencies >= 0, tier spans strictly widening and the last one 0 (cluster), spans that are
 * multiples of each other and of/by devices_per_node, distinct tier names; a platform and arch
 * in range, the arch belonging to the platform; when native_dtypes is recorded, every dtype with
 * a peak in it. On failure returns false and writes a message naming the tier and field into
 * `why` (size `n`). */
bool net_hardware_check(const NetHardware *hw, char *why, unsigned n);

/* Index of the tier named `name`, or -1. */
int net_hardware_tier(const NetHardware *hw, const char *name);

#endif
