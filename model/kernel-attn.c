/* model/kernel-attn.c — the attention kernel cost model (model/kernel-attn.h).
 *
 * Prefill, chunked prefill and mixed batches: FlashAttention-3's forward as vLLM calls it
 * (flash_attn_varlen_func over the paged cache). Query rows are packed by GQA group (pack_gqa,
 * on for varlen calls) into tiles of kBlockM rows per (sequence, KV head); a tile walks its
 * causal (or windowed) K/V range in kBlockN blocks (tile sizes: hopper/tile_size.h). A
 * persistent scheduler hands tiles to the SMs longest first, so the compute time is
 * max(sum of tile times / SMs, longest tile). A tile costs tile_ns plus, per block,
 * kBlockM x kBlockN x 2 x (head_dim + v_head_dim + 2 x softmax_dims) FLOPs at mma_eff of the
 * SM's share of the dense peak: QK^T and PV at the tensor-core rate, the softmax (exp, max,
 * rescale of the scores) as softmax_dims more dimensions of work — which is why throughput
 * rises with head_dim (Shah et al. 2024, "FlashAttention-3", fig. 5). When the tiles cannot
 * fill the SMs, FA3 splits each tile's K/V (num_splits_heuristic) and a combine kernel merges
 * the splits. The HBM term (Q, O and each sequence's K/V once) merges with the compute one as
 * an overlap norm (c^p + m^p)^(1/p): they overlap, not perfectly.
 *
 * Decode (every sequence has one query row: vllm-flash-attn's one-MMA-warpgroup kernel,
 * kBlockM 64 for head_dim <= 128; speculative rows take the prefill path): tiles of
 * (sequence, KV head) split along the K/V (FlashDecoding) by the same heuristic, capped at
 * vLLM's 32 splits under full CUDA graphs; each split streams its K/V at min(HBM share,
 * per-block cap), a block costing at least decode_block_ns — so decode reads K/V once per KV
 * head and GQA is cheaper than MHA — then the combine.
 *
 * Both add the KV-cache write vLLM runs before the kernel (reshape_and_cache_flash: one thread
 * block per new token, so max(tokens x write_block_ns / SMs, bytes / HBM)) and a fixed time
 * (the two kernels' prologue, tail and the gap between them, inside a CUDA graph). With
 * contiguous K/V (FA3's own benchmark, MLA prefill) there is no cache write, the tiles are the
 * TMA ones and the overlap is closer.
 */
#include "kernel-attn.h"

#include <math.h>
#include <string.h>

#include <glib.h>

#include "../sched/program.h"
#include "kernel-gemm.h"

/* The constants of one kernel family. */
typedef struct {
    double fixed_ns;        /* fixed time of a prefill call (cache write + kernel) */
    double fixed_decode_ns; /* ... of a decode call */
    double mma_eff;         /* fraction of the SM's dense bf16 peak a K/V block reaches */
    double softmax_dims;    /* softmax work per score, in head dimensions */
    double tile_ns;         /* per query tile: Q load, O store, pipeline fill */
    double fp8_mma_eff;     /* the same with an fp8 KV cache (FA3 runs its fp8 kernel) */
    double fp8_softmax_dims;
    double fp8_tile_ns;
    double fp8_wide_slowdown;    /* fp8, head_dim > 192: IntraWGOverlap off for paged KV */
    double prefill_bw_eff;       /* HBM efficiency of the prefill kernel's traffic */
    double overlap_norm;         /* p of the compute / memory norm */
    double decode_tile_ns;       /* per decode split tile */
    double fp8_decode_tile_ns;   /* ... with an fp8 cache (descaling, V transposed in smem) */
    double decode_mma_eff;       /* one-warpgroup kernel's fraction of the SM's peak */
    double decode_block_ns;      /* a decode K/V block's floor: its loads and the softmax in
                                    series, with nothing to overlap them (one query row) */
    double decode_bw_eff;        /* HBM efficiency of decode's K/V stream */
    double fp8_decode_bw_eff;    /* ... with an fp8 cache: the fp8 MMA needs V transposed in
                                    shared memory, so fewer bytes per second stream */
    double block_bw_bytes_per_s; /* what one thread block streams at most (latency-bound) */
    double combine_ns;           /* fixed time of the split-KV combine kernel */
    double l2_speedup;           /* bandwidth gain when the K/V fits in L2 (warm_l2) */
    double l2_fill;              /* fraction of L2 the K/V may take and still hit */
    double write_block_ns;       /* per new token (one thread block) of the cache write, per SM */
    double fp8_write_block_ns;   /* ... when it quantizes to an fp8 cache */
    double contig_fixed_ns;      /* fixed time of the kernel alone (contiguous K/V, no write) */
    double contig_bw_eff;        /* HBM efficiency with TMA loads of contiguous K/V */
    double contig_overlap_norm;  /* p of the norm for contiguous K/V (TMA overlaps better) */
    bool sm90_tiles;             /* FA3's tile sizes, else FA2's */
} AttnParams;

