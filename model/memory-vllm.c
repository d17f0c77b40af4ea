/* model/memory-vllm.c — start-up memory items by vLLM version and kernel backend; see
 * memory-vllm.h for the contract and doc/lifecycle.md for the behaviour table. */
#include "memory-vllm.h"

#define MIB (1024ull * 1024ull)

/* ---- the dummy sampler ---- */

/* Triton top-k/top-p (PR 33538, in place on the fp32 logits): what stays allocated at the peak
 * of Sampler.forward is the bf16 logits compute_logits returned (2 B), their fp32 copy (4 B),
 * the probabilities (4 B) and random_sample's exponential draw q (4 B): 14 B per logit
 * (vllm/v1/sample/sampler.py, ops/topk_topp_sampler.py; research notes issue25 section 2b).
 * What the profile run holds besides the logits (its hidden states) is model/memory.c's. */
#define SAMPLER_TRITON_BYTES 14.0
/* PyTorch sort path (before PR 33538): logits.sort() values and int64 indices, the masks, the
 * softmax of the sorted logits, the scatter back and the radix sort's scratch on top of the
 * bf16 and fp32 logits. Fitted (least squares of the torch peak) on the fit half of
 * tests/data/memory/startup.tsv (vLLM 0.11.0 on H100, 1,024 rows: Llama-3.1-8B 4.76 GiB,
 * Qwen3-0.6B 5.56, gpt-oss-20b 7.38, Llama-3.3-70B FP8 TP2 4.84 of torch peak) with what the
 * profile run holds besides the sampler counted apart (its hidden states, model/memory.c, and
 * torch's cuBLAS workspace, below): 38.0 B per logit, the four rows implying 38.02-38.04 (38.7
 * before those were counted, the rows then implying 38.4-39.6). PR 32558 measured 37 B for the
 * top-k sort alone (1.25 GB for 256 x 131,072). */
#define SAMPLER_SORT_BYTES 38.0
/* The Triton kernel's per-program buffer: apply_top_k_top_p_triton launches min(SMs, rows)
 * programs and caches one fp32 row of the vocabulary per program, a buffer of
 * min(next_power_of_2(programs), SMs) rows (vllm/v1/sample/ops/topk_topp_triton.py,
 * _TRITON_BUFFER_CACHE; PR 33538); the kernel runs for batches of 8 rows or more
 * (apply_top_k_top_p). With the SM count unknown, PR 33538's description: "around ~80 MiB of
 * extra VRAM". */
#define SAMPLER_TRITON_SCRATCH_UNKNOWN (80ull * MIB)
#define SAMPLER_TRITON_MIN_ROWS 8u

double model_mem_sampler_bytes_per_logit(ModelVllmAbsent absent)
{
    return model_vllm_has(absent, MODEL_VLLM_TRITON_TOPK_TOPP_SAMPLER) ? SAMPLER_TRITON_BYTES
                                                                         : SAMPLER_SORT_BYTES;
}

static uint64_t next_pow2(uint64_t x)
{
    uint64_t p = 1;
    while (p < x)
        p <<= 1;
    return p;
}

uint64_t model_mem_sampler_scratch_bytes(ModelVllmAbsent absent, uint64_t rows, uint64_t vocab,
                                         uint32_t compute_units)
{
    if (!model_vllm_has(absent, MODEL_VLLM_TRITON_TOPK_TOPP_SAMPLER) ||
        rows < SAMPLER_TRITON_MIN_ROWS)
        return 0;
    if (compute_units == 0)
        return SAMPLER_TRITON_SCRATCH_UNKNOWN;
    uint64_t programs = rows < compute_units ? rows : compute_units;
    uint64_t buf_rows = next_pow2(programs);
    if (buf_rows > compute_units)
        buf_rows = compute_units;
    return buf_rows * vocab * 4;
}

/* ---- torch's cuBLAS workspace ---- */

