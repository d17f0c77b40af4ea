/* model/kernel-gemm.c — vLLM's linear layers by kernel family (model/kernel-gemm.h).
 *
 * Parameters: fitted by least (median |error| + p90 / 2) over NVIDIA AIConfigurator's vLLM
 * 0.24.0 GEMM tables on H100 SXM (ai-dynamo/aiconfigurator, systems/data/h100_sxm/gemm/vllm/
 * 0.24.0: six RowParallelLinear layers replayed in a CUDA graph per point, 483 (n, k) pairs x
 * 74 values of m from 1 to 32,768), H200 SXM held out. Formulas: doc/cost-model.md.
 */
#include "kernel-gemm.h"

#include <math.h>
#include <string.h>

/* Output tile of the GEMM kernels (cuBLAS and CUTLASS on sm90 pick 128 x 128 or larger for
 * the problem sizes that matter; one size keeps the model simple, see doc/cost-model.md). */
#define TILE_M 128.0
#define TILE_N 128.0

typedef struct {
    NetPeakDtype peak;     /* the matrix-unit dtype it computes in */
    double fixed_ns;       /* the kernel's own fixed time */
    double mem_eff;        /* plateau fraction of HBM bandwidth */
    double mem_ramp_bytes; /* bytes at which half the plateau is reached */
    double compute_eff;    /* fraction of the per-SM dense peak in the K loop */
    double tile_ns;        /* per-tile prologue and epilogue */
    double split_k_min;    /* split-K slices are at least this deep; 0 = never split */
    double act_bytes;      /* bytes per activation element the GEMM reads */
    /* activation quantization (a kernel of its own before the GEMM); quant_fixed_ns 0 = none */
    double quant_fixed_ns;
    double quant_row_ns;   /* serialized per-row cost (per-tensor absmax by atomics) */
    double host_ns;        /* eager: host time per call */
    double host_small_ns;  /* eager, m < 32 (another kernel path for small batches) */
} Family;

/* cuBLAS bf16/fp16 (torch F.linear): fitted on the bfloat16 rows (H100: median |error| 8.2 %,
 * p90 25 %; H200 held out: 9.9 %, 28 %). Eager host time: one torch op, 5 us (PyTorch's
 * dispatch + cudaLaunchKernel, the figure model/cost.c uses for an eager launch). */
static const Family cublas = {
    .peak = NET_PEAK_BF16,
    .fixed_ns = 2000,
    .mem_eff = 0.80,
    .mem_ramp_bytes = 1.37e6,
    .compute_eff = 0.90,
    .tile_ns = 350,
    .split_k_min = 700,
    .act_bytes = 2,
    .host_ns = 5000,
    .host_small_ns = 5000,
};

/* CUTLASS fp8 scaled_mm with vLLM's dynamic per-tensor activation quantization, whose absmax
 * reduction takes one atomicMax per row on a single scale (csrc/quantization/fp8/common.cu):
 * a per-row serialized cost, visible as fp8 GEMMs of tiny n and k growing linearly with m
 * (238 us at m = 32,768). Fitted on the fp8 rows (H100: median 9.7 %, p90 40 %; H200 12.5 %,
 * 46 %). Eager: the quantization kernels and the GEMM, three launches. */
static const Family cutlass_fp8 = {
    .peak = NET_PEAK_FP8,
    .fixed_ns = 2300,
    .mem_eff = 0.74,
    .mem_ramp_bytes = 1.34e6,
    .compute_eff = 0.62,
    .tile_ns = 333,
    .split_k_min = 700,
    .act_bytes = 1,
    .quant_fixed_ns = 2300,
    .quant_row_ns = 7.3,
    .host_ns = 15000,
    .host_small_ns = 15000,
};

/* Block-scaled fp8 (DeepGEMM for m >= 32, FlashInfer/CUTLASS below on sm90), activations
 * quantized per 1 x 128 group (bandwidth-bound). The table times it eagerly (AIConfigurator
 * does not graph it), so its host time is fitted there: ~60 us below m = 32, ~90 us above
 * (the Python dispatch of vLLM's block-fp8 custom op); the GPU terms share the fp8 family's
 * memory figures, compute efficiency fitted on m >= 4,096 (H100: median 6.9 %, p90 49 % over
 * all rows, dominated by the host time's spread; H200 6.2 %, 49 %).
 * No split-K: a tile runs its whole K loop (DeepGEMM's normal GEMM and CUTLASS's sm90
 * blockwise kernel do not split K, the per-128 scale being applied inside the loop). Seen in
 * AIConfigurator's vLLM 0.19.0 H200 table, CUDA-graph timed (collected 2026-04, before its
 * collector timed fp8_block eagerly, commit 4bed48d96): at n = 128 and 256 (one or two output
 * tiles, m <= 64) the time grows linearly with k, 2.65 us per 1,024 of k from k = 4,096 to
 * 65,536 and the same at both n — 19 us at k = 4,096, 30 us at 8,192, 178 us at 65,536 — where a
 * split K loop would stay near the fixed time. */