/* FlashAttention-3 (vllm_flash_attn_fa3). Fitted on AIConfigurator's vLLM 0.24.0 attention
 * tables for H100 SXM (aic-core/.../h100_sxm/attention/vllm/0.24.0: context_attention_perf,
 * 50,252 prefill points, and generation_attention_perf, 61,366 decode points, kernel_source
 * fa3; each point one layer's KV-cache write + attention replayed in a CUDA graph), by a
 * coordinate search minimising median + p90 / 2 of |relative error|, prefill and decode
 * constants separately; H200 SXM's tables are the held-out check. Except: contig_overlap_norm,
 * fitted on the FlashAttention-3 paper's head_dim-128 figures (Shah et al. 2024, fig. 5,
 * 12 points; head_dim 64 and 256 held out); contig_bw_eff and contig_fixed_ns, assumed
 * (0.9 of HBM as TMA streams reach; the kernel alone taken as half of the two-kernel fixed
 * time). */
static const AttnParams FA3 = {
    .fixed_ns = 10320,
    .fixed_decode_ns = 9431,
    .mma_eff = 0.896,
    .softmax_dims = 50.5,
    .tile_ns = 1252,
    .fp8_mma_eff = 0.69,
    .fp8_softmax_dims = 17.0,
    .fp8_tile_ns = 2364,
    .fp8_wide_slowdown = 1.5,
    .prefill_bw_eff = 0.522,
    .overlap_norm = 1.372,
    .decode_tile_ns = 2599,
    .fp8_decode_tile_ns = 3628,
    .decode_mma_eff = 0.896, /* the prefill's: the same main loop */
    .decode_block_ns = 400,
    .decode_bw_eff = 0.915,
    .fp8_decode_bw_eff = 0.747,
    .block_bw_bytes_per_s = 64.5e9,
    .combine_ns = 456,
    .l2_speedup = 1.18,
    .l2_fill = 0.8,
    .write_block_ns = 113,
    .fp8_write_block_ns = 191,
    .sm90_tiles = true,
    .contig_fixed_ns = 5000,
    .contig_bw_eff = 0.9,
    .contig_overlap_norm = 2.6,
};

/* The constants of family `k`: FA3's fitted ones, with what the family is known to change.
 * Only FA3 is fitted; the others keep FA3's overheads and say where their figures come from. */
static AttnParams params_of(ModelAttnKernel k)
{
    AttnParams p = FA3;
    switch (k) {
    case MODEL_ATTN_FA2:
        /* Dao 2023 ("FlashAttention-2"): forward up to 73 % of A100's peak at head_dim 128;
         * with FA3's softmax share that is an MMA efficiency of 0.73 x (128 + 50.5) / 128,
         * capped at 1. No fp8 kernel: an fp8 cache is read at bf16 rates. FA2's tiles. */
        p.mma_eff = p.fp8_mma_eff = p.decode_mma_eff = 1.0;
        p.fp8_softmax_dims = p.softmax_dims;
        p.fp8_tile_ns = p.tile_ns;
        p.fp8_wide_slowdown = 1;
        p.sm90_tiles = false;
        break;
    case MODEL_ATTN_TRITON:
        /* Not fitted, assumed: FA2's structure at half FA3's MMA efficiency (Triton's
         * attention has no warp specialization nor asynchronous softmax overlap). */
        p.mma_eff = p.fp8_mma_eff = p.decode_mma_eff = FA3.mma_eff / 2;
        p.fp8_wide_slowdown = 1;
        p.sm90_tiles = false;
        break;
    case MODEL_ATTN_FLASHMLA:
    case MODEL_ATTN_FLASHMLA_SPARSE:
    case MODEL_ATTN_ASCEND_SFA:
        /* FlashMLA's README (deepseek-ai/FlashMLA, H800 SXM5): dense decode up to 3,000 GB/s
         * (0.9 of 3.35 TB/s) and 660 TFLOPS (0.67 of 989) — its softmax is counted in those
         * figures; sparse prefill 640 TFLOPS (0.65). Not fitted. */
        p.mma_eff = p.fp8_mma_eff = 0.65;
        p.decode_mma_eff = 0.67;
        p.softmax_dims = p.fp8_softmax_dims = 0;
        p.decode_bw_eff = p.fp8_decode_bw_eff = 0.9;
        p.fp8_wide_slowdown = 1;
        break;
    default: /* FA3 and its MLA decode, FlashInfer (its Hopper kernels are FA3's design), MLA
                prefill, Ascend FIA (not fitted: FA3's structure with the device's figures) */
        break;
    }
    return p;
}

/* ---- kernel choice ---- */

static const char *const NAMES[MODEL_ATTN_COUNT] = {
    "auto",        "fa3",        "fa2",        "flashinfer",
    "triton",      "flashmla",   "fa3_mla",    "flashmla_sparse",
    "mla_prefill", "ascend_fia", "ascend_sfa",
};

