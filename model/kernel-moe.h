/* model/kernel-moe.h — the time of vLLM's fused MoE on one rank: routing, the grouped gate-up
 * GEMM, the activation, the grouped down GEMM and the weighted sum, as one layer call.
 *
 * The model (doc/cost-model.md, "MoE"): from the routing, the rows each of the rank's experts
 * receives (its load); then a fixed time for the pipeline's kernels, plus for each of the two
 * grouped GEMMs the longer of
 *  - memory: the weights of every local expert at least one row reaches, and the routed
 *    activations, over HBM (Marlin: no faster than its in-register dequantization), and
 *  - compute: each expert's rows padded to the kernel's block of rows, at the family's
 *    efficiency of the dtype's peak;
 *  - and passes over every routed pair of the layer, local or not (vLLM's fused MoE sizes its
 *    intermediate caches [tokens, topk, ...] and runs the activation and the weighted sum over
 *    all of them, an expert map masking the others), or over the tokens (OAI's Triton path).
 * Routing: `balanced` spreads the rows as evenly as the tokens allow (AIConfigurator's
 * balanced logits); `uniform` has every token pick its experts independently, reaching
 * experts x (1 - (1 - topk/experts)^tokens) of them (the lowering's choice); a power law (AIConfigurator's power_law_<alpha>, the expert popularity of
 * its collector) gives the rank that holds the busiest expert, whose load sets the layer's time.
 * Failure modes: none; a zero shape costs the fixed time. Parameters per kernel family, fitted
 * on AIConfigurator's vLLM MoE tables (model/kernel-moe.c says which).
 */
#ifndef MODEL_KERNEL_MOE_H
#define MODEL_KERNEL_MOE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel-gemm.h"
#include "kernel.h"

/* How the router spreads rows over experts. */
typedef enum {
    MODEL_MOE_BALANCED = 0, /* as evenly as the tokens allow */
    MODEL_MOE_POWER_LAW,    /* expert popularity ~ x^-alpha; the busiest rank is timed */
    MODEL_MOE_UNIFORM,      /* each token picks its experts independently and uniformly: as
                               real routers do to a first approximation, fewer experts reached
                               than balanced while tokens x topk is not much above experts */
} ModelMoeDist;

typedef struct {
    ModelMoeDist dist;
    double alpha; /* the power law's exponent (> 1) */
} ModelMoeRouting;

/* The expert kernel vLLM selected; AUTO = what vLLM 0.24 picks for the dtype on Hopper. */
typedef enum {
    MODEL_MOE_KERNEL_AUTO = 0,
    MODEL_MOE_KERNEL_TRITON,       /* fused_moe (bf16, fp8 per-tensor and block) */
    MODEL_MOE_KERNEL_OAI_MXFP4, /* OpenAI triton_kernels matmul_ogs (gpt-oss mxfp4) */
    MODEL_MOE_KERNEL_CUTLASS,      /* CUTLASS / FlashInfer CUTLASS grouped GEMM, autotuned */
    MODEL_MOE_KERNEL_DEEPGEMM,
    MODEL_MOE_KERNEL_MARLIN, /* weight-only 4-bit (int4, mxfp4, nvfp4 below Blackwell) */
} ModelMoeKernel;

typedef struct {
    uint64_t tokens;         /* rows entering the layer on this rank */
    uint32_t hidden;         /* model hidden size */
    uint32_t inter;          /* one expert's intermediate size (before TP) */
    uint32_t topk;           /* experts per token */
    uint32_t experts;        /* routed experts in the model */
    uint32_t tp, ep;         /* the MoE's tensor split of inter, and its expert split; >= 1 */
    ModelGemmDtype dtype;    /* the experts' weight format */
    ModelMoeKernel kernel;   /* AUTO unless the caller knows */
    ModelMoeRouting routing; /* zero: balanced */
} ModelMoeShape;

ModelKernelTime model_moe_time(const NetHardware *hw, const ModelMoeShape *s);

/* The same from what lands on the rank, routing uniform (what the lowering prices real routing
 * with): `pairs` routed (token, expert) rows over `local` experts of `inter_local` intermediate
 * size each, out of `all_pairs` = tokens x topk routed from `tokens` tokens (0: not known, then
 * balanced). */
ModelKernelTime model_moe_local_time(const NetHardware *hw, ModelGemmDtype dtype, double hidden,
                                     double inter_local, double local, double pairs,
                                     double all_pairs, double tokens);

/* "balanced", "power_law_<alpha>" (alpha > 1); false on anything else. */
bool model_moe_routing_parse(const char *word, ModelMoeRouting *out);
/* "auto", "triton", "triton_mxfp4", "cutlass", "flashinfer_cutlass", "deepgemm", "marlin". */
bool model_moe_kernel_parse(const char *word, ModelMoeKernel *out);

#endif
