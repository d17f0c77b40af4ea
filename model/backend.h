/* model/backend.h — attention backends as vLLM names them: which device can run each, which
 * kernel family it lowers as, and the AUTO choice vLLM makes per platform.
 *
 * Families: GQA kernels (FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION, ROCM_ATTN,
 * ROCM_AITER_FA, ROCM_AITER_UNIFIED_ATTN, HPU_ATTN) lower alike; dense MLA kernels (FLASHMLA,
 * FLASHINFER_MLA, CUTLASS_MLA, FLASH_ATTN_MLA, TRITON_MLA, ROCM_AITER_MLA, ROCM_AITER_TRITON_MLA)
 * alike; sparse MLA kernels (FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE, ROCM_AITER_MLA_SPARSE)
 * alike except where model/lower.c names one (FLASHINFER_MLA_SPARSE sizes its DCP LSE exchange
 * by real rows); ASCEND is vLLM-Ascend (SFA / MLA, MC2 MoE).
 *
 * The AUTO rule follows vllm/platforms/cuda.py and rocm.py (_get_backend_priorities) and
 * vLLM-Ascend; doc/lowering.md ("Attention backends") quotes the lists. Everything here is a
 * table lookup: O(1).
 */
#ifndef MODEL_BACKEND_H
#define MODEL_BACKEND_H

#include <glib.h>
#include <stdbool.h>

#include "../net/hardware.h"
#include "arch.h"

typedef enum {
    MODEL_BACKEND_AUTO = 0,
    MODEL_BACKEND_FLASHINFER_MLA_SPARSE,
    MODEL_BACKEND_FLASHMLA_SPARSE,
    MODEL_BACKEND_FLASHMLA,
    MODEL_BACKEND_FLASHINFER_MLA,
    MODEL_BACKEND_TRITON_MLA,
    MODEL_BACKEND_FLASH_ATTN,
    MODEL_BACKEND_ASCEND, /* vLLM-Ascend: SFA for DSA models, MLA otherwise; MC2 MoE */
    MODEL_BACKEND_CUTLASS_MLA,
    MODEL_BACKEND_FLASH_ATTN_MLA,
    MODEL_BACKEND_FLASHINFER,
    MODEL_BACKEND_TRITON_ATTN,
    MODEL_BACKEND_FLEX_ATTENTION,
    MODEL_BACKEND_ROCM_ATTN,
    MODEL_BACKEND_ROCM_AITER_FA,
    MODEL_BACKEND_ROCM_AITER_UNIFIED_ATTN,
    MODEL_BACKEND_ROCM_AITER_MLA,
    MODEL_BACKEND_ROCM_AITER_TRITON_MLA,
    MODEL_BACKEND_ROCM_AITER_MLA_SPARSE,
    MODEL_BACKEND_HPU_ATTN,
    MODEL_BACKEND_COUNT
} ModelBackend;

typedef enum {
    MODEL_BFAMILY_NONE = 0, /* AUTO */
    MODEL_BFAMILY_GQA,
    MODEL_BFAMILY_MLA,
    MODEL_BFAMILY_MLA_SPARSE,
    MODEL_BFAMILY_ASCEND,
} ModelBackendFamily;

/* What the AUTO rule needs beyond the architecture and the device. */
typedef struct {
    bool kv_fp8;          /* kv_cache_dtype fp8 */
    uint32_t heads_per_rank; /* attention heads one rank computes */
    uint32_t pcp, dcp;    /* context-parallel sizes */
    bool rocm_aiter;      /* VLLM_ROCM_USE_AITER=1 */
} ModelBackendQuery;

const char *model_backend_name(ModelBackend b);
/* Case-insensitive; false for an unknown name. */
bool model_backend_parse(const char *s, ModelBackend *out);
ModelBackendFamily model_backend_family(ModelBackend b);

/* The backend `b` means on `hw` (NULL: an H100) for `a`: AUTO becomes vLLM's choice for the
 * platform — Ascend: ASCEND; ROCm: ROCM_AITER_MLA_SPARSE (DSA), TRITON_MLA (MLA; ROCM_AITER_MLA
 * only with VLLM_ROCM_USE_AITER), ROCM_ATTN (GQA); CUDA sm100: FLASHINFER_MLA_SPARSE with an
 * fp8 KV cache or <= 16 heads per rank else FLASHMLA_SPARSE, and FLASHMLA_SPARSE under PCP + DCP
 * (vLLM rejects the FlashInfer kernel there); dense MLA FLASHINFER_MLA (qk_nope_head_dim 128,
 * no DCP) else CUTLASS_MLA; GQA FLASHINFER; CUDA sm90: FLASHMLA_SPARSE, FLASHMLA, FLASH_ATTN;
 * older CUDA: TRITON_MLA for MLA, FLASH_ATTN for GQA; Gaudi: HPU_ATTN. A GQA backend named for
 * an MLA model (ROCm configs name TRITON_ATTN for DeepSeek) becomes the platform's MLA kernel
 * of the same family (TRITON_ATTN -> TRITON_MLA); `*renamed` (may be NULL) is set then.
 * Any other value is returned as is. */
ModelBackend model_backend_resolve(const ModelArch *a, ModelBackend b, const NetHardware *hw,
                                   const ModelBackendQuery *q, bool *renamed);

/* "GQA", "MLA", "sparse MLA", "vLLM-Ascend" ("" for AUTO). */
const char *model_backend_family_name(ModelBackendFamily f);
/* Where `b` runs, e.g. "cuda sm90-sm103", "rocm gfx942-gfx950", "cuda, rocm, xpu". Writes into
 * `buf` (size `n`) and returns it. */
const char *model_backend_devices(ModelBackend b, char *buf, size_t n);

/* Whether `b` (already resolved) can run `a` on `hw`: the kernel family must fit the attention
 * (GQA / MLA / sparse MLA) and the device must be one the kernel is built for (FlashMLA: sm90 /
 * sm100; FlashInfer MLA and CUTLASS MLA: sm100; ROCm kernels: ROCm; ASCEND: Ascend NPUs, ...).
 * On failure returns false with a message naming the backend, the model or device and the
 * valid backends, e.g. "attention backend FLASHMLA_SPARSE does not run on mi300x (rocm, gfx942);
 * valid there for this model: ROCM_AITER_MLA_SPARSE, AUTO". */
bool model_backend_check(ModelBackend b, const ModelArch *a, const NetHardware *hw, char *why,
                         size_t n);

#endif