const char *model_attn_kernel_name(ModelAttnKernel k)
{
    return (unsigned)k < MODEL_ATTN_COUNT ? NAMES[k] : "auto";
}

bool model_attn_kernel_parse(const char *name, ModelAttnKernel *out)
{
    for (int k = 0; name && k < MODEL_ATTN_COUNT; k++)
        if (strcmp(name, NAMES[k]) == 0) {
            *out = (ModelAttnKernel)k;
            return true;
        }
    return false;
}

ModelAttnKernel model_attn_kernel_resolve(const NetHardware *hw, const ModelAttnShape *s,
                                          bool decode)
{
    if (s->kernel != MODEL_ATTN_AUTO)
        return s->kernel;
    NetPlatform pf = hw ? hw->platform : NET_PLATFORM_CUDA;
    NetArch arch = hw ? hw->arch : NET_ARCH_UNKNOWN;
    if (pf == NET_PLATFORM_NPU)
        return s->sparse_topk ? MODEL_ATTN_ASCEND_SFA : MODEL_ATTN_ASCEND_FIA;
    bool hopper_up = arch == NET_ARCH_SM90 || arch == NET_ARCH_SM100 || arch == NET_ARCH_SM103;
    if (s->sparse_topk && pf == NET_PLATFORM_CUDA && hopper_up)
        return MODEL_ATTN_FLASHMLA_SPARSE;
    if (s->mla && pf == NET_PLATFORM_CUDA && decode && hopper_up)
        return arch == NET_ARCH_SM90 && s->kv_bytes != 1 ? MODEL_ATTN_FA3_MLA : MODEL_ATTN_FLASHMLA;
    if (s->mla && pf == NET_PLATFORM_CUDA)
        return MODEL_ATTN_MLA_PREFILL;
    switch (arch) {
    case NET_ARCH_SM90:
        return MODEL_ATTN_FA3;
    case NET_ARCH_SM80:
    case NET_ARCH_SM86:
    case NET_ARCH_SM89:
        return MODEL_ATTN_FA2;
    case NET_ARCH_SM100:
    case NET_ARCH_SM103:
    case NET_ARCH_SM120:
        return MODEL_ATTN_FLASHINFER;
    default:
        return MODEL_ATTN_TRITON;
    }
}

/* ---- tiles ---- */

typedef struct {
    uint32_t m, n; /* kBlockM query rows, kBlockN keys */
} Tile;

/* FA3's forward tile (hopper/tile_size.h, tile_size_fwd_sm90). vLLM's paged cache loads
 * without TMA (paged_kv_non_TMA: its 16- or 64-token pages are not multiples of kBlockN). */
static Tile tile_sm90(uint32_t hd, bool causal, bool local, bool fp8, bool paged)
{
    if (fp8) {
        if (hd <= 64)
            return (Tile){192, 160};
        if (hd <= 96)
            return (Tile){192, 128};
        if (hd <= 128)
            return (Tile){128, paged ? 160 : 224};
        if (hd <= 192)
            return (Tile){128, 160};
        return (Tile){128, local ? 64 : 128};
    }
    if (hd <= 64)
        return (Tile){192, causal ? 128 : local || paged ? 160 : 192};
    if (hd <= 96)
        return (Tile){192, local || paged ? 128 : 144};
    if (hd <= 128)
        return (Tile){128, causal || local || paged ? 128 : 176};
    if (hd <= 192)
        return (Tile){128, paged || local ? 96 : 128};
    return (Tile){128, local ? 64 : 80};
}

/* FA2's forward tile with a paged cache (hopper/tile_size.h, tile_size_fwd_sm8x). */
static Tile tile_sm8x(uint32_t hd, bool local)
{
    if (hd <= 64)
        return (Tile){128, 128};
    if (hd <= 128)
        return (Tile){128, local ? 48 : 64};
    return (Tile){128, 64};
}

/* The shape with its defaults filled and its dimensions as doubles. */
typedef struct {
    AttnParams params; /* the family's constants */
    double qpk;        /* query heads per KV head (GQA group) */
    double kvh, hd, hdv, kvb;
    double kv_width; /* cached elements per token and KV head: K and V, or MLA's latent
                        (V is its first v_head_dim elements; fp8_ds_mla's scales ignored) */
    bool fp8, causal;
    bool paged; /* K/V from the paged cache (written first), else contiguous */
    uint32_t window, topk;
    bool topk_fixed; /* FlashMLA sparse: every row walks its whole index_topk list (below) */
    Tile t;
    double units;    /* SMs; 0 = unknown */
    double sm_flops; /* dense bf16 FLOP/s of one SM (of the device when units is 0) */
    double bw;       /* HBM B/s; 0 = unknown */
} Dims;

