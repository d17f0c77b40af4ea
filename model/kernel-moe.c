/* model/kernel-moe.c — vLLM's fused MoE by kernel family and routing (model/kernel-moe.h).
 *
 * Parameters fitted by least (median |error| + p90 / 2) on NVIDIA AIConfigurator's vLLM MoE
 * tables (ai-dynamo/aiconfigurator, systems/data/<gpu>/moe/vllm/<version>/moe_perf.parquet; one
 * layer replayed in a CUDA graph), H200 held out unless said. Rows left out of every fit, and
 * why (doc/validation.md, "MoE"):
 *  - DeepSeek-V3's shape (7168/2048/8/256) in the 0.24.0 tables: the collector routes it with
 *    grouped top-k (8 groups, 4 kept) but its balanced logits put one expert in every group,
 *    so the group scores tie and only half the experts are reachable: its plateau is half the
 *    weight traffic that the 0.19.0 table (plain top-k) and real routing show.
 *  - Nemotron-H shapes (topk 22; 2688/1856/6/128): non-gated relu^2 experts (the gate-up GEMM
 *    is inter wide, not 2 x inter), which the shape does not say.
 *  - fp8 per-tensor rows of 0.24.0 (FlashInfer CUTLASS): the collector never runs FlashInfer's
 *    autotuner, which vLLM runs at start-up (kernel_warmup.py: flashinfer_autotune, "without
 *    autotuning FlashInfer relies on heuristics, which may be significantly slower"); those
 *    rows are 3-5x slower than the same layer through Triton in the 0.19.0 / 0.22.0 tables and
 *    no faster on H200 than on H100. We price a tuned kernel, fitted on the 0.19.0 rows.
 */
#include "kernel-moe.h"

#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double fixed_ns;       /* routing, alignment, activation and sum kernels, and the GEMMs' own */
    double ep_fixed_ns;    /* added with expert parallelism (the expert map's extra kernels) */
    double mem_eff;        /* plateau fraction of HBM bandwidth */
    double mem_ramp_bytes; /* added bytes at the plateau rate: the ramp of a small transfer */
    double compute_eff;    /* fraction of the dtype's dense peak */
    double block_rows;     /* each expert's rows padded to this (BLOCK_SIZE_M); 0: Marlin's rule */
    double pair_bytes;     /* effective bytes per element of the passes over all routed pairs
                              (3 x inter + hidden elements a pair) */
    double token_bytes;    /* effective bytes per element of passes over the tokens (hidden) */
    double dequant_bytes_per_clk_sm; /* weight bytes one SM dequantizes per clock; 0: no cap */
    bool local_passes; /* the pair passes cover the rank's pairs only (a permute that drops the
                          other ranks' pairs), not vLLM's caches over every pair */
} MoeFamily;

/* Errors (median |error|, p90), balanced rows unless said, from make validate-times and the
 * full tables: doc/validation.md. */
/* Triton fused_moe, bf16; fitted on 0.24.0 H100 (Qwen3, Mixtral, GLM, Kimi, MiniMax shapes). */
static const MoeFamily triton_bf16 = {
    .fixed_ns = 34600, .ep_fixed_ns = 1200, .mem_eff = 0.92, .mem_ramp_bytes = 2.21e6,
    .compute_eff = 0.632, .block_rows = 128, .pair_bytes = 5.47, .token_bytes = 7.04};
/* Triton fused_moe, fp8 128 x 128 blocks (per-token-group activation quantization); fitted on
 * 0.24.0 H100 ep = 1 and 0.19.0 H100 ep > 1 (both Triton). */
static const MoeFamily triton_fp8_block = {
    .fixed_ns = 37170, .ep_fixed_ns = 4125, .mem_eff = 0.828, .mem_ramp_bytes = 2.04e6,
    .compute_eff = 0.342, .block_rows = 48, .pair_bytes = 6.0, .token_bytes = 4.06};
