/* tests/src/input/test-cost-query.c — `KIND key=value ...` (src/input/cost-query.h) and its
 * pricing (src/run/cost.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "../../../src/input/cost-query.h"
#include "../../../src/input/hardware.h"
#include "../../../src/input/scenario-error.h"
#include "../../../src/run/cost.h"

static void expect_error(const char *kind, const char *text, const char *has)
{
    CostQuery q;
    GError *err = NULL;
    cr_assert_not(cost_query_parse_text(kind, text, &q, &err), "accepted: %s %s", kind, text);
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, SCENARIO_ERROR_INVALID);
    cr_assert_null(strchr(err->message, '\n'));
    cr_assert_not_null(strstr(err->message, has), "'%s' not in: %s", has, err->message);
    g_error_free(err);
}

Test(cost_query, gemm_keys_and_defaults)
{
    CostQuery q;
    GError *err = NULL;
    cr_assert(cost_query_parse_text("gemm", "m=1 n=4096 k=8192", &q, &err));
    cr_assert_eq(q.kind, COST_GEMM);
    cr_assert_eq(q.val[CQ_GEMM_N], 4096);
    cr_assert_str_eq(cost_query_word(&q, CQ_GEMM_DTYPE), "bf16");
    cr_assert_eq(q.val[CQ_GEMM_GRAPH], 1);
    cr_assert(cost_query_parse_text(NULL, "gemm m=2 n=3 k=4 dtype=fp8_block graph=0", &q, &err));
    cr_assert_str_eq(cost_query_word(&q, CQ_GEMM_DTYPE), "fp8_block");
    cr_assert_eq(q.val[CQ_GEMM_GRAPH], 0);
}

Test(cost_query, collective_sizes_take_binary_suffixes)
{
    CostQuery q;
    GError *err = NULL;
    cr_assert(cost_query_parse_text("collective", "op=all_gather ranks=8 bytes=64K", &q, &err));
    cr_assert_eq(q.val[CQ_COLL_BYTES], 65536);
    cr_assert_eq(q.val[CQ_COLL_NODES], 1);
    cr_assert_str_eq(cost_query_word(&q, CQ_COLL_IMPL), "nccl");
    cr_assert(cost_query_parse_text("collective", "op=all_reduce ranks=2 bytes=2G", &q, &err));
    cr_assert_eq(q.val[CQ_COLL_BYTES], UINT64_C(2) << 30);
}

Test(cost_query, attention_phase_needs_its_length)
{
    CostQuery q;
    GError *err = NULL;
    cr_assert(cost_query_parse_text(
        "attention", "phase=decode batch=8 context=4096 heads=32 kv_heads=8 head_dim=128", &q,
        &err));
    cr_assert(cost_query_parse_text("attention", "phase=prefill batch=1 seqlen=1024 heads=32 "
                                                 "head_dim=128",
                                    &q, &err));
    cr_assert_eq(q.val[CQ_ATTN_KV_HEADS], 32, "kv_heads defaults to heads");
    expect_error("attention", "phase=decode batch=8 heads=32 head_dim=128", "needs key 'context'");
    expect_error("attention", "phase=decode batch=8 context=9 seqlen=3 heads=32 head_dim=128",
                 "not 'seqlen'");
}

Test(cost_query, bad_input_is_one_line_naming_the_key)
{
    expect_error("gemv", "m=1", "unknown kind 'gemv'");
    expect_error("gemm", "m=1 n=2", "key 'k' missing");
    expect_error("gemm", "m=1 n=2 k=3 foo=1", "unknown key 'foo'; valid keys: m, n, k");
    expect_error("gemm", "m=1 n=2 k=3 dtype=fp6", "'fp6' is not one of bf16, fp16, fp8");
    expect_error("gemm", "m=x n=2 k=3", "key 'm': 'x' is not an integer");
    expect_error("gemm", "m=-1 n=2 k=3", "key 'm'");
    expect_error("gemm", "m=1 m=2 n=2 k=3", "given twice");
    expect_error("gemm", "m=1 n=2 k=3 graph=2", "key 'graph'");
    expect_error("gemm", "m1 n=2 k=3", "not key=value");
    expect_error("collective", "op=all_reduce ranks=2 bytes=1Q", "key 'bytes'");
    expect_error("collective", "op=all_reduce ranks=2 bytes=99999999999T", "key 'bytes'");
}

Test(cost_predict, gemm_and_moe_price_and_name_their_bound)
{
    NetHardware hw;
    GError *err = NULL;
    cr_assert(hardware_load_preset("h100", &hw, &err));
    CostQuery q;
    CostResult r;
    cr_assert(cost_query_parse_text("gemm", "m=8192 n=8192 k=8192", &q, &err));
    cr_assert(cost_predict(&hw, &q, &r, &err));
    cr_assert_str_eq(r.bound, "compute");
    cr_assert_str_eq(r.source, "analytic");
    cr_assert(r.tflops > 400 && r.tflops < 989, "%.1f TFLOP/s", r.tflops);
    cr_assert(cost_query_parse_text("gemm", "m=1 n=4096 k=4096 dtype=fp8_block graph=0", &q,
                                    &err));
    cr_assert(cost_predict(&hw, &q, &r, &err));
    cr_assert_str_eq(r.bound, "host", "an eager block-fp8 layer is host-bound at one row");
    cr_assert(cost_query_parse_text("moe", "tokens=8 hidden=4096 inter=1024 topk=9 experts=8", &q,
                                    &err));
    cr_assert_not(cost_predict(&hw, &q, &r, &err));
    cr_assert_not_null(strstr(err->message, "topk=9 is more than experts=8"));
    g_clear_error(&err);
}
