/* tests/model/test-kernel-table.c — measured kernel tables (model/kernel-table.h): each format
 * (ranksim's CSV, AIConfigurator's GEMM / attention / MoE / NCCL / custom all-reduce tables,
 * nccl-tests output), each bad input with its file:line and column, the lookup (an exact hit
 * gives the measured time, an interpolated one lies between its neighbours, outside the range
 * or without a complete cell it is not covered), and the cost model's use of it (bound table).
 * The tables here are made-up numbers in the formats' layouts, not copies of measurements. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../model/cost.h"
#include "../../model/kernel-gemm.h"
#include "../../model/kernel-moe.h"
#include "../../model/kernel-table.h"
#include "../../sched/program.h"

/* An H100-like device: 132 SMs, dense peaks and HBM as the preset's order of magnitude. */
static NetHardware test_hw(void)
{
    NetHardware hw = {0};
    g_strlcpy(hw.name, "h100", sizeof hw.name);
    hw.devices_per_node = 8;
    hw.peak_flops[NET_PEAK_BF16] = 989e12;
    hw.peak_flops[NET_PEAK_FP16] = 989e12;
    hw.peak_flops[NET_PEAK_FP8] = 1979e12;
    hw.peak_flops[NET_PEAK_INT8] = 1979e12;
    hw.hbm_bytes = 80000000000ull;
    hw.hbm_bw_bytes_per_s = 3.35e12;
    hw.compute_units = 132;
    return hw;
}

static ModelKernelTable *load_ok(const char *text, const char *display)
{
    ModelKernelTable *t = model_kernel_table_new("h100");
    g_autoptr(GError) err = NULL;
    bool ok = model_kernel_table_load(t, text, strlen(text), display, &err);
    cr_assert(ok, "load failed: %s", err ? err->message : "?");
    return t;
}

/* Loads `text`, expects failure with a message starting with `prefix` and containing `part`,
 * and the table unchanged. */
static void load_bad(const char *text, const char *prefix, const char *part)
{
    g_autoptr(ModelKernelTable) t = model_kernel_table_new("h100");
    g_autoptr(GError) err = NULL;
    bool ok = model_kernel_table_load(t, text, strlen(text), "t.csv", &err);
    cr_assert(!ok, "expected a failure for:\n%s", text);
    cr_assert(g_error_matches(err, MODEL_KERNEL_TABLE_ERROR, MODEL_KERNEL_TABLE_ERROR_PARSE));
    cr_assert(g_str_has_prefix(err->message, prefix), "message '%s' does not start with '%s'",
              err->message, prefix);
    cr_assert(strstr(err->message, part), "message '%s' lacks '%s'", err->message, part);
    cr_assert(!strchr(err->message, '\n'), "one line: '%s'", err->message);
    cr_assert_eq(model_kernel_table_size(t), 0u, "a failed load must leave the table empty");
}

static ModelKernelKey gemm_key(double m, double n, double k, const char *dtype)
{
    ModelKernelKey key = {.kind = MODEL_KERNEL_GEMM};
    key.word[MODEL_KEY_GEMM_DTYPE] = dtype;
    key.dim[MODEL_KEY_GEMM_M] = m;
    key.dim[MODEL_KEY_GEMM_N] = n;
    key.dim[MODEL_KEY_GEMM_K] = k;
    return key;
}

static double analytic_ns(const NetHardware *hw, const ModelKernelKey *key)
{
    double ns = 0;
    cr_assert(model_kernel_key_analytic(key, hw, &ns));
    return ns;
}

/* Looks `key` up in utilization space on `hw`; asserts coverage as `covered`. */
static double lookup(const ModelKernelTable *t, const NetHardware *hw, const ModelKernelKey *key,
                     bool covered)
{
    double ns = -1;
    ModelKernelTableHit hit;
    bool ok = model_kernel_table_lookup(t, key, analytic_ns(hw, key), model_kernel_key_analytic, hw,
                                        &ns, &hit);
    cr_assert_eq(ok, covered, "covered %d, expected %d (%s)", ok, covered, hit.why ? hit.why : "");
    cr_assert_eq(hit.covered, covered);
    return ns;
}

/* ---- ranksim's CSV ------------------------------------------------------------------------ */