static Dims dims_of(const NetHardware *hw, const ModelAttnShape *s, ModelAttnKernel k)
{
    Dims d;
    memset(&d, 0, sizeof d);
    d.params = params_of(k);
    d.kvh = s->kv_heads ? s->kv_heads : 1;
    d.qpk = s->heads > d.kvh ? (double)s->heads / d.kvh : 1;
    d.hd = s->head_dim;
    d.hdv = s->v_head_dim ? s->v_head_dim : s->head_dim;
    d.kvb = s->kv_bytes ? s->kv_bytes : 2;
    bool latent = k == MODEL_ATTN_FLASHMLA || k == MODEL_ATTN_FA3_MLA ||
                  k == MODEL_ATTN_FLASHMLA_SPARSE || k == MODEL_ATTN_ASCEND_SFA;
    d.kv_width = latent ? d.hd : d.hd + d.hdv;
    d.fp8 = d.kvb < 2 && d.params.sm90_tiles && k != MODEL_ATTN_FLASHMLA &&
            k != MODEL_ATTN_FLASHMLA_SPARSE && k != MODEL_ATTN_ASCEND_SFA;
    d.causal = s->causal;
    d.paged = !s->contiguous_kv && k != MODEL_ATTN_MLA_PREFILL;
    d.window = s->window;
    d.topk = s->sparse_topk;
    /* vLLM's FlashMLA sparse path hands the kernels index_topk slots per row whatever the context
     * (flashmla_sparse.py: topk_tokens_tensor = topk for every sequence, "constant for full-CG";
     * slots past the context are -1, masked, not skipped): AIConfigurator's vLLM 0.24.0 DSA decode
     * modules are flat in the context below index_topk */
    d.topk_fixed = k == MODEL_ATTN_FLASHMLA_SPARSE;
    if (k == MODEL_ATTN_FLASHMLA || k == MODEL_ATTN_FLASHMLA_SPARSE || k == MODEL_ATTN_ASCEND_SFA ||
        k == MODEL_ATTN_FA3_MLA)
        d.t = (Tile){64, 64}; /* FlashMLA: 64 query heads x 64 keys per block; FA3's MLA
                                  kernel (headdim_v 512) the same (tile_size_fwd_sm90) */
    else
        d.t = d.params.sm90_tiles ? tile_sm90(s->head_dim, s->causal, s->window > 0, d.fp8, d.paged)
                                  : tile_sm8x(s->head_dim, s->window > 0);
    d.units = hw->compute_units;
    double peak = model_kernel_peak(hw, NET_PEAK_BF16);
    d.sm_flops = d.units > 0 ? peak / d.units : peak;
    d.bw = hw->hbm_bw_bytes_per_s;
    return d;
}

/* FLOPs of one K/V block of one tile. */
static double block_flops(const Dims *d, double rows)
{
    double sm = d->fp8 ? d->params.fp8_softmax_dims : d->params.softmax_dims;
    return rows * d->t.n * 2.0 * (d->hd + d->hdv + 2.0 * sm);
}

/* The keys [lo, hi) that new rows first..last (0-based among the q_len new rows) attend. */
static void key_range(const Dims *d, const ModelAttnSeq *q, double first, double last, double *lo,
                      double *hi)
{
    double cached = q->kv_len > q->q_len ? (double)q->kv_len - q->q_len : 0;
    *hi = d->causal ? MIN(cached + last, (double)q->kv_len) : (double)q->kv_len;
    *lo = d->window ? MAX(0.0, cached + first + 1.0 - d->window) : 0;
    if (d->topk) { /* sparse: each row attends its own top-k, gathered */
        *lo = 0;
        *hi = d->topk_fixed ? (double)d->topk : MIN(*hi, (double)d->topk);
    }
}

/* Accumulates the tiles of the work. */
typedef struct {
    double tiles;    /* tile count */
    double sum_ns;   /* sum of tile times */
    double max_ns;   /* the longest tile */
    double mma_ns;   /* sum of the tiles' MMA time (decode: what compute alone takes) */
    double flops;    /* useful FLOPs */
    double kv_bytes; /* K/V read once per sequence and KV head */
    double rows;     /* new query tokens */
} Work;

/* The most splits vLLM lets FA3 use in a decode under full CUDA graphs (flash_attn.py,
 * _DEFAULT_MAX_NUM_SPLITS_FOR_CUDA_GRAPH; its default cudagraph mode captures decodes in full
 * graphs); other calls leave FA3 its own limit, 128. */
#define ATTN_MAX_SPLITS_GRAPHED 32.0
#define ATTN_MAX_SPLITS 128.0

static double split_efficiency(double tiles, double units, double nblk, double s)
{
    double waves = tiles * s / units;
    double eff = waves / ceil(waves);
    return floor(nblk / s) < 4 ? 0.85 * eff : eff;
}

