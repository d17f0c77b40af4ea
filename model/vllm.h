/* model/vllm.h — vLLM behaviours that differ between vLLM versions, as the mechanisms that
 * depend on them consult them.
 *
 * Which behaviours a run has comes from the version table (model/presets/vllm-versions.yaml,
 * read by src/input/vllm-version.c): `engine.vllm_version` (a release tag 0.10.0 ... or `main`:
 * every PR the table dates after the tag is absent) and `engine.vllm_without: [PR, ...]` — vLLM
 * as it was before those PRs, i.e. without the behaviours they introduced. doc/lifecycle.md has the table and each
 * mechanism's formula.
 */
#ifndef MODEL_VLLM_H
#define MODEL_VLLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    /* FlashInfer's sparse-MLA workspace sized for DCP and allocated at start-up:
     * 394 MiB + 8 B x (heads per rank x DCP) x max_num_batched_tokens x 256 + 1 MiB (vLLM PR
     * #50791, landed through #55879). Without it the trtllm-gen launcher carves the
     * softmax-stats slab out of the fixed 394 MiB buffer at run time, and a step whose slab
     * does not fit kills every DCP worker (vLLM issue #50781). */
    MODEL_VLLM_SPARSE_MLA_DCP_WORKSPACE = 0,
    /* mask_dcp_empty_shards_ returns early on a DCP rank with no local sequence (PR #55879).
     * Without it the function indexes an empty tensor there and the rank crashes. */
    MODEL_VLLM_DCP_EMPTY_SHARD_MASK,
    /* FLASHINFER_MLA_SPARSE refused under PCP and DCP together (supports_combination, PR
     * #55879): it does not gather the DCP KV shards, so the ranks' LSE all-gathers disagree
     * (seed 004's hang). AUTO falls back to FLASHMLA_SPARSE either way. */
    MODEL_VLLM_SPARSE_MLA_BACKEND_CHECK,
    /* CudaCommunicator.all_gather runs on PyNccl on CUDA (PR #40996): out of the Flight
     * Recorder and PyTorch's watchdog. Before it, dist.all_gather_into_tensor on the process
     * group (FR: nccl:_all_gather_base; a watchdog line on timeout). */
    MODEL_VLLM_ALL_GATHER_ON_PYNCCL,
    /* On ROCm all_gather stays on the base class (PR #48446), watched again. */
    MODEL_VLLM_ROCM_ALL_GATHER_ON_PROCESS_GROUP,
    /* The indexer's Triton warm-up covers the normalized PCP+DCP key (DCP_RANK=0,
     * DCP_WORLD=1) and the four pointer alignments (PR #55879). Without it a rank whose
     * runtime key was never warmed JIT-compiles on its first real batch. */
    MODEL_VLLM_INDEXER_WARMUP_KEYS,
    /* The DCP rank tensor is made once in the metadata builder (PR #55879). Without it
     * get_dcp_local_seq_lens builds torch.tensor(dcp_rank, device=...) per batch. */
    MODEL_VLLM_DCP_RANK_TENSOR,
    /* A DP rank whose batch cannot be drafted (its longest sequence + num_speculative_tokens
     * exceeds max_model_len: input_fits_in_drafter false) runs the drafter's dummy run (PR
     * #40589). Without it that rank skips the drafter, and with DP + EP the other ranks wait
     * in the drafter's EP collectives (vLLM issue #44185's class of hang). */
    MODEL_VLLM_DRAFTER_DUMMY_WHEN_SKIPPED,
    /* FlashInfer's CUTLASS MoE autotuning runs to the scheduler's token limit,
     * fi_moe_largest_bucket = max(max_num_batched_tokens x DP, 8192) (PR #52989), not to
     * FlashInfer's default 8192: the profile workspace it keeps grows with it. */
    MODEL_VLLM_MOE_TUNE_TO_SCHEDULER_LIMIT,
    /* The worker takes its first memory snapshot after init_worker_distributed_environment (PR
     * #25359): the NCCL communicators made there (PyNccl's init and warm-up all-reduce, which
     * connects their rings) lie outside the KV budget, on top of total x utilization like the
     * CUDA context. Before it the snapshot came first and they were part of the non-torch
     * increase, inside non-KV. CUDA only: vLLM-Ascend's worker is its own. */
    MODEL_VLLM_NCCL_BEFORE_MEMORY_SNAPSHOT,
    /* memory_profiling's non-KV is the device's free-memory drop from that snapshot to after
     * the profile plus the torch peak above what the profile leaves allocated (total_consumed +
     * transient_peak_headroom; in main by 2026-09-08, PR #55828's description). Before it,
     * non-KV was the weights as measured by load_model's profiler + the profile's torch peak
     * increase + the non-torch increase: torch memory made in load_model after the weights'
     * measurement (the V2 sampler's penalty state) was counted nowhere. */
    MODEL_VLLM_MEMORY_PROFILING_TOTAL_CONSUMED,
    /* The DSA models (DeepseekV32ForCausalLM, DeepseekV4ForCausalLM, GlmMoeDsaForCausalLM) run
     * on the V2 model runner by default, with breakable CUDA graphs and no torch.compile (PR
     * #52861). On ROCm DeepSeek-V3.2 / V4 were excluded from the start. */
    MODEL_VLLM_DSA_MODELS_ON_V2_RUNNER,
    /* ...and GLM-5.x too on ROCm (PR #53155: "Keep GLM-5.2 on MRV1"). */
    MODEL_VLLM_ROCM_GLM_DSA_ON_V1_RUNNER,
    /* Async scheduling is on by default (PR 27614, the last of vLLM's async scheduling plan,
     * issue 27679): the scheduler prepares step n + 1 while step n runs on the GPU. Before it,
     * off unless --async-scheduling was given. */
    MODEL_VLLM_ASYNC_SCHEDULING_DEFAULT,
    /* NCCL's own default applies (PR 24141 removed vLLM's NCCL_CUMEM_ENABLE=0): cuMem on, so
     * NCCL connects an algorithm's buffers on the first collective that uses it
     * (NCCL_RUNTIME_CONNECT, src/enqueue.cc). The profile run's first large all-reduce connects
     * the ring buffers after vLLM's snapshot: inside the KV budget (model/memory-vllm.c). */
    MODEL_VLLM_NCCL_CUMEM_LAZY_CONNECT,
    /* The modular fused-MoE kernels take their workspaces from the WorkspaceManager (PR 27532):
     * kept allocated after the profile forward, so they add to the dummy sampler's peak. */
    MODEL_VLLM_MOE_WORKSPACE_PERSISTENT,
    /* The dummy sampler's top-k/top-p runs the Triton pivot kernel in place (PR 33538) instead
     * of a PyTorch sort (~37 B per logit at the peak instead of ~14). */
    MODEL_VLLM_TRITON_TOPK_TOPP_SAMPLER,
    /* The FlashInfer all-reduce + RMSNorm fusion is on by default at -O2 (PR 34299) on CUDA
     * SM90 / SM100 with TP > 1: its IPC workspace is made during the profile run. */
    MODEL_VLLM_FI_ALLREDUCE_FUSION_DEFAULT,
    /* VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1 (v0.21.0): the CUDA-graph estimate
     * is subtracted from the KV budget (engine.cudagraph_memory_profiling's default). */
    MODEL_VLLM_CUDAGRAPH_PROFILING_DEFAULT,
    /* vLLM's AR + RMSNorm fusion creates its workspace through FlashInfer's unified all-reduce
     * API (PR 33985), whose trtllm backend allocates each of its three buffers as a
     * SymmDeviceMemory: rounded up to the multicast granularity (512 MiB on Hopper and
     * Blackwell), 1.5 GiB a rank whatever the model. Before it, cudaMalloc'd IPC buffers of the
     * workspace's own size (model/memory-vllm.c). */
    MODEL_VLLM_FI_ALLREDUCE_SYMM_DEVICE_MEMORY,
    /* FlashInfer allocates the all-reduce workspace from torch's symmetric memory (FlashInfer
     * PR 2955), at its own size again; the vLLM release that ships it is inferred. */
    MODEL_VLLM_FI_ALLREDUCE_TORCH_SYMM_MEMORY,
    /* gpu_memory_utilization defaults to 0.92 (vllm/config/cache.py); 0.9 before it (the
     * v0.10.2 and v0.11.1 docs of CacheConfig). The release is inferred: no PR found. */
    MODEL_VLLM_GPU_MEMORY_UTILIZATION_092_DEFAULT,
    MODEL_VLLM_BEHAVIOUR_COUNT
} ModelVllmBehaviour;

/* The behaviour's id in the version table ("sparse_mla_dcp_workspace"). */
const char *model_vllm_behaviour_name(ModelVllmBehaviour b);
/* Parses an id; false for an id ranksim does not model (yet). */
bool model_vllm_behaviour_parse(const char *s, ModelVllmBehaviour *out);

/* A bit set of behaviours that are absent (vLLM before the PR): 0 = vLLM main. */
typedef uint32_t ModelVllmAbsent;
static inline bool model_vllm_has(ModelVllmAbsent absent, ModelVllmBehaviour b)
{
    return !(absent & (1u << b));
}

/* A vLLM release as one comparable number: 0.19.1 = 0x00130100, 0.10.1.1 = 0x000a0101;
 * 0 = main (newer than every release). */
typedef uint32_t ModelVllmRelease;
#define MODEL_VLLM_RELEASE(maj, min, patch, sub)                                                  \
    ((ModelVllmRelease)(((maj) << 24) | ((min) << 16) | ((patch) << 8) | (sub)))
/* Parses "0.19.0", "v0.10.1.1", "0.19" (= 0.19.0); false for anything else (and for "main"). */
bool model_vllm_release_parse(const char *s, ModelVllmRelease *out);
/* "0.19.0" / "0.10.1.1" / "main" into buf (>= 24 bytes); returns buf. */
char *model_vllm_release_format(ModelVllmRelease r, char *buf, size_t n);
/* Whether the run's vLLM is `r` or newer (main is newer than every release). */
static inline bool model_vllm_at_least(ModelVllmRelease run, ModelVllmRelease r)
{
    return run == 0 || run >= r;
}

#endif