static const char project_csv[] =
    "# a comment\n"
    "kind,device,args,measured_us,source\n"
    "gemm,h100,m=1 n=4096 k=4096 dtype=bf16,15,made-up\n"
    "gemm,h100,m=64 n=4096 k=4096 dtype=bf16,30,made-up\n"
    "gemm,h200,m=1 n=4096 k=4096 dtype=bf16,99,another device: skipped\n"
    "gemm,*,m=1 n=8192 k=4096 dtype=bf16,20,any device\n"
    "gemm,*,m=64 n=8192 k=4096 dtype=bf16,40,any device\n"
    "moe,h100,tokens=16 hidden=4096 inter=2048 topk=8 experts=64 tp=2 ep=1 dtype=bf16,80,x\n"
    "collective,h100,op=all_reduce ranks=8 bytes=1M dtype=fp16 impl=nccl,40,x\n"
    "collective,h100,op=all_reduce ranks=8 bytes=4M dtype=fp16 impl=nccl,90,x\n";

Test(kernel_table, project_csv_loads_and_exact_hits_reproduce)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelKernelTable) t = load_ok(project_csv, "p.csv");
    cr_assert_eq(model_kernel_table_size(t), 7u, "the h200 row is skipped");
    ModelKernelKey k = gemm_key(64, 4096, 4096, "bf16");
    cr_assert_float_eq(lookup(t, &hw, &k, true), 30000.0, 1e-9 * 30000);
    k = gemm_key(1, 8192, 4096, "bf16");
    cr_assert_float_eq(lookup(t, &hw, &k, true), 20000.0, 1e-9 * 20000);
}

Test(kernel_table, interpolation_lies_between_neighbours)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelKernelTable) t = load_ok(project_csv, "p.csv");
    ModelKernelKey k = gemm_key(8, 4096, 4096, "bf16");
    double ns = lookup(t, &hw, &k, true);
    cr_assert(ns > 15000 && ns < 30000, "m=8 between m=1 (15 us) and m=64 (30 us): %g", ns);
    /* two dims at once: the cell m in [1, 64] x n in [4096, 8192] */
    k = gemm_key(8, 6144, 4096, "bf16");
    ns = lookup(t, &hw, &k, true);
    cr_assert(ns > 15000 && ns < 40000, "inside the cell's extremes: %g", ns);
}

Test(kernel_table, outside_the_range_or_cell_is_not_covered)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelKernelTable) t = load_ok(project_csv, "p.csv");
    ModelKernelTableHit hit;
    double ns;
    ModelKernelKey k = gemm_key(128, 4096, 4096, "bf16"); /* m above the table */
    cr_assert(!model_kernel_table_lookup(t, &k, 1000, model_kernel_key_analytic, &hw, &ns, &hit));
    cr_assert(strstr(hit.why, "outside"), "%s", hit.why);
    k = gemm_key(8, 4096, 4096, "fp8"); /* no fp8 point */
    cr_assert(!model_kernel_table_lookup(t, &k, 1000, model_kernel_key_analytic, &hw, &ns, &hit));
    k = gemm_key(8, 4096, 4096, "bf16");
    k.eager = true; /* only graph-timed points */
    cr_assert(!model_kernel_table_lookup(t, &k, 1000, model_kernel_key_analytic, &hw, &ns, &hit));
    ModelKernelKey none = {0};
    cr_assert(!model_kernel_table_lookup(t, &none, 1000, NULL, NULL, &ns, &hit));
}

Test(kernel_table, an_incomplete_cell_is_not_covered)
{
    NetHardware hw = test_hw();
    const char *text = "kind,device,args,measured_us\n"
                       "gemm,h100,m=1 n=4096 k=4096,10\n"
                       "gemm,h100,m=64 n=8192 k=4096,40\n";
    g_autoptr(ModelKernelTable) t = load_ok(text, "c.csv");
    ModelKernelTableHit hit;
    double ns;
    ModelKernelKey k = gemm_key(8, 6144, 4096, "bf16");
    cr_assert(!model_kernel_table_lookup(t, &k, 1000, model_kernel_key_analytic, &hw, &ns, &hit));
    cr_assert(strstr(hit.why, "cell"), "%s", hit.why);
}