/* PyTorch gives each (device, stream) one cuBLAS workspace from its caching allocator on the
 * first GEMM there, and shares it with cuBLASLt (TORCH_CUBLASLT_UNIFIED_WORKSPACE, on by
 * default): CUBLAS_WORKSPACE_CONFIG's default ":4096:8", 32 MiB, on compute capability 9.x,
 * 10.x and 12.x, ":4096:2:16:8" (8,519,680 B) on the others (aten/src/ATen/cuda/
 * CublasHandlePool.cpp, parseChosenWorkspaceSize / getCUDABlasLtWorkspace). Approximated: torch
 * releases before Blackwell's entry give sm100/sm120 the smaller default; ROCm (hipBLAS 32 or
 * 128 MiB, hipBLASLt 76 MiB apart) and the other platforms are not modelled (0). */
#define CUBLAS_WORKSPACE_HOPPER (4096ull * 1024 * 8)
#define CUBLAS_WORKSPACE_DEFAULT (4096ull * 1024 * 2 + 16ull * 1024 * 8)

uint64_t model_mem_cublas_workspace_bytes(const NetHardware *hw)
{
    if (!hw || hw->platform != NET_PLATFORM_CUDA)
        return 0;
    switch (hw->arch) {
    case NET_ARCH_SM90:
    case NET_ARCH_SM100:
    case NET_ARCH_SM103:
    case NET_ARCH_SM120:
        return CUBLAS_WORKSPACE_HOPPER;
    default:
        return CUBLAS_WORKSPACE_DEFAULT;
    }
}

/* ---- the fused-MoE workspace ---- */

/* DeepGEMM's grouped GEMM aligns each expert's rows to its M block (deep_gemm
 * get_m_alignment_for_contiguous_layout, 128): M_sum = M x top-k + E_local x (128 - 1),
 * rounded up (vllm/model_executor/layers/fused_moe/deep_gemm_moe.py workspace_shapes). */
#define DEEP_GEMM_M_BLOCK 128u

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

uint64_t model_mem_moe_workspace_bytes(ModelMoeBackend backend, const ModelMoeWsShape *s)
{
    /* TritonExperts.workspace_shapes (fused_moe.py): workspace13 (M, top-k, max(N / 2, K)),
     * workspace2 (M, top-k, max(N, K)), output (M, K), N = 2 x I the w13 output; MarlinExperts
     * and CutlassExpertsFp8 take the same three (one row per token-expert pair). OAI Triton
     * (gpt-oss MXFP4): workspace2 (0, 0), "allocated inside the kernel". Activation dtype bf16. */
    uint64_t pairs = s->rows * s->top_k;
    switch (backend) {
    case MODEL_MOE_FLASHINFER_TRTLLM:
    case MODEL_MOE_FLASHINFER_CUTLASS:
    case MODEL_MOE_FLASHINFER_CUTEDSL:
        return 0;
    case MODEL_MOE_DEEP_GEMM:
    case MODEL_MOE_DEEP_GEMM_MEGA_MOE: {
        uint64_t m = pairs + s->local_experts * (DEEP_GEMM_M_BLOCK - 1);
        pairs = (m + DEEP_GEMM_M_BLOCK - 1) / DEEP_GEMM_M_BLOCK * DEEP_GEMM_M_BLOCK;
        break;
    }
    default:
        break;
    }
    uint64_t ws13 = pairs * max_u64(s->inter, s->hidden);
    uint64_t ws2 = s->mxfp4_oai ? 0 : pairs * max_u64(2 * s->inter, s->hidden);
    uint64_t out = s->rows * s->hidden;
    return 2 * (ws13 + ws2 + out);
}

/* ---- NCCL and FlashInfer ---- */

/* NCCL defaults (src/init.cc): LL = NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x
 * NCCL_STEPS 8 x 16 B; LL128 = 120 x 640 x 8 x 8 B; Simple = NCCL_BUFFSIZE 4 MiB. The receiver
 * holds LL and LL128; with P2P read (NVLink) the Simple buffer sits with the sender
 * (src/transport/p2p.cc). Each side also holds its ncclSendMem / ncclRecvMem header (4 KiB
 * here, rounded). With cuMem every allocation is a multiple of the 2 MiB granularity. */
