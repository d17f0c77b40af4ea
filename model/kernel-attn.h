/* model/kernel-attn.h — the attention kernel cost model: one call over a batch as a varlen
 * attention kernel sees it.
 *
 * vLLM runs one attention kernel per layer over the whole batch (a varlen call): every sequence
 * brings its new query rows (q_len) and the keys it attends (kv_len = cached context + q_len
 * for a prefill or a chunk of one, the context for a decode). The model follows the kernel's
 * structure (FlashAttention-3 on Hopper is the fitted one): query tiles of packed GQA rows
 * spread over the SMs by a persistent scheduler, each tile's time = a fixed tile overhead plus
 * its causal K/V blocks at a head_dim-dependent MMA rate (the softmax costs the same as
 * `softmax_dims` extra dimensions); decode-sized batches run the one-warpgroup kernel with
 * split-KV (FlashDecoding) bounded by HBM bandwidth and a per-block bandwidth cap; plus the
 * KV-cache write kernel vLLM runs before it and a fixed time that holds inside CUDA graphs.
 * Formulas, parameters and their sources: doc/cost-model.md.
 *
 * Pure functions of (device, shape); no state, no allocation; O(query tiles) per sequence.
 * Absurd inputs (no sequence, no heads, zero lengths) give the fixed time, never NaN; a
 * device without compute_units drops tile and wave quantization, one without HBM bandwidth
 * drops the memory terms.
 */
#ifndef MODEL_KERNEL_ATTN_H
#define MODEL_KERNEL_ATTN_H

#include <stdbool.h>
#include <stdint.h>

#include "../net/hardware.h"
#include "kernel.h"

/* The attention kernel family, as vLLM's backend selector picks it. */
typedef enum {
    MODEL_ATTN_AUTO = 0,        /* resolved by the device (model_attn_kernel_resolve) */
    MODEL_ATTN_FA3,             /* vllm_flash_attn FlashAttention-3: sm90 (fitted) */
    MODEL_ATTN_FA2,             /* vllm_flash_attn FlashAttention-2: sm80, sm86, sm89 */
    MODEL_ATTN_FLASHINFER,      /* FlashInfer (vLLM's default on Blackwell) */
    MODEL_ATTN_TRITON,          /* vLLM's Triton unified attention (ROCm, fallback) */
    MODEL_ATTN_FLASHMLA,        /* FlashMLA dense MLA decode (latent K/V, one KV head) */
    MODEL_ATTN_FA3_MLA,         /* vLLM's FLASH_ATTN_MLA: FA3's MLA decode (sm90, bf16 cache) */
    MODEL_ATTN_FLASHMLA_SPARSE, /* FlashMLA sparse: DeepSeek-V3.2 DSA top-k attention */
    MODEL_ATTN_MLA_PREFILL,     /* MLA prefill: MHA over decompressed K/V (FA3 / FA2) */
    MODEL_ATTN_ASCEND_FIA,      /* Ascend FusedInferAttention (not fitted) */
    MODEL_ATTN_ASCEND_SFA,      /* Ascend sparse flash attention for DSA (not fitted) */
    MODEL_ATTN_COUNT
} ModelAttnKernel;

/* One sequence of the batch. */
typedef struct {
    uint32_t q_len;  /* new query rows this step (1 for a decode; more with speculation) */
    uint32_t kv_len; /* keys attended: cached context + q_len (prefill), context (decode) */
} ModelAttnSeq;

/* What the kernel computes, per rank. */
typedef struct {
    uint32_t heads;       /* query heads on this rank */
    uint32_t kv_heads;    /* K/V heads on this rank (MLA: 1, the latent) */
    uint32_t head_dim;    /* Q.K dimension (MLA decode: kv_lora_rank + rope, 576) */
    uint32_t v_head_dim;  /* V dimension; 0 = head_dim (MLA decode: kv_lora_rank, 512) */
    bool causal;          /* causal mask (prefill); decode rows see their whole context */
    uint32_t window;      /* sliding window in tokens; 0 = full attention */
    uint32_t kv_bytes;    /* bytes per cached K/V element: 2 (bf16/fp16), 1 (fp8); 0 = 2 */
    uint32_t sparse_topk; /* DSA: keys each query row attends (index_topk); 0 = dense */
    bool mla;             /* an MLA model's attention (selects FlashMLA / MLA prefill) */
    bool contiguous_kv;   /* K/V read from contiguous tensors, not the paged cache, and no
                             cache write: FlashAttention's own benchmark; implied for MLA
                             prefill (MHA over the decompressed K/V) */
    bool warm_l2;         /* K/V that fits in L2 stays there between calls, as in a kernel
                             benchmark that replays one layer; false for a model's forward,
                             where the other layers evict it */
    ModelAttnKernel kernel;
} ModelAttnShape;

/* The time of the attention op over `n` sequences: the KV-cache write of the new rows and the
 * attention kernel, as vLLM runs them in one layer. n = 0, heads = 0 or all-empty sequences
 * give the fixed time. `seqs` may be NULL when n is 0. Never fails. */
ModelKernelTime model_attn_time(const NetHardware *hw, const ModelAttnShape *s,
                                const ModelAttnSeq *seqs, uint32_t n);

/* The same for `batch` identical sequences: q_len new rows over kv_len keys each (a uniform
 * prefill: q_len = kv_len = seqlen; a decode: q_len = 1, kv_len = context). */
ModelKernelTime model_attn_time_uniform(const NetHardware *hw, const ModelAttnShape *s,
                                        uint32_t batch, uint32_t q_len, uint32_t kv_len);

/* The family vLLM runs for `s` on `hw`: s->kernel unless AUTO; then by platform and arch
 * (sm90: FA3; MLA decode: FLASH_ATTN_MLA with a bf16 cache, FlashMLA with fp8 — as vLLM
 * 0.24.0 picks them on H100 (AIConfigurator's kernel_source); sm80/86/89: FA2; sm100+:
 * FlashInfer; ROCm and unknown: Triton; Ascend: FIA / SFA). `decode` says the batch is decode-only
 * (MLA decode runs FlashMLA, MLA prefill runs MHA). */
ModelAttnKernel model_attn_kernel_resolve(const NetHardware *hw, const ModelAttnShape *s,
                                          bool decode);

/* One of MLA's absorbed projections as vLLM runs it on the rows it multiplies in the latent form:
 * torch.bmm over `heads` heads of (rows x in) by the head's bf16 (in x out) weight — W_UK_T
 * (in qk_nope_head_dim, out kv_lora_rank) before the attention, W_UV (kv_lora_rank ->
 * v_head_dim) after. The longer of one bf16 GEMM of the same FLOPs and weights (its fixed time,
 * tile quantization and MMA rate) and the stream of every head's input, weight and output through
 * HBM (a GEMM of rows x (heads x out) would read one input, the bmm reads one per head). */
ModelKernelTime model_mla_bmm_time(const NetHardware *hw, double heads, double rows, double in,
                                   double out);

/* "fa3", "fa2", "flashinfer", "triton", "flashmla", "fa3_mla", "flashmla_sparse", "mla_prefill",
 * "ascend_fia", "ascend_sfa", "auto"; static strings. */
const char *model_attn_kernel_name(ModelAttnKernel k);

/* Parses a name model_attn_kernel_name gives; false (and *out untouched) when unknown. */
bool model_attn_kernel_parse(const char *name, ModelAttnKernel *out);

#endif