Test(kernel_table, without_an_analytic_model_times_are_interpolated_in_log_space)
{
    g_autoptr(ModelKernelTable) t = load_ok(project_csv, "p.csv");
    ModelKernelKey k = {.kind = MODEL_KERNEL_COLLECTIVE, .eager = true};
    k.word[MODEL_KEY_COLL_OP] = "all_reduce";
    k.word[MODEL_KEY_COLL_DTYPE] = "fp16";
    k.word[MODEL_KEY_COLL_IMPL] = "nccl";
    k.dim[MODEL_KEY_COLL_RANKS] = 8;
    k.dim[MODEL_KEY_COLL_NODES] = 1;
    k.dim[MODEL_KEY_COLL_BYTES] = 1048576;
    double ns = 0;
    cr_assert(model_kernel_table_lookup(t, &k, 0, NULL, NULL, &ns, NULL));
    cr_assert_float_eq(ns, 40000.0, 1e-6);
    k.dim[MODEL_KEY_COLL_BYTES] = 2097152; /* log-midpoint of 1M and 4M (to 1e-6) */
    cr_assert(model_kernel_table_lookup(t, &k, 0, NULL, NULL, &ns, NULL));
    cr_assert_float_eq(ns, 65000.0, 1.0);
}

Test(kernel_table, moe_key_of_the_lowering_hits_the_table_row)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelKernelTable) t = load_ok(project_csv, "p.csv");
    /* what the lowering prices: 16 tokens, TP 2 (inter 1024 on the rank), 64 local experts */
    ModelKernelTime k = model_moe_local_time(&hw, MODEL_GEMM_BF16, 4096, 1024, 64, 16 * 8, 16 * 8, 16);
    cr_assert_eq(k.key.kind, MODEL_KERNEL_MOE);
    double ns = 0;
    cr_assert(
        !model_kernel_table_lookup(t, &k.key, k.ns, model_kernel_key_analytic, &hw, &ns, NULL),
        "tokens unknown until completed");
    ModelKernelKey key = k.key;
    model_kernel_key_complete(&key, 16);
    cr_assert_float_eq(key.dim[MODEL_KEY_MOE_TOPK], 8.0, 1e-12);
    cr_assert(model_kernel_table_lookup(t, &key, k.ns, model_kernel_key_analytic, &hw, &ns, NULL));
    /* the row was measured with balanced routing; the lowering routes uniformly (fewer experts
     * reached at 16 tokens): the row, scaled by the analytic ratio of the two routings */
    double balanced = 0;
    cr_assert(model_kernel_key_analytic(&key, &hw, &balanced));
    cr_assert(k.ns < balanced);
    cr_assert_float_eq(ns, 80000.0 * k.ns / balanced, 1e-9 * 80000);
}

Test(kernel_table, gemm_model_fills_its_key)
{
    NetHardware hw = test_hw();
    ModelGemmShape s = {.m = 3, .n = 5, .k = 7, .dtype = MODEL_GEMM_FP8};
    ModelKernelTime k = model_gemm_time(&hw, &s);
    cr_assert_eq(k.key.kind, MODEL_KERNEL_GEMM);
    cr_assert_str_eq(k.key.word[MODEL_KEY_GEMM_DTYPE], "fp8");
    cr_assert_eq(k.key.dim[MODEL_KEY_GEMM_N], 5.0);
    cr_assert_eq(model_elementwise_time(&hw, 100, 10).key.kind, MODEL_KERNEL_NONE);
}

/* ---- AIConfigurator's tables ------------------------------------------------------------ */

Test(kernel_table, aic_gemm_latency_in_ms)
{
    NetHardware hw = test_hw();
    const char *text = "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n"
                       "VLLM,0.24.0,NVIDIA H100 80GB "
                       "HBM3,gemm,torch.nn.functional.linear,bfloat16,1,4096,4096,0.015\n"
                       "VLLM,0.24.0,NVIDIA H100 80GB "
                       "HBM3,gemm,torch.nn.functional.linear,bfloat16,2,4096,4096,0.016\n"
                       "VLLM,0.24.0,NVIDIA H100 80GB HBM3,gemm,cutlass,fp8,1,4096,4096,0.025\n";
    g_autoptr(ModelKernelTable) t = load_ok(text, "gemm_perf.txt");
    cr_assert_eq(model_kernel_table_size(t), 3u);
    ModelKernelKey k = gemm_key(2, 4096, 4096, "bf16");
    cr_assert_float_eq(lookup(t, &hw, &k, true), 16000.0, 1e-9 * 16000);
    k = gemm_key(1, 4096, 4096, "fp8");
    cr_assert_float_eq(lookup(t, &hw, &k, true), 25000.0, 1e-9 * 25000);
}

