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

/* Which kernel a time is for, so a measured table (model/kernel-table.h) can look it up. A
 * model fills it for the one kernel family call it priced; an op summed from several kernels
 * (a gated MLP) or priced by no family model keeps MODEL_KERNEL_NONE, and no table applies. */
typedef enum {
    MODEL_KERNEL_NONE = 0,
    MODEL_KERNEL_GEMM,       /* model_gemm_time */
    MODEL_KERNEL_ATTENTION,  /* hook: model/kernel-attn.h's model fills it */
    MODEL_KERNEL_MOE,        /* model_moe_time, model_moe_local_time */
    MODEL_KERNEL_COLLECTIVE, /* `ranksim cost collective` (the fabric is not looked up yet) */
    MODEL_KERNEL_KIND_COUNT
} ModelKernelKind;

/* The numeric dims of a key, by kind: index into ModelKernelKey.dim. Names as `ranksim cost`
 * takes them (model_kernel_key_dim_name). */
enum { MODEL_KEY_GEMM_M = 0, MODEL_KEY_GEMM_N, MODEL_KEY_GEMM_K, MODEL_KEY_GEMM_DIMS };
enum {
    MODEL_KEY_MOE_TOKENS = 0, /* rows entering the layer; 0 = not known to the model (see below) */
    MODEL_KEY_MOE_HIDDEN,
    MODEL_KEY_MOE_INTER, /* one expert's intermediate size before the TP split */
    MODEL_KEY_MOE_TOPK,  /* 0 = not known: MODEL_KEY_MOE_ROUTES holds tokens x topk */
    MODEL_KEY_MOE_EXPERTS,
    MODEL_KEY_MOE_TP,
    MODEL_KEY_MOE_EP,
    MODEL_KEY_MOE_ROUTES, /* tokens x topk, every routed pair of the layer (all ranks) */
    MODEL_KEY_MOE_DIMS
};
enum {
    MODEL_KEY_ATTN_BATCH = 0,
    MODEL_KEY_ATTN_SEQLEN,   /* new tokens per sequence (decode: 1) */
    MODEL_KEY_ATTN_CONTEXT,  /* prefill: cached prefix per sequence; decode: tokens attended */
    MODEL_KEY_ATTN_HEADS,    /* query heads per rank */
    MODEL_KEY_ATTN_KV_HEADS, /* per rank */
    MODEL_KEY_ATTN_HEAD_DIM,
    MODEL_KEY_ATTN_CAUSAL, /* 0 or 1 */
    MODEL_KEY_ATTN_WINDOW, /* sliding window, 0 = none */
    MODEL_KEY_ATTN_DIMS
};
enum { MODEL_KEY_COLL_RANKS = 0, MODEL_KEY_COLL_BYTES, MODEL_KEY_COLL_NODES, MODEL_KEY_COLL_DIMS };
#define MODEL_KERNEL_KEY_DIMS 8

/* The words of a key, by kind: index into ModelKernelKey.word. */
enum { MODEL_KEY_GEMM_DTYPE = 0 };                    /* model_gemm_dtype_name */
enum { MODEL_KEY_MOE_DTYPE = 0, MODEL_KEY_MOE_DIST }; /* weights; router "balanced" */
enum { MODEL_KEY_ATTN_PHASE = 0, MODEL_KEY_ATTN_DTYPE, MODEL_KEY_ATTN_KV_DTYPE };
enum { MODEL_KEY_COLL_OP = 0, MODEL_KEY_COLL_DTYPE, MODEL_KEY_COLL_IMPL };
#define MODEL_KERNEL_KEY_WORDS 3

typedef struct {
    uint8_t kind; /* ModelKernelKind */
    bool eager;   /* launched outside a CUDA graph (the time then includes the host's dispatch) */
    const char *word[MODEL_KERNEL_KEY_WORDS]; /* static strings, by kind (above); NULL = unset */
    double dim[MODEL_KERNEL_KEY_DIMS];        /* by kind (above); unused ones 0 */
} ModelKernelKey;

typedef struct {
    double ns;          /* predicted kernel time, fixed time included, > 0 */
    double flops;       /* useful floating-point operations (not the padded tiles') */
    double bytes;       /* HBM traffic */
    uint8_t bound;      /* SchedBound: compute, memory or launch (the fixed time dominates) */
    ModelKernelKey key; /* what was priced, for a measured table; kind NONE: nothing to look up */
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
