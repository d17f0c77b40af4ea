/* src/input/cost-query.c — `KIND key=value ...` into a CostQuery (src/input/cost-query.h). */
#include "cost-query.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "scenario-error.h"

typedef struct {
    const char *name;
    bool required;
    uint64_t dflt;             /* when not given (a word key: the word's index) */
    uint64_t max;              /* integers: largest value accepted */
    const char *const *words;  /* NULL: an integer */
    bool sized;                /* an integer that takes K/M/G (binary) suffixes */
} KeySpec;

static const char *const gemm_dtypes[] = {"bf16",  "fp16", "fp8",  "fp8_block",
                                          "nvfp4", "mxfp4", "int8", "int4", NULL};
static const char *const phases[] = {"prefill", "decode", NULL};
static const char *const act_dtypes[] = {"bf16", "fp16", NULL};
static const char *const kv_dtypes[] = {"auto", "bf16", "fp16", "fp8", NULL};
/* model_attn_kernel_name's words (model/kernel-attn.h) */
static const char *const attn_kernels[] = {"auto",        "fa3",        "fa2",
                                           "flashinfer",  "triton",     "flashmla",
                                           "fa3_mla",     "flashmla_sparse", "mla_prefill",
                                           "ascend_fia",  "ascend_sfa", NULL};
static const char *const l2_states[] = {"warm", "cold", NULL};
static const char *const kv_layouts[] = {"paged", "contiguous", NULL};
static const char *const moe_backends[] = {"auto",     "triton",  "triton_mxfp4",
                                           "cutlass",  "flashinfer_cutlass",
                                           "deepgemm", "marlin",  NULL};
/* the token distributions of AIConfigurator's MoE tables */
static const char *const moe_dists[] = {"balanced", "power_law_1.01", "power_law_1.2", NULL};
static const char *const coll_ops[] = {"all_reduce", "all_gather", "reduce_scatter",
                                       "all_to_all", "broadcast", NULL};
static const char *const coll_dtypes[] = {"bf16", "fp16", "fp32", "fp8", "int8", "int32",
                                          "int64", NULL};
static const char *const impls[] = {"nccl", "custom", NULL};
static const char *const ep_ops[] = {"dispatch", "combine", NULL};
static const char *const ep_modes[] = {"normal", "low_latency", NULL};
static const char *const ep_dtypes[] = {"bf16", "fp8", NULL};
static const char *const algos[] = {"auto", "ring", "tree", "nvls", NULL};

#define BIG (UINT64_C(1) << 40)
#define HUGE_BYTES (UINT64_C(1) << 50)