/* FlashInfer CUTLASS, fp8 128 x 128 blocks: what vLLM 0.24 selects for block fp8 with expert
 * parallelism on Hopper. Its permute keeps only the rank's pairs, so the pair passes are local;
 * the tokens are quantized and finalized whole; 128-row tiles. Fitted on 0.24.0 H100 ep > 1
 * (balanced and power_law_1.2; the collector does not autotune, but these rows are no slower
 * than Triton's: few tactics for this kernel), H200 held out. */
static const MoeFamily cutlass_fp8_block = {
    .fixed_ns = 23500, .ep_fixed_ns = 0, .mem_eff = 0.828, .mem_ramp_bytes = 4.49e6,
    .compute_eff = 0.563, .block_rows = 128, .pair_bytes = 14.52, .token_bytes = 12.28,
    .local_passes = true};
/* fp8 per-tensor (a static activation scale): the autotuned grouped GEMM; fitted on 0.19.0 H100
 * (Triton fused_moe, every shape), 0.22.0 H200 held out. */
static const MoeFamily fp8_tensor = {
    .fixed_ns = 32750, .ep_fixed_ns = 5000, .mem_eff = 0.92, .mem_ramp_bytes = 1.45e6,
    .compute_eff = 0.632, .block_rows = 80, .pair_bytes = 4.97, .token_bytes = 2.2};
/* OpenAI triton_kernels matmul_ogs, mxfp4 weights upcast to bf16 in registers on Hopper (bf16
 * MMA): gather and scatter fused into the GEMMs, so its passes are over tokens, not pairs; with
 * EP its routing masks and compacts in kernels of its own. Fitted on 0.24.0 H100 (gpt-oss),
 * balanced and power-law rows. */
static const MoeFamily oai_mxfp4 = {
    .fixed_ns = 32000, .ep_fixed_ns = 34400, .mem_eff = 0.662, .mem_ramp_bytes = 0.51e6,
    .compute_eff = 0.569, .block_rows = 64, .pair_bytes = 0, .token_bytes = 27.3};
/* Marlin MoE, weight-only 4-bit dequantized in registers to bf16 MMA; its block of rows per
 * expert chosen from all the layer's pairs over the local experts (fused_marlin_moe: E is
 * w1.size(0), so with EP it assumes ep x the rows an expert really gets and pads to larger
 * blocks); fitted on 0.24.0 H100 and H200 together, balanced and power-law rows (Kimi-K2 int4,
 * Kimi-K3 mxfp4): the dequantization cap (2.79 TB/s on 132 SMs at 1.98 GHz) shows only where
 * HBM is faster, on H200. */
static const MoeFamily marlin_w4 = {
    .fixed_ns = 41800, .ep_fixed_ns = 3840, .mem_eff = 0.729, .mem_ramp_bytes = 1.0e6,
    .compute_eff = 0.273, .block_rows = 0, .pair_bytes = 4.84, .token_bytes = 4.4,
    .dequant_bytes_per_clk_sm = 10.67};

/* The passes over the routed pairs (the activation, the weighted sum, the alignment's sort and
 * the zeroing of the output, index-gathered rows of vLLM's caches) run at the SMs' pace, not
 * HBM's: their bytes are fitted in units of H100 HBM time, so their rate is H100's 3.35 TB/s
 * over its 132 SMs at 1.98 GHz, 12.8 bytes per clock per SM, HBM permitting. Chosen because the
 * H200 rows (held out) are 9-10 % faster than HBM-paced passes predict in every family
 * (bias -9 % -> -3 %); an H200 has the H100's SMs and clock. */
#define PASS_BYTES_PER_CLK_SM 12.82

