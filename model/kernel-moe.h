/* model/kernel-moe.h — the time of vLLM's fused MoE on one rank: routing, the grouped gate-up
 * GEMM, the activation, the grouped down GEMM and the weighted sum, as one layer call.
 *
 * The model (doc/cost-model.md, "MoE"): a fixed time for the pipeline's kernels, plus for each
 * of the two grouped GEMMs the longer of
 *  - memory: the weights of every local expert at least one token reaches, and the routed
 *    activations, over HBM, and
 *  - compute: the routed rows, each expert's rows padded to the kernel's block of rows,
 *    at the family's efficiency of the dtype's peak.
 *  - and passes over every routed pair of the layer, local or not (vLLM's fused MoE sizes its
 *    intermediate caches [tokens, topk, ...] and runs the activation and the weighted sum over
 *    all of them, an expert map masking the others): with expert parallelism they dominate.
 * Routing is as even as the tokens allow (every expert gets its share; with fewer routed
 * pairs than experts, that many experts get one each) — the `balanced` case of the measured
 * tables. Skewed routing (a power law) is not modelled yet: doc/cost-model.md.
 * Parameters per backend family, fitted on AIConfigurator's vLLM 0.24.0 MoE tables (H100 SXM,
 * H200 held out).
 */
#ifndef MODEL_KERNEL_MOE_H
#define MODEL_KERNEL_MOE_H

#include <stdint.h>

#include "kernel-gemm.h"
#include "kernel.h"

typedef struct {
    uint64_t tokens;      /* rows entering the layer on this rank */
    uint32_t hidden;      /* model hidden size */
    uint32_t inter;       /* one expert's intermediate size (before TP) */
    uint32_t topk;        /* experts per token */
    uint32_t experts;     /* routed experts in the model */
    uint32_t tp, ep;      /* the MoE's tensor split of inter, and its expert split; >= 1 */
    ModelGemmDtype dtype; /* the experts' weight format */
} ModelMoeShape;

ModelKernelTime model_moe_time(const NetHardware *hw, const ModelMoeShape *s);

/* The same from what lands on the rank: `pairs` routed (token, expert) rows over `local`
 * experts of `inter_local` intermediate size each, out of `all_pairs` = tokens x topk. */
ModelKernelTime model_moe_local_time(const NetHardware *hw, ModelGemmDtype dtype, double hidden,
                                     double inter_local, double local, double pairs,
                                     double all_pairs);

#endif