static const KeySpec gemm_keys[CQ_GEMM_COUNT] = {
    [CQ_GEMM_M] = {"m", true, 0, BIG, NULL, false},
    [CQ_GEMM_N] = {"n", true, 0, BIG, NULL, false},
    [CQ_GEMM_K] = {"k", true, 0, BIG, NULL, false},
    [CQ_GEMM_DTYPE] = {"dtype", false, 0, 0, gemm_dtypes, false},
    [CQ_GEMM_GRAPH] = {"graph", false, 1, 1, NULL, false},
};
static const KeySpec attn_keys[CQ_ATTN_COUNT] = {
    [CQ_ATTN_PHASE] = {"phase", true, 0, 0, phases, false},
    [CQ_ATTN_BATCH] = {"batch", true, 0, BIG, NULL, false},
    [CQ_ATTN_SEQLEN] = {"seqlen", false, 0, BIG, NULL, false},
    [CQ_ATTN_CONTEXT] = {"context", false, 0, BIG, NULL, false},
    [CQ_ATTN_CACHED] = {"cached", false, 0, BIG, NULL, false},
    [CQ_ATTN_HEADS] = {"heads", true, 0, 1u << 20, NULL, false},
    [CQ_ATTN_KV_HEADS] = {"kv_heads", false, 0, 1u << 20, NULL, false},
    [CQ_ATTN_HEAD_DIM] = {"head_dim", true, 0, 1u << 16, NULL, false},
    [CQ_ATTN_CAUSAL] = {"causal", false, 1, 1, NULL, false},
    [CQ_ATTN_WINDOW] = {"window", false, 0, BIG, NULL, false},
    [CQ_ATTN_DTYPE] = {"dtype", false, 0, 0, act_dtypes, false},
    [CQ_ATTN_KV_DTYPE] = {"kv_dtype", false, 0, 0, kv_dtypes, false},
    [CQ_ATTN_KERNEL] = {"kernel", false, 0, 0, attn_kernels, false},
    [CQ_ATTN_GRAPH] = {"graph", false, 1, 1, NULL, false},
    [CQ_ATTN_L2] = {"l2", false, 0, 0, l2_states, false},
    [CQ_ATTN_V_HEAD_DIM] = {"v_head_dim", false, 0, 1u << 16, NULL, false},
    [CQ_ATTN_MLA] = {"mla", false, 0, 1, NULL, false},
    [CQ_ATTN_TOPK] = {"topk", false, 0, BIG, NULL, false},
    [CQ_ATTN_KV_LAYOUT] = {"kv_layout", false, 0, 0, kv_layouts, false},
};
static const KeySpec moe_keys[CQ_MOE_COUNT] = {
    [CQ_MOE_TOKENS] = {"tokens", true, 0, BIG, NULL, false},
    [CQ_MOE_HIDDEN] = {"hidden", true, 0, BIG, NULL, false},
    [CQ_MOE_INTER] = {"inter", true, 0, BIG, NULL, false},
    [CQ_MOE_TOPK] = {"topk", true, 0, 1u << 16, NULL, false},
    [CQ_MOE_EXPERTS] = {"experts", true, 0, 1u << 20, NULL, false},
    [CQ_MOE_TP] = {"tp", false, 1, 1u << 20, NULL, false},
    [CQ_MOE_EP] = {"ep", false, 1, 1u << 20, NULL, false},
    [CQ_MOE_DTYPE] = {"dtype", false, 0, 0, gemm_dtypes, false},
    [CQ_MOE_BACKEND] = {"backend", false, 0, 0, moe_backends, false},
    [CQ_MOE_DIST] = {"dist", false, 0, 0, moe_dists, false},
    [CQ_MOE_GRAPH] = {"graph", false, 1, 1, NULL, false},
};
static const KeySpec coll_keys[CQ_COLL_COUNT] = {
    [CQ_COLL_OP] = {"op", true, 0, 0, coll_ops, false},
    [CQ_COLL_RANKS] = {"ranks", true, 0, 1u << 24, NULL, false},
    [CQ_COLL_BYTES] = {"bytes", true, 0, HUGE_BYTES, NULL, true},
    [CQ_COLL_NODES] = {"nodes", false, 1, 1u << 24, NULL, false},
    [CQ_COLL_DTYPE] = {"dtype", false, 0, 0, coll_dtypes, false},
    [CQ_COLL_IMPL] = {"impl", false, 0, 0, impls, false},
    [CQ_COLL_ALGO] = {"algo", false, 0, 0, algos, false},
    [CQ_COLL_GRAPH] = {"graph", false, 0, 1, NULL, false},
};

static const KeySpec ep_keys[CQ_EP_COUNT] = {
    [CQ_EP_OP] = {"op", true, 0, 0, ep_ops, false},
    [CQ_EP_MODE] = {"mode", false, 0, 0, ep_modes, false},
    [CQ_EP_EP] = {"ep", true, 0, 1u << 20, NULL, false},
    [CQ_EP_TOKENS] = {"tokens", true, 0, BIG, NULL, false},
    [CQ_EP_HIDDEN] = {"hidden", true, 0, BIG, NULL, false},
    [CQ_EP_TOPK] = {"topk", true, 0, 1u << 16, NULL, false},
    [CQ_EP_DTYPE] = {"dtype", false, 0, 0, ep_dtypes, false},
    [CQ_EP_EXPERTS] = {"experts", false, 0, 1u << 20, NULL, false},
    [CQ_EP_NODES] = {"nodes", false, 1, 1u << 24, NULL, false},
};