Test(kernel_table, aic_attention_context_and_generation)
{
    const char *text =
        "framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,"
        "num_key_value_heads,head_dim,beam_width,attn_dtype,kv_cache_dtype,step,window_size,"
        "latency\n"
        "VLLM,0.24.0,H100,context_attention,fa3,4,1024,32,8,128,1,bfloat16,bfloat16,0,0,0.5\n"
        "VLLM,0.24.0,H100,generation_attention,fa3,8,1,32,8,128,1,bfloat16,fp8,1023,0,0.02\n";
    g_autoptr(ModelKernelTable) t = load_ok(text, "attn.csv");
    cr_assert_eq(model_kernel_table_size(t), 2u);
    ModelKernelKey k = {.kind = MODEL_KERNEL_ATTENTION};
    k.word[MODEL_KEY_ATTN_PHASE] = "decode";
    k.word[MODEL_KEY_ATTN_DTYPE] = "bf16";
    k.word[MODEL_KEY_ATTN_KV_DTYPE] = "fp8";
    k.dim[MODEL_KEY_ATTN_BATCH] = 8;
    k.dim[MODEL_KEY_ATTN_SEQLEN] = 1;
    k.dim[MODEL_KEY_ATTN_CONTEXT] = 1024; /* step 1023 cached + the new token */
    k.dim[MODEL_KEY_ATTN_HEADS] = 32;
    k.dim[MODEL_KEY_ATTN_KV_HEADS] = 8;
    k.dim[MODEL_KEY_ATTN_HEAD_DIM] = 128;
    k.dim[MODEL_KEY_ATTN_CAUSAL] = 1;
    double ns = 0;
    cr_assert(model_kernel_table_lookup(t, &k, 0, NULL, NULL, &ns, NULL));
    cr_assert_float_eq(ns, 20000.0, 1e-6);
    k.word[MODEL_KEY_ATTN_PHASE] = "prefill";
    k.word[MODEL_KEY_ATTN_KV_DTYPE] = "bf16";
    k.dim[MODEL_KEY_ATTN_BATCH] = 4;
    k.dim[MODEL_KEY_ATTN_SEQLEN] = 1024;
    k.dim[MODEL_KEY_ATTN_CONTEXT] = 0;
    cr_assert(model_kernel_table_lookup(t, &k, 0, NULL, NULL, &ns, NULL));
    cr_assert_float_eq(ns, 500000.0, 1e-6);
}

Test(kernel_table, aic_moe_folds_tp_into_inter)
{
    NetHardware hw = test_hw();
    const char *text =
        "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,"
        "inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency\n"
        "VLLM,0.24.0,H100,moe,triton,bfloat16,16,4096,2048,8,64,2,1,balanced,0.08\n"
        "VLLM,0.24.0,H100,moe,triton,bfloat16,16,4096,2048,8,64,2,1,power_law_1.2,0.09\n";
    g_autoptr(ModelKernelTable) t = load_ok(text, "moe.csv");
    ModelKernelTime k = model_moe_local_time(&hw, MODEL_GEMM_BF16, 4096, 1024, 64, 128, 128, 16);
    model_kernel_key_complete(&k.key, 16);
    double ns = 0;
    cr_assert(
        model_kernel_table_lookup(t, &k.key, k.ns, model_kernel_key_analytic, &hw, &ns, NULL));
    /* the balanced row, scaled from balanced to the lowering's uniform routing */
    double balanced = 0;
    cr_assert(model_kernel_key_analytic(&k.key, &hw, &balanced));
    cr_assert(k.ns < balanced);
    cr_assert_float_eq(ns, 80000.0 * k.ns / balanced, 1e-9 * 80000, "the balanced row: %g", ns);
}