/* FA3's split-KV count as vLLM's fork ships it (vllm-project/flash-attention,
 * hopper/heuristics.h, num_splits_heuristic): none when the tiles already fill 80 % of the SMs
 * or the longest K/V has at most 4 blocks (8 with 32 tiles or more); else the fewest splits
 * whose wave efficiency is within 95 % of the best, a split of fewer than 4 blocks counting
 * 0.85, at most min(most, SMs, K/V blocks). (Its split of a non-causal K/V larger than L2 with
 * many query tiles is not modelled.) */
static double fa_splits(double tiles, double units, double nblk, double most)
{
    if (units <= 0 || tiles >= 0.8 * units || nblk <= 4 || (nblk <= 8 && tiles >= 32))
        return 1;
    most = MIN(MIN(most, units), nblk);
    double best = 0;
    for (double s = 1; s <= most; s++)
        best = MAX(best, split_efficiency(tiles, units, nblk, s));
    for (double s = 1; s <= most; s++)
        if (split_efficiency(tiles, units, nblk, s) >= 0.95 * best)
            return s;
    return 1;
}

/* The split combine kernel: each split's partial O and LSE in fp32, read and reduced. */
static double combine_ns(const Dims *d, double rows, double splits)
{
    if (splits <= 1)
        return 0;
    double bytes = rows * d->qpk * d->kvh * splits * (d->hdv + 1) * 4.0 * 2.0;
    return d->params.combine_ns + (d->bw > 0 ? bytes / (d->bw * d->params.decode_bw_eff) * 1e9 : 0);
}

/* ---- prefill ---- */

/* Query tile j of a sequence: the sum of its splits' times (each a fixed cost and its K/V
 * blocks) and the longest split. */
static void prefill_tile(const Dims *d, const ModelAttnSeq *q, double j, double tile_ns,
                         double blk_ns, double splits, double *sum_ns, double *max_ns)
{
    double m = d->t.m, n = d->t.n;
    double first = floor(j * m / d->qpk);
    double last = MIN((double)q->q_len, ceil((j + 1) * m / d->qpk));
    double lo, hi;
    key_range(d, q, first, last, &lo, &hi);
    double nblk = hi > lo ? ceil(hi / n) - floor(lo / n) : 0;
    /* a split with no block of this tile's range exits at once */
    double used = MAX(1.0, MIN(splits, nblk));
    *sum_ns = used * tile_ns + nblk * blk_ns;
    *max_ns = tile_ns + ceil(nblk / used) * blk_ns;
}

/* Query tiles of one sequence evaluated one by one; beyond, sampled (cost O(this) per call). */
#define ATTN_TILE_SAMPLES 512.0

static void prefill_seq(const Dims *d, const ModelAttnSeq *q, double mult, double splits, Work *w)
{
    const AttnParams *p = &d->params;
    double rows = (double)q->q_len * d->qpk, m = d->t.m;
    double mb = ceil(rows / m);
    double eff = d->fp8 ? p->fp8_mma_eff : p->mma_eff;
    double rate = eff * d->sm_flops / (d->fp8 && d->hd > 192 ? p->fp8_wide_slowdown : 1);
    double tile_ns = d->units > 0 ? (d->fp8 ? p->fp8_tile_ns : p->tile_ns) : 0;
    double blk_ns = block_flops(d, m) / rate * 1e9;
    double count = mult * d->kvh, sum = 0, most = 0;
    /* tile j's time grows (causal) or stays (windowed, full) with j: at most ATTN_TILE_SAMPLES
     * tiles are evaluated, each standing for the `stride` tiles around it; the last (longest)
     * one is evaluated too */
    double stride = ceil(mb / ATTN_TILE_SAMPLES), j = -1;
    for (double j0 = 0; j0 < mb; j0 += stride) {
        double group = MIN(stride, mb - j0);
        j = j0 + floor(group / 2);
        prefill_tile(d, q, j, tile_ns, blk_ns, splits, &sum, &most);
        w->sum_ns += sum * count * group;
    }
    if (j != mb - 1) /* a one-tile sequence (a decode in a mixed batch) was just evaluated */
        prefill_tile(d, q, mb - 1, tile_ns, blk_ns, splits, &sum, &most);
    w->max_ns = MAX(w->max_ns, most);
    w->tiles += mb * count;
    /* useful score pairs: each new row against its causal / windowed keys */
    double cached = q->kv_len > q->q_len ? (double)q->kv_len - q->q_len : 0, pairs;
    double sparse_keys = d->topk_fixed ? (double)d->topk : MIN((double)d->topk, (double)q->kv_len);
    if (d->topk)
        pairs = (double)q->q_len * sparse_keys;
    else if (!d->causal)
        pairs = (double)q->q_len * q->kv_len;
    else
        pairs = (double)q->q_len * cached + (double)q->q_len * (q->q_len + 1.0) / 2.0;
    if (d->window && !d->topk)
        pairs = MIN(pairs, (double)q->q_len * d->window);
    w->flops += mult * d->qpk * d->kvh * pairs * 2.0 * (d->hd + d->hdv);
    double keys = d->topk     ? (double)q->q_len * sparse_keys
                  : d->window ? MIN((double)q->kv_len, (double)d->window + q->q_len)
                              : (double)q->kv_len;
    w->kv_bytes += mult * d->kvh * keys * d->kv_width * d->kvb;
    w->rows += mult * q->q_len;
}

