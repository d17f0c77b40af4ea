/* model/memory-vllm.h — the start-up memory items that change with vLLM's version and kernel
 * backend (issue 25), as model/memory.c consults them: the dummy sampler's bytes per logit and
 * its Triton buffer, torch's cuBLAS workspace, the persistent fused-MoE workspace, the
 * non-torch memory tensor parallelism adds inside the KV budget (NCCL buffers connected by the
 * profile run, FlashInfer's all-reduce fusion workspace, the kernel modules the profile loads),
 * the MXFP4 expert padding of each MoE backend, and Marlin's repacked FP8 scales on GPUs
 * without FP8.
 *
 * Pure functions of their arguments: no state, no failure (an unknown device or backend gets
 * the nearest documented case, said per function). doc/lifecycle.md's behaviour table and
 * doc/memory.md have the formulas with their sources.
 */
#ifndef MODEL_MEMORY_VLLM_H
#define MODEL_MEMORY_VLLM_H

#include <stdbool.h>
#include <stdint.h>

#include "../net/hardware.h"
#include "moe.h"
#include "vllm.h"

/* ---- the profile run's torch peak ---- */

/* Bytes per logit the dummy sampler run holds at its peak (rows = min(max_num_seqs,
 * max_num_batched_tokens), top_k = vocab - 1, top_p = 0.9): 14 with the Triton top-k/top-p
 * kernel (bf16 logits 2 + fp32 logits 4 + probabilities 4 + the exponential draw 4), 38.0
 * (fitted) with the PyTorch sort before it. */
double model_mem_sampler_bytes_per_logit(ModelVllmAbsent absent);
/* The Triton kernel's cached per-program buffer when it runs (rows >= 8): min(next power of 2
 * of min(SMs, rows), SMs) fp32 rows of the vocabulary (topk_topp_triton.py); 80 MiB (PR
 * 33538's description) when compute_units is 0 (unknown). 0 on the PyTorch path. */
uint64_t model_mem_sampler_scratch_bytes(ModelVllmAbsent absent, uint64_t rows, uint64_t vocab,
                                         uint32_t compute_units);

/* torch's cuBLAS (and unified cuBLASLt) workspace, made from the caching allocator by the
 * first GEMM of the profile forward and kept: 32 MiB on sm90/sm100/sm103/sm120, 8,519,680 B on
 * the other CUDA devices (and an unknown arch), 0 off CUDA (not modelled). */
uint64_t model_mem_cublas_workspace_bytes(const NetHardware *hw);

typedef struct {
    uint64_t rows;     /* M: tokens reaching the experts, min(tokens, VLLM_FUSED_MOE_CHUNK_SIZE) */
    uint64_t top_k;
    uint64_t inter;    /* the per-rank intermediate width of one expert (w2's input) */
    uint64_t hidden;   /* K */
    uint64_t local_experts;
    bool mxfp4_oai;    /* gpt-oss MXFP4 through OAI Triton: workspace2 is inside the kernel */
} ModelMoeWsShape;

/* The modular fused-MoE kernel's workspaces (workspace13 + workspace2 + output, bf16) for
 * `backend` (AUTO, TRITON, MARLIN, CUTLASS: TritonExperts' shapes; DEEP_GEMM: the rows padded
 * per local expert to its 128-row block). 0 for the FlashInfer backends, whose workspace
 * memory.c plans from FlashInfer's runner (model_moe_cutlass_workspace). */
uint64_t model_mem_moe_workspace_bytes(ModelMoeBackend backend, const ModelMoeWsShape *s);
/* VLLM_FUSED_MOE_CHUNK_SIZE's default (vllm/envs.py). */
#define MODEL_MEM_FUSED_MOE_CHUNK 16384u

/* ---- non-torch memory inside the budget ---- */

/* NCCL channels of a ring on the device's intra-node fabric (approximation of NCCL's channel
 * search: 32 = MAXCHANNELS on NVLink 4+ / NVSwitch, 24 on A100-class NVLink, 4 on PCIe). */
uint32_t model_mem_nccl_channels(const NetHardware *hw);
/* The ring buffers one rank's communicator connects for the large-message all-reduce with
 * cuMem on: per channel a receive side (LL + LL128 + header) and a send side (Simple +
 * header), each rounded up to the 2 MiB cuMem granularity. */
uint64_t model_mem_nccl_ring_bytes(uint32_t channels);
typedef struct {
    uint32_t tp;
    uint64_t hidden;     /* H of the all-reduced activations */
    uint64_t max_tokens; /* max_num_batched_tokens (0: not bounded) */
} ModelFiArShape;
/* FlashInfer's all-reduce + RMSNorm fusion workspace per rank (0 where vLLM does not enable it:
 * not SM90 / SM100 / SM103, TP 1, or a TP without a size in FI_ALLREDUCE_FUSION_MAX_SIZE_MB):
 * buffer tp x T x H x 2 + flags + Lamport 3 x tp x T x H x 2, T = min(max_size / 2H,
 * max_tokens), each rounded to 2 MiB; with FlashInfer's SymmDeviceMemory (vLLM PR 33985, until
 * FlashInfer PR 2955) each rounded up to the 512 MiB multicast granularity instead. */
uint64_t model_mem_fi_allreduce_workspace_bytes(const NetHardware *hw, const ModelFiArShape *s,
                                                ModelVllmAbsent absent);
/* Non-torch memory the profile run adds on one GPU (kernel modules loaded lazily, cuBLAS
 * workspaces): 0.13 GiB from vLLM 0.11.0 on, + 0.12 GiB from 0.18.0 on (the CUDA-graph memory
 * profiling inside the window), 0 before; both fitted. */
uint64_t model_mem_profile_non_torch_bytes(ModelVllmRelease release);

/* ---- weights by kernel ---- */

typedef enum {
    MODEL_MXFP4_MARLIN = 0, /* sm80 / sm89, or --moe-backend marlin */
    MODEL_MXFP4_TRITON,     /* OAI triton_kernels: SM90 (the default there) */
    MODEL_MXFP4_FLASHINFER, /* SM100 / SM103 with FlashInfer (TRTLLM or the BF16 variant) */
    MODEL_MXFP4_NONE,       /* unknown device: the checkpoint's own shapes */
} ModelMxfp4Backend;

/* vLLM's get_mxfp4_backend for the device and the requested MoE backend. */
ModelMxfp4Backend model_mem_mxfp4_backend(const NetHardware *hw, ModelMoeBackend requested);
const char *model_mem_mxfp4_backend_name(ModelMxfp4Backend b);
/* Mxfp4MoEMethod.create_weights' padding of the per-rank intermediate and the hidden size. */
void model_mem_mxfp4_pad(ModelMxfp4Backend b, uint64_t *inter, uint64_t *hidden);

/* Whether vLLM runs an FP8 checkpoint through Marlin's weight-only FP8 kernels on this device
 * (no FP8 tensor cores: sm80 / sm86), which repack the scales. */
bool model_mem_fp8_via_marlin(const NetHardware *hw);
/* Marlin's FP8 scales for a [n, k] weight: one bf16 scale per output column and per 128-input
 * group (marlin_permute_scales of the block scales expanded along n), or per output column for
 * a per-channel / per-tensor checkpoint. */
uint64_t model_mem_marlin_fp8_scale_bytes(uint64_t n, uint64_t k, bool block);

#endif
