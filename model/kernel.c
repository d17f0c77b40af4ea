/* model/kernel.c — helpers every kernel cost model shares (model/kernel.h). */
#include "kernel.h"

#include <math.h>

#include "../sched/program.h"

double model_kernel_waves(double tiles, uint32_t units, uint32_t per_unit)
{
    if (!(tiles > 0))
        return 0;
    if (units == 0)
        return 1;
    double slots = (double)units * (per_unit ? per_unit : 1);
    return ceil(tiles / slots);
}

double model_kernel_peak(const NetHardware *hw, NetPeakDtype dt)
{
    double p = (unsigned)dt < NET_PEAK_COUNT ? hw->peak_flops[dt] : 0;
    return p > 0 ? p : hw->peak_flops[NET_PEAK_BF16];
}

void model_kernel_set_bound(ModelKernelTime *k, double fixed_ns, double compute_ns,
                            double memory_ns)
{
    if (fixed_ns >= compute_ns && fixed_ns >= memory_ns)
        k->bound = SCHED_BOUND_LAUNCH;
    else
        k->bound = compute_ns >= memory_ns ? SCHED_BOUND_COMPUTE : SCHED_BOUND_MEMORY;
}

/* The fixed time: the smallest kernels in AIConfigurator's graph-replayed vLLM 0.24.0 tables on
 * H100 take 2.6 us (bf16 GEMM m = 16, n = 128, k = 32, six layers back to back per replay); an
 * elementwise kernel is no smaller a launch. The plateau: the fitted cuBLAS GEMM's (0.80 of HBM),
 * which streams its weights the way an elementwise kernel streams its rows. Not fitted on
 * elementwise kernels themselves (no public table of them): doc/cost-model.md. */
#define ELEMENTWISE_FIXED_NS 2000.0
#define ELEMENTWISE_MEM_EFF 0.80

ModelKernelTime model_elementwise_time(const NetHardware *hw, double bytes, double flops)
{
    ModelKernelTime k = {.flops = flops > 0 ? flops : 0, .bytes = bytes > 0 ? bytes : 0};
    double bw = hw->hbm_bw_bytes_per_s;
    double mem = bw > 0 ? k.bytes / (bw * ELEMENTWISE_MEM_EFF) * 1e9 : 0;
    k.ns = ELEMENTWISE_FIXED_NS + mem;
    model_kernel_set_bound(&k, ELEMENTWISE_FIXED_NS, 0, mem);
    return k;
}

/* 0.7 of the dense peak: what analytic models use for kernels without a model of their own
 * (shared/reference/hardware.md), ranksim's roofline default before the kernel models. */
#define GENERIC_COMPUTE_EFF 0.7

ModelKernelTime model_generic_time(const NetHardware *hw, double flops, double bytes,
                                   NetPeakDtype dt)
{
    ModelKernelTime k = model_elementwise_time(hw, bytes, flops);
    double peak = model_kernel_peak(hw, dt) * GENERIC_COMPUTE_EFF;
    double comp = peak > 0 ? k.flops / peak * 1e9 : 0;
    double mem = k.ns - ELEMENTWISE_FIXED_NS;
    k.ns = ELEMENTWISE_FIXED_NS + (comp > mem ? comp : mem);
    model_kernel_set_bound(&k, ELEMENTWISE_FIXED_NS, comp, mem);
    return k;
}

/* mHC, fitted on AIConfigurator's vLLM 0.24.0 mhc_module tables (H100 SXM, two sites per row;
 * H200 held out): a fixed 9 us per site for mhc_pre (its 20 Sinkhorn iterations) and 2.75 us
 * for mhc_post, plus 5 bytes per token x stream x hidden value over HBM (the streams read and
 * written in fp32 and bf16). H100: pre median 2.8 %, p90 16 %; post 3.3 %, 35 %. H200: pre
 * 6.0 %, 13 %; post 4.3 %, 31 %. */
#define MHC_PRE_FIXED_NS 9000.0
#define MHC_POST_FIXED_NS 2750.0
#define MHC_BYTES_PER_VALUE 5.0

ModelKernelTime model_mhc_time(const NetHardware *hw, double tokens, uint32_t hc, uint32_t hidden,
                               bool pre)
{
    double fixed = pre ? MHC_PRE_FIXED_NS : MHC_POST_FIXED_NS;
    double values = (tokens > 0 ? tokens : 0) * hc * hidden;
    ModelKernelTime k = {.bytes = values * MHC_BYTES_PER_VALUE,
                         .flops = 2.0 * values * (2.0 + hc)};
    double bw = hw->hbm_bw_bytes_per_s;
    double mem = bw > 0 ? k.bytes / bw * 1e9 : 0;
    k.ns = fixed + mem;
    model_kernel_set_bound(&k, fixed, 0, mem);
    return k;
}