#define NCCL_LL_BYTES (8ull * 512ull * 8ull * 16ull)
#define NCCL_LL128_BYTES (120ull * 640ull * 8ull * 8ull)
#define NCCL_SIMPLE_BYTES (4ull * MIB)
#define NCCL_HEADER_BYTES (4096ull)
#define CUMEM_GRANULARITY (2ull * MIB)

static uint64_t cumem_round(uint64_t x)
{
    return (x + CUMEM_GRANULARITY - 1) / CUMEM_GRANULARITY * CUMEM_GRANULARITY;
}

uint32_t model_mem_nccl_channels(const NetHardware *hw)
{
    /* NCCL's ring search gives 2 channels per NVLink on NVSwitch systems up to MAXCHANNELS 32
     * (H100 / H200 / B200 HGX: 32), A100 HGX 24, PCIe a few. Approximated from the intra-node
     * tier's bandwidth per direction (net/hardware presets): >= 400 GB/s NVLink 4+, >= 200
     * GB/s A100 NVLink 3, else PCIe. The 32 reproduces the 0.40-0.42 GiB vLLM 0.11.0 adds at
     * TP2 on H100 (tests/data/memory/startup.csv, rows L33/L35). */
    if (!hw || hw->n_tiers == 0)
        return 32;
    double bw = hw->tiers[0].bw_bytes_per_s;
    return bw >= 400e9 ? 32 : bw >= 200e9 ? 24 : 4;
}

uint64_t model_mem_nccl_ring_bytes(uint32_t channels)
{
    uint64_t recv = cumem_round(NCCL_LL_BYTES + NCCL_LL128_BYTES + NCCL_HEADER_BYTES);
    uint64_t send = cumem_round(NCCL_SIMPLE_BYTES + NCCL_HEADER_BYTES);
    return (uint64_t)channels * (recv + send);
}

/* FI_ALLREDUCE_FUSION_MAX_SIZE_MB (vllm/config/compilation.py, stored version): SM90 {2: 64,
 * 4: 2, 8: 0.5} MB, SM100 {2: 64, 4: 32, 8: 1}, SM103 {2: 64, 4: 64, 8: 2}. */
static double fi_max_size_mb(const NetHardware *hw, uint32_t tp)
{
    if (hw->arch == NET_ARCH_SM90)
        return tp == 2 ? 64 : tp == 4 ? 2 : tp == 8 ? 0.5 : 0;
    if (hw->arch == NET_ARCH_SM100)
        return tp == 2 ? 64 : tp == 4 ? 32 : tp == 8 ? 1 : 0;
    if (hw->arch == NET_ARCH_SM103)
        return tp == 2 ? 64 : tp == 4 ? 64 : tp == 8 ? 2 : 0;
    return 0;
}

/* FlashInfer trtllm_create_ipc_workspace_for_all_reduce_fusion (flashinfer/comm/trtllm_ar.py):
 * three buffers, each tp x T x H x 2 B (buffer), tp x 256 x 4 B (barrier flags) and 3 x tp x T
 * x H x 2 B (the Lamport triple buffer), T = the fusion pass's max_token_num. Before vLLM PR
 * 33985 they are cudaMalloc'd IPC buffers rounded up to 2 MiB (create_shared_buffer); with
 * FlashInfer PR 2955 torch symmetric memory, rounded to the 2 MiB allocation granularity too.
 * In between (the unified API, PR 33985) each is a SymmDeviceMemory (flashinfer/comm/mnnvl.py
 * _get_allocation_prop): the size plus a signal pad, rounded up to the allocation granularity
 * and then to the multicast granularity (CU_MULTICAST_GRANULARITY_RECOMMENDED) even with
 * multicast off. That granularity is 512 MiB on the NVSwitch systems measured: the ranks'
 * buffers lie 0x20000000 apart in sglang PR 18341's log of the same API, and vLLM 0.19's TP2 /
 * TP4 non-torch increase is 2.06-2.21 GiB whatever the hidden size (Kimi-VL-A3B's 258 MiB
 * workspace and Llama-3.1-8B's 514 MiB alike; tests/data/memory/startup.tsv V02-V19). */
