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