static const Family block_fp8 = {
    .peak = NET_PEAK_FP8,
    .fixed_ns = 2300,
    .mem_eff = 0.74,
    .mem_ramp_bytes = 1.34e6,
    .compute_eff = 0.69,
    .tile_ns = 383,
    .split_k_min = 0, /* never split: see above */
    .act_bytes = 1,
    .quant_fixed_ns = 4000,
    .host_ns = 90000,
    .host_small_ns = 60000,
};

static const char *const dtype_names[MODEL_GEMM_DTYPE_COUNT] = {
    "bf16", "fp16", "fp8", "fp8_block", "nvfp4", "mxfp4", "int8", "int4",
};

const char *model_gemm_dtype_name(ModelGemmDtype d)
{
    return (unsigned)d < MODEL_GEMM_DTYPE_COUNT ? dtype_names[d] : "?";
}

bool model_gemm_dtype_parse(const char *s, ModelGemmDtype *out)
{
    for (int i = 0; s && i < MODEL_GEMM_DTYPE_COUNT; i++)
        if (strcmp(s, dtype_names[i]) == 0) {
            *out = (ModelGemmDtype)i;
            return true;
        }
    return false;
}

const char *model_gemm_dtype_list(void)
{
    return "bf16, fp16, fp8, fp8_block, nvfp4, mxfp4, int8, int4";
}

double model_gemm_weight_bytes(ModelGemmDtype d)
{
    switch (d) {
    case MODEL_GEMM_FP8:
    case MODEL_GEMM_INT8:
        return 1.0;
    case MODEL_GEMM_FP8_BLOCK:
        return 1.0 + 4.0 / (128.0 * 128.0); /* an fp32 scale per 128 x 128 block */
    case MODEL_GEMM_NVFP4:
        return 0.5 + 1.0 / 16.0; /* an fp8 scale per 16 */
    case MODEL_GEMM_MXFP4:
        return 0.5 + 1.0 / 32.0; /* an e8m0 scale per 32 */
    case MODEL_GEMM_INT4:
        return 0.5 + 2.0 / 128.0; /* a bf16 scale per group of 128 */
    default:
        return 2.0;
    }
}

/* The matrix-unit dtype `d` needs for its activations to be quantized too (bf16 = none). */
static NetPeakDtype compute_dtype(ModelGemmDtype d)
{
    switch (d) {
    case MODEL_GEMM_FP8:
    case MODEL_GEMM_FP8_BLOCK:
        return NET_PEAK_FP8;
    case MODEL_GEMM_NVFP4:
    case MODEL_GEMM_MXFP4:
        return NET_PEAK_FP4;
    case MODEL_GEMM_INT8:
        return NET_PEAK_INT8;
    case MODEL_GEMM_FP16:
        return NET_PEAK_FP16;
    default:
        return NET_PEAK_BF16;
    }
}

bool model_gemm_native(const NetHardware *hw, ModelGemmDtype d)
{
    if (d == MODEL_GEMM_INT4)
        return false; /* no int4 matrix units in any GPU vLLM supports: always weight-only */
    NetPeakDtype c = compute_dtype(d);
    if (c == NET_PEAK_BF16 || c == NET_PEAK_FP16)
        return true;
    if (hw->native_dtypes)
        return (hw->native_dtypes & NET_DTYPE_BIT(c)) != 0 && hw->peak_flops[c] > 0;
    return hw->peak_flops[c] > 0;
}

/* The family vLLM runs `d` with on `hw`, and the dtype it computes in. Families without a
 * table of their own (nvfp4, mxfp4, int8: CUTLASS kernels of the same template as fp8's)
 * take the fp8 family's parameters at their own peak; weight-only formats take cuBLAS's at
 * bf16, their weights read in their own format (Marlin's dequantization is not modelled:
 * doc/cost-model.md). */
static Family family_of(const NetHardware *hw, ModelGemmDtype d)
{
    if (!model_gemm_native(hw, d))
        return cublas;
    Family f;
    switch (d) {
    case MODEL_GEMM_FP8:
        return cutlass_fp8;
    case MODEL_GEMM_FP8_BLOCK:
        return block_fp8;
    case MODEL_GEMM_NVFP4:
    case MODEL_GEMM_MXFP4:
        f = cutlass_fp8;
        f.peak = NET_PEAK_FP4;
        f.act_bytes = 0.5 + 1.0 / 16.0;
        f.quant_row_ns = 0; /* block-scaled: no global absmax */
        return f;
    case MODEL_GEMM_INT8:
        f = cutlass_fp8;
        f.peak = NET_PEAK_INT8;
        f.quant_row_ns = 0; /* per-token scales: no global absmax */
        return f;
    case MODEL_GEMM_FP16:
        f = cublas;
        f.peak = NET_PEAK_FP16;
        return f;
    default:
        return cublas;
    }
}

