/* model/kernel-gemm.h — the time of one of vLLM's linear layers: [m, k] x [k, n] -> [m, n],
 * as the kernel family vLLM picks for the weight's dtype runs it, the activation's quantization
 * kernel included when the family quantizes activations.
 *
 * The model (doc/cost-model.md, "GEMM"): a fixed kernel time, plus the longer of
 *  - memory: weights, activations and output over HBM at an efficiency that ramps with the
 *    bytes moved (a small GEMM cannot keep enough loads in flight to reach the plateau), and
 *  - compute: 128 x 128 output tiles in waves over the device's SMs, each tile's K loop at a
 *    per-SM rate (the dtype's dense peak / SMs x the family's efficiency) plus a per-tile
 *    prologue/epilogue; with fewer tiles than SMs, a split-K family splits K to fill them.
 * Families and their parameters are fitted on NVIDIA AIConfigurator's measured vLLM 0.24.0
 * GEMM tables on H100 SXM (tests/data/times/ holds the points we check against, H200 held
 * out). Dtypes a device cannot compute natively run weight-only (Marlin-style: the weights'
 * bytes, bf16 compute), as vLLM falls back on such devices.
 */
#ifndef MODEL_KERNEL_GEMM_H
#define MODEL_KERNEL_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"

typedef enum {
    MODEL_GEMM_BF16 = 0, /* cuBLAS through torch's F.linear */
    MODEL_GEMM_FP16,
    MODEL_GEMM_FP8,       /* fp8 weights with one scale per tensor, activations quantized per
                             tensor on the fly (vLLM's Fp8LinearMethod, CUTLASS scaled_mm) */
    MODEL_GEMM_FP8_BLOCK, /* 128 x 128 weight blocks, activations per 1 x 128 group
                             (DeepSeek-style; DeepGEMM / CUTLASS / FlashInfer) */
    MODEL_GEMM_NVFP4,     /* fp4 e2m1, fp8 scale per 16 (activations too) */
    MODEL_GEMM_MXFP4,     /* fp4 e2m1, e8m0 scale per 32; weight-only before sm100 */
    MODEL_GEMM_INT8,      /* w8a8 int8, activations per token */
    MODEL_GEMM_INT4,      /* weight-only int4 (GPTQ/AWQ through Marlin / Machete), group 128 */
    MODEL_GEMM_DTYPE_COUNT
} ModelGemmDtype;

/* "bf16", "fp16", "fp8", "fp8_block", "nvfp4", "mxfp4", "int8", "int4". */
const char *model_gemm_dtype_name(ModelGemmDtype d);
bool model_gemm_dtype_parse(const char *s, ModelGemmDtype *out);
/* The names above, comma-separated, for error messages (static storage). */
const char *model_gemm_dtype_list(void);

typedef struct {
    uint64_t m, n, k;     /* token rows, output features, input features */
    ModelGemmDtype dtype; /* the weights' format */
} ModelGemmShape;

/* The time of the linear layer inside a CUDA graph (the host's launch is not counted: see
 * model_gemm_host_ns). m, n or k = 0 gives the fixed time alone. */
ModelKernelTime model_gemm_time(const NetHardware *hw, const ModelGemmShape *s);

/* What launching the layer eagerly costs the host, in ns: the Python and dispatch work vLLM's
 * linear does per call outside a CUDA graph. An eagerly run layer takes the longer of this and
 * its kernels' time. */
double model_gemm_host_ns(const ModelGemmShape *s);

/* Bytes per weight element of `d` (scales included), and whether `hw` computes `d` natively
 * (else vLLM runs it weight-only). */
double model_gemm_weight_bytes(ModelGemmDtype d);
bool model_gemm_native(const NetHardware *hw, ModelGemmDtype d);

#endif