/* FA3 splits the K/V of a prefill too when its query tiles are too few to fill the SMs. */
static double prefill_splits(const Dims *d, const ModelAttnSeq *seqs, uint32_t n, double mult)
{
    double tiles = 0, nblk = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* FA3 counts a windowed call's blocks over window + kBlockM keys (seqlen_k_loaded) */
        double span = d->window ? MIN((double)seqs[i].kv_len, (double)d->window + d->t.m)
                                : (double)seqs[i].kv_len;
        if (d->topk)
            span = d->topk_fixed ? (double)d->topk : MIN(span, (double)d->topk);
        tiles += ceil((double)seqs[i].q_len * d->qpk / d->t.m) * d->kvh * mult;
        nblk = MAX(nblk, ceil(span / d->t.n));
    }
    return fa_splits(tiles, d->units, nblk, ATTN_MAX_SPLITS);
}

/* The KV-cache write of `tokens` new rows (reshape_and_cache_flash: one block per token). */
static double write_ns(const Dims *d, double tokens)
{
    if (!d->paged)
        return 0;
    double per = d->kvb < 2 ? d->params.fp8_write_block_ns : d->params.write_block_ns;
    double blocks = d->units > 0 ? tokens * per / d->units : 0;
    double bytes = tokens * d->kvh * d->kv_width * (2.0 + d->kvb);
    double mem = d->bw > 0 ? bytes / (d->bw * d->params.decode_bw_eff) * 1e9 : 0;
    return MAX(blocks, mem);
}

static double prefill_ns(const Dims *d, const Work *w, double *mem_out, double *comp_out)
{
    const AttnParams *p = &d->params;
    double comp = d->units > 0 ? MAX(w->sum_ns / d->units, w->max_ns) : w->sum_ns;
    double qo = w->rows * d->qpk * d->kvh * (d->hd + d->hdv) * 2.0;
    double eff = d->paged ? p->prefill_bw_eff : p->contig_bw_eff;
    double mem = d->bw > 0 ? (w->kv_bytes + qo) / (d->bw * eff) * 1e9 : 0;
    *mem_out = mem;
    *comp_out = comp;
    double k = d->paged ? p->overlap_norm : p->contig_overlap_norm;
    return pow(pow(comp, k) + pow(mem, k), 1.0 / k);
}

/* ---- decode ---- */

/* The keys a decode row streams: its context, or its window. */
static double decode_span(const Dims *d, const ModelAttnSeq *q)
{
    double k = q->kv_len;
    return d->window ? MIN(k, (double)d->window + q->q_len - 1.0) : k;
}

static double decode_ns(const Dims *d, bool warm_l2, double l2_bytes, const ModelAttnSeq *seqs,
                        uint32_t n, double mult, Work *w, double *mem_out, double *comp_out)
{
    const AttnParams *p = &d->params;
    /* vllm-flash-attn's one-MMA-warpgroup tile: kBlockM 64 for head_dim <= 128 */
    double m = d->hd <= 128 && d->t.m > 64 ? 64 : d->t.m, nb = d->t.n;
    double mblocks = 0, nblk_max = 0, heads = d->qpk * d->kvh;
    for (uint32_t i = 0; i < n; i++) {
        mblocks += ceil((double)seqs[i].q_len * d->qpk / m) * d->kvh * mult;
        double loaded = d->window ? MIN((double)seqs[i].kv_len, (double)d->window + m)
                                  : (double)seqs[i].kv_len; /* FA3's seqlen_k_loaded */
        nblk_max = MAX(nblk_max, ceil(loaded / nb));
        w->flops +=
            mult * heads * seqs[i].q_len * decode_span(d, &seqs[i]) * 2.0 * (d->hd + d->hdv);
        w->kv_bytes += mult * d->kvh * decode_span(d, &seqs[i]) * d->kv_width * d->kvb;
        w->rows += mult * seqs[i].q_len;
    }
    double splits = fa_splits(mblocks, d->units, nblk_max, ATTN_MAX_SPLITS_GRAPHED);
    double l2 = warm_l2 && w->kv_bytes <= l2_bytes * p->l2_fill ? p->l2_speedup : 1.0;
    double bw = d->bw * (d->fp8 ? p->fp8_decode_bw_eff : p->decode_bw_eff) * l2;
    double active = d->units > 0 ? MIN(d->units, mblocks * splits) : 1;
    double block_bw = bw > 0 ? MIN(bw / active, p->block_bw_bytes_per_s * l2) : 0;
    double rate = p->decode_mma_eff * d->sm_flops;
    double tile_ns = d->units > 0 ? (d->fp8 ? p->fp8_decode_tile_ns : p->decode_tile_ns) : 0;
    for (uint32_t i = 0; i < n; i++) {
        double nblk = ceil(decode_span(d, &seqs[i]) / nb);
        double used = MAX(1.0, MIN(splits, nblk)); /* empty splits exit at once */
        double per = ceil(nblk / used);
        /* the split's keys: whole blocks, but loads past the sequence's end are predicated off */
        double keys = MIN(per * nb, decode_span(d, &seqs[i]));
        double bytes = keys * d->kv_width * d->kvb;
        /* each of the sequence's ceil(rows / m) tiles (counted below) computes m padded rows:
         * a tile's block is m rows, never the whole sequence's (MLA at 128 heads: two tiles) */
        double comp = per * MAX(p->decode_block_ns, block_flops(d, m) / rate * 1e9);
        double t = tile_ns + MAX(block_bw > 0 ? bytes / block_bw * 1e9 : 0, comp);
        double count = ceil((double)seqs[i].q_len * d->qpk / m) * d->kvh * mult * used;
        w->mma_ns += comp * count;
        w->sum_ns += t * count;
        w->max_ns = MAX(w->max_ns, t);
        w->tiles += count;
    }
    double sched = d->units > 0 ? MAX(w->sum_ns / d->units, w->max_ns) : w->sum_ns;
    double mem = bw > 0 ? w->kv_bytes / bw * 1e9 : 0;
    double t = MAX(sched, mem);
    t += combine_ns(d, w->rows, splits);
    /* what bounds it: the MMA alone, against the K/V stream (at the HBM or per-block rate) */
    double mma = d->units > 0 ? w->mma_ns / d->units : w->mma_ns;
    *comp_out = mma;
    *mem_out = MAX(mem, sched - mma);
    return t;
}