#define FI_BARRIER_FLAGS_BYTES(tp) ((uint64_t)(tp) * 256u * 4u)
#define FI_ALLOC_GRANULARITY (2ull * MIB)
#define FI_MULTICAST_GRANULARITY (512ull * MIB)

uint64_t model_mem_fi_allreduce_workspace_bytes(const NetHardware *hw, const ModelFiArShape *s,
                                                ModelVllmAbsent absent)
{
    if (!hw || hw->platform != NET_PLATFORM_CUDA || !s || !s->hidden)
        return 0;
    double mb = fi_max_size_mb(hw, s->tp);
    if (mb <= 0)
        return 0;
    /* allreduce_rms_fusion.py: max_token_num = min(max_size / (H x 2), max_num_batched_tokens) */
    uint64_t t = (uint64_t)(mb * (double)MIB) / (s->hidden * 2);
    if (s->max_tokens && s->max_tokens < t)
        t = s->max_tokens;
    uint64_t payload = (uint64_t)s->tp * t * s->hidden * 2;
    uint64_t part[3] = {payload, FI_BARRIER_FLAGS_BYTES(s->tp), 3 * payload};
    bool symm_dev = model_vllm_has(absent, MODEL_VLLM_FI_ALLREDUCE_SYMM_DEVICE_MEMORY) &&
                    !model_vllm_has(absent, MODEL_VLLM_FI_ALLREDUCE_TORCH_SYMM_MEMORY);
    uint64_t total = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t b = cumem_round(part[i]);
        if (symm_dev)
            b = (b + FI_MULTICAST_GRANULARITY - 1) / FI_MULTICAST_GRANULARITY *
                FI_MULTICAST_GRANULARITY;
        total += b;
    }
    return total;
}

/* Fitted on the TP1 rows of the fit half (vLLM 0.11.0 on H100: non-torch forward increase 0.13
 * GiB for Llama-3.1-8B, Qwen3-0.6B, gpt-oss-20b alike): not derived from a mechanism (likely
 * the kernel modules CUDA's lazy loading maps during the first forward, and cuBLAS's
 * workspaces). vLLM 0.10 logs show 0.03-0.06 GiB (doc/validation.md, L01-L06). */
#define PROFILE_NON_TORCH_BYTES ((uint64_t)(0.13 * 1024.0 * MIB))
/* From vLLM 0.18.0 the worker runs profile_cudagraph_memory (captures at every size, then
 * "Cleaned up profiling KV cache and CUDA graphs") inside its memory_profiling window whether
 * or not the estimate is subtracted (v0.19.0 logs: "Profiling CUDA graph memory" before "Memory
 * profiling takes"); the non-torch increase of one GPU grows by 0.12 GiB with it (Qwen3-14B:
 * 0.13 at 0.15-0.17, 0.25 at 0.18, tests/data/memory/startup.tsv Q15-Q18). What stays
 * allocated is not identified: fitted on V01, V11 and V12 (0.25, 0.25, 0.27 GiB at TP1). */
#define CUDAGRAPH_PROFILE_NON_TORCH_BYTES ((uint64_t)(0.12 * 1024.0 * MIB))

uint64_t model_mem_profile_non_torch_bytes(ModelVllmRelease release)
{
    uint64_t b = 0;
    if (model_vllm_at_least(release, MODEL_VLLM_RELEASE(0, 11, 0, 0)))
        b += PROFILE_NON_TORCH_BYTES;
    if (model_vllm_at_least(release, MODEL_VLLM_RELEASE(0, 18, 0, 0)))
        b += CUDAGRAPH_PROFILE_NON_TORCH_BYTES;
    return b;
}