Test(kernel_table, aic_nccl_and_custom_allreduce_sizes_in_bytes)
{
    const char *nccl = "framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,"
                       "message_size,latency\n"
                       "TRTLLM,2.29.2,H100,all_gather,NCCL,half,8,512,0.0053\n"
                       "TRTLLM,2.29.2,H100,alltoall,NCCL,half,8,512,0.0060\n";
    g_autoptr(ModelKernelTable) t = load_ok(nccl, "nccl_perf.csv");
    ModelKernelKey k = {.kind = MODEL_KERNEL_COLLECTIVE, .eager = true};
    k.word[MODEL_KEY_COLL_OP] = "all_to_all";
    k.word[MODEL_KEY_COLL_DTYPE] = "fp16";
    k.word[MODEL_KEY_COLL_IMPL] = "nccl";
    k.dim[MODEL_KEY_COLL_RANKS] = 8;
    k.dim[MODEL_KEY_COLL_BYTES] = 1024; /* 512 half elements */
    k.dim[MODEL_KEY_COLL_NODES] = 1;
    double ns = 0;
    cr_assert(model_kernel_table_lookup(t, &k, 0, NULL, NULL, &ns, NULL));
    cr_assert_float_eq(ns, 6000.0, 1e-6);

    const char *car =
        "framework,version,device,op_name,kernel_source,allreduce_dtype,num_gpus,"
        "message_size,latency,backend\n"
        "vLLM,0.24.0,H100,all_reduce,vLLM_custom_graph,bfloat16,2,128,0.0043,vllm_graph\n"
        "vLLM,0.24.0,H100,all_reduce,vLLM_custom_eager,bfloat16,2,128,0.0206,vllm_eager\n";
    g_autoptr(ModelKernelTable) c = load_ok(car, "custom_allreduce_perf.csv");
    cr_assert_eq(model_kernel_table_size(c), 2u, "graph and eager rows are different points");
    k.word[MODEL_KEY_COLL_OP] = "all_reduce";
    k.word[MODEL_KEY_COLL_DTYPE] = "bf16";
    k.word[MODEL_KEY_COLL_IMPL] = "custom";
    k.dim[MODEL_KEY_COLL_RANKS] = 2;
    k.dim[MODEL_KEY_COLL_BYTES] = 256;
    k.eager = false;
    cr_assert(model_kernel_table_lookup(c, &k, 0, NULL, NULL, &ns, NULL));
    cr_assert_float_eq(ns, 4300.0, 1e-6);
}

/* ---- nccl-tests output -------------------------------------------------------------------- */

static const char nccl_tests_out[] =
    "# nThread 1 nGpus 4 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 "
    "agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  101 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  101 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  102 on     node-b device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  102 on     node-b device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "# Collective test starting: all_reduce_perf\n"
    "#                                                              out-of-place                 "
    "      in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)\n"
    "        1024           256     float     sum      -1    20.00    0.05    0.08      0    "
    "19.50    0.05    0.08      0\n"
    "        2048           512     float     sum      -1    21.00    0.10    0.15      0    "
    "20.10    0.10    0.15      0\n"
    "        4096          1024     float     sum      -1    24.00    0.17    0.26      0    "
    "23.00    0.18    0.27      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 0.163\n";

Test(kernel_table, nccl_tests_output_out_of_place_times)
{
    g_autoptr(ModelKernelTable) t = load_ok(nccl_tests_out, "run.log");
    cr_assert_eq(model_kernel_table_size(t), 3u);
    ModelKernelKey k = {.kind = MODEL_KERNEL_COLLECTIVE, .eager = true};
    k.word[MODEL_KEY_COLL_OP] = "all_reduce";
    k.word[MODEL_KEY_COLL_DTYPE] = "fp32";
    k.word[MODEL_KEY_COLL_IMPL] = "nccl";
    k.dim[MODEL_KEY_COLL_RANKS] = 4;
    k.dim[MODEL_KEY_COLL_BYTES] = 2048;
    k.dim[MODEL_KEY_COLL_NODES] = 2; /* two hosts in the Rank lines */
    double ns = 0;
    cr_assert(model_kernel_table_lookup(t, &k, 0, NULL, NULL, &ns, NULL));
    cr_assert_float_eq(ns, 21000.0, 1e-6, "the out-of-place time, not the in-place one");
}

Test(kernel_table, nccl_tests_op_from_the_file_name)
{
    /* an older nccl-tests prints no "Collective test starting" line */
    const char *text = "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) graph: 0\n"
                       "#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] NVIDIA H100\n"
                       "#  Rank  1 Group  0 Pid 1 on h device  1 [0x2a] NVIDIA H100\n"
                       "#       size         count      type   redop    root     time   algbw\n"
                       "           8             2     float    none      -1    10.00    0.00\n";
    g_autoptr(ModelKernelTable) t = load_ok(text, "logs/all_gather_perf.txt");
    cr_assert_eq(model_kernel_table_size(t), 1u);
    load_bad(text, "t.csv:5: which collective", "Collective test starting");
}

/* ---- bad input ---------------------------------------------------------------------------- */