static const MoeFamily *family_of(const NetHardware *hw, ModelGemmDtype d, ModelMoeKernel b,
                                  bool ep)
{
    if (b == MODEL_MOE_KERNEL_MARLIN)
        return &marlin_w4;
    switch (d) {
    case MODEL_GEMM_FP8:
    case MODEL_GEMM_INT8:
        return &fp8_tensor;
    case MODEL_GEMM_FP8_BLOCK: /* vLLM 0.24 on Hopper: Triton alone, FlashInfer CUTLASS with EP */
        return b == MODEL_MOE_KERNEL_CUTLASS || (b == MODEL_MOE_KERNEL_AUTO && ep)
                   ? &cutlass_fp8_block
                   : &triton_fp8_block;
    case MODEL_GEMM_MXFP4:
        return b == MODEL_MOE_KERNEL_AUTO || b == MODEL_MOE_KERNEL_OAI_MXFP4 || model_gemm_native(hw, d)
                   ? &oai_mxfp4
                   : &marlin_w4;
    case MODEL_GEMM_NVFP4: /* Marlin below Blackwell, a CUTLASS fp4 grouped GEMM on it */
        return model_gemm_native(hw, d) ? &triton_fp8_block : &marlin_w4;
    case MODEL_GEMM_INT4:
        return &marlin_w4;
    default:
        return &triton_bf16;
    }
}

/* ---- routing: the rows each local expert receives ---- */

/* The timed rank's load, as per-expert rows (n of them, each > 0) or, balanced, `n` experts of
 * `per` rows each (n may be fractional: fewer pairs than experts). */
typedef struct {
    double *rows; /* NULL when balanced */
    double n, per, pairs;
} MoeLoad;

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* AIConfigurator's power-law routing (collector/helper.py, _generate_power_law_distribution),
 * taken at its quantiles instead of drawn: expert popularity from a power law on [1, 0.8 T]
 * ([0.01, 2] when there are fewer pairs than experts), scaled to tokens x topk pairs and
 * rounded, no expert above T; the timed rank is the busiest, which holds the most popular
 * expert, and its other experts are a stratified sample of the rest (every ep-th by rank). */
static void load_power_law(MoeLoad *l, double tokens, double topk, double experts, double ep,
                           double alpha)
{
    double all = tokens * topk;
    uint32_t e = (uint32_t)experts, local = (uint32_t)fmax(1, floor(experts / ep));
    double lo = all > experts ? 1 : 0.01, hi = all > experts ? 0.8 * tokens : 2;
    hi = fmax(hi, lo * 1.0001);
    double a1 = 1 - alpha, sum = 0;
    g_autofree double *c = g_new(double, e);
    for (uint32_t i = 0; i < e; i++) {
        double u = (i + 0.5) / e; /* inverse CDF, as sample_power_law */
        c[i] = pow((pow(hi, a1) - pow(lo, a1)) * u + pow(lo, a1), 1 / a1);
        sum += c[i];
    }
    qsort(c, e, sizeof *c, cmp_desc);
    for (int pass = 0; pass < 3; pass++) { /* clamp at T, spread the overflow over the rest */
        double over = 0, free = 0;
        for (uint32_t i = 0; i < e; i++) {
            double v = c[i] * (pass ? 1 : all / sum);
            over += fmax(0, v - tokens);
            c[i] = fmin(v, tokens);
            free += c[i] < tokens;
        }
        if (!(over > 0) || free == 0)
            break;
        for (uint32_t i = 0; i < e; i++)
            c[i] += c[i] < tokens ? over / free : 0;
    }
    l->rows = g_new(double, local);
    double total = 0, rounded = 0;
    for (uint32_t j = 0; j < local; j++) {
        uint32_t i = j == 0 ? 0 : MIN(1 + (j - 1) * (uint32_t)ep, e - 1);
        total += c[i];
        l->rows[j] = round(c[i]);
        rounded += l->rows[j];
    }
    /* the collector's integer fix-up: the smallest take what rounding lost, the largest give */
    double d = round(total) - rounded;
    for (uint32_t j = 0; d > 0 && j < local; j++, d--)
        l->rows[local - 1 - j] += 1;
    for (uint32_t j = 0; d < 0 && j < local; j++, d++)
        l->rows[j] -= l->rows[j] > 0;
    l->n = l->pairs = 0;
    for (uint32_t j = 0; j < local; j++) {
        if (l->rows[j] > 0)
            l->rows[(uint32_t)l->n++] = l->rows[j];
        l->pairs += l->rows[j];
    }
}

