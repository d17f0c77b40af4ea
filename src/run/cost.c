/* src/run/cost.c — price one kernel or collective (src/run/cost.h). */
#include "cost.h"

#include <math.h>
#include <string.h>

#include "../../model/kernel-gemm.h"
#include "../../model/kernel-attn.h"
#include "../../net/fabric.h"
#include "../../net/nccl.h"
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
    /* the query's words are checked against the same lists: a failure leaves the defaults */
    (void)model_moe_routing_parse(cost_query_word(q, CQ_MOE_DIST), &s.routing);
    (void)model_moe_kernel_parse(cost_query_word(q, CQ_MOE_BACKEND), &s.kernel);
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

/* One collective alone on the hardware as NCCL's tuner (or vLLM's custom all-reduce) runs it:
 * net_collective_estimate, the fabric's own planning. `algo` is NCCL_ALGO's choice in the
 * measurement a fixture row describes; the tuner's own pick is priced, and a differing one is
 * said in the detail (forcing an algorithm is the fabric's `algorithms` setting in a run). */
static bool collective(const NetHardware *hw, const CostQuery *q, CostResult *out, GError **error)
{
    NetCollKind kind;
    if (!net_coll_kind_parse(cost_query_word(q, CQ_COLL_OP), &kind))
        kind = NET_ALL_REDUCE;
    NetCommImpl impl = q->val[CQ_COLL_IMPL] == 1 ? NET_IMPL_CUSTOM : NET_IMPL_NCCL;
    NetCollEstimate est;
    char why[256];
    uint32_t ranks = (uint32_t)q->val[CQ_COLL_RANKS], nodes = (uint32_t)q->val[CQ_COLL_NODES];
    if (!net_collective_estimate(hw, kind, ranks, nodes, (double)q->val[CQ_COLL_BYTES], impl,
                                 &est, why, sizeof why)) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "collective: %s", why);
        return false;
    }
    out->time_us = est.time_us;
    out->gbps = est.busbw_gb_s;
    out->bound = "network";
    out->source = "analytic";
    const char *want = cost_query_word(q, CQ_COLL_ALGO);
    g_autofree char *detail =
        strcmp(est.path, "nccl") == 0
            ? g_strdup_printf("NCCL %s/%s", net_algo_name(est.algo), net_proto_name(est.proto))
            : g_strdup(est.path);
    if (want && strcmp(want, "auto") != 0 && strcmp(want, net_algo_name(est.algo)) != 0 &&
        strcmp(est.path, "nccl") == 0) {
        g_autofree char *d2 = g_strdup_printf("%s; the tuner's pick, not algo=%s", detail, want);
        g_free(detail);
        detail = g_steal_pointer(&d2);
    }
    out->detail = g_intern_string(detail);
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

static bool cost_predict_analytic(const NetHardware *hw, const CostQuery *q, CostResult *out,
                                  GError **error);

bool cost_predict(const NetHardware *hw, const CostQuery *q, CostResult *out, GError **error)
{
    return cost_predict_table(hw, NULL, q, out, error);
}

static const char *word_or(const CostQuery *q, int key, const char *dflt)
{
    const char *w = cost_query_word(q, key);
    return w ? w : dflt;
}

static void gemm_key(const CostQuery *q, ModelKernelKey *k)
{
    k->word[MODEL_KEY_GEMM_DTYPE] =
        model_gemm_dtype_name(gemm_dtype(cost_query_word(q, CQ_GEMM_DTYPE)));
    k->dim[MODEL_KEY_GEMM_M] = (double)q->val[CQ_GEMM_M];
    k->dim[MODEL_KEY_GEMM_N] = (double)q->val[CQ_GEMM_N];
    k->dim[MODEL_KEY_GEMM_K] = (double)q->val[CQ_GEMM_K];
    k->eager = !q->val[CQ_GEMM_GRAPH];
}

