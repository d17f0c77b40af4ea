/* model/kernel-moe.c — vLLM's fused MoE by weight format (model/kernel-moe.h).
 *
 * Parameters fitted by least (median |error| + p90 / 2) on the `balanced` rows of NVIDIA
 * AIConfigurator's vLLM 0.24.0 MoE tables, H100 SXM (ai-dynamo/aiconfigurator, systems/data/
 * h100_sxm/moe/vllm/0.24.0; replayed in CUDA graphs); H200 SXM held out. Errors as fitted are
 * in doc/validation.md; they do not meet the bars yet for every family (the fp8 per-tensor
 * FlashInfer CUTLASS path's time is not monotonic in the tokens in that table: its autotuner's
 * choices). */
#include "kernel-moe.h"

#include <math.h>

typedef struct {
    double fixed_ns;       /* routing, alignment, activation and sum kernels, and the GEMMs' own */
    double mem_eff;        /* plateau fraction of HBM bandwidth */
    double mem_ramp_bytes; /* added bytes at the plateau rate: the ramp of a small transfer */
    double compute_eff;    /* fraction of the dtype's dense peak */
    double block_rows;     /* each expert's rows padded to this (the kernel's BLOCK_SIZE_M) */
} MoeFamily;

/* Triton fused_moe, bf16 weights (H100 fit: median 15 %, p90 64 %). */
static const MoeFamily triton_bf16 = {34500, 0.80, 1.0e6, 0.42, 48};
/* fp8 per-tensor, FlashInfer CUTLASS (median 15 %, p90 47 %). */
static const MoeFamily cutlass_fp8 = {43800, 0.20, 0.98e6, 0.15, 128};
/* fp8 128 x 128 blocks, Triton (median 10 %, p90 45 %). */
static const MoeFamily triton_fp8_block = {30000, 0.80, 2.25e6, 0.21, 64};
/* Weight-only 4-bit through Marlin (mxfp4: median 20 %; int4: 28 %). */
static const MoeFamily marlin_w4 = {50000, 0.68, 1.0e6, 0.50, 32};

static const MoeFamily *family_of(ModelGemmDtype d)
{
    switch (d) {
    case MODEL_GEMM_FP8:
    case MODEL_GEMM_INT8:
        return &cutlass_fp8;
    case MODEL_GEMM_FP8_BLOCK:
    case MODEL_GEMM_NVFP4:
        return &triton_fp8_block;
    case MODEL_GEMM_MXFP4:
    case MODEL_GEMM_INT4:
        return &marlin_w4;
    default:
        return &triton_bf16;
    }
}

ModelKernelTime model_moe_time(const NetHardware *hw, const ModelMoeShape *s)
{
    double ep = s->ep ? s->ep : 1, tp = s->tp ? s->tp : 1;
    return model_moe_local_time(hw, s->dtype, s->hidden, (double)s->inter / tp,
                                (double)s->experts / ep, (double)s->tokens * s->topk / ep);
}

ModelKernelTime model_moe_local_time(const NetHardware *hw, ModelGemmDtype dtype, double hidden,
                                     double inter, double local, double pairs)
{
    const MoeFamily *f = family_of(dtype);
    double used = fmin(local, pairs);                 /* experts with at least one row */
    double per = used > 0 ? pairs / used : 0;
    double padded = used * ceil(per / f->block_rows) * f->block_rows;
    bool native = model_gemm_native(hw, dtype);
    double wbytes = model_gemm_weight_bytes(dtype);
    NetPeakDtype pk = !native                            ? NET_PEAK_BF16
                      : dtype == MODEL_GEMM_FP8 ||
                              dtype == MODEL_GEMM_FP8_BLOCK ? NET_PEAK_FP8
                      : dtype == MODEL_GEMM_INT8            ? NET_PEAK_INT8
                      : dtype == MODEL_GEMM_NVFP4 ||
                              dtype == MODEL_GEMM_MXFP4     ? NET_PEAK_FP4
                                                            : NET_PEAK_BF16;
    double peak = model_kernel_peak(hw, pk) * f->compute_eff;
    double bw = hw->hbm_bw_bytes_per_s * f->mem_eff;
    ModelKernelTime t = {0};
    double comp_sum = 0, mem_sum = 0, body = 0;
    /* gate-up: [pairs, hidden] x [hidden, 2 inter]; down: [pairs, inter] x [inter, hidden] */
    const double n_of[2] = {2.0 * inter, hidden};
    const double k_of[2] = {hidden, inter};
    for (int g = 0; g < 2; g++) {
        double w = used * n_of[g] * k_of[g] * wbytes;
        double a = pairs * (n_of[g] + k_of[g]) * 2.0;
        double mem = bw > 0 && pairs > 0 ? (w + a + f->mem_ramp_bytes) / bw * 1e9 : 0;
        double comp = peak > 0 ? 2.0 * padded * n_of[g] * k_of[g] / peak * 1e9 : 0;
        t.flops += 2.0 * pairs * n_of[g] * k_of[g];
        t.bytes += w + a;
        comp_sum += comp;
        mem_sum += mem;
        body += fmax(comp, mem);
    }
    t.ns = f->fixed_ns + body;
    model_kernel_set_bound(&t, f->fixed_ns, comp_sum, mem_sum);
    return t;
}