/* Balanced: the rank's share of the pairs, at least one (balanced logits always reach expert 0,
 * the first rank's), spread over as many of its experts as there are pairs. */
static void load_balanced(MoeLoad *l, double local, double pairs)
{
    l->rows = NULL;
    l->pairs = pairs > 0 ? fmax(1, pairs) : 0;
    l->n = fmin(local, l->pairs);
    l->per = l->n > 0 ? l->pairs / l->n : 0;
}

/* Uniform: each of `tokens` tokens picks a given local expert with probability
 * p = pairs / (tokens x local) (= topk / experts), independently, so the expected number of
 * experts reached is local x (1 - (1 - p)^tokens) (occupancy of `local` bins), never more than
 * the pairs; their rows are taken as equal (the mean), so padding is that of the mean load. */
static void load_uniform(MoeLoad *l, double local, double pairs, double tokens)
{
    if (!(tokens >= 1) || !(local > 0) || !(pairs > 0)) {
        load_balanced(l, local, pairs);
        return;
    }
    double p = fmin(1, pairs / (tokens * local));
    l->rows = NULL;
    l->pairs = pairs;
    l->n = fmax(fmin(1, pairs), fmin(pairs, local * -expm1(tokens * log1p(-p))));
    if (p >= 1)
        l->n = local;
    l->per = pairs / l->n;
}

/* Marlin MoE's block of rows per expert: the first of 8, 16, 32, 48, 64 whose expected fill
 * (tokens x topk / local experts rows an expert) is under 0.9 (vLLM fused_marlin_moe). */
static double marlin_block(double rows_per_expert)
{
    static const double sizes[] = {8, 16, 32, 48, 64};
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++)
        if (rows_per_expert / sizes[i] < 0.9)
            return sizes[i];
    return 64;
}

static double padded_rows(const MoeLoad *l, double block)
{
    if (!l->rows)
        return l->n * ceil(l->per / block) * block;
    double s = 0;
    for (uint32_t j = 0; j < (uint32_t)l->n; j++)
        s += ceil(l->rows[j] / block) * block;
    return s;
}

/* ---- the kernel ---- */

typedef struct {
    ModelGemmDtype dtype;
    ModelMoeKernel kernel;
    double hidden, inter;    /* inter: after the TP split */
    double all_pairs, tokens; /* every routed pair of the layer, and the tokens they come from */
    double rows_per_expert;  /* tokens x topk / local experts, for Marlin's block */
    bool ep;
} MoeCall;

static NetPeakDtype peak_of(const NetHardware *hw, ModelGemmDtype d)
{
    if (!model_gemm_native(hw, d))
        return NET_PEAK_BF16;
    switch (d) {
    case MODEL_GEMM_FP8:
    case MODEL_GEMM_FP8_BLOCK:
        return NET_PEAK_FP8;
    case MODEL_GEMM_INT8:
        return NET_PEAK_INT8;
    case MODEL_GEMM_NVFP4:
    case MODEL_GEMM_MXFP4:
        return NET_PEAK_FP4;
    default:
        return NET_PEAK_BF16;
    }
}

