/* src/run/cost.c — price one kernel or collective (src/run/cost.h). */
#include "cost.h"

#include <math.h>
#include <string.h>

#include "../../model/kernel-gemm.h"
#include "../../model/kernel-attn.h"
#include "../../model/kernel-ep.h"
#include "../../model/kernel-moe.h"
#include "../../sched/program.h"
#include "../input/scenario-error.h"

static const char *bound_name(uint8_t b)
{
    const char *s = sched_bound_name(b);
    return s ? s : "compute";
}

static void from_kernel(const ModelKernelTime *k, CostResult *out)
{
    out->time_us = k->ns / 1e3;
    out->tflops = k->ns > 0 ? k->flops / k->ns / 1e3 : 0;
    out->gbps = k->ns > 0 ? k->bytes / k->ns : 0;
    out->bound = bound_name(k->bound);
    out->source = "analytic";
}

static ModelGemmDtype gemm_dtype(const char *word)
{
    ModelGemmDtype d = MODEL_GEMM_BF16;
    if (word && !model_gemm_dtype_parse(word, &d))
        d = MODEL_GEMM_BF16; /* the query's list and the model's are the same names */
    return d;
}

static void gemm(const NetHardware *hw, const CostQuery *q, CostResult *out)
{
    ModelGemmShape s = {
        .m = q->val[CQ_GEMM_M],
        .n = q->val[CQ_GEMM_N],
        .k = q->val[CQ_GEMM_K],
        .dtype = gemm_dtype(cost_query_word(q, CQ_GEMM_DTYPE)),
    };
    ModelKernelTime k = model_gemm_time(hw, &s);
    from_kernel(&k, out);
    out->detail = model_gemm_native(hw, s.dtype) ? model_gemm_dtype_name(s.dtype) : "weight-only";
    if (!q->val[CQ_GEMM_GRAPH]) {
        double host = model_gemm_host_ns(&s);
        if (host > k.ns) {
            out->time_us = host / 1e3;
            out->tflops = k.flops / host / 1e3;
            out->gbps = k.bytes / host;
            out->bound = "host";
        }
    }
}

static void moe(const NetHardware *hw, const CostQuery *q, CostResult *out)
{
    ModelMoeShape s = {
        .tokens = q->val[CQ_MOE_TOKENS],
        .hidden = (uint32_t)q->val[CQ_MOE_HIDDEN],
        .inter = (uint32_t)q->val[CQ_MOE_INTER],
        .topk = (uint32_t)q->val[CQ_MOE_TOPK],
        .experts = (uint32_t)q->val[CQ_MOE_EXPERTS],
        .tp = (uint32_t)MAX(q->val[CQ_MOE_TP], 1),
        .ep = (uint32_t)MAX(q->val[CQ_MOE_EP], 1),
        .dtype = gemm_dtype(cost_query_word(q, CQ_MOE_DTYPE)),
    };
    ModelKernelTime k = model_moe_time(hw, &s);
    from_kernel(&k, out);
    out->detail = model_gemm_dtype_name(s.dtype);
}

/* One layer's attention over `batch` identical sequences (model/kernel-attn.h). The L2 is warm
 * by default, as kernel benchmarks that replay one layer find it (l2=cold: as a model's forward
 * does, the other layers evicting it). */