/* Time of the K loops in ns: waves of tiles, or split-K slices when tiles are fewer than the
 * SMs; without an SM count, the whole device as one fluid unit. */
static double compute_ns(const NetHardware *hw, const Family *f, double m, double n, double k)
{
    double peak = model_kernel_peak(hw, f->peak) * f->compute_eff;
    if (!(peak > 0))
        return 0;
    uint32_t sms = hw->compute_units;
    if (sms == 0)
        return 2.0 * m * n * k / peak * 1e9 + f->tile_ns;
    double per_sm = peak / sms;
    double tiles = ceil(m / TILE_M) * ceil(n / TILE_N);
    double tile_work = 2.0 * TILE_M * TILE_N; /* FLOPs per unit of K */
    if (tiles < sms) {
        double splits = 1;
        if (f->split_k_min > 0) {
            splits = floor((double)sms / tiles);
            double deepest = ceil(k / f->split_k_min);
            if (splits > deepest)
                splits = deepest;
            if (splits < 1)
                splits = 1;
        }
        return tile_work * ceil(k / splits) / per_sm * 1e9 + f->tile_ns;
    }
    double waves = model_kernel_waves(tiles, sms, 1);
    return waves * (tile_work * k / per_sm * 1e9 + f->tile_ns);
}

/* HBM time in ns of `bytes` streamed at the family's plateau efficiency. */
static double stream_ns(const NetHardware *hw, const Family *f, double bytes)
{
    double bw = hw->hbm_bw_bytes_per_s;
    if (!(bw > 0) || !(bytes > 0))
        return 0;
    return bytes / (bw * f->mem_eff) * 1e9;
}

/* The same for a GEMM, whose efficiency ramps with the bytes moved: bw x eff x B / (B + B0),
 * so the ramp adds B0 at the plateau rate. */
static double memory_ns(const NetHardware *hw, const Family *f, double bytes)
{
    return bytes > 0 ? stream_ns(hw, f, bytes + f->mem_ramp_bytes) : 0;
}

ModelKernelTime model_gemm_time(const NetHardware *hw, const ModelGemmShape *s)
{
    ModelGemmDtype d = (unsigned)s->dtype < MODEL_GEMM_DTYPE_COUNT ? s->dtype : MODEL_GEMM_BF16;
    Family f = family_of(hw, d);
    double m = (double)s->m, n = (double)s->n, k = (double)s->k;
    ModelKernelTime t = {.flops = 2.0 * m * n * k};
    t.key.kind = MODEL_KERNEL_GEMM;
    t.key.word[MODEL_KEY_GEMM_DTYPE] = model_gemm_dtype_name(d);
    t.key.dim[MODEL_KEY_GEMM_M] = m;
    t.key.dim[MODEL_KEY_GEMM_N] = n;
    t.key.dim[MODEL_KEY_GEMM_K] = k;
    if (m <= 0 || n <= 0 || k <= 0) {
        t.ns = f.fixed_ns;
        t.bytes = 0;
        t.flops = 0;
        model_kernel_set_bound(&t, f.fixed_ns, 0, 0);
        return t;
    }
    t.bytes = n * k * model_gemm_weight_bytes(d) + m * k * f.act_bytes + m * n * 2.0;
    double comp = compute_ns(hw, &f, m, n, k);
    double mem = memory_ns(hw, &f, t.bytes);
    t.ns = f.fixed_ns + fmax(comp, mem);
    double quant = 0;
    if (f.quant_fixed_ns > 0) {
        /* read the bf16 activations, write them quantized */
        double qbytes = m * k * (2.0 + f.act_bytes);
        quant = f.quant_fixed_ns + fmax(stream_ns(hw, &f, qbytes), m * f.quant_row_ns);
        t.bytes += qbytes;
    }
    t.ns += quant;
    model_kernel_set_bound(&t, f.fixed_ns + quant, comp, mem);
    return t;
}

double model_gemm_host_ns(const ModelGemmShape *s)
{
    ModelGemmDtype d = (unsigned)s->dtype < MODEL_GEMM_DTYPE_COUNT ? s->dtype : MODEL_GEMM_BF16;
    const Family *f = d == MODEL_GEMM_FP8_BLOCK ? &block_fp8
                      : d == MODEL_GEMM_BF16 || d == MODEL_GEMM_FP16 ? &cublas
                                                                     : &cutlass_fp8;
    return s->m < 32 ? f->host_small_ns : f->host_ns;
}