static ModelKernelTime moe_kernel(const NetHardware *hw, const MoeCall *c, const MoeLoad *l)
{
    const MoeFamily *f = family_of(hw, c->dtype, c->kernel, c->ep);
    double block = f->block_rows > 0 ? f->block_rows : marlin_block(c->rows_per_expert);
    double padded = padded_rows(l, block);
    double wbytes = model_gemm_weight_bytes(c->dtype);
    double peak = model_kernel_peak(hw, peak_of(hw, c->dtype)) * f->compute_eff;
    double bw = hw->hbm_bw_bytes_per_s * f->mem_eff;
    if (f->dequant_bytes_per_clk_sm > 0 && hw->compute_units && hw->clock_hz > 0)
        bw = fmin(bw, f->dequant_bytes_per_clk_sm * hw->compute_units * hw->clock_hz);
    double fixed = f->fixed_ns + (c->ep ? f->ep_fixed_ns : 0);
    ModelKernelTime t = {0};
    double comp_sum = 0, mem_sum = 0, body = 0;
    /* gate-up: [pairs, hidden] x [hidden, 2 inter]; down: [pairs, inter] x [inter, hidden] */
    const double n_of[2] = {2.0 * c->inter, c->hidden};
    const double k_of[2] = {c->hidden, c->inter};
    for (int g = 0; g < 2; g++) {
        double w = l->n * n_of[g] * k_of[g] * wbytes;
        double a = l->pairs * (n_of[g] + k_of[g]) * 2.0;
        double mem = bw > 0 && l->pairs > 0 ? (w + a + f->mem_ramp_bytes) / bw * 1e9 : 0;
        double comp = peak > 0 ? 2.0 * padded * n_of[g] * k_of[g] / peak * 1e9 : 0;
        t.flops += 2.0 * l->pairs * n_of[g] * k_of[g];
        t.bytes += w + a;
        comp_sum += comp;
        mem_sum += mem;
        body += fmax(comp, mem);
    }
    double pass_bytes = (f->local_passes ? l->pairs : c->all_pairs) *
                            (3.0 * c->inter + c->hidden) * f->pair_bytes +
                        c->tokens * c->hidden * f->token_bytes;
    double pass_bw = hw->hbm_bw_bytes_per_s;
    if (hw->compute_units && hw->clock_hz > 0)
        pass_bw = fmin(pass_bw, PASS_BYTES_PER_CLK_SM * hw->compute_units * hw->clock_hz);
    double passes = pass_bw > 0 ? pass_bytes / pass_bw * 1e9 : 0;
    t.bytes += pass_bytes;
    mem_sum += passes;
    t.ns = fixed + body + passes;
    model_kernel_set_bound(&t, fixed, comp_sum, mem_sum);
    return t;
}

/* The key's word for the routing: the names AIConfigurator's tables use. */
static const char *dist_name(const ModelMoeRouting *r)
{
    if (r->dist != MODEL_MOE_POWER_LAW)
        return "balanced";
    return fabs(r->alpha - 1.01) < 1e-9 ? "power_law_1.01"
           : fabs(r->alpha - 1.2) < 1e-9 ? "power_law_1.2"
                                         : "power_law";
}

