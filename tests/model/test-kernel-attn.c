/* tests/model/test-kernel-attn.c — the attention kernel cost model: monotonic in sequence
 * length, context and batch; decode memory-bound at long context and prefill compute-bound at
 * long sequences; the fixed time at tiny sizes; GQA decode cheaper than MHA; throughput rising
 * with head_dim (FlashAttention-3's figures); causal and windowed cheaper than full; a varlen
 * call of identical sequences equal to the uniform one; a device without compute_units; absurd
 * inputs without NaN; the kernel family vLLM picks per device. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../model/kernel-attn.h"
#include "../../sched/program.h"

/* H100 SXM5's datasheet figures (989 TFLOPS dense bf16, 3.35 TB/s, 132 SMs, 50 MB L2). */
static NetHardware h100(void)
{
    NetHardware hw;
    memset(&hw, 0, sizeof hw);
    hw.platform = NET_PLATFORM_CUDA;
    hw.arch = NET_ARCH_SM90;
    hw.peak_flops[NET_PEAK_BF16] = 989e12;
    hw.peak_flops[NET_PEAK_FP8] = 1979e12;
    hw.hbm_bw_bytes_per_s = 3.35e12;
    hw.compute_units = 132;
    hw.l2_bytes = 50000000;
    return hw;
}

/* Llama-3-8B-like attention on one rank: 32 query heads, 8 KV heads, head_dim 128. */
static ModelAttnShape gqa(void)
{
    return (ModelAttnShape){.heads = 32, .kv_heads = 8, .head_dim = 128, .causal = true};
}

static double prefill_ns(const NetHardware *hw, const ModelAttnShape *s, uint32_t b, uint32_t l)
{
    return model_attn_time_uniform(hw, s, b, l, l).ns;
}

static double decode_ns(const NetHardware *hw, const ModelAttnShape *s, uint32_t b, uint32_t ctx)
{
    return model_attn_time_uniform(hw, s, b, 1, ctx).ns;
}

Test(kernel_attn, monotonic_in_seqlen_context_and_batch)
{
    NetHardware hw = h100();
    ModelAttnShape s = gqa();
    double last = 0;
    for (uint32_t l = 16; l <= 32768; l *= 2) {
        double t = prefill_ns(&hw, &s, 1, l);
        cr_assert_geq(t, last, "prefill seqlen %u: %g < %g", l, t, last);
        last = t;
    }
    last = 0;
    for (uint32_t c = 1; c <= 131072; c *= 2) {
        double t = decode_ns(&hw, &s, 8, c);
        cr_assert_geq(t, last, "decode context %u: %g < %g", c, t, last);
        last = t;
    }
    double lp = 0, ld = 0;
    for (uint32_t b = 1; b <= 1024; b *= 2) {
        double tp = prefill_ns(&hw, &s, b, 512), td = decode_ns(&hw, &s, b, 4096);
        cr_assert_geq(tp, lp, "prefill batch %u", b);
        cr_assert_geq(td, ld, "decode batch %u", b);
        lp = tp;
        ld = td;
    }
}

Test(kernel_attn, decode_memory_bound_and_prefill_compute_bound)
{
    NetHardware hw = h100();
    ModelAttnShape s = gqa();
    ModelKernelTime d = model_attn_time_uniform(&hw, &s, 64, 1, 32768);
    cr_assert_eq(d.bound, SCHED_BOUND_MEMORY);
    /* at least the K/V at the datasheet bandwidth, at most twice that */
    double kv = 64.0 * 32768 * 8 * 256 * 2;
    cr_assert_geq(d.ns, kv / 3.35e12 * 1e9);
    cr_assert_leq(d.ns, 2 * kv / 3.35e12 * 1e9);
    ModelKernelTime p = model_attn_time_uniform(&hw, &s, 1, 16384, 16384);
    cr_assert_eq(p.bound, SCHED_BOUND_COMPUTE);
    cr_assert_gt(p.flops, 0);
    cr_assert_gt(p.bytes, 0);
}

/* A one-token decode is the kernel's fixed time: microseconds, not the nanoseconds of its
 * roofline, and the op says so. */
Test(kernel_attn, fixed_time_at_tiny_sizes)
{
    NetHardware hw = h100();
    ModelAttnShape s = gqa();
    ModelKernelTime d = model_attn_time_uniform(&hw, &s, 1, 1, 16);
    cr_assert_eq(d.bound, SCHED_BOUND_LAUNCH);
    cr_assert_geq(d.ns, 5000);
    cr_assert_leq(d.ns, 20000);
    ModelKernelTime p = model_attn_time_uniform(&hw, &s, 1, 16, 16);
    cr_assert_geq(p.ns, 5000);
    cr_assert_leq(p.ns, 25000);
}