G_STATIC_ASSERT(CQ_GEMM_COUNT <= COST_QUERY_MAX_KEYS && CQ_ATTN_COUNT <= COST_QUERY_MAX_KEYS &&
                 CQ_MOE_COUNT <= COST_QUERY_MAX_KEYS && CQ_COLL_COUNT <= COST_QUERY_MAX_KEYS &&
                 CQ_EP_COUNT <= COST_QUERY_MAX_KEYS);

static const struct {
    const char *name;
    const KeySpec *keys;
    int n;
} kinds[COST_KIND_COUNT] = {
    [COST_GEMM] = {"gemm", gemm_keys, CQ_GEMM_COUNT},
    [COST_ATTENTION] = {"attention", attn_keys, CQ_ATTN_COUNT},
    [COST_MOE] = {"moe", moe_keys, CQ_MOE_COUNT},
    [COST_COLLECTIVE] = {"collective", coll_keys, CQ_COLL_COUNT},
    [COST_EP] = {"ep", ep_keys, CQ_EP_COUNT},
};

const char *cost_kind_name(CostKind k)
{
    return (unsigned)k < COST_KIND_COUNT ? kinds[k].name : "?";
}

const char *cost_query_key_name(CostKind kind, int key)
{
    if ((unsigned)kind >= COST_KIND_COUNT || key < 0 || key >= kinds[kind].n)
        return "?";
    return kinds[kind].keys[key].name;
}

const char *cost_query_word(const CostQuery *q, int key)
{
    if ((unsigned)q->kind >= COST_KIND_COUNT || key < 0 || key >= kinds[q->kind].n)
        return NULL;
    const KeySpec *k = &kinds[q->kind].keys[key];
    return k->words ? k->words[q->val[key]] : NULL;
}

static char *join_words(const char *const *w)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; w[i]; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", w[i]);
    return g_string_free(s, FALSE);
}

static char *key_list(CostKind kind)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < kinds[kind].n; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", kinds[kind].keys[i].name);
    return g_string_free(s, FALSE);
}

static bool fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, SCENARIO_ERROR, SCENARIO_ERROR_INVALID, msg);
    return false;
}

/* A non-negative decimal integer, with a K/M/G/T (x 1024^n) suffix when `sized`. */
static bool parse_uint(const char *s, bool sized, uint64_t max, uint64_t *out)
{
    if (!s || !g_ascii_isdigit(s[0]))
        return false;
    errno = 0;
    char *end = NULL;
    guint64 v = g_ascii_strtoull(s, &end, 10);
    if (errno)
        return false;
    if (sized && *end) {
        const char *units = "KMGT";
        const char *u = strchr(units, g_ascii_toupper(*end));
        if (!u || end[1])
            return false;
        for (long i = 0; i <= u - units; i++) {
            if (v > G_MAXUINT64 / 1024)
                return false;
            v *= 1024;
        }
        end += 1;
    }
    if (*end || v > max)
        return false;
    *out = v;
    return true;
}