/* ---- FlashMLA sparse (DSA) ---- */

/* vLLM's FlashMLASparseImpl (vllm/v1/attention/backends/mla/flashmla_sparse.py) runs two FlashMLA
 * kernels over the fp8_ds_mla cache: the FP8 sparse decode kernel (dequantizes to bf16, MMA in
 * bf16) for decode rows, and — with at least MIN_HEADS_FOR_BF16_PREFILL = 32 heads on the rank —
 * the bf16 sparse prefill kernel for prefill rows, over K/V first gathered and upconverted to bf16
 * (cp_gather_and_upconvert_fp8_kv_cache); with fewer heads every row goes through the decode
 * kernel ("mixed batch"). The decode kernel takes h_q = 64 or 128 only, so vLLM pads the heads
 * (fp8_decode_padded_heads); the prefill kernel pads them to 128. Their MMA rates are FlashMLA's
 * README figures: sparse decoding 410 TFLOPS on H800 SXM5 and "up to 350" on B200; sparse prefill
 * 640 TFLOPS on H800 and 1450 on B200 (deepseek-ai/FlashMLA README, Performance); H800 has the
 * H100 SXM's 989.4 dense bf16 TFLOPS. Not fitted. */
#define SPARSE_MIN_HEADS_BF16_PREFILL 32.0
#define H800_BF16_TFLOPS 989.4

static double sparse_eff(const NetHardware *hw, bool decode_kernel)
{
    bool blackwell = hw->arch == NET_ARCH_SM100 || hw->arch == NET_ARCH_SM103;
    double peak = model_kernel_peak(hw, NET_PEAK_BF16) / 1e12;
    if (blackwell && peak > 0)
        return MIN(1.0, (decode_kernel ? 350.0 : 1450.0) / peak);
    return (decode_kernel ? 410.0 : 640.0) / H800_BF16_TFLOPS;
}

/* The kernel time of FlashMLA sparse over `seqs` (both kernels, the upconvert gather included);
 * accumulates `w` (FLOPs and bytes of the padded heads: what the kernels compute). */