/* Decode streams K/V once per KV head: 8 KV heads read a quarter of 32's bytes. */
Test(kernel_attn, gqa_decode_cheaper_than_mha)
{
    NetHardware hw = h100();
    ModelAttnShape g = gqa(), m = gqa();
    m.kv_heads = 32;
    double tg = decode_ns(&hw, &g, 32, 16384), tm = decode_ns(&hw, &m, 32, 16384);
    cr_assert_lt(tg * 2.5, tm, "GQA %g ns, MHA %g ns", tg, tm);
}

/* FA3's throughput rises with head_dim: its paper's benchmark (Shah et al. 2024, fig. 5,
 * causal, batch x seqlen = 16k, heads x head_dim = 2048, contiguous K/V, H100 SXM5) measured
 * 197 / 292 / 286 TFLOPS at seqlen 512 and 473 / 616 / 642 at 16k for head_dim 64 / 128 /
 * 256; the model within 20 %, and rising with head_dim at 16k. */
Test(kernel_attn, throughput_rises_with_head_dim)
{
    NetHardware hw = h100();
    const uint32_t hds[] = {64, 128, 256};
    const double at_512[] = {197e12, 292e12, 286e12}, at_16k[] = {473e12, 616e12, 642e12};
    double last = 0;
    for (int i = 0; i < 3; i++) {
        ModelAttnShape s = {.heads = 2048 / hds[i],
                            .kv_heads = 2048 / hds[i],
                            .head_dim = hds[i],
                            .causal = true,
                            .contiguous_kv = true};
        ModelKernelTime t = model_attn_time_uniform(&hw, &s, 1, 16384, 16384);
        double rate = t.flops / (t.ns * 1e-9);
        cr_assert_gt(rate, last, "head_dim %u: %g", hds[i], rate);
        cr_assert_float_eq(rate, at_16k[i], 0.2 * at_16k[i], "head_dim %u: %g", hds[i], rate);
        last = rate;
        t = model_attn_time_uniform(&hw, &s, 32, 512, 512);
        rate = t.flops / (t.ns * 1e-9);
        cr_assert_float_eq(rate, at_512[i], 0.2 * at_512[i], "head_dim %u at 512: %g", hds[i],
                           rate);
    }
}

/* The paged cache costs vLLM its cache write and non-TMA loads: slower than the contiguous
 * kernel, most at short sequences. */
Test(kernel_attn, paged_slower_than_contiguous)
{
    NetHardware hw = h100();
    ModelAttnShape p = gqa(), c = gqa();
    c.contiguous_kv = true;
    cr_assert_gt(prefill_ns(&hw, &p, 32, 512), 1.2 * prefill_ns(&hw, &c, 32, 512));
    cr_assert_gt(prefill_ns(&hw, &p, 1, 16384), prefill_ns(&hw, &c, 1, 16384));
}

Test(kernel_attn, causal_and_window_cheaper_than_full)
{
    NetHardware hw = h100();
    ModelAttnShape c = gqa(), f = gqa(), w = gqa();
    f.causal = false;
    w.window = 1024;
    double tc = prefill_ns(&hw, &c, 2, 8192), tf = prefill_ns(&hw, &f, 2, 8192);
    double tw = prefill_ns(&hw, &w, 2, 8192);
    cr_assert_lt(tc * 1.5, tf);
    cr_assert_lt(tw * 2, tc);
    cr_assert_lt(decode_ns(&hw, &w, 16, 65536) * 4, decode_ns(&hw, &c, 16, 65536));
}

Test(kernel_attn, fp8_cache_halves_decode_traffic)
{
    NetHardware hw = h100();
    ModelAttnShape b = gqa(), f = gqa();
    f.kv_bytes = 1;
    double tb = decode_ns(&hw, &b, 64, 32768), tf = decode_ns(&hw, &f, 64, 32768);
    cr_assert_lt(tf, 0.7 * tb);
}