Test(kernel_table, bad_tables_name_file_line_and_column)
{
    const char *h = "kind,device,args,measured_us\n";
    g_autofree char *kind = g_strconcat(h, "gemv,h100,m=1 n=2 k=3,5\n", NULL);
    load_bad(kind, "t.csv:2: column 'kind'", "gemm, attention, moe, collective");
    g_autofree char *key = g_strconcat(h, "gemm,h100,m=1 n=2 k=3 mm=4,5\n", NULL);
    load_bad(key, "t.csv:2: column 'args'", "valid: m, n, k, dtype, graph");
    g_autofree char *dtype = g_strconcat(h, "gemm,h100,m=1 n=2 k=3 dtype=bf17,5\n", NULL);
    load_bad(dtype, "t.csv:2: column 'args: dtype'", "bf16, fp16, fp8");
    g_autofree char *nan = g_strconcat(h, "gemm,h100,m=1 n=2 k=3,fast\n", NULL);
    load_bad(nan, "t.csv:2: column 'measured_us'", "not a number");
    g_autofree char *zero = g_strconcat(h, "gemm,h100,m=1 n=2 k=3,0\n", NULL);
    load_bad(zero, "t.csv:2: column 'measured_us'", "> 0");
    g_autofree char *need = g_strconcat(h, "gemm,h100,m=1 n=2,5\n", NULL);
    load_bad(need, "t.csv:2: column 'args'", "needs key 'k'");
    g_autofree char *dup =
        g_strconcat(h, "gemm,h100,m=1 n=2 k=3,5\n", "gemm,h100,m=1 n=2 k=3 dtype=bf16,6\n", NULL);
    load_bad(dup, "t.csv:3:", "same gemm point as line 2");
    load_bad("op,x,y\n1,2,3\n", "t.csv:1: unknown table format", "measured_us");
    load_bad("framework,gemm_dtype,m,n,latency\nV,bfloat16,1,2,0.1\n", "t.csv:1: column 'k'",
             "gemm_dtype, m, n, k, latency");
    load_bad("gemm_dtype,m,n,k,latency\nbfloat16,1,2,x,0.1\n", "t.csv:2: column 'k'",
             "not a number");
    load_bad("gemm_dtype,m,n,k,latency\nfloat64,1,2,3,0.1\n", "t.csv:2: column 'gemm_dtype'",
             "bf16");
    load_bad("", "t.csv:1:", "empty");
}

Test(kernel_table, a_failed_load_keeps_earlier_points)
{
    g_autoptr(ModelKernelTable) t = load_ok(project_csv, "p.csv");
    const char *bad = "kind,device,args,measured_us\ngemm,h100,m=2 n=2 k=2,1\ngemm,h100,m=x,1\n";
    g_autoptr(GError) err = NULL;
    cr_assert(!model_kernel_table_load(t, bad, strlen(bad), "b.csv", &err));
    cr_assert_eq(model_kernel_table_size(t), 7u);
}

/* ---- the cost model ----------------------------------------------------------------------- */

Test(kernel_table, cost_model_prices_covered_kernels_from_the_table)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    g_autoptr(GError) err = NULL;
    cr_assert(model_cost_load_perf_db(c, project_csv, strlen(project_csv), "p.csv", &err));
    ModelGemmShape s = {.m = 64, .n = 4096, .k = 4096};
    ModelKernelTime k = model_gemm_time(&hw, &s);
    uint8_t bound = 0;
    int64_t ns = model_cost_kernel_ns(c, "q_proj", 64, &k, 0, true, &bound);
    cr_assert_eq(ns, 30000);
    cr_assert_eq(bound, SCHED_BOUND_TABLE);
    cr_assert_str_eq(sched_bound_name(bound), "table");
    /* eager: the graph-timed point, lengthened to a longer host dispatch */
    ns = model_cost_kernel_ns(c, "q_proj", 64, &k, 50000, false, &bound);
    cr_assert_eq(ns, 50000);
    cr_assert_eq(bound, SCHED_BOUND_LAUNCH);
    /* not covered: the model's own time */
    s.m = 4096;
    k = model_gemm_time(&hw, &s);
    ns = model_cost_kernel_ns(c, "q_proj", 4096, &k, 0, true, &bound);
    cr_assert_eq(ns, (int64_t)ceil(k.ns));
    cr_assert_neq(bound, SCHED_BOUND_TABLE);
}

Test(kernel_table, an_op_profile_given_as_perf_db_is_a_profile)
{
    NetHardware hw = test_hw();
    g_autoptr(ModelCost) c = model_cost_new(&hw, NULL);
    const char *prof = "# measured\nop,rows,seconds\nq_proj,64,0.00001\n";
    g_autoptr(GError) err = NULL;
    cr_assert(model_cost_load_perf_db(c, prof, strlen(prof), "prof.csv", &err));
    cr_assert(model_cost_is_profiled(c, "q_proj"));
    cr_assert_null(model_cost_table(c));
}