ModelKernelTime model_moe_time(const NetHardware *hw, const ModelMoeShape *s)
{
    double ep = s->ep ? s->ep : 1, tp = s->tp ? s->tp : 1;
    double all = (double)s->tokens * s->topk;
    MoeCall c = {
        .dtype = s->dtype,
        .kernel = s->kernel,
        .hidden = s->hidden,
        .inter = (double)s->inter / tp,
        .all_pairs = all,
        .tokens = (double)s->tokens,
        .rows_per_expert = s->experts ? all * ep / s->experts : 0,
        .ep = ep > 1,
    };
    MoeLoad l;
    if (s->routing.dist == MODEL_MOE_POWER_LAW && s->experts > 0 && s->tokens > 0 &&
        s->routing.alpha > 1)
        load_power_law(&l, (double)s->tokens, s->topk, s->experts, ep, s->routing.alpha);
    else if (s->routing.dist == MODEL_MOE_UNIFORM)
        load_uniform(&l, (double)s->experts / ep, all / ep, (double)s->tokens);
    else
        load_balanced(&l, (double)s->experts / ep, all / ep);
    ModelKernelTime t = moe_kernel(hw, &c, &l);
    g_free(l.rows);
    t.key.kind = MODEL_KERNEL_MOE;
    t.key.word[MODEL_KEY_MOE_DTYPE] = model_gemm_dtype_name(s->dtype);
    t.key.word[MODEL_KEY_MOE_DIST] = dist_name(&s->routing);
    t.key.dim[MODEL_KEY_MOE_TOKENS] = (double)s->tokens;
    t.key.dim[MODEL_KEY_MOE_HIDDEN] = s->hidden;
    t.key.dim[MODEL_KEY_MOE_INTER] = s->inter;
    t.key.dim[MODEL_KEY_MOE_TOPK] = s->topk;
    t.key.dim[MODEL_KEY_MOE_EXPERTS] = s->experts;
    t.key.dim[MODEL_KEY_MOE_TP] = tp;
    t.key.dim[MODEL_KEY_MOE_EP] = ep;
    t.key.dim[MODEL_KEY_MOE_ROUTES] = all;
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
    /* a measured table's nearest routing (tables have balanced and power-law rows only) */
    key->word[MODEL_KEY_MOE_DIST] = "balanced";
    key->dim[MODEL_KEY_MOE_HIDDEN] = hidden;
    key->dim[MODEL_KEY_MOE_INTER] = inter;
    key->dim[MODEL_KEY_MOE_EXPERTS] = local * ep;
    key->dim[MODEL_KEY_MOE_TP] = 1;
    key->dim[MODEL_KEY_MOE_EP] = ep;
    key->dim[MODEL_KEY_MOE_ROUTES] = all_pairs;
}

ModelKernelTime model_moe_local_time(const NetHardware *hw, ModelGemmDtype dtype, double hidden,
                                     double inter, double local, double pairs, double all_pairs,
                                     double tokens)
{
    double ep = pairs > 0 && all_pairs >= pairs ? all_pairs / pairs : 1;
    MoeCall c = {
        .dtype = dtype,
        .hidden = hidden,
        .inter = inter,
        .all_pairs = all_pairs,
        .tokens = tokens,
        .rows_per_expert = local > 0 ? all_pairs / local : 0,
        .ep = ep > 1.000001,
    };
    MoeLoad l;
    load_uniform(&l, local, pairs, tokens);
    ModelKernelTime t = moe_kernel(hw, &c, &l);
    local_key(&t.key, dtype, hidden, inter, local, pairs, all_pairs);
    return t;
}

bool model_moe_routing_parse(const char *word, ModelMoeRouting *out)
{
    if (!word || strcmp(word, "balanced") == 0) {
        *out = (ModelMoeRouting){MODEL_MOE_BALANCED, 0};
        return true;
    }
    if (!g_str_has_prefix(word, "power_law_"))
        return false;
    char *end = NULL;
    double a = g_ascii_strtod(word + strlen("power_law_"), &end);
    if (end == word + strlen("power_law_") || *end || !(a > 1) || !isfinite(a))
        return false;
    *out = (ModelMoeRouting){MODEL_MOE_POWER_LAW, a};
    return true;
}

bool model_moe_kernel_parse(const char *word, ModelMoeKernel *out)
{
    static const struct {
        const char *name;
        ModelMoeKernel b;
    } names[] = {
        {"auto", MODEL_MOE_KERNEL_AUTO},         {"triton", MODEL_MOE_KERNEL_TRITON},
        {"triton_mxfp4", MODEL_MOE_KERNEL_OAI_MXFP4}, {"cutlass", MODEL_MOE_KERNEL_CUTLASS},
        {"flashinfer_cutlass", MODEL_MOE_KERNEL_CUTLASS}, {"deepgemm", MODEL_MOE_KERNEL_DEEPGEMM},
        {"marlin", MODEL_MOE_KERNEL_MARLIN},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        if (word && strcmp(word, names[i].name) == 0) {
            *out = names[i].b;
            return true;
        }
    return false;
}
