/* model/kernel-moe.c — vLLM's fused MoE by weight format (model/kernel-moe.h).
 *
 * Parameters fitted by least (median |error| + p90 / 2) on the `balanced` rows of NVIDIA
 * AIConfigurator's vLLM 0.24.0 MoE tables, H100 SXM (ai-dynamo/aiconfigurator, systems/data/
 * h100_sxm/moe/vllm/0.24.0; replayed in CUDA graphs); H200 SXM held out. Errors as fitted are
 * in doc/validation.md; the fp8 per-tensor FlashInfer CUTLASS family does not meet the bars (its
 * time is not monotonic in the tokens in that table: its autotuner's choices). */
#include "kernel-moe.h"

#include <math.h>

typedef struct {
    double fixed_ns;       /* routing, alignment, activation and sum kernels, and the GEMMs' own */
    double mem_eff;        /* plateau fraction of HBM bandwidth */
    double mem_ramp_bytes; /* added bytes at the plateau rate: the ramp of a small transfer */
    double compute_eff;    /* fraction of the dtype's dense peak */
    double block_rows;     /* each expert's rows padded to this (the kernel's BLOCK_SIZE_M) */
    double pass_bytes;     /* fitted effective bytes per element of the passes over all pairs
                              (3 x inter + hidden elements a pair): ~2 x a bf16 pass's 2 bytes
                              where the caches are bf16, under 1 where they are fp8 */
} MoeFamily;

/* Errors as fitted (median |error|, p90), H100 / H200 held out, `balanced` rows. */
/* Triton fused_moe, bf16 weights (7.0 %, 37 % / 11.9 %, 39 %). */
static const MoeFamily triton_bf16 = {39700, 0.92, 1.61e6, 0.575, 80, 4.97};
/* fp8 per-tensor, FlashInfer CUTLASS (15 %, 48 % / 32 %, 51 %): its weights stream at a fifth
 * of the bandwidth below ~512 tokens in the table, and not faster on H200: not a bandwidth
 * limit, which this model cannot tell apart. */
static const MoeFamily cutlass_fp8 = {38900, 0.198, 0.805e6, 0.147, 32, 0.68};
/* fp8 128 x 128 blocks, Triton (8.3 %, 34 % / 11.4 %, 38 %). */
static const MoeFamily triton_fp8_block = {27800, 0.80, 0.648e6, 0.253, 64, 0.83};
/* Weight-only 4-bit through Marlin (mxfp4: 18.6 %, 47 % / 24 %, 54 %; int4: 12.2 %, 38 % /
 * 22 %, 45 %; mxfp4's parameters, the larger set). */
static const MoeFamily marlin_w4 = {48300, 0.68, 1.52e6, 0.76, 64, 4.7};

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
    double all = (double)s->tokens * s->topk;
    ModelKernelTime t = model_moe_local_time(hw, s->dtype, s->hidden, (double)s->inter / tp,
                                             (double)s->experts / ep, all / ep, all);
    /* the whole shape is known here: say it as given */
    t.key.dim[MODEL_KEY_MOE_TOKENS] = (double)s->tokens;
    t.key.dim[MODEL_KEY_MOE_INTER] = s->inter;
    t.key.dim[MODEL_KEY_MOE_TOPK] = s->topk;
    t.key.dim[MODEL_KEY_MOE_EXPERTS] = s->experts;
    t.key.dim[MODEL_KEY_MOE_TP] = tp;
    t.key.dim[MODEL_KEY_MOE_EP] = ep;
    return t;
}

/* The key of a layer known only by what lands on the rank: the TP split folded into inter
 * (tp = 1), ep = all routed pairs / the rank's, experts = local x ep; how many tokens the
 * pairs come from is not known here (tokens = topk = 0, routes = all pairs): whoever knows the
 * op's rows completes it (model_kernel_key_complete). */
static void local_key(ModelKernelKey *key, ModelGemmDtype dtype, double hidden, double inter,
                      double local, double pairs, double all_pairs)
{
    double ep = pairs > 0 && all_pairs >= pairs ? all_pairs / pairs : 1;
    key->kind = MODEL_KERNEL_MOE;
    key->word[MODEL_KEY_MOE_DTYPE] = model_gemm_dtype_name(dtype);
    key->word[MODEL_KEY_MOE_DIST] = "balanced"; /* the routing this model assumes */
    key->dim[MODEL_KEY_MOE_HIDDEN] = hidden;
    key->dim[MODEL_KEY_MOE_INTER] = inter;
    key->dim[MODEL_KEY_MOE_EXPERTS] = local * ep;
    key->dim[MODEL_KEY_MOE_TP] = 1;
    key->dim[MODEL_KEY_MOE_EP] = ep;
    key->dim[MODEL_KEY_MOE_ROUTES] = all_pairs;
}

ModelKernelTime model_moe_local_time(const NetHardware *hw, ModelGemmDtype dtype, double hidden,
                                     double inter, double local, double pairs, double all_pairs)
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
    double pass_bytes = all_pairs * (3.0 * inter + hidden) * f->pass_bytes;
    double passes = hw->hbm_bw_bytes_per_s > 0 ? pass_bytes / hw->hbm_bw_bytes_per_s * 1e9 : 0;
    t.bytes += pass_bytes;
    mem_sum += passes;
    t.ns = f->fixed_ns + body + passes;
    model_kernel_set_bound(&t, f->fixed_ns, comp_sum, mem_sum);
    local_key(&t.key, dtype, hidden, inter, local, pairs, all_pairs);
    return t;
}