static void moe_key(const CostQuery *q, ModelKernelKey *k)
{
    k->word[MODEL_KEY_MOE_DTYPE] =
        model_gemm_dtype_name(gemm_dtype(cost_query_word(q, CQ_MOE_DTYPE)));
    k->word[MODEL_KEY_MOE_DIST] = word_or(q, CQ_MOE_DIST, "balanced");
    k->dim[MODEL_KEY_MOE_TOKENS] = (double)q->val[CQ_MOE_TOKENS];
    k->dim[MODEL_KEY_MOE_HIDDEN] = (double)q->val[CQ_MOE_HIDDEN];
    k->dim[MODEL_KEY_MOE_INTER] = (double)q->val[CQ_MOE_INTER];
    k->dim[MODEL_KEY_MOE_TOPK] = (double)q->val[CQ_MOE_TOPK];
    k->dim[MODEL_KEY_MOE_EXPERTS] = (double)q->val[CQ_MOE_EXPERTS];
    k->dim[MODEL_KEY_MOE_TP] = (double)MAX(q->val[CQ_MOE_TP], 1);
    k->dim[MODEL_KEY_MOE_EP] = (double)MAX(q->val[CQ_MOE_EP], 1);
    k->dim[MODEL_KEY_MOE_ROUTES] = k->dim[MODEL_KEY_MOE_TOKENS] * k->dim[MODEL_KEY_MOE_TOPK];
    k->eager = !q->val[CQ_MOE_GRAPH];
}

static void attention_key(const CostQuery *q, ModelKernelKey *k)
{
    bool decode = q->val[CQ_ATTN_PHASE] == 1;
    const char *dt = word_or(q, CQ_ATTN_DTYPE, "bf16");
    const char *kv = word_or(q, CQ_ATTN_KV_DTYPE, "auto");
    k->word[MODEL_KEY_ATTN_PHASE] = word_or(q, CQ_ATTN_PHASE, "prefill");
    k->word[MODEL_KEY_ATTN_DTYPE] = dt;
    k->word[MODEL_KEY_ATTN_KV_DTYPE] = strcmp(kv, "auto") == 0 ? dt : kv;
    k->dim[MODEL_KEY_ATTN_BATCH] = (double)q->val[CQ_ATTN_BATCH];
    k->dim[MODEL_KEY_ATTN_SEQLEN] =
        q->given[CQ_ATTN_SEQLEN] || !decode ? (double)q->val[CQ_ATTN_SEQLEN] : 1;
    k->dim[MODEL_KEY_ATTN_CONTEXT] =
        (double)(q->given[CQ_ATTN_CACHED] ? q->val[CQ_ATTN_CACHED] : q->val[CQ_ATTN_CONTEXT]);
    k->dim[MODEL_KEY_ATTN_HEADS] = (double)q->val[CQ_ATTN_HEADS];
    k->dim[MODEL_KEY_ATTN_KV_HEADS] =
        (double)(q->given[CQ_ATTN_KV_HEADS] ? q->val[CQ_ATTN_KV_HEADS] : q->val[CQ_ATTN_HEADS]);
    k->dim[MODEL_KEY_ATTN_HEAD_DIM] = (double)q->val[CQ_ATTN_HEAD_DIM];
    k->dim[MODEL_KEY_ATTN_CAUSAL] = (double)q->val[CQ_ATTN_CAUSAL];
    k->dim[MODEL_KEY_ATTN_WINDOW] = (double)q->val[CQ_ATTN_WINDOW];
    k->eager = !q->val[CQ_ATTN_GRAPH];
}

static void collective_key(const CostQuery *q, ModelKernelKey *k)
{
    k->word[MODEL_KEY_COLL_OP] = word_or(q, CQ_COLL_OP, "all_reduce");
    k->word[MODEL_KEY_COLL_DTYPE] = word_or(q, CQ_COLL_DTYPE, "bf16");
    k->word[MODEL_KEY_COLL_IMPL] = word_or(q, CQ_COLL_IMPL, "nccl");
    k->dim[MODEL_KEY_COLL_RANKS] = (double)q->val[CQ_COLL_RANKS];
    k->dim[MODEL_KEY_COLL_BYTES] = (double)q->val[CQ_COLL_BYTES];
    k->dim[MODEL_KEY_COLL_NODES] = (double)MAX(q->val[CQ_COLL_NODES], 1);
    k->eager = !q->val[CQ_COLL_GRAPH];
}