static double sparse_ns(const NetHardware *hw, const Dims *base, const ModelAttnSeq *seqs,
                        uint32_t n, double mult, Work *w, double *mem_out, double *comp_out)
{
    double heads = base->qpk * base->kvh, t = 0;
    bool mixed = heads < SPARSE_MIN_HEADS_BF16_PREFILL;
    *mem_out = *comp_out = 0;
    for (int pass = 0; pass < 2; pass++) {
        bool dec = pass == 0; /* pass 0: the FP8 decode kernel; 1: the bf16 prefill kernel */
        Dims d = *base;
        d.kvh = 1;
        d.qpk = dec && heads <= 64 ? 64 : 128;
        d.params.mma_eff = sparse_eff(hw, dec);
        /* the K/V comes gathered by index into shared memory, not through FA3's paged loads:
         * the contiguous stream's HBM efficiency and overlap (the README's compute-bound
         * figures are reached with the gather hidden); the cache write stays the caller's */
        d.paged = false;
        double tiles = 0, nblk = ceil((double)d.topk / d.t.n), gathered = 0;
        for (uint32_t i = 0; i < n; i++)
            if (seqs[i].q_len && (seqs[i].q_len == 1 || mixed) == dec) {
                tiles += ceil((double)seqs[i].q_len * d.qpk / d.t.m) * mult;
                gathered += (double)seqs[i].kv_len * mult;
            }
        if (tiles == 0)
            continue;
        double splits = fa_splits(tiles, d.units, nblk, ATTN_MAX_SPLITS);
        Work one;
        memset(&one, 0, sizeof one);
        for (uint32_t i = 0; i < n; i++)
            if (seqs[i].q_len && (seqs[i].q_len == 1 || mixed) == dec)
                prefill_seq(&d, &seqs[i], mult, splits, &one);
        double mem, comp;
        t += prefill_ns(&d, &one, &mem, &comp) + combine_ns(&d, one.rows, splits);
        if (!dec) { /* the gather: each prefill's cached + new keys, fp8_ds_mla in, bf16 out */
            double bytes = gathered * (656.0 + 2.0 * d.hd);
            double up = d.bw > 0 ? bytes / (d.bw * d.params.decode_bw_eff) * 1e9 : 0;
            t += up + 2.0 * d.params.contig_fixed_ns; /* two more kernels in the call */
            mem += up;
        }
        *mem_out += mem;
        *comp_out += comp;
        w->flops += one.flops;
        w->kv_bytes += one.kv_bytes;
        w->rows += one.rows;
    }
    return t;
}

/* ---- the call ---- */

static ModelKernelTime attn_time(const NetHardware *hw, const ModelAttnShape *s,
                                 const ModelAttnSeq *seqs, uint32_t n, double mult)
{
    uint32_t max_q = 0;
    for (uint32_t i = 0; i < n; i++)
        max_q = MAX(max_q, seqs[i].q_len);
    /* decode-only batches run the split-KV path; speculative rows (q_len > 1) the tiled one */
    bool decode = max_q == 1 && !s->sparse_topk;
    ModelAttnKernel k = model_attn_kernel_resolve(hw, s, decode);
    Dims d = dims_of(hw, s, k);
    const AttnParams *p = &d.params;
    double fixed = !d.paged ? p->contig_fixed_ns : decode ? p->fixed_decode_ns : p->fixed_ns;
    ModelKernelTime r = {.ns = fixed};
    if (!s->heads || !s->head_dim || !max_q || !(mult > 0)) {
        r.bound = SCHED_BOUND_LAUNCH;
        return r;
    }
    Work w;
    memset(&w, 0, sizeof w);
    double mem = 0, comp = 0, kern;
    if (decode) {
        kern = decode_ns(&d, s->warm_l2, (double)hw->l2_bytes, seqs, n, mult, &w, &mem, &comp);
    } else if (d.topk_fixed) {
        kern = sparse_ns(hw, &d, seqs, n, mult, &w, &mem, &comp);
    } else {
        double splits = prefill_splits(&d, seqs, n, mult);
        for (uint32_t i = 0; i < n; i++)
            if (seqs[i].q_len)
                prefill_seq(&d, &seqs[i], mult, splits, &w);
        kern = prefill_ns(&d, &w, &mem, &comp) + combine_ns(&d, w.rows, splits);
    }
    double wr = write_ns(&d, w.rows);
    r.ns += kern + wr;
    r.flops = w.flops;
    r.bytes = w.kv_bytes + (d.paged ? w.rows * d.kvh * d.kv_width * (2.0 + d.kvb) : 0) +
              w.rows * d.qpk * d.kvh * (d.hd + d.hdv) * 2.0;
    model_kernel_set_bound(&r, fixed, comp, mem + wr);
    return r;
}

ModelKernelTime model_attn_time(const NetHardware *hw, const ModelAttnShape *s,
                                const ModelAttnSeq *seqs, uint32_t n)
{
    return attn_time(hw, s, seqs, seqs ? n : 0, 1.0);
}

ModelKernelTime model_attn_time_uniform(const NetHardware *hw, const ModelAttnShape *s,
                                        uint32_t batch, uint32_t q_len, uint32_t kv_len)
{
    ModelAttnSeq q = {.q_len = q_len, .kv_len = kv_len};
    return attn_time(hw, s, &q, batch ? 1 : 0, (double)batch);
}

/* ---- MLA's absorbed projections ---- */

ModelKernelTime model_mla_bmm_time(const NetHardware *hw, double heads, double rows, double in,
                                   double out)
{
    ModelGemmShape g = {.m = (uint64_t)MAX(0.0, rows), .n = (uint64_t)MAX(0.0, heads * out),
                        .k = (uint64_t)MAX(0.0, in), .dtype = MODEL_GEMM_BF16};
    ModelKernelTime t = model_gemm_time(hw, &g);
    double bytes = heads * (rows * in + in * out + rows * out) * 2.0;
    ModelKernelTime stream = model_elementwise_time(hw, bytes, 2.0 * heads * rows * in * out);
    return stream.ns > t.ns ? stream : t;
}