/* A varlen call over identical sequences is the uniform call; a mixed batch lies between. */
Test(kernel_attn, varlen_matches_uniform)
{
    NetHardware hw = h100();
    ModelAttnShape s = gqa();
    ModelAttnSeq same[4],
        mixed[2] = {{.q_len = 2048, .kv_len = 2048}, {.q_len = 1, .kv_len = 8000}};
    for (int i = 0; i < 4; i++)
        same[i] = (ModelAttnSeq){.q_len = 1000, .kv_len = 3000};
    double v = model_attn_time(&hw, &s, same, 4).ns;
    double u = model_attn_time_uniform(&hw, &s, 4, 1000, 3000).ns;
    cr_assert_float_eq(v, u, 1e-6 * u);
    double m = model_attn_time(&hw, &s, mixed, 2).ns;
    cr_assert_gt(m, prefill_ns(&hw, &s, 1, 2048) * 0.99);
    /* chunked prefill: a chunk with cached context costs more than the same chunk alone */
    cr_assert_gt(model_attn_time_uniform(&hw, &s, 1, 2048, 16384).ns, prefill_ns(&hw, &s, 1, 2048));
}

Test(kernel_attn, device_without_compute_units)
{
    NetHardware hw = h100();
    hw.compute_units = 0;
    hw.l2_bytes = 0;
    ModelAttnShape s = gqa();
    double p = prefill_ns(&hw, &s, 4, 4096), d = decode_ns(&hw, &s, 4, 4096);
    cr_assert(isfinite(p) && p > 5000);
    cr_assert(isfinite(d) && d > 5000);
    hw.hbm_bw_bytes_per_s = 0;
    cr_assert(isfinite(decode_ns(&hw, &s, 4, 4096)));
}

Test(kernel_attn, absurd_inputs_without_nan)
{
    NetHardware hw = h100();
    ModelAttnShape s = gqa();
    ModelKernelTime t = model_attn_time(&hw, &s, NULL, 0);
    cr_assert(isfinite(t.ns) && t.ns > 0);
    cr_assert_eq(t.bound, SCHED_BOUND_LAUNCH);
    ModelAttnShape z = {0};
    ModelAttnSeq q = {.q_len = 128, .kv_len = 128};
    t = model_attn_time(&hw, &z, &q, 1);
    cr_assert(isfinite(t.ns) && t.ns > 0 && t.flops == 0);
    t = model_attn_time_uniform(&hw, &s, 0, 100, 100);
    cr_assert(isfinite(t.ns) && t.ns > 0);
    t = model_attn_time_uniform(&hw, &s, 3, 0, 0);
    cr_assert(isfinite(t.ns) && t.ns > 0);
    s.kv_heads = 0; /* read as 1 */
    t = model_attn_time_uniform(&hw, &s, 3, 10, 5);
    cr_assert(isfinite(t.ns) && t.ns > 0 && isfinite(t.bytes));
}

Test(kernel_attn, kernel_family_by_device)
{
    NetHardware hw = h100();
    ModelAttnShape s = gqa();
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, false), MODEL_ATTN_FA3);
    hw.arch = NET_ARCH_SM80;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, false), MODEL_ATTN_FA2);
    hw.arch = NET_ARCH_SM100;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, false), MODEL_ATTN_FLASHINFER);
    hw.platform = NET_PLATFORM_ROCM;
    hw.arch = NET_ARCH_GFX942;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, false), MODEL_ATTN_TRITON);
    hw.platform = NET_PLATFORM_NPU;
    hw.arch = NET_ARCH_ASCEND910B;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, false), MODEL_ATTN_ASCEND_FIA);
    hw = h100();
    s.mla = true;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, true), MODEL_ATTN_FA3_MLA);
    s.kv_bytes = 1;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, true), MODEL_ATTN_FLASHMLA);
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, false), MODEL_ATTN_MLA_PREFILL);
    s.sparse_topk = 2048;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, true), MODEL_ATTN_FLASHMLA_SPARSE);
    s.kernel = MODEL_ATTN_TRITON;
    cr_assert_eq(model_attn_kernel_resolve(&hw, &s, true), MODEL_ATTN_TRITON);
    for (int k = 0; k < MODEL_ATTN_COUNT; k++) {
        ModelAttnKernel back = MODEL_ATTN_COUNT;
        cr_assert(model_attn_kernel_parse(model_attn_kernel_name((ModelAttnKernel)k), &back));
        cr_assert_eq(back, (ModelAttnKernel)k);
    }
    ModelAttnKernel untouched = MODEL_ATTN_FA2;
    cr_assert_not(model_attn_kernel_parse("fa9", &untouched));
    cr_assert_eq(untouched, MODEL_ATTN_FA2);
}

/* MLA decode (DeepSeek-V3 on TP8: 16 heads over the 576-wide latent) and DSA top-k: finite,
 * and sparse attention over a long context costs what its top-k costs, not the context. */