void cost_query_key(const CostQuery *q, ModelKernelKey *key)
{
    memset(key, 0, sizeof *key);
    switch (q->kind) {
    case COST_GEMM:
        key->kind = MODEL_KERNEL_GEMM;
        gemm_key(q, key);
        break;
    case COST_MOE:
        key->kind = MODEL_KERNEL_MOE;
        moe_key(q, key);
        break;
    case COST_ATTENTION:
        key->kind = MODEL_KERNEL_ATTENTION;
        attention_key(q, key);
        break;
    case COST_COLLECTIVE:
        key->kind = MODEL_KERNEL_COLLECTIVE;
        collective_key(q, key);
        break;
    default:
        break;
    }
}

/* nccl-tests' bus bandwidth factor of `op` over `n` ranks (its PERFORMANCE.md). */
static double bus_factor(const char *op, double n)
{
    if (n <= 1)
        return 1;
    if (strcmp(op, "all_reduce") == 0)
        return 2 * (n - 1) / n;
    if (strcmp(op, "broadcast") == 0)
        return 1;
    return (n - 1) / n;
}

/* Looks `q` up in `table` and, covered, puts the table's time in `out` (priced analytically
 * before when `analytic`). Not covered: false and *why, what was missing (static). */
static bool apply_table(const NetHardware *hw, const ModelKernelTable *table, const CostQuery *q,
                        bool analytic, CostResult *out, const char **why)
{
    ModelKernelKey key;
    cost_query_key(q, &key);
    double query_ns = analytic ? out->time_us * 1e3 : 0, ns = 0;
    ModelKernelTableHit hit;
    ModelKernelAnalyticFn fn = analytic ? model_kernel_key_analytic : NULL;
    if (!model_kernel_table_lookup(table, &key, query_ns, fn, hw, &ns, &hit)) {
        *why = hit.why;
        return false;
    }
    out->time_us = ns / 1e3;
    if (analytic && query_ns > 0) {
        out->tflops *= query_ns / ns;
        out->gbps *= query_ns / ns;
    } else if (key.kind == MODEL_KERNEL_COLLECTIVE) {
        out->gbps = key.dim[MODEL_KEY_COLL_BYTES] / ns *
                    bus_factor(key.word[MODEL_KEY_COLL_OP], key.dim[MODEL_KEY_COLL_RANKS]);
    }
    out->bound = "table";
    out->source = "table";
    if (!out->detail)
        out->detail = hit.exact ? "a measured shape" : "interpolated between measured shapes";
    return true;
}

bool cost_predict_table(const NetHardware *hw, const ModelKernelTable *table, const CostQuery *q,
                        CostResult *out, GError **error)
{
    g_autoptr(GError) err = NULL;
    bool analytic = cost_predict_analytic(hw, q, out, &err);
    if (table && model_kernel_table_size(table) > 0) {
        const char *why = NULL;
        if (apply_table(hw, table, q, analytic, out, &why))
            return true;
        if (analytic) {
            /* say why the table did not answer: interned, so the result's strings stay static */
            g_autofree char *src = g_strdup_printf("analytic (%s)", why);
            out->source = g_intern_string(src);
        }
    }
    if (!analytic) {
        g_propagate_error(error, g_steal_pointer(&err));
        return false;
    }
    return true;
}

static bool cost_predict_analytic(const NetHardware *hw, const CostQuery *q, CostResult *out,
                                  GError **error)
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
    case COST_COLLECTIVE:
        return collective(hw, q, out, error);
    default:
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, "%s: not priced yet",
                    cost_kind_name(q->kind));
        return false;
    }
}
