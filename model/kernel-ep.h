/* model/kernel-ep.h — DeepEP's expert-parallel dispatch and combine (the all-to-all kernels
 * vLLM's deepep_low_latency and deepep_high_throughput all2all backends call), within one
 * NVLink domain.
 *
 * The model (doc/cost-model.md, "DeepEP"): a fixed time plus the bytes that leave the rank over
 * the domain's link bandwidth at a fitted efficiency. Low-latency mode sends one copy of a token
 * per chosen expert (topk copies); normal mode one per destination rank (the expected number of
 * distinct ranks among topk random experts: ep x (1 - (1 - 1/ep)^topk)). Dispatch carries fp8
 * (with a 4-byte scale per 128 values) or bf16, combine bf16. Fitted on AIConfigurator's DeepEP
 * tables for 8 x H100 SXM (SGLang 0.5.12 image, the same DeepEP library), H200 held out.
 * APPROXIMATION: one node; across nodes (RDMA) is not modelled yet.
 */
#ifndef MODEL_KERNEL_EP_H
#define MODEL_KERNEL_EP_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"

typedef struct {
    bool combine;      /* false: dispatch */
    bool low_latency;  /* false: normal (high-throughput) mode */
    uint32_t ep;       /* ranks of the expert-parallel group, >= 1 */
    uint64_t tokens;   /* tokens per rank entering dispatch */
    uint32_t hidden;   /* model hidden size */
    uint32_t topk;     /* experts per token */
    bool fp8;          /* dispatch payload fp8 (combine is always bf16) */
} ModelEpShape;

/* `link_bw` is the per-device, per-direction bandwidth of the tier the group spans (B/s). */
ModelKernelTime model_ep_time(const ModelEpShape *s, double link_bw);

#endif
