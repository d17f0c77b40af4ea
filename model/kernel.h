/* model/kernel.h — what the per-kernel cost models return, and what they share.
 *
 * A kernel model predicts the time of one kernel family as vLLM calls it on a device
 * (model/kernel-gemm.h, kernel-attn.h, kernel-moe.h, kernel-elementwise.h): its FLOPs and HBM
 * bytes, a fixed time the kernel takes even on an empty problem (which holds inside CUDA graphs
 * too: it is the kernel's own prologue, epilogue and tail, not the host's launch), and the
 * size-dependent efficiencies and tile/wave quantization that make a small problem slower than
 * its roofline. Formulas, parameters and their sources: doc/cost-model.md.
 *
 * Pure functions of (device, shape); no state, no allocation. A device with no peak for the
 * dtype falls back to bf16; a device with no HBM bandwidth or no compute_units drops that term
 * or that quantization (never divides by zero).
 */
#ifndef MODEL_KERNEL_H
#define MODEL_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "../net/hardware.h"

typedef struct {
    double ns;      /* predicted kernel time, fixed time included, > 0 */
    double flops;   /* useful floating-point operations (not the padded tiles') */
    double bytes;   /* HBM traffic */
    uint8_t bound;  /* SchedBound: compute, memory or launch (the fixed time dominates) */
} ModelKernelTime;

/* A bandwidth-bound kernel (norms, activations, residual adds, rotary, quantization): a fixed
 * time plus `bytes` over HBM at a plateau efficiency; `flops` only reported. */
ModelKernelTime model_elementwise_time(const NetHardware *hw, double bytes, double flops);

/* A kernel no family model covers yet: the elementwise fixed time plus the longer of `flops` at
 * 0.7 of `dt`'s peak and `bytes` at the elementwise plateau. */
ModelKernelTime model_generic_time(const NetHardware *hw, double flops, double bytes,
                                   NetPeakDtype dt);

/* DeepSeek-V4's manifold-constrained hyper-connections at one site (vLLM's tilelang mhc_pre
 * with its Sinkhorn iterations, or mhc_post) over `tokens` rows of `hc` residual streams of
 * `hidden` values. */
ModelKernelTime model_mhc_time(const NetHardware *hw, double tokens, uint32_t hc, uint32_t hidden,
                               bool pre);

/* Waves of `tiles` thread blocks over `units` compute units running `per_unit` blocks each at
 * once: ceil(tiles / (units x per_unit)), and 1 when units is 0 (unknown). */
double model_kernel_waves(double tiles, uint32_t units, uint32_t per_unit);

/* The dense peak of `dt` on `hw` in FLOP/s, bf16's when the device has none for `dt`, 0 when
 * it has neither. */
double model_kernel_peak(const NetHardware *hw, NetPeakDtype dt);

/* Sets k->bound from the three terms a model combined: `fixed_ns` (the kernel's own fixed
 * time), `compute_ns`, `memory_ns`. */
void model_kernel_set_bound(ModelKernelTime *k, double fixed_ns, double compute_ns,
                            double memory_ns);

#endif