static bool set_key(CostQuery *q, const char *word, GError **error)
{
    const char *kname = kinds[q->kind].name;
    const char *eq = strchr(word, '=');
    if (!eq || eq == word)
        return fail(error, "%s: '%s' is not key=value", kname, word);
    g_autofree char *key = g_strndup(word, (gsize)(eq - word));
    const char *value = eq + 1;
    int i;
    for (i = 0; i < kinds[q->kind].n; i++)
        if (strcmp(kinds[q->kind].keys[i].name, key) == 0)
            break;
    if (i == kinds[q->kind].n) {
        g_autofree char *valid = key_list(q->kind);
        return fail(error, "%s: unknown key '%s'; valid keys: %s", kname, key, valid);
    }
    const KeySpec *k = &kinds[q->kind].keys[i];
    if (q->given[i])
        return fail(error, "%s: key '%s' given twice", kname, key);
    if (k->words) {
        for (uint64_t w = 0; k->words[w]; w++)
            if (strcmp(k->words[w], value) == 0) {
                q->val[i] = w;
                q->given[i] = true;
                return true;
            }
        g_autofree char *valid = join_words(k->words);
        return fail(error, "%s: key '%s': '%s' is not one of %s", kname, key, value, valid);
    }
    if (!parse_uint(value, k->sized, k->max, &q->val[i]))
        return fail(error, "%s: key '%s': '%s' is not %s 0..%" G_GUINT64_FORMAT, kname, key,
                    value, k->sized ? "a size (bytes, or with K/M/G/T) in" : "an integer in",
                    k->max);
    q->given[i] = true;
    return true;
}

static bool start(const char *kind, CostQuery *out, GError **error)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < COST_KIND_COUNT; k++)
        if (kind && strcmp(kinds[k].name, kind) == 0) {
            out->kind = (CostKind)k;
            for (int i = 0; i < kinds[k].n; i++)
                out->val[i] = kinds[k].keys[i].dflt;
            return true;
        }
    return fail(error, "unknown kind '%s'; valid kinds: gemm, attention, moe, collective, ep",
                kind ? kind : "");
}

/* Required keys, and the keys one phase of attention needs. */
static bool finish(CostQuery *q, GError **error)
{
    const char *kname = kinds[q->kind].name;
    for (int i = 0; i < kinds[q->kind].n; i++)
        if (kinds[q->kind].keys[i].required && !q->given[i])
            return fail(error, "%s: key '%s' missing", kname, kinds[q->kind].keys[i].name);
    if (q->kind == COST_ATTENTION) {
        bool decode = q->val[CQ_ATTN_PHASE] == 1;
        int need = decode ? CQ_ATTN_CONTEXT : CQ_ATTN_SEQLEN;
        int refuse = decode ? CQ_ATTN_SEQLEN : CQ_ATTN_CONTEXT;
        if (!q->given[need])
            return fail(error, "attention: phase=%s needs key '%s'", decode ? "decode" : "prefill",
                        attn_keys[need].name);
        if (q->given[refuse])
            return fail(error, "attention: phase=%s takes '%s', not '%s'",
                        decode ? "decode" : "prefill", attn_keys[need].name,
                        attn_keys[refuse].name);
        if (decode && q->given[CQ_ATTN_CACHED])
            return fail(error, "attention: phase=decode takes 'context', not 'cached'");
        if (!q->given[CQ_ATTN_KV_HEADS])
            q->val[CQ_ATTN_KV_HEADS] = q->val[CQ_ATTN_HEADS];
    }
    return true;
}

bool cost_query_parse(int argc, char *const *argv, CostQuery *out, GError **error)
{
    if (argc < 1)
        return fail(error, "no kind given; valid kinds: gemm, attention, moe, collective, ep");
    if (!start(argv[0], out, error))
        return false;
    for (int i = 1; i < argc; i++)
        if (!set_key(out, argv[i], error))
            return false;
    return finish(out, error);
}

bool cost_query_parse_text(const char *kind, const char *text, CostQuery *out, GError **error)
{
    g_auto(GStrv) words = g_strsplit_set(text ? text : "", " \t", -1);
    GPtrArray *w = g_ptr_array_new();
    if (kind)
        g_ptr_array_add(w, (gpointer)kind);
    for (int i = 0; words[i]; i++)
        if (words[i][0])
            g_ptr_array_add(w, words[i]);
    bool ok = cost_query_parse((int)w->len, (char *const *)w->pdata, out, error);
    g_ptr_array_free(w, TRUE);
    return ok;
}