Test(kernel_attn, mla_and_sparse)
{
    NetHardware hw = h100();
    ModelAttnShape m = {
        .heads = 16, .kv_heads = 1, .head_dim = 576, .v_head_dim = 512, .mla = true};
    double d = decode_ns(&hw, &m, 64, 8192);
    cr_assert(isfinite(d) && d > 5000);
    ModelAttnShape sp = m;
    sp.sparse_topk = 2048;
    sp.kv_bytes = 1;
    double s8 = decode_ns(&hw, &sp, 64, 8192), s64 = decode_ns(&hw, &sp, 64, 65536);
    cr_assert_float_eq(s8, s64, 1e-9 * s8);
    cr_assert_lt(decode_ns(&hw, &m, 64, 2048), decode_ns(&hw, &m, 64, 65536));
}

/* A million-token prefill is evaluated on sampled tiles: still quadratic (doubling the length
 * quadruples the time, within 5 %) and finite. */
Test(kernel_attn, long_prefill_sampled_tiles)
{
    NetHardware hw = h100();
    ModelAttnShape s = {.heads = 64, .kv_heads = 4, .head_dim = 128, .causal = true};
    double a = prefill_ns(&hw, &s, 1, 1u << 19), b = prefill_ns(&hw, &s, 1, 1u << 20);
    cr_assert(isfinite(b));
    cr_assert_float_eq(b / a, 4.0, 0.2, "ratio %g", b / a);
}

/* FlashMLA sparse as vLLM runs it: every row walks its index_topk slots whatever the context
 * (a 128-token context costs a 2,048-token one), the decode kernel's heads are padded to 64 (16
 * heads cost 64), and at a compute-bound shape it reaches, but does not pass, the 410 TFLOPS its
 * README gives for H800 (= H100 SXM's SMs and clocks) on the padded heads. */
Test(kernel_attn, flashmla_sparse_topk_slots_and_padding)
{
    NetHardware hw = h100();
    ModelAttnShape sp = {.heads = 16, .kv_heads = 1, .head_dim = 576, .v_head_dim = 512,
                         .mla = true, .sparse_topk = 2048, .kv_bytes = 1};
    double short_ctx = decode_ns(&hw, &sp, 64, 128), topk_ctx = decode_ns(&hw, &sp, 64, 2048);
    cr_assert_float_eq(short_ctx, topk_ctx, 1e-9 * topk_ctx);
    ModelAttnShape wide = sp;
    wide.heads = 64;
    cr_assert_float_eq(decode_ns(&hw, &wide, 64, 4096), decode_ns(&hw, &sp, 64, 4096),
                       1e-9 * topk_ctx);
    /* 512 sequences x 2,048 slots x 64 heads x 2 x (576 + 512) FLOPs */
    double flops = 512.0 * 2048 * 64 * 2 * (576 + 512);
    double tflops = flops / (decode_ns(&hw, &wide, 512, 4096) * 1e-9) / 1e12;
    cr_assert(tflops > 0.7 * 410 && tflops <= 410, "%.0f TFLOPS", tflops);
    /* with 32 heads or more the prefill rows take the bf16 prefill kernel (640 TFLOPS, heads
     * padded to 128), below that every row the decode kernel: a 128-head prefill of 4k rows runs
     * at more TFLOPS per padded head than the 16-head one */
    ModelAttnShape h128 = sp;
    h128.heads = 128;
    double t16 = prefill_ns(&hw, &sp, 1, 4096), t128 = prefill_ns(&hw, &h128, 1, 4096);
    cr_assert_lt(t128 / 128.0 * 64.0, t16 * 2.0 * 0.9, "%g vs %g", t128, t16);
}

/* MLA decode's query tiles are 64 heads: 128 heads are two tiles, so at a compute-bound shape
 * they cost about twice 64 heads (not four times: each tile computes its own 64 rows). */
Test(kernel_attn, mla_decode_tiles_of_64_heads)
{
    NetHardware hw = h100();
    ModelAttnShape m64 = {.heads = 64, .kv_heads = 1, .head_dim = 576, .v_head_dim = 512,
                          .mla = true, .kernel = MODEL_ATTN_FLASHMLA};
    ModelAttnShape m128 = m64;
    m128.heads = 128;
    double a = decode_ns(&hw, &m64, 256, 16384), b = decode_ns(&hw, &m128, 256, 16384);
    cr_assert(b / a > 1.6 && b / a < 2.4, "ratio %g", b / a);
}