/* ---- MXFP4 ---- */

ModelMxfp4Backend model_mem_mxfp4_backend(const NetHardware *hw, ModelMoeBackend requested)
{
    /* vllm/model_executor/layers/quantization/mxfp4.py get_mxfp4_backend: Marlin when asked
     * or on devices below SM90 (triton_kernels needs (9, 0) <= cc < (11, 0)); FlashInfer on
     * SM100 / SM103; OAI Triton on SM90. */
    if (requested == MODEL_MOE_MARLIN)
        return MODEL_MXFP4_MARLIN;
    if (!hw || hw->arch == NET_ARCH_UNKNOWN)
        return MODEL_MXFP4_NONE;
    switch (hw->arch) {
    case NET_ARCH_SM90:
        return requested == MODEL_MOE_FLASHINFER_CUTLASS || requested == MODEL_MOE_FLASHINFER_TRTLLM
                   ? MODEL_MXFP4_FLASHINFER
                   : MODEL_MXFP4_TRITON;
    case NET_ARCH_SM100:
    case NET_ARCH_SM103:
        return requested == MODEL_MOE_TRITON ? MODEL_MXFP4_TRITON : MODEL_MXFP4_FLASHINFER;
    default:
        return MODEL_MXFP4_MARLIN;
    }
}

const char *model_mem_mxfp4_backend_name(ModelMxfp4Backend b)
{
    static const char *const names[] = {"marlin", "triton", "flashinfer", "none"};
    return (unsigned)b < 4 ? names[b] : "?";
}

static uint64_t round_to(uint64_t x, uint64_t m)
{
    return (x + m - 1) / m * m;
}

void model_mem_mxfp4_pad(ModelMxfp4Backend b, uint64_t *inter, uint64_t *hidden)
{
    switch (b) {
    case MODEL_MXFP4_MARLIN: /* round_up(I, 128), round_up(H, 256) */
        *inter = round_to(*inter, 128);
        *hidden = round_to(*hidden, 256);
        break;
    case MODEL_MXFP4_FLASHINFER: /* SM100 TRTLLM / BF16: 256 and 256 */
        *inter = round_to(*inter, 256);
        *hidden = round_to(*hidden, 256);
        break;
    case MODEL_MXFP4_TRITON:
        /* create_weights: round_up(I, 64), H unpadded; then _swizzle_mxfp4 re-lays the weights
         * out for Hopper's value and scale layouts. ASSUMPTION (inferred, not read): the
         * swizzled tensors take H padded to 256 — it gives gpt-oss-120b 64.55 GiB against
         * vLLM 0.11.0's 64.38 and gpt-oss-20b 13.48 against 13.47 (startup.csv). */
        *inter = round_to(*inter, 64);
        *hidden = round_to(*hidden, 256);
        break;
    case MODEL_MXFP4_NONE:
        break;
    }
}

/* ---- Marlin FP8 ---- */

bool model_mem_fp8_via_marlin(const NetHardware *hw)
{
    /* vLLM's Fp8LinearMethod / Fp8MoEMethod use Marlin's weight-only FP8 where the device lacks
     * FP8 (cutlass_fp8_supported false below sm89): A100 / A10 class. */
    return hw && hw->platform == NET_PLATFORM_CUDA &&
           (hw->arch == NET_ARCH_SM80 || hw->arch == NET_ARCH_SM86);
}

uint64_t model_mem_marlin_fp8_scale_bytes(uint64_t n, uint64_t k, bool block)
{
    /* prepare_fp8_layer_for_marlin (marlin_utils_fp8.py): block scales are expanded along the
     * output dimension to one per column and per 128-row group of the input and permuted to
     * Marlin's layout, in the activation dtype (bf16); per-channel scales become [1, n]. The
     * checkpoint's scales are replaced. */
    return block ? (k + 127) / 128 * n * 2 : n * 2;
}