static bool attention(const NetHardware *hw, const CostQuery *q, CostResult *out, GError **error)
{
    bool decode = q->val[CQ_ATTN_PHASE] == 1;
    const char *kv = cost_query_word(q, CQ_ATTN_KV_DTYPE);
    ModelAttnShape s = {
        .heads = (uint32_t)q->val[CQ_ATTN_HEADS],
        .kv_heads = (uint32_t)q->val[CQ_ATTN_KV_HEADS],
        .head_dim = (uint32_t)q->val[CQ_ATTN_HEAD_DIM],
        .v_head_dim = (uint32_t)q->val[CQ_ATTN_V_HEAD_DIM],
        .causal = q->val[CQ_ATTN_CAUSAL] != 0,
        .window = (uint32_t)MIN(q->val[CQ_ATTN_WINDOW], (uint64_t)UINT32_MAX),
        .kv_bytes = kv && strcmp(kv, "fp8") == 0 ? 1 : 2,
        .sparse_topk = (uint32_t)MIN(q->val[CQ_ATTN_TOPK], (uint64_t)UINT32_MAX),
        .mla = q->val[CQ_ATTN_MLA] != 0,
        .warm_l2 = q->val[CQ_ATTN_L2] == 0,
        .contiguous_kv = q->val[CQ_ATTN_KV_LAYOUT] == 1,
    };
    if (!model_attn_kernel_parse(cost_query_word(q, CQ_ATTN_KERNEL), &s.kernel))
        s.kernel = MODEL_ATTN_AUTO;
    if (s.kv_heads == 0 || s.heads % s.kv_heads) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "attention: heads=%u is not a multiple of kv_heads=%u", s.heads, s.kv_heads);
        return false;
    }
    uint64_t len = decode ? q->val[CQ_ATTN_CONTEXT] : q->val[CQ_ATTN_SEQLEN];
    uint64_t cached = decode ? 0 : q->val[CQ_ATTN_CACHED];
    uint64_t batch = q->val[CQ_ATTN_BATCH];
    if (len + cached > UINT32_MAX || batch > UINT32_MAX) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "attention: batch and lengths must be at most %u", UINT32_MAX);
        return false;
    }
    uint32_t q_len = decode ? 1 : (uint32_t)len, kv_len = (uint32_t)(len + cached);
    ModelKernelTime k =
        model_attn_time_uniform(hw, &s, (uint32_t)batch, q_len, kv_len);
    from_kernel(&k, out);
    out->detail = model_attn_kernel_name(model_attn_kernel_resolve(hw, &s, decode));
    if (!q->val[CQ_ATTN_GRAPH] && 5000.0 > k.ns) { /* an eager launch: PyTorch's dispatch */
        out->time_us = 5.0;
        out->bound = "host";
    }
    return true;
}

/* DeepEP within one NVLink domain: the narrowest tier that holds `ep` devices. */
static bool ep(const NetHardware *hw, const CostQuery *q, CostResult *out, GError **error)
{
    uint32_t n = (uint32_t)q->val[CQ_EP_EP];
    int tier = -1;
    for (uint32_t t = 0; t < hw->n_tiers && tier < 0; t++)
        if (hw->tiers[t].span_devices == 0 || hw->tiers[t].span_devices >= n)
            tier = (int)t;
    if (n < 1 || q->val[CQ_EP_NODES] > 1 || tier < 0 || hw->tiers[tier].span_devices == 0) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                    "ep: ep=%u over nodes=%" G_GUINT64_FORMAT ": DeepEP is modelled within "
                    "one NVLink domain (%s's %s holds %u devices) and one node only",
                    n, q->val[CQ_EP_NODES], hw->name, hw->tiers[0].name,
                    hw->tiers[0].span_devices);
        return false;
    }
    ModelEpShape s = {
        .combine = q->val[CQ_EP_OP] == 1,
        .low_latency = q->val[CQ_EP_MODE] == 1,
        .ep = n,
        .tokens = q->val[CQ_EP_TOKENS],
        .hidden = (uint32_t)q->val[CQ_EP_HIDDEN],
        .topk = (uint32_t)q->val[CQ_EP_TOPK],
        .fp8 = q->given[CQ_EP_DTYPE] ? q->val[CQ_EP_DTYPE] == 1 : q->val[CQ_EP_OP] == 0,
    };
    ModelKernelTime k = model_ep_time(&s, hw->tiers[tier].bw_bytes_per_s);
    from_kernel(&k, out);
    out->tflops = 0;
    out->bound = k.bound == SCHED_BOUND_LAUNCH ? "launch" : "network";
    out->detail = s.low_latency ? "DeepEP low-latency" : "DeepEP normal";
    return true;
}

bool cost_predict(const NetHardware *hw, const CostQuery *q, CostResult *out, GError **error)
{
    memset(out, 0, sizeof *out);
    switch (q->kind) {
    case COST_GEMM:
        gemm(hw, q, out);
        return true;
    case COST_MOE:
        if (q->val[CQ_MOE_TOPK] > q->val[CQ_MOE_EXPERTS]) {
            g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID,
                        "moe: topk=%" G_GUINT64_FORMAT " is more than experts=%" G_GUINT64_FORMAT,
                        q->val[CQ_MOE_TOPK], q->val[CQ_MOE_EXPERTS]);
            return false;
        }
        moe(hw, q, out);
        return true;
    case COST_EP:
        return ep(hw, q, out, error);
    case COST_ATTENTION:
        return attention(hw, q, out, error);
    default:
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "%s: not priced yet",
                    cost_kind_name(q->kind));
        return false;
    }
}
